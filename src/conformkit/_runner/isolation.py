"""The isolation twin: a second API created beside a case's own, to check they are not one."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import anyio

from .._scope import FeatureScope, close, raise_together, twin_of
from .._shape import CreateCheck
from .._watchdog import StageStuck


async def open_twin(
    create: Callable[[FeatureScope], Any], scope: FeatureScope, case_id: str, check: CreateCheck
) -> None:
    """
    Create a second API while the case's own is live, check that it is another
    object, and dispose of it: how ``check_isolation`` exercises isolation
    whatever the concurrency.

    :raises BaseException: what the second ``create`` or its cleanups raised, or
        the :exc:`TypeError` that says isolation is broken.
    """
    case = f"case {case_id!r}"
    what = f"a second API created alongside {case} to check isolation"
    label = f"the second API created alongside {case} to check isolation"
    twin = twin_of(scope)
    identity: int | None = None
    error: BaseException | None = None
    try:
        created = create(twin)
        if inspect.isawaitable(created):
            created = await created
    except BaseException as exc:
        error = exc
        # SystemExit and the like are create()'s doing too; Ctrl-C, a cancellation
        # or the watchdog's interrupt come from outside, and say nothing of create().
        if not isinstance(exc, KeyboardInterrupt | StageStuck | anyio.get_cancelled_exc_class()):
            exc.add_note(f"raised by create() for {what}")
    else:
        try:
            identity = check.admit(created, twin, label, alongside=f", for {what},")
        except TypeError as exc:
            error = exc
    errors = await close(twin)
    if identity is not None:
        check.release(identity, twin)
    if error is not None:
        if errors:
            raise_together(f"{what} failed, and so did {len(errors)} cleanup(s)", [error, *errors])
        raise error
    if errors:
        raise_together(f"{len(errors)} cleanup(s) of {what} failed", errors)
