"""
The last-resort watchdog: a thread that sees stages the event loop cannot stop.

The runners' deadlines are kept by the event loop: a stage that overruns is
cancelled. Two kinds of code escape that. Sync code that blocks the event loop's
thread never lets the loop run, so nothing can cancel it; and a task that
swallows its cancellation keeps running however often it is cancelled. A daemon
thread, as pytest-timeout's thread method uses, watches every armed stage from
outside the event loop. When a stage is still running ``grace`` seconds after
its deadline, it is *stuck*:

- if the event loop's thread is running the stage's own code (sync code blocks
  the loop), the thread is interrupted with :class:`StageStuck`: by a signal
  when the loop runs on the main thread, which also ends a blocking call such
  as ``time.sleep`` or ``Lock.acquire``; otherwise with
  ``PyThreadState_SetAsyncExc``, which Python checks between bytecodes, so a
  call into C is interrupted only when it returns;
- if the loop runs but the stage ignores its cancellation, the stage is
  interrupted from inside the loop: :func:`interruptible` throws
  :class:`StageStuck` into it instead of the next cancellation, and on asyncio
  the watchdog wakes a task that waits where no cancellation reaches it.

A stage still stuck ``grace`` seconds after that could not be interrupted (a C
call that holds the thread, a wait that nothing can wake): the watchdog hands it
to the stuck hook with its stack, so nothing hangs without saying where.

Background work is watched the same way once its scope's closing joins it
(:class:`TaskWatch`): a task that outlives the join's deadline is interrupted,
or woken, and handed to the stuck hook if it still runs.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import types
from collections.abc import Callable, Generator, Iterable
from time import perf_counter as clock
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, final

import anyio

if TYPE_CHECKING:
    import threading
    import traceback

__all__ = [
    "Guard",
    "StageStuck",
    "TaskWatch",
    "Watch",
    "clock",
    "format_frames",
    "frames_of",
    "interrupt_at",
    "interruptible",
    "leave_threads_behind",
    "print_stuck",
    "set_stuck_hook",
    "stuck_detail",
    "summary",
    "waker",
]

# `clock()` is the clock of every deadline, here and in the runners: time.perf_counter,
# which times each case's duration too, so that one reading serves both (on Linux
# and macOS it is the clock of time.monotonic; on Windows a finer one).

_POLL: Final = 0.05
"""Seconds between the thread's looks at the armed stages, while any run is watched."""
_FRAMES: Final = 8
"""The most frames of a stuck stack a report shows, innermost last."""
_PACKAGE: Final = os.path.dirname(os.path.abspath(__file__))
_COROUTINES: Final = (types.CoroutineType, types.GeneratorType)
"""What :func:`interruptible` drives as it is: a tuple, as ``A | B`` is made at each call."""


BLOCKED: Final = "sync code blocked the event loop"
"""How a stage that returned late, never cancelled, overran: sync code held the loop."""
UNANSWERED: Final = "it did not answer its cancellation"
"""How a stage that returned late although cancelled overran: it swallowed the
cancellation, or waited where it did not reach (a shielded wait)."""


class StageStuck(BaseException):
    """
    Raised into a stage that is stuck past its deadline and grace.

    A :class:`BaseException`, so that ``except Exception`` in the stuck code does not
    swallow it; the host catches it at the stage and fails the case.

    :ivar how: how the stage was stuck, for its reason.
    """

    def __init__(self, how: str = BLOCKED) -> None:
        super().__init__(f"stuck past its deadline: {how}; interrupted")
        self.how = how


class Guard:
    """
    Turns the cancellations thrown into a stage past its deadline into
    :class:`StageStuck` once the stage has ignored them for ``grace`` seconds.

    Used through :func:`interruptible`, which calls :meth:`intercept` only when an
    exception is thrown in: nothing on the way of a stage that is not cancelled.

    :ivar due: when the stage must end, in :func:`clock` seconds.
    :ivar first_cancel: when the stage, past its deadline, was first cancelled;
        ``where`` holds its innermost frames at that moment.
    """

    __slots__ = ("due", "first_cancel", "grace", "watch", "where")

    def __init__(self, due: float, grace: float, watch: Guard | None = None) -> None:
        self.due = due
        self.grace = grace
        self.first_cancel: float | None = None
        self.where: str | None = None
        # A watch that learns of the first cancellation too: the watchdog thread
        # then knows that the loop runs, and the stage ignores it.
        self.watch = watch

    def intercept(self, exc: BaseException, coroutine: object) -> BaseException:
        """The exception to throw into the guarded code instead of ``exc``."""
        if not isinstance(exc, anyio.get_cancelled_exc_class()):
            return exc
        now = clock()
        if now < self.due:
            return exc  # the code's own cancellation, not the deadline's
        if self.first_cancel is None:
            self.first_cancel = now
            if self.watch is not None:
                self.watch.first_cancel = now
            self.where = summary(frames_of(coroutine))
            if self.grace > 0:
                return exc
        if now - self.first_cancel < self.grace:
            return exc
        return StageStuck("it ignored its cancellation")


class Watch(Guard):
    """
    One stage at a time, watched from outside the event loop.

    The host arms it when a stage starts (:meth:`start`, :meth:`start_case`) and
    disarms it when the stage ends (:meth:`stop`); its other fields are set
    through its methods too, by the host and by the watchdog thread alike. Each
    is a few attribute writes, cheap enough for every stage of every case. The
    runner's lanes are watches.

    :ivar stuck_at: the :func:`clock` time after which the armed stage is stuck, or
        ``None`` when no stage is armed. It also tells stages apart, so that a
        look the watchdog took at one stage is never acted on at the next.
    :ivar due: when the armed stage must end.
    :ivar stage: the armed stage: ``"create"``, ``"case"`` or ``"cleanup"``; the
        cancellations of a cleanup are not intercepted (each async cleanup is
        guarded on its own); ``"background"`` for background work being joined.
    :ivar feature_id: the feature of the run, for messages; ``""`` if not known.
    :ivar task: the name of the background work watched, or ``None`` for a stage.
    :ivar frame: a frame that is on the event loop thread's stack exactly while
        the watched code runs there; if ``None``, the frame of ``coroutine``.
    :ivar coroutine: the watched code's coroutine, whose frames show where it
        waits when it does not run.
    :ivar driver: what the watched code's task awaits, by which the task is found
        to wake it (:func:`waker`).
    :ivar stack: the stack of the stuck code, once the watchdog looked at it.
    """

    __slots__ = (
        "case_id",
        "coroutine",
        "driver",
        "feature_id",
        "forced",
        "frame",
        "held",
        "interrupt",
        "lock",
        "missed",
        "pending",
        "stack",
        "stage",
        "stuck_at",
        "task",
        "thread_id",
        "timeout",
        "wake",
    )

    def __init__(self, timeout: float | None) -> None:
        # Time to answer a cancellation before the stage counts as stuck.
        self.grace = 0.0 if timeout is None else min(timeout, 1.0)
        self.due = 0.0
        self.first_cancel: float | None = None
        self.where: str | None = None
        self.watch = None
        self.timeout = timeout
        self.stuck_at: float | None = None
        self.stage = ""
        self.feature_id = ""
        self.case_id = ""
        self.task: str | None = None
        self.stack: str | None = None
        self.forced = False
        self.pending = False  # an exception was raised into the thread, not yet seen
        # The stuck_at of a stage whose interruption found the thread in the event
        # loop's own code, and was held back: the watchdog tries again.
        self.missed: float | None = None
        # The stuck_at of a stage held back at least once: its next cancellation
        # is StageStuck at once, where the loop delivers it safely.
        self.held: float | None = None
        self.frame: FrameType | None = None
        self.coroutine: object = None
        self.driver: object = None
        self.thread_id = _thread.get_ident()
        self.lock: _thread.LockType | None = None  # made by the watchdog, if it raises
        # Set by the host: interrupt the event loop's thread (a signal), and wake
        # a task that no cancellation reaches (asyncio); None when it cannot.
        self.interrupt: Callable[[Watch, float], None] | None = None
        self.wake: Callable[[Watch, float], None] | None = None

    def running_frame(self) -> FrameType | None:
        """
        The frame that is on the event loop thread's stack while the watched
        code runs: ``frame``, or else the coroutine's own, looked up only now
        (a frame object is made when first asked for, and costs its memory and
        the garbage collector's time).
        """
        if self.frame is not None:
            return self.frame
        return getattr(self.coroutine, "cr_frame", None)

    def label(self) -> str:
        """
        What is running, for a message: ``feature 'f', case 'c' (stage 'case')``, or
        ``(background task 'name')``; a session's work has no case.
        """
        where = f"case {self.case_id!r}" if self.case_id else "the session"
        if self.feature_id:
            where = f"feature {self.feature_id!r}, {where}"
        what = f"stage {self.stage!r}" if self.task is None else f"background task {self.task!r}"
        return f"{where} ({what})"

    def stuck(self) -> StageStuck:
        """The exception that interrupts the stage where its code runs."""
        if self.first_cancel is not None:
            # The loop ran, and cancelled it: it runs on because it ignores that.
            return StageStuck("it ignored its cancellation")
        return StageStuck()

    def start(self, stage: str, due: float) -> None:
        """Watch a stage that must end by ``due`` (:func:`clock` seconds)."""
        self.stage = stage
        self.due = due
        self.first_cancel = None
        self.stuck_at = due + self.grace

    def start_case(self, case_id: str, timeout: float, due: float) -> None:
        """Watch the first stage, ``create``, of a case whose stages each have ``timeout``."""
        self.case_id = case_id
        self.timeout = timeout
        # As start() does: a call more would cost a tenth of a trivial case's arming.
        self.stage = "create"
        self.due = due
        self.first_cancel = None
        self.stuck_at = due + self.grace

    def stop(self) -> None:
        """The stage ended; stop watching it."""
        self.stuck_at = None
        if self.pending:
            self.settle()

    def follow(self, coroutine: object, driver: object) -> None:
        """
        Watch the code that runs ``coroutine``, in a task that awaits ``driver``;
        ``None`` for both lets go of them, which refer back to the watch.
        """
        self.coroutine = coroutine
        self.driver = driver

    def connect(
        self,
        feature_id: str,
        interrupt: Callable[[Watch, float], None] | None,
        wake: Callable[[Watch, float], None] | None,
    ) -> None:
        """
        Say whose stages are watched, and how the watchdog thread interrupts the
        event loop's thread (``None``: it raises into it) and wakes a task that
        no cancellation reaches (``None``: it cannot).
        """
        self.feature_id = feature_id
        self.interrupt = interrupt
        self.wake = wake

    def set_waker(self, wake: Callable[[Watch, float], None] | None) -> None:
        """How the watchdog thread wakes a task that no cancellation reaches, from now on."""
        self.wake = wake

    def release(self) -> None:
        """
        Let go of what refers back to the watch or to its run, once the run
        ended: cycles that only the garbage collector would break, at a cost
        that grows with everything else alive.
        """
        self.interrupt = self.wake = self.frame = self.coroutine = self.driver = None

    def settle(self) -> None:
        """Withdraw an exception raised into the thread that it has not seen yet."""
        lock = self.lock
        assert lock is not None  # made before pending was set
        while True:
            try:
                with lock:
                    self.pending = False
                    _set_async_exc(self.thread_id, None)
            except StageStuck:
                continue  # it arrived just now: withdrawn all the same
            return

    def raise_in_thread(self, stage: float) -> None:
        """Raise StageStuck in the event loop's thread, unless the stage ends first."""
        if self.lock is None:
            self.lock = _thread.allocate_lock()
        self.pending = True  # before the look at the stage: see stop()
        with self.lock:
            if self.stuck_at != stage:
                self.pending = False
            elif _in_loop(sys._current_frames().get(self.thread_id), self.running_frame()):
                # Held back, and tried again. The exception lands at the thread's next
                # check, which may be in the loop's code all the same: a race that a
                # signal, on the main thread, does not have (see interrupt_at()).
                self.pending = False
                self.hold_back(stage)
            else:
                _set_async_exc(self.thread_id, StageStuck)

    def hold_back(self, stage: float) -> None:
        """
        The interruption of ``stage`` found the event loop's own code running: try
        again, and make the next cancellation the stage gets :class:`StageStuck`.
        """
        self.missed = self.held = stage

    def retry_missed(self, stage: float) -> bool:
        """Whether the interruption of ``stage`` was held back, to try again now."""
        if self.missed != stage:
            return False
        self.missed = None
        return True

    def woken(self) -> None:
        """The watchdog woke the task where no cancellation reached it: that wakes it."""
        self.forced = True

    def caught(self, stack: str) -> None:
        """Where the stuck code was when the watchdog looked at it, formatted."""
        self.stack = stack

    def intercept(self, exc: BaseException, coroutine: object) -> BaseException:
        """
        As :meth:`Guard.intercept`, while a stage is armed; and a stage that the
        watchdog woke because no cancellation reached it gets :class:`StageStuck`.
        """
        if self.stuck_at is None or self.stage == "cleanup":
            return exc
        if self.held == self.stuck_at and isinstance(exc, anyio.get_cancelled_exc_class()):
            return self.stuck()  # held back in the loop's code: here is a safe place
        if self.forced and isinstance(exc, anyio.get_cancelled_exc_class()):
            self.forced = False
            _uncancel()
            if self.first_cancel is not None:
                return StageStuck("it ignored its cancellation")
            return StageStuck("it waited where no cancellation reached it")
        return super().intercept(exc, coroutine)

    def __enter__(self) -> Watch:
        _watchdog().add(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stuck_at = None
        _watchdog().discard(self)


@final
class TaskWatch(Watch):
    """
    Background work, watched once its scope's closing joins it.

    The join cancels the work and arms the watch with its deadline. From then on,
    a cancellation the work ignores past the deadline becomes :class:`StageStuck`,
    at once, and the watchdog thread wakes the work if it still runs there (on
    asyncio, where no cancellation reaches it). The join waits a grace more; if
    the work still runs a grace after that, it could not be interrupted, and the
    watchdog hands it to the stuck hook, once, whether or not the join still waits.
    """

    __slots__ = ()

    def __init__(self, timeout: float, feature_id: str, case_id: str | None, task: str) -> None:
        super().__init__(timeout)
        # From its deadline, the join's grace, then as long again to end once woken.
        self.grace *= 2
        self.feature_id = feature_id
        self.case_id = case_id or ""
        self.task = task
        # Sync code of the work that holds the event loop is not interrupted: an
        # exception raised into the thread would land only as its call returns,
        # cutting short a wind-down that was ending. It is reported if it goes on.
        self.interrupt = _leave_running

    def arm(self, due: float, wake: Callable[[Watch, float], None] | None) -> None:
        """Watch the work from now on: it must end by ``due``, or it is interrupted then."""
        self.stage = "background"
        self.due = due
        self.wake = wake
        self.stuck_at = due
        self.__enter__()

    def intercept(self, exc: BaseException, coroutine: object) -> BaseException:
        """
        Each cancellation once the work is watched is the join's: one the work
        goes on after makes it stuck for having ignored it, even if it then waits
        where no other reaches it. Past the deadline, one is :class:`StageStuck` at once.
        """
        if (
            self.stuck_at is not None
            and not self.forced
            and isinstance(exc, anyio.get_cancelled_exc_class())
        ):
            if self.first_cancel is None:
                self.first_cancel = clock()
            if clock() >= self.due:
                return StageStuck("it ignored its cancellation")
            return exc
        return super().intercept(exc, coroutine)


def leave_threads_behind(running: set[Any], status: int, grace: float = 1.0) -> None:
    """
    End the process now, with ``status``, if a thread not in ``running`` is still
    alive that Python would wait for at exit: one the code under test started that
    never returns, which background work awaited and was woken from. A program
    that has said all it had to would otherwise never end. Threads that are
    ending get ``grace`` seconds.
    """
    import threading

    left = [
        thread
        for thread in threading.enumerate()
        if thread not in running and not thread.daemon and thread.is_alive()
    ]
    end = clock() + grace
    for thread in left:
        thread.join(max(end - clock(), 0))
    stuck = [thread.name for thread in left if thread.is_alive()]
    if stuck:
        sys.stdout.flush()
        sys.stderr.write(
            f"conformkit: {len(stuck)} thread(s) the code under test started never returned "
            f"({', '.join(map(repr, stuck))}); the process ends without them\n"
        )
        sys.stderr.flush()
        os._exit(status)


def _leave_running(watch: Watch, stage: float) -> None:
    """What the watchdog does to background work's sync code that holds the loop: nothing."""


@types.coroutine
def interruptible(awaitable: Any, watch: Any, *, waits: bool = False) -> Generator[Any, Any, Any]:
    """
    Await ``awaitable``, letting ``watch.intercept`` replace each exception thrown in.

    asyncio throws an exception into a task's coroutine; trio sends it in, as an
    ``outcome.Error`` that the innermost frame unwraps. Either is intercepted. A
    step that carries no exception costs one type check. ``watch`` is anything
    with ``intercept(exc, coroutine)``.

    :param waits: call ``watch.wait()`` before the awaitable waits, while
        ``watch.deadline`` is not ``None`` (a stage is armed): what only a
        stage that waits needs is made then.
    """
    coroutine = awaitable if isinstance(awaitable, _COROUTINES) else awaitable.__await__()
    send = coroutine.send
    try:
        yielded = send(None)
    except StopIteration as stop:
        return stop.value  # it never waited: nothing was thrown in
    throw = coroutine.throw
    intercept = watch.intercept
    # trio's resumption that carries an exception; trio imports `outcome`.
    sent_error: Any = getattr(sys.modules.get("outcome"), "Error", _Never)
    value: Any
    while True:
        if waits and watch.deadline is not None:
            watch.wait()
        try:
            value = yield yielded
        except BaseException as exc:  # thrown in by the event loop: passed on, or replaced
            try:
                yielded = throw(intercept(exc, coroutine))
            except StopIteration as stop:
                return stop.value
        else:
            if type(value) is sent_error:
                replaced = intercept(value.error, coroutine)
                if replaced is not value.error:
                    value = sent_error(replaced)
            try:
                yielded = send(value)
            except StopIteration as stop:
                return stop.value


@final
class _Never:
    """A type that no value sent into a coroutine has."""


def _uncancel() -> None:
    """Take back the ``Task.cancel()`` that woke the current asyncio task."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not on asyncio
        return
    if task is not None and task.cancelling():
        task.uncancel()


def waker() -> Callable[[Watch, float], None] | None:
    """
    On asyncio, a function the watchdog thread calls to wake the task that awaits
    a watch's ``driver`` where no cancellation reaches it (a shielded wait, a
    thread it waits for), so that it gets StageStuck; ``None`` on trio, which has
    no such means. One serves many watches: it finds the task only when it must.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    loop = asyncio._get_running_loop()
    if loop is None:  # not on asyncio
        return None

    def wake_task(watch: Watch, stage: float) -> None:
        if watch.stuck_at == stage and watch.stage != "cleanup":
            task = _task_awaiting(asyncio.all_tasks(loop), watch.driver)
            if task is not None:
                watch.woken()
                task.cancel()

    def wake(watch: Watch, stage: float) -> None:
        loop.call_soon_threadsafe(wake_task, watch, stage)

    return wake


def _task_awaiting(tasks: Iterable[Any], awaitable: object) -> Any:
    """The task whose chain of awaits holds ``awaitable``, if any."""
    if awaitable is None:
        return None
    for task in tasks:
        current: object = task.get_coro()
        for _ in range(200):  # a chain is never this deep; a cycle would be
            if current is awaitable:
                return task
            inner = getattr(current, "cr_await", None)
            current = inner if inner is not None else getattr(current, "gi_yieldfrom", None)
            if current is None:
                break
    return None


# -- stacks ------------------------------------------------------------------------------


def frames_of(coroutine: object) -> list[traceback.FrameSummary]:
    """The frames of a suspended coroutine's await chain, outermost first."""
    import traceback  # only where an error is described

    frames: list[FrameType] = []
    current: object = coroutine
    for _ in range(200):  # a chain is never this deep; a cycle would be
        frame = getattr(current, "cr_frame", None) or getattr(current, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        inner = getattr(current, "cr_await", None)
        current = inner if inner is not None else getattr(current, "gi_yieldfrom", None)
    return list(traceback.StackSummary.extract((frame, frame.f_lineno) for frame in frames))


def thread_frames(thread_id: int) -> list[traceback.FrameSummary]:
    """The frames a thread is running, outermost first."""
    import traceback  # only where an error is described

    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return []
    return list(traceback.extract_stack(frame))


def on_thread_stack(thread_id: int, wanted: FrameType | None) -> bool:
    """Whether ``wanted`` is among the frames that a thread is running now."""
    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame is wanted:
            return True
        frame = frame.f_back
    return False


def format_frames(frames: list[traceback.FrameSummary]) -> str:
    """The innermost frames, formatted as a traceback shows them."""
    import traceback  # only where an error is described

    return "".join(traceback.StackSummary.from_list(frames[-_FRAMES:]).format())


def _loop_files() -> tuple[str, ...]:
    """Folders of the event loops' own code, and of the context managers they enter."""
    folders = []
    for name in ("asyncio", "anyio", "trio", "outcome", "sniffio"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            folders.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    # The context managers the loops enter (trio's cancel scopes) may be caught mid-exit.
    folders.append(os.path.abspath(contextlib.__file__))
    return tuple(folders)


def _library_files() -> tuple[str, ...]:
    """Folders whose frames say nothing about where the code under test was."""
    own = (
        os.path.join(_PACKAGE, "_runner") + os.sep,  # the runner's package
        *(os.path.join(_PACKAGE, name) for name in ("_scope.py", "_watchdog.py")),
    )
    return own + _loop_files()


def _in_loop(frame: FrameType | None, running: FrameType | None) -> bool:
    """
    Whether a thread caught at ``frame`` runs the event loop's own code on its way
    from ``running``, the stage's frame: an exception raised there would unwind
    through the loop's code and leave its state half changed (a trio cancel scope
    half entered corrupts the scope stack, and ends the run). The code the loop
    calls in turn (attrs' generated methods, ``abc``'s checks) counts, as its
    caller does.
    """
    loop = _loop_files()
    while frame is not None and frame is not running:
        if frame.f_code.co_filename.startswith(loop):
            return True
        frame = frame.f_back
    return False


def interrupt_at(watch: Watch, stage: float, frame: FrameType | None) -> None:
    """
    In the event loop's thread, caught at ``frame``: raise :class:`StageStuck`
    if the stuck stage runs there, unless the event loop's own code runs between
    the stage's frame and ``frame``; then the interruption is held back, the
    stage's next cancellation is :class:`StageStuck` instead, and the watchdog
    tries again. A stage that swallows its cancellation in a loop, which runs
    trio's or anyio's code at each wait, is stopped where the loop delivers it.
    """
    if watch.stuck_at != stage:
        return  # the stage ended meanwhile
    running = watch.running_frame()
    current = frame
    while current is not None:
        if current is running:
            if _in_loop(frame, running):
                watch.hold_back(stage)
                return
            raise watch.stuck()
        current = current.f_back


def _to_own_code(frames: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """
    A suspended stack up to the innermost frame of the code under test and the
    event loop's call it waits in: the loop's own frames below that, as deep as
    a trio sleep goes, would push the code's frame out of what a report shows.
    """
    library = _library_files()
    for index in range(len(frames) - 1, -1, -1):
        if not frames[index].filename.startswith(library):
            return frames[: index + 2]
    return frames


def stuck_detail(stuck: StageStuck) -> str:
    """How a stage that was interrupted was stuck, and where: for its reason."""
    import traceback  # only where an error is described

    where = summary(traceback.extract_tb(stuck.__traceback__))
    return f"{stuck.how}; interrupted in {where}" if where else f"{stuck.how}; interrupted"


def summary(frames: list[traceback.FrameSummary], limit: int = 3) -> str:
    """
    Where the code under test was, on one line: its innermost frames, innermost
    first, leaving out the event loop's and conformkit's own.
    """
    library = _library_files()
    own = [frame for frame in frames if not frame.filename.startswith(library)]
    shown = [
        f"{frame.name} at {os.path.basename(frame.filename)}:{frame.lineno}"
        for frame in reversed(own[-limit:])
    ]
    return " ← ".join(shown)


# -- the thread ----------------------------------------------------------------------------


def print_stuck(watch: Watch) -> None:
    """Write where stuck code is to stderr: what the stuck hook does by default."""
    if watch.task is None:
        how = f"is stuck past its {watch.timeout:g}s deadline"
    else:
        how = f"did not stop within {watch.timeout:g}s of being cancelled"
    sys.stderr.write(
        f"conformkit: {watch.label()} {how} and could not be interrupted; "
        f"it is here:\n{watch.stack or '  (no stack)'}\n"
    )
    sys.stderr.flush()


_stuck_hook: Callable[[Watch], None] = print_stuck


def set_stuck_hook(hook: Callable[[Watch], None] | None) -> None:
    """
    Call ``hook`` (in the watchdog's thread) with a stage that could not be
    interrupted; ``None`` restores the default, which prints its stack to stderr.
    """
    global _stuck_hook
    _stuck_hook = print_stuck if hook is None else hook


@final
class _Watchdog:
    """
    The one daemon thread of the process, started when the first watch is added.

    It looks at the watches every :data:`_POLL` seconds, and sleeps until the next
    one is added once it has seen none for a while: adding and discarding a watch,
    which every run does, then only takes a lock.
    """

    def __init__(self) -> None:
        self.watches: set[Watch] = set()
        import threading  # imported by the event loop by now, not with conformkit

        self.lock = _thread.allocate_lock()
        self.wake = threading.Event()  # set by add() while the thread sleeps
        self.sleeping = False
        self.thread: threading.Thread | None = None
        # What the thread did to each watch's stage: (its stuck_at, when to look again).
        self.fired: dict[Watch, tuple[float, float]] = {}

    def add(self, watch: Watch) -> None:
        # No lock on the way of every run: a set's add is atomic, and the thread
        # never sleeps past a watch added (see _look()).
        self.watches.add(watch)
        if self.sleeping or self.thread is None:
            with self.lock:
                if self.sleeping:
                    self.sleeping = False
                    self.wake.set()
                if self.thread is None:  # it never ends, but in a child process: see _forked()
                    import threading

                    self.thread = threading.Thread(
                        target=self.run, name="conformkit watchdog", daemon=True
                    )
                    self.thread.start()

    def forked(self) -> None:
        """In a child process, which has no watchdog thread: one is started when next needed."""
        self.thread = None
        # Another thread may have held these at the fork.
        import threading

        self.lock = _thread.allocate_lock()
        self.wake = threading.Event()
        self.sleeping = False

    def discard(self, watch: Watch) -> None:
        self.watches.discard(watch)
        if self.fired:
            self.fired.pop(watch, None)

    def run(self) -> None:
        try:
            self._look()
        finally:  # a stuck hook raised: the next watch added starts a new thread
            self.thread = None

    def _look(self) -> None:
        import threading

        pause = threading.Event()
        idle = 0
        while True:
            pause.wait(_POLL)
            now = clock()
            watches = list(self.watches)
            if watches:
                idle = 0
            else:
                idle += 1
                if idle * _POLL >= 1.0:  # a second without a run: sleep till the next
                    with self.lock:
                        self.wake.clear()
                        self.sleeping = True
                    # A watch added before `sleeping` was set saw it unset, and
                    # woke nobody: it is seen here. One added after it wakes us.
                    if self.watches:
                        self.sleeping = False
                    else:
                        self.wake.wait()
                    idle = 0
                    continue
            for watch in watches:
                stuck_at = watch.stuck_at
                if stuck_at is None or now < stuck_at:
                    continue
                fired = self.fired.get(watch)
                if fired is None or fired[0] != stuck_at:
                    self.fired[watch] = (stuck_at, now + watch.grace)
                    _fire(watch, stuck_at)
                elif now < fired[1] and watch.retry_missed(stuck_at):
                    _fire(watch, stuck_at)  # held back in the loop's code: once more
                elif now >= fired[1] > 0:
                    self.fired[watch] = (stuck_at, 0.0)  # reported once
                    _report(watch, stuck_at)


def _fire(watch: Watch, stage: float) -> None:
    """A stage is stuck: interrupt it where it runs."""
    if on_thread_stack(watch.thread_id, watch.running_frame()):
        # The event loop's thread is running the stage: sync code blocks the loop.
        watch.caught(format_frames(thread_frames(watch.thread_id)))
        if watch.interrupt is not None:
            watch.interrupt(watch, stage)
        else:
            watch.raise_in_thread(stage)
    elif watch.wake is not None:
        watch.wake(watch, stage)


def _report(watch: Watch, stage: float) -> None:
    """A stage is still stuck after its interruption: say where, through the hook."""
    if on_thread_stack(watch.thread_id, watch.running_frame()):
        frames = thread_frames(watch.thread_id)  # caught running: deep in the loop, maybe
    else:
        frames = frames_of(watch.coroutine)
    stack = format_frames(_to_own_code(frames))
    if watch.stuck_at != stage:
        return  # it ended meanwhile
    watch.caught(stack)
    _stuck_hook(watch)


def _set_async_exc(thread_id: int, exception: type[BaseException] | None) -> None:
    import ctypes  # only a stuck stage pays for it

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None
    )


_the_watchdog: _Watchdog | None = None
_create_lock = _thread.allocate_lock()


def _forked() -> None:
    """In a child process, which has no watchdog thread: one is started when next needed."""
    if _the_watchdog is not None:
        _the_watchdog.forked()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_forked)


def _watchdog() -> _Watchdog:
    global _the_watchdog
    if _the_watchdog is None:
        with _create_lock:
            if _the_watchdog is None:
                _the_watchdog = _Watchdog()
    return _the_watchdog
