"""Sync case functions: told from async ones, and failed when they drop a coroutine unawaited."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Awaitable
from types import CoroutineType, GeneratorType
from typing import Any, Final

from .._suite import CaseFunction

_RECORDING_FILE: Final = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_recording.py"
)


def is_sync(function: object, cache: dict[object, bool]) -> bool:
    """Whether a case function is sync; remembered, unless it is a family's member."""
    family = getattr(function, "_conformkit_family", None)
    target = function if family is None else family
    sync = not inspect.iscoroutinefunction(target) and not inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - an object with an async __call__
    )
    if family is None:
        cache[function] = sync
    return sync


def call_sync(function: CaseFunction[Any], api: object) -> Awaitable[None] | None:
    """
    Call a sync case function, failing it when it created a coroutine and dropped
    it without awaiting it: a sync case written against an async API, whose
    calls would otherwise do nothing and pass.

    A sync call cannot interleave with other tasks, so the warnings recorded
    around it are its own; the others are emitted again, as they came.
    """
    dropped: list[str] = []
    others: list[warnings.WarningMessage] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = function(api)  # a coroutine it dropped is warned about by now
        finally:
            index = 0
            while index < len(caught):
                warning = caught[index]
                index += 1
                if warning.category is RuntimeWarning and isinstance(warning.source, CoroutineType):
                    coroutine = warning.source
                    if coroutine.cr_code.co_filename != _RECORDING_FILE:
                        dropped.append(_coroutine_call(coroutine, api))
                    # Let it go now: a coroutine it held (a recording proxy's call
                    # holds the API's) warns in turn, and is recorded here too.
                    warning.source = None
                    del coroutine
                else:
                    others.append(warning)
    for warning in others:
        warnings.warn_explicit(
            warning.message, warning.category, warning.filename, warning.lineno,
            source=warning.source,
        )  # fmt: skip
    if dropped:
        raise RuntimeWarning(
            f"coroutine {dropped[0]} was never awaited"
            f"{f' (and {len(dropped) - 1} more)' if len(dropped) > 1 else ''}: a sync case "
            f"calls an async API; make it 'async def' and await each call"
        )
    return outcome


def _coroutine_call(coroutine: CoroutineType[Any, Any, Any], api: object) -> str:
    """``api.write()`` for a coroutine of the API's method ``write``, else ``Owner.name()``."""
    from .._recording import RecordingProxy, target_of  # only where a sync case dropped one

    name = coroutine.__qualname__
    target = target_of(api) if isinstance(api, RecordingProxy) else api
    owner, _, method = name.rpartition(".")
    if owner and any(owner == klass.__qualname__ for klass in type(target).__mro__):
        return f"api.{method}()"
    return f"{name}()"


def awaitable(value: object, plain: set[type]) -> bool:
    """Whether ``value`` is awaitable; remember its type when it is not (nor a generator)."""
    if inspect.isawaitable(value):
        return True
    if type(value) is not GeneratorType:  # a generator may or may not be awaitable
        plain.add(type(value))
    return False
