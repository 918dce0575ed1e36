"""
The last-resort watchdog: a thread that sees stages the event loop cannot stop.

The runners' deadlines are kept by the event loop: a stage that overruns is
cancelled. Two kinds of code escape that. Sync code that blocks the event loop's
thread never lets the loop run, so nothing can cancel it; and a task that swallows
its cancellation keeps running however often it is cancelled. A daemon thread,
as pytest-timeout's thread method uses, watches every armed stage from outside
the event loop. When a stage is still running ``grace`` seconds after its
deadline, the thread takes the stack of the stuck code and:

- if the event loop's thread is blocked in Python code, raises
  :class:`StageStuck` in it (``PyThreadState_SetAsyncExc``), which the runner
  reports as that stage's failure. A call into C that holds the thread (a
  ``time.sleep``, a lock, a socket read without timeout) is interrupted only
  when it returns, since Python checks for the exception between bytecodes;
- otherwise (the loop runs, but the stage ignores its cancellation) calls the
  watch's ``on_stuck`` callback with the stack, so the run can be stopped with
  what it has judged so far: nothing hangs without saying where.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from time import monotonic
from types import CoroutineType, FrameType
from typing import Final, final

__all__ = ["StageStuck", "Watch", "coroutine_stack", "thread_stack"]

_POLL: Final = 0.05
"""Seconds between the thread's looks at the armed stages: its only cost while all is well."""
_FRAMES: Final = 8
"""The most frames of a stuck stack a report shows, innermost last."""


class StageStuck(BaseException):
    """
    Raised by the watchdog into a thread stuck in a stage past its deadline and grace.

    A :class:`BaseException`, so that ``except Exception`` in the stuck code does not
    swallow it; the runner catches it at the stage and fails the case.
    """


@final
class Watch:
    """
    One stage at a time, watched from outside the event loop.

    The runner arms it when a stage starts and disarms it when the stage ends; both
    are attribute writes, cheap enough for every stage of every case.

    :ivar deadline: the monotonic time after which the stage is stuck, or ``None``.
    :ivar label: what is running, for the report: ``case 'c' (stage 'case')``.
    :ivar cancelled: set by the event loop's own watchdog when it has cancelled the
        stage; the loop ran then, so a stage still running later ignores cancellation
        rather than blocking the loop.
    :ivar stack: the stack of the stuck code, once the watchdog has fired.
    """

    __slots__ = (
        "cancelled",
        "coroutine",
        "deadline",
        "fired",
        "label",
        "on_stuck",
        "stack",
        "thread_id",
    )

    def __init__(self, on_stuck: Callable[[Watch], None] | None = None) -> None:
        self.deadline: float | None = None
        self.label = ""
        self.cancelled = False
        self.fired = False
        self.stack: str | None = None
        self.coroutine: object = None
        self.thread_id = threading.get_ident()
        self.on_stuck = on_stuck

    def arm(self, deadline: float, label: str, coroutine: object = None) -> None:
        """Watch a stage that must end by ``deadline`` (monotonic seconds)."""
        self.label = label
        self.coroutine = coroutine
        self.cancelled = self.fired = False
        self.stack = None
        self.deadline = deadline

    def disarm(self) -> None:
        """The stage ended; stop watching it."""
        self.deadline = None
        self.coroutine = None

    def __enter__(self) -> Watch:
        _watchdog().add(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.deadline = None
        _watchdog().discard(self)


def thread_stack(thread_id: int) -> str:
    """The innermost frames of a thread's stack, formatted as a traceback shows them."""
    frame = sys._current_frames().get(thread_id)
    return _format_frames(frame)


def coroutine_stack(coroutine: object) -> str:
    """The innermost frames of a suspended coroutine's await chain."""
    frames: list[FrameType] = []
    current: object = coroutine
    while isinstance(current, CoroutineType):
        if current.cr_frame is None:
            break
        frames.append(current.cr_frame)
        current = current.cr_await
    summary = traceback.StackSummary.extract(
        ((frame, frame.f_lineno) for frame in frames), limit=None
    )
    return "".join(traceback.StackSummary.from_list(summary[-_FRAMES:]).format())


def _format_frames(frame: FrameType | None) -> str:
    if frame is None:
        return ""
    return "".join(traceback.format_stack(frame)[-_FRAMES:])


@final
class _Watchdog:
    """The one daemon thread of the process, started when the first watch is added."""

    def __init__(self) -> None:
        self.watches: set[Watch] = set()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        with self.lock:
            self.watches.add(watch)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self.run, name="conformkit watchdog", daemon=True
                )
                self.thread.start()

    def discard(self, watch: Watch) -> None:
        with self.lock:
            self.watches.discard(watch)

    def run(self) -> None:
        while True:
            threading.Event().wait(_POLL)
            now = monotonic()
            with self.lock:
                due = [
                    watch
                    for watch in self.watches
                    if watch.deadline is not None and watch.deadline <= now and not watch.fired
                ]
            for watch in due:
                _fire(watch)


def _fire(watch: Watch) -> None:
    watch.fired = True
    if not watch.cancelled:
        # The event loop never ran to cancel the stage: its thread is blocked.
        watch.stack = thread_stack(watch.thread_id)
        if watch.deadline is not None:  # still armed: the stage has not ended meanwhile
            _raise_in_thread(watch.thread_id, StageStuck)
        return
    watch.stack = coroutine_stack(watch.coroutine) or thread_stack(watch.thread_id)
    if watch.on_stuck is not None:
        watch.on_stuck(watch)


def _raise_in_thread(thread_id: int, exception: type[BaseException]) -> None:
    import ctypes  # only a stuck stage pays for it

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception)
    )


_the_watchdog: _Watchdog | None = None
_create_lock = threading.Lock()


def _watchdog() -> _Watchdog:
    global _the_watchdog
    if _the_watchdog is None:
        with _create_lock:
            if _the_watchdog is None:
                _the_watchdog = _Watchdog()
    return _the_watchdog
