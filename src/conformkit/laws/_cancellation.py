"""The cancellation law: a cancelled call cleans up, ends, and leaves the implementation usable."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, cast, final

import anyio

from .._exceptions import LawViolation
from .._explain import error_line
from .._util import callable_name, check_timeout, short_repr


class _Signal(Protocol):
    """An event the implementation sets: anything with ``await wait()`` (``anyio.Event``)."""

    def wait(self) -> Awaitable[object]: ...


async def assert_honours_cancellation(
    call: Callable[[], Awaitable[object]],
    *,
    started: _Signal,
    cleaned_up: _Signal,
    afterwards: Callable[[], Awaitable[object]] | None = None,
    timeout: float = 5.0,
) -> None:
    """
    Prove that cancelling ``call`` runs its cleanup, ends it, and leaves the implementation usable.

    The helper starts ``call()`` in a task of its own, waits until ``started`` is
    set, then cancels that task and requires, within ``timeout`` seconds of the
    cancellation, both that ``cleaned_up`` is set and that the call has ended by
    letting the cancellation propagate. A response, or the call's task ending, is
    not evidence that cleanup ran: only ``cleaned_up`` is. Then, if ``afterwards``
    is given, it awaits ``afterwards()`` to show that the implementation still
    serves a new call.

    Each stage runs under ``timeout``: waiting for ``started``, the cleanup and
    end of the cancelled call, and ``afterwards()``. The helper cannot abandon a
    task (anyio and trio wait for every task they start), so a call that keeps
    running after the deadline is reported as ignoring cancellation as soon as its
    task ends.

    Only the helper's own cancellation of the call is expected: a cancellation of
    the code that awaits the helper propagates, never turned into a violation.

    ::

        await assert_honours_cancellation(
            lambda: api.handle(request),
            started=api.handler_started,
            cleaned_up=api.handler_cleaned_up,
            afterwards=lambda: api.handle(request),
            timeout=1.0,
        )

    :param call: starts the long-running work, e.g. ``lambda: api.handle(request)``;
        it must still be running when ``started`` is set.
    :param started: set by the implementation once the call's work has started.
    :param cleaned_up: set by the implementation once the call's cleanup has finished.
    :param afterwards: a new call, awaited after the cancelled one has ended; any
        exception it raises, or not finishing in time, means the implementation was
        left unusable.
    :param timeout: seconds each stage may take.
    :raises LawViolation: naming the stage that failed: the call never started,
        finished before it was cancelled, ignored the cancellation, failed when
        cancelled, its cleanup never finished, or the implementation was unusable
        afterwards. The call's or ``afterwards``' own exception is the cause.
    :raises ValueError: if ``timeout`` is not a positive number of seconds, or an
        event is already set before the call starts.
    :raises TypeError: if ``call`` or ``afterwards`` is not callable.
    """
    timeout = cast("float", check_timeout(timeout, optional=False))
    for name, function in (("call", call), ("afterwards", afterwards)):
        if function is not None and not callable(function):
            raise TypeError(f"{name} must be a callable returning an awaitable, got {function!r}")
    for name, signal in (("started", started), ("cleaned_up", cleaned_up)):
        # A set event would let the law pass on a previous call's evidence.
        is_set = getattr(signal, "is_set", None)
        if callable(is_set) and is_set():
            raise ValueError(f"{name} is already set before the call starts; pass a fresh event")

    name = callable_name(call)
    the_call = "the call" if name.endswith("<lambda>") else f"the call {name}"
    running = _Call()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(running.run, call)
        try:
            verdict = await _cancel_and_watch(running, the_call, started, cleaned_up, timeout)
        finally:
            # Whatever the verdict, or an outside cancellation: stop the call.
            running.scope.cancel()
    # Raised out here, not in the task group, so that it is not wrapped in a group.
    if verdict is not None:
        message, cause = verdict
        raise LawViolation(message) from cause

    if afterwards is not None:
        try:
            with anyio.move_on_after(timeout) as deadline:
                await afterwards()
        except Exception as exc:
            raise LawViolation(
                f"unusable afterwards: after {the_call} was cancelled, a new call raised "
                f"{error_line(exc)}"
            ) from exc
        if deadline.cancelled_caught:
            raise LawViolation(
                f"unusable afterwards: after {the_call} was cancelled, a new call did not "
                f"finish within {timeout:g}s"
            )


_Verdict = tuple[str, BaseException | None] | None


async def _cancel_and_watch(
    running: _Call, the_call: str, started: _Signal, cleaned_up: _Signal, timeout: float
) -> _Verdict:
    """Run the stages up to the end of the cancelled call; return what went wrong, if anything."""
    # Stage 1: started, unless the call ends first (it then interrupts the wait).
    running.waiter = waiter = anyio.CancelScope(deadline=anyio.current_time() + timeout)
    with waiter:
        await started.wait()
    running.waiter = None
    if running.done.is_set():
        if running.error is not None:
            what = f"raised {error_line(running.error)}"
        else:
            what = f"returned {short_repr(running.value)}"
        return (
            f"finished before cancellation: {the_call} {what} before it was cancelled; a call "
            f"that ends on its own proves nothing about cancellation",
            running.error,
        )
    if waiter.cancelled_caught:
        return (
            f"never started: started was not set within {timeout:g}s of starting {the_call}",
            None,
        )

    # Stage 2: within the deadline of the cancellation, cleanup finishes and the call ends.
    running.scope.cancel()
    deadline = anyio.current_time() + timeout
    cleaned = False
    with anyio.CancelScope(deadline=deadline):
        await cleaned_up.wait()
        cleaned = True
    with anyio.CancelScope(deadline=deadline):
        await running.done.wait()
    cleanup = "" if cleaned else "; and cleaned_up was not set (cleanup never finished)"
    if not running.done.is_set():
        return (
            f"ignored cancellation: {the_call} was still running {timeout:g}s after being "
            f"cancelled{cleanup}",
            None,
        )
    if running.error is not None:
        return (
            f"failed when cancelled: {the_call} raised {error_line(running.error)} instead of "
            f"letting the cancellation propagate{cleanup}",
            running.error,
        )
    if not running.scope.cancelled_caught:
        return (
            f"ignored cancellation: {the_call} returned {short_repr(running.value)} after being "
            f"cancelled instead of letting the cancellation propagate{cleanup}",
            None,
        )
    if not cleaned:
        return (
            f"cleanup never finished: cleaned_up was not set within {timeout:g}s of "
            f"cancelling {the_call}, although it ended",
            None,
        )
    return None


@final
class _Call:
    """The call under test, run in its own cancel scope, and how it ended."""

    __slots__ = ("done", "error", "scope", "value", "waiter")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.value: object = None
        self.error: Exception | None = None
        # The helper's wait for `started`, interrupted if the call ends first.
        self.waiter: anyio.CancelScope | None = None

    async def run(self, call: Callable[[], Awaitable[object]]) -> None:
        try:
            with self.scope:
                try:
                    self.value = await call()
                except Exception as exc:
                    # Judged by the helper, and the cause of its violation.
                    self.error = exc
        finally:
            self.done.set()
            if self.waiter is not None:
                self.waiter.cancel()
