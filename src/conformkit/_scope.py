"""The host-owned lifecycle: feature scopes, sessions and ``open_feature``."""

from __future__ import annotations

import enum
import functools
import inspect
import math
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar, copy_context
from typing import TYPE_CHECKING, Any, Final, Generic, NoReturn, TypeVar, TypeVarTuple, cast, final

import anyio

from ._explain import error_line
from ._feature import API
from ._implementation import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._implementation import declared_feature, stage_timeout
from ._shape import session_check
from ._util import callable_name
from ._watchdog import (
    BLOCKED,
    UNANSWERED,
    Guard,
    StageStuck,
    TaskWatch,
    Watch,
    clock,
    interruptible,
    stuck_detail,
    waker,
)

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ._implementation import FeatureImplementation

_CleanupT = TypeVar("_CleanupT", bound=Callable[[], object])
_PosArgsT = TypeVarTuple("_PosArgsT")


@final
class _State(enum.Enum):
    """Where a scope is in its life; it only moves forward, open to closing to closed."""

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


# Module-level names, so the per-case path compares by identity with no attribute lookup.
_OPEN: Final = _State.OPEN
_CLOSING: Final = _State.CLOSING
_CLOSED: Final = _State.CLOSED


@final
class FeatureScope:
    """
    What :meth:`FeatureImplementation.create` receives: the owner of one API's resources.

    One scope serves one session, and the runners open a fresh one for every case.
    The host closes it: it sets :attr:`closing`, cancels and joins the background
    work started with :meth:`start_soon`, then runs the deferred cleanups in reverse
    order, every one of them, each shielded from outside cancellation and under a
    deadline.
    """

    __slots__ = (
        "_awaited",
        "_background",
        "_begun",
        "_case_id",
        "_cleanups",
        "_closed",
        "_closing",
        "_feature_id",
        "_outcome",
        "_spawner",
        "_state",
        "_timeout",
        "_watch",
    )

    _outcome: list[BaseException]

    def __init__(
        self,
        spawner: TaskGroup | OwnTasks,
        feature_id: str,
        case_id: str | None,
        timeout: float | None,
        watch: Watch | None = None,
    ) -> None:
        # Kept to the minimum: the runner makes one scope per case. Background
        # work, the closing event and the waiters' event are made when first needed.
        self._spawner = spawner
        self._feature_id = feature_id
        self._case_id = case_id
        self._timeout = timeout
        self._cleanups: list[Callable[[], object]] = []
        self._state: _State = _OPEN
        self._closing: anyio.Event | None = None
        self._closed: anyio.Event | None = None
        self._background: Background | None = None
        # Whether closing awaited (shielded) anything: an outside cancellation
        # that arrived meanwhile is still pending, and the host must honour it.
        self._awaited = False
        # When the running cleanup started, in clock() seconds, under a deadline:
        # once closed, when the last one ended.
        self._begun = 0.0
        # `_outcome`, the failures every closer gets, is set once closing starts.
        # The runner's lane, which the watchdog thread watches: each cleanup is a
        # stage it may interrupt. None outside a run.
        self._watch = watch

    def __repr__(self) -> str:
        return f"<FeatureScope {self._where()} {self._state.value}>"

    def _where(self) -> str:
        if self._case_id is None:
            return f"feature {self._feature_id!r}"
        return f"feature {self._feature_id!r}, case {self._case_id!r}"

    def _check_open(self, action: str) -> None:
        if self._state is not _OPEN:
            raise RuntimeError(f"{action} on the scope of {self._where()} after it started closing")

    def defer(self, cleanup: _CleanupT) -> _CleanupT:
        """
        Register a sync or async cleanup, run when the scope closes.

        Cleanups run in reverse registration order. Register each owned resource
        as soon as it exists, before awaiting setup that can fail. Returns the
        cleanup, so it also works as a decorator.

        :param cleanup: a callable taking no arguments; a coroutine function is
            awaited, shielded from cancellation and under the stage deadline.
        :raises TypeError: if ``cleanup`` is not callable.
        :raises RuntimeError: if the scope has started closing.
        """
        if self._state is not _OPEN or not callable(cleanup):  # one test, on the way of each case
            if not callable(cleanup):
                raise TypeError(f"defer() needs a callable taking no arguments, got {cleanup!r}")
            self._check_open("defer()")
        self._cleanups.append(cleanup)
        return cleanup

    @property
    def closing(self) -> anyio.Event:
        """The shutdown signal: set when the scope starts closing, before any cleanup runs."""
        if self._closing is None:
            self._closing = anyio.Event()
            if self._state is not _OPEN:
                self._closing.set()
        return self._closing

    def start_soon(
        self,
        function: Callable[[*_PosArgsT], Awaitable[Any]],
        *args: *_PosArgsT,
        name: object = None,
    ) -> None:
        """
        Start background work that the scope owns.

        As with a task group's ``start_soon``, the function always starts, even
        when the scope closes before it got to run: it then sees the cancellation
        at its first checkpoint. When the scope closes, the work is cancelled and
        waited for before any cleanup runs. An exception it raises is reported
        with the cleanup failures of the scope (and so fails the case it belongs
        to).

        :param name: the name of the work's task, made text (``str(name)``); by
            default, ``function``'s module and qualified name, as a task group
            names a task (a ``functools.partial`` is named after the function it
            wraps, an object after its class).
        :raises RuntimeError: if the scope has started closing.
        """
        self._check_open("start_soon()")
        # Named before the work is counted: a name that cannot be made text raises
        # here, leaving nothing for the closing to wait for.
        name = _task_name(function) if name is None else str(name)
        if self._background is None:
            self._background = Background()
        self._background.live += 1
        self._spawner.start_soon(self._run_background, function, args, name, name=name)

    async def _run_background(
        self, function: Callable[..., Awaitable[Any]], args: tuple[Any, ...], name: str
    ) -> None:
        background = self._background
        assert background is not None
        _within.set((self, "background work"))  # this task's own context
        try:
            with anyio.CancelScope() as cancel_scope:
                if self._state is not _OPEN:
                    # Closing began before the task got to run. As in a task group,
                    # the work starts all the same, and sees the cancellation at its
                    # first checkpoint: its try/finally always runs.
                    cancel_scope.cancel()
                background.scopes.add(cancel_scope)
                try:
                    if self._timeout is None:
                        await function(*args)
                    else:
                        # Watched once the join begins: work that ignores the join's
                        # cancellation past its deadline gets StageStuck instead, so
                        # that it ends; the watchdog wakes it where no cancellation
                        # reaches it, and says where it is if it cannot.
                        watch = TaskWatch(self._timeout, self._feature_id, self._case_id, name)
                        background.watches.add(watch)
                        try:
                            coroutine = function(*args)
                            driver = interruptible(coroutine, watch)
                            watch.follow(coroutine, driver)
                            if background.deadline is not None:  # it started as the join began
                                watch.arm(background.deadline, background.waker)
                            await driver
                        finally:
                            background.watches.discard(watch)
                            if watch.stage:  # armed
                                watch.__exit__()
                            # What refers back to the watch: a cycle, otherwise. Not
                            # `wake`, which the watchdog's thread may be about to call.
                            watch.follow(None, None)
                except StageStuck as stuck:
                    background.interrupted = stuck_detail(stuck)
                    background.stuck.add(name)
                except anyio.get_cancelled_exc_class() as exc:
                    if cancel_scope.cancel_called:
                        raise  # its cancellation: the scope above absorbs it
                    background.failed(exc)  # a stray one, raised by the work itself
                except BaseException as exc:
                    # KeyboardInterrupt included: the host decides what it stops.
                    background.failed(exc)
                finally:
                    background.scopes.discard(cancel_scope)
        finally:
            background.live -= 1
            if background.live == 0 and background.done is not None:
                background.done.set()

    def _close_soon(
        self, now: float | None = None
    ) -> list[BaseException] | Coroutine[Any, Any, Closed]:
        """
        Close the scope as :meth:`_close` does, at once when that awaits nothing:
        the failures; or else the coroutine that finishes closing, to await,
        whose :class:`Closed` tells what else the host must know.

        Closing awaits nothing when the scope is open, has no background work and
        its cleanups are sync, as most are; a coroutine would cost more than the
        rest of closing then.

        :param now: ``clock()`` read just now, if the caller did.
        """
        if self._state is not _OPEN or self._background is not None:
            return self._close_with_outcome()
        self._state = _CLOSING
        errors: list[BaseException] = []
        self._outcome = errors
        try:
            if self._closing is not None:
                self._closing.set()
            if self._timeout is None and self._watch is None:
                # As _clean_up() does, when no deadline times the cleanups and
                # nothing watches them: each is called, last registered first.
                pending = None
                cleanups = self._cleanups
                while cleanups:
                    cleanup = cleanups.pop()
                    try:
                        result = cleanup()
                    except StageStuck:
                        continue  # as in _clean_up(): an overrun only under a deadline
                    except BaseException as exc:
                        errors.append(exc)
                        continue
                    if result is not None and inspect.isawaitable(result):
                        pending = cleanup, result
                        break
            else:
                if now is None and self._timeout is not None:
                    now = clock()
                pending = self._clean_up(errors, now)
        except BaseException:  # StageStuck or a signal's, between two cleanups
            self._state = _CLOSED
            raise
        if pending is None:
            self._state = _CLOSED
            return errors
        return self._finish_close(pending, errors)

    async def _close(self) -> list[BaseException]:
        """
        Close the scope once and return the failures; later and concurrent callers
        get the same list.
        """
        return (await self._close_with_outcome()).errors

    async def _close_with_outcome(self) -> Closed:
        """Close the scope as :meth:`_close` does; tell what closing did."""
        # Only a scope closing already, or with background work, can be closed
        # from its own cleanup or work: the others do not look.
        within = _within.get() if self._state is not _OPEN or self._background is not None else None
        if within is not None and within[0] is self:
            # Awaited from this scope's own cleanup or background work, closing
            # would wait for itself, forever or until its deadline.
            raise RuntimeError(
                f"dispose() of {self._where()} was called from its own {within[1]}, "
                f"which closing waits for: it would wait for itself"
            )
        if self._state is not _OPEN:
            if self._state is _CLOSING:
                if self._closed is None:
                    self._closed = anyio.Event()
                with anyio.CancelScope(shield=True):
                    await self._closed.wait()
            return Closed(self._outcome, self._awaited, None)
        self._state = _CLOSING
        errors: list[BaseException] = []
        self._outcome = errors
        try:
            if self._closing is not None:
                self._closing.set()
            interrupt = None
            if self._background is not None:
                interrupt = await self._join_background(self._background, errors)
                if interrupt is not None and not isinstance(
                    interrupt, anyio.get_cancelled_exc_class()
                ):
                    # Ctrl-C while waiting for the work, on trio: the cleanups run
                    # once the work stopped, and it propagates after them, as an
                    # interrupt in a cleanup does.
                    errors.append(interrupt)
                    interrupt = None
            pending = self._clean_up(errors, clock() if self._timeout is not None else None)
        except BaseException:
            self._state = _CLOSED
            if self._closed is not None:
                self._closed.set()
            raise
        closed = await self._finish_close(pending, errors)
        if interrupt is not None:
            # A cancellation that reached the shielded wait for the work: asyncio's
            # for Ctrl-C, which its runner turns into KeyboardInterrupt. It is this
            # task's own, raised once closing is done; other closers get the outcome.
            raise interrupt
        return closed

    def _clean_up(
        self,
        errors: list[BaseException],
        start: float | None = None,
        ended: Callable[[], object] | None = None,
        detail: str | None = None,
    ) -> tuple[Callable[[], object], Awaitable[object]] | None:
        """
        Run the cleanups, last registered first, until one returns an awaitable:
        return it with its cleanup, for :meth:`_finish_close` to await, its
        stage still armed; ``None`` once every cleanup has run.

        Each cleanup is a stage: one that returns after its deadline fails too,
        sync code included, though nothing could cancel it; and the watchdog
        thread may interrupt it (outside a run, nothing watches).

        :param start: on the first call, which arms the watch for the cleanups,
            ``clock()`` now, under a deadline.
        :param ended: the async cleanup that has just been awaited, and
            ``detail``, how it overran when that is known.
        """
        cleanups = self._cleanups
        timeout = self._timeout
        watch = self._watch or _UNWATCHED
        if ended is None:
            self._begun = 0.0 if start is None else start
        span = timeout or 0.0
        cleanup = ended
        while True:
            if cleanup is not None and timeout is not None:
                # It ended: it failed if it overran; the next one starts now.
                now = clock()
                ran = now - self._begun
                if detail is not None or ran > timeout:
                    name = _cleanup_name(cleanup, errors)
                    errors.append(self._overrun(f"cleanup {name}", ran, detail))
                self._begun = now
            if not cleanups:
                return None
            cleanup = cleanups.pop()
            detail = None
            # Armed afresh: no cancellation reached this cleanup yet.
            watch.start("cleanup", self._begun + span)
            try:
                result = cleanup()
                if result is not None and inspect.isawaitable(result):
                    return cleanup, result
                watch.stop()
            except StageStuck as stuck:
                watch.stop()
                detail = stuck_detail(stuck)
            except BaseException as exc:
                watch.stop()
                errors.append(exc)

    async def _finish_close(
        self,
        pending: tuple[Callable[[], object], Awaitable[object]] | None,
        errors: list[BaseException],
    ) -> Closed:
        """Await the async cleanup ``pending`` and run the rest; the scope is closed then."""
        watch = self._watch or _UNWATCHED
        try:
            while pending is not None:
                cleanup, result = pending
                self._awaited = True
                detail: str | None = None
                try:
                    detail = await self._await_cleanup(result)
                    watch.stop()
                except StageStuck as stuck:
                    watch.stop()
                    detail = stuck_detail(stuck)
                except BaseException as exc:
                    watch.stop()
                    errors.append(exc)
                pending = self._clean_up(errors, ended=cleanup, detail=detail)
        finally:
            self._state = _CLOSED
            if self._closed is not None:
                self._closed.set()
        background = self._background
        outlived = background if background is not None and background.outlived else None
        return Closed(errors, self._awaited, outlived)

    async def _join_background(
        self, background: Background, errors: list[BaseException]
    ) -> BaseException | None:
        """
        Cancel the background work and wait for it to end, under the deadline; keep
        its failures in ``errors``. Return an interrupt that came meanwhile (Ctrl-C),
        which the join waits through: the cleanups run once the work has stopped.
        """
        late: TimeoutError | None = None
        waited = _Waited()
        if background.live:
            self._awaited = True
            # Made only now: work may start and finish many times before closing.
            background.done = done = anyio.Event()
            for cancel_scope in background.scopes:
                cancel_scope.cancel()
            begun = clock()
            timeout = self._timeout
            if timeout is not None:
                background.deadline = due = begun + timeout
                background.waker = wake = waker()
                for watch in list(background.watches):
                    watch.arm(due, wake)
            overran = outlived = not await waited.wait(done, _deadline(timeout))
            if outlived and timeout is not None:
                # Work that swallows its cancellation gets StageStuck at its next one,
                # and work waiting where none reaches it is woken (on asyncio): give
                # it a moment to end.
                background.stuck.update(watch.task or "" for watch in background.watches)
                outlived = not await waited.wait(done, min(timeout, 1.0))
            # Work the watchdog woke at the deadline may end just before the join's
            # own deadline passes: it overran all the same.
            overran = overran or bool(background.stuck)
            background.outlived = outlived
            background.overran = overran
            ran = clock() - begun
            if timeout is not None and ran > timeout and not overran:
                late = self._overrun("the join of background work", ran, None)
        errors.extend(background.errors)  # work that failed before closing, too
        if background.overran:
            how = "" if background.interrupted is None else f"; {background.interrupted}"
            tasks = ", ".join(map(repr, sorted(background.stuck)))
            which = f"; task{'s' if len(background.stuck) > 1 else ''} {tasks}" if tasks else ""
            background.timed_out = TimeoutError(
                f"{self._where()}: background work did not finish within "
                f"{self._timeout:g}s of being cancelled (stage 'cleanup'{which}{how})"
            )
            errors.append(background.timed_out)
        elif late is not None:
            errors.append(late)
        return waited.interrupt

    def _overrun(self, what: str, ran: float, detail: str | None) -> TimeoutError:
        """
        The failure of a part of closing that took longer than the stage deadline.

        :param detail: how it overran, when known; ``None`` for a stage that
            returned late by itself, which sync code blocking the loop explains.
        """
        if detail is None:
            detail = f"ran {ran:.1f}s; {BLOCKED}"
        elif detail and not detail.startswith("cancelled"):
            detail = f"ran {ran:.1f}s; {detail}"  # it was interrupted
        return TimeoutError(
            f"{self._where()}: {what} exceeded the {self._timeout:g}s deadline "
            f"(stage 'cleanup'{'; ' + detail if detail else ''})"
        )

    async def _await_cleanup(self, result: Awaitable[object]) -> str | None:
        """
        Await an async cleanup under the deadline; return how it overran, if the
        deadline cancelled it: ``""``, or where it was when it was interrupted, or
        that it did not answer the cancellation, if it returned late anyway (it
        swallowed it, or waited shielded from it).

        A cleanup that ignores the cancellation is interrupted: it gets
        :class:`StageStuck` instead of the next cancellation, ``grace`` seconds on.
        """
        timeout = self._timeout
        token = _within.set((self, "cleanup"))
        try:
            if timeout is None:
                with anyio.CancelScope(shield=True):
                    await result
                return None
            guard = Guard(clock() + timeout, min(timeout, 1.0), self._watch)
            with anyio.move_on_after(timeout, shield=True) as deadline:
                await interruptible(result, guard)
        finally:
            _within.reset(token)
        if not deadline.cancelled_caught:
            # Late: its cancellation went unanswered; or, never cancelled, sync code held the loop.
            return UNANSWERED if deadline.cancel_called else None
        return f"cancelled in {guard.where}" if guard.where else ""


@final
class Closed:
    """
    What closing a scope that could not close at once tells its host.

    :ivar errors: the failures of its cleanups and background work.
    :ivar awaited: whether closing awaited anything (shielded): it joined
        background work or ran an async cleanup, and an outside cancellation
        that came meanwhile is still to be honoured.
    :ivar outlived: the scope's background work, when some of it outlived its
        join: what it raises later belongs in the run's report.
    """

    __slots__ = ("awaited", "errors", "outlived")

    def __init__(
        self, errors: list[BaseException], awaited: bool, outlived: Background | None
    ) -> None:
        self.errors = errors
        self.awaited = awaited
        self.outlived = outlived


@final
class Background:
    """The background work of one scope: how many tasks live, their scopes and errors."""

    __slots__ = (
        "deadline",
        "done",
        "errors",
        "interrupted",
        "late",
        "live",
        "outlived",
        "overran",
        "scopes",
        "stuck",
        "timed_out",
        "waker",
        "watches",
    )

    def __init__(self) -> None:
        self.live = 0
        self.overran = False  # the join's deadline passed with work still running
        self.outlived = False  # ... and the work did not end even when interrupted
        self.scopes: set[anyio.CancelScope] = set()
        # The work's watches, under a deadline; armed by the join, which sets
        # `deadline`, its own, and `waker`, how the watchdog wakes work on asyncio.
        self.watches: set[TaskWatch] = set()
        self.deadline: float | None = None
        self.waker: Callable[[Watch, float], None] | None = None
        self.stuck: set[str] = set()  # the names of the tasks running past the deadline
        self.errors: list[BaseException] = []
        self.done: anyio.Event | None = None
        # How work that ignored its cancellation was stuck, once interrupted.
        self.interrupted: str | None = None
        # The join's failure, once it gave up on work still running; and what
        # that work raised afterwards.
        self.timed_out: TimeoutError | None = None
        self.late: list[BaseException] = []

    def failed(self, error: BaseException) -> None:
        """
        Work failed: before the join gave up on it, a failure of the scope; after,
        a late one, which leaves the scope's outcome as every caller already got
        it, and is told in the notes of the join's timeout.
        """
        if self.outlived:
            self.late.append(error)
            if self.timed_out is not None:
                self.timed_out.add_note(f"the work failed later: {error_line(error)}")
        else:
            self.errors.append(error)


@final
class _Waited:
    """
    Waits, shielded, for the background work to end; an interrupt that reaches
    the wait (Ctrl-C: trio's KeyboardInterrupt, or the cancellation by which
    asyncio's runner delivers it) is kept, and the wait goes on, so that the
    cleanups still run after the work has stopped. A second one stops waiting.
    """

    __slots__ = ("interrupt",)

    def __init__(self) -> None:
        self.interrupt: BaseException | None = None

    async def wait(self, done: anyio.Event, seconds: float) -> bool:
        """Whether the work ended within ``seconds``."""
        end = anyio.current_time() + seconds
        while True:
            try:
                with anyio.CancelScope(deadline=end, shield=True):
                    await done.wait()
                return done.is_set()
            except BaseException as exc:  # Ctrl-C, the one waited through: see above
                if self.interrupt is not None:
                    return done.is_set()
                self.interrupt = exc


@final
class OwnTasks:
    """
    Starts each piece of background work as a task of its own: the spawner of a
    run of one case, which opens no task group, as opening one costs several
    times what a trivial case does.

    Nothing is lost by it: the work runs in a cancel scope of its own, which the
    scope's closing cancels before it waits for the work; the work never lets an
    exception out (:meth:`FeatureScope._run_background` keeps it for the scope);
    and the run waits for work that outlived its join before it returns.
    """

    __slots__ = ("running",)

    def __init__(self) -> None:
        # asyncio keeps only weak references to its tasks: held here until each ends.
        self.running: set[Any] = set()

    def start_soon(self, function: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        asyncio = sys.modules.get("asyncio")
        if asyncio is not None and asyncio._get_running_loop() is not None:
            task = asyncio.create_task(function(*args), name=name)
            self.running.add(task)
            task.add_done_callback(self.running.discard)
            return
        import trio  # on trio, then

        # A system task, as trio starts no other task without a nursery; in the
        # context of the code that started it, as a nursery's task would be.
        trio.lowlevel.spawn_system_task(function, *args, name=name, context=copy_context())


OWN_TASKS: Final = OwnTasks()
"""The one :class:`OwnTasks` of the process: it keeps no state but the tasks running."""


# -- the scope's protocol with the rest of the core -----------------------------------------
# Functions, not methods, so that FeatureScope shows users no more than its public API.
# `close_soon` and `close` are the methods themselves: the runner's hot path pays no
# call more for them.

close_soon: Final = FeatureScope._close_soon
"""``close_soon(scope, now)``: close a scope, at once when it awaits nothing (the runner)."""

close: Final = FeatureScope._close
"""``await close(scope)``: close a scope once; every caller gets its failures."""


def is_closed(scope: FeatureScope) -> bool:
    """Whether ``scope`` has finished closing."""
    return scope._state is _CLOSED


def case_of(scope: FeatureScope) -> str | None:
    """The case ``scope`` was opened for; ``None`` for a session's."""
    return scope._case_id


def twin_of(scope: FeatureScope) -> FeatureScope:
    """
    A fresh scope beside ``scope``: of the same feature and case, its background
    work started alike, under the same deadline; no run watches its cleanups.
    """
    return FeatureScope(scope._spawner, scope._feature_id, scope._case_id, scope._timeout)


_UNWATCHED: Final = Watch(None)
"""What a scope that no run watches arms its cleanups on: a watch no thread looks at."""

_within: ContextVar[tuple[FeatureScope, str] | None] = ContextVar(
    "conformkit_within_scope", default=None
)
"""The scope whose async cleanup or background work is running in this context, and which."""


def _task_name(function: object) -> str:
    """The default name of background work's task: what ``function`` runs, qualified."""
    while isinstance(function, functools.partial):
        function = function.func
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
    return ".".join(str(part) for part in (module, qualname) if part)


def _cleanup_name(cleanup: object, errors: list[BaseException]) -> str:
    """
    Name a cleanup for its overrun. Naming runs the code under test (a
    ``__getattr__``, a ``__repr__``): a BaseException it raises is kept in
    ``errors``, as one the cleanup raised, so that every later cleanup still runs.
    """
    try:
        return callable_name(cleanup)
    except BaseException as exc:  # callable_name() lets only an Exception go by
        errors.append(exc)
        return f"<{type(cleanup).__qualname__} object>"


def _deadline(timeout: float | None) -> float:
    return math.inf if timeout is None else timeout


async def create_api(implementation: FeatureImplementation[API, Any], scope: FeatureScope) -> API:
    """Call ``create``; on failure roll back and re-raise, grouping rollback failures."""
    try:
        created = implementation.create(scope)
        api = await created if inspect.isawaitable(created) else created
    except BaseException as exc:
        rollback_errors = await scope._close()
        if rollback_errors:
            raise_together(
                f"create() of {type(implementation).__qualname__} failed and so did "
                f"{len(rollback_errors)} rollback cleanup(s)",
                [exc, *rollback_errors],
            )
        raise
    return cast("API", api)


def raise_together(message: str, errors: list[BaseException]) -> NoReturn:
    """
    Raise several failures as one: an exception group of them, but a
    BaseException other than a cancellation (``KeyboardInterrupt`` first, then
    ``SystemExit`` and the like) propagates as itself, the others in its notes.
    """
    cancelled = anyio.get_cancelled_exc_class()
    escalated: BaseException | None = None
    for error in errors:
        if isinstance(error, Exception | cancelled):
            continue
        if isinstance(error, KeyboardInterrupt):
            escalated = error
            break
        if escalated is None:
            escalated = error
    if escalated is None:
        raise BaseExceptionGroup(message, errors) from None
    notes = getattr(escalated, "__notes__", [])
    for error in errors:
        note = f"{message}: {error_line(error)}"
        if error is not escalated and note not in notes:  # raised again: noted once
            escalated.add_note(note)
    raise escalated


@final
class Session(Generic[API]):
    """
    A created API and the scope that owns its resources, from :func:`open_feature`.

    :ivar api: the API object the implementation created.
    :ivar implementation: the implementation that created it.
    """

    __slots__ = ("_scope", "api", "implementation")

    def __init__(
        self, implementation: FeatureImplementation[API, Any], api: API, scope: FeatureScope
    ) -> None:
        self.implementation = implementation
        self.api = api
        self._scope = scope

    def __repr__(self) -> str:
        return f"<Session of {self.implementation!r}>"

    @property
    def closed(self) -> bool:
        """Whether disposal has finished."""
        return self._scope._state is _CLOSED

    async def dispose(self) -> None:
        """
        Close the session's scope: signal ``closing``, stop background work, run cleanups.

        Idempotent and safe to call concurrently: the cleanups run once, and every
        caller gets the same outcome.

        :raises ExceptionGroup: holding every cleanup failure, when any failed.
        """
        errors = await self._scope._close()
        if errors:
            raise_together(f"{len(errors)} cleanup(s) of {self._scope._where()} failed", errors)
        # A cancellation that arrived while cleanups ran shielded.
        await anyio.lowlevel.checkpoint_if_cancelled()


@asynccontextmanager
async def open_feature(
    implementation: FeatureImplementation[API, Any], *, timeout: float | None = DEFAULT_TIMEOUT
) -> AsyncIterator[Session[API]]:
    """
    Create an API outside any test and dispose of it on exit.

    ::

        async with open_feature(SqliteText()) as session:
            await session.api.write("key", "value")

    If ``create`` fails, what it registered is rolled back and the error re-raised.
    So it is, with a :exc:`TypeError`, when what ``create`` returned is not of the
    API type's shape (see :func:`run_contract`), or is still the API of another
    live session of the same feature.
    On exit, the session is disposed; if the body raised and a cleanup failed too,
    both surface together in one exception group, the body's error first. A
    ``BaseException`` other than a cancellation (``KeyboardInterrupt``,
    ``SystemExit``...) propagates as itself, after every cleanup ran, with the
    other failures in its ``__notes__``.

    :param timeout: seconds each cleanup (and the join of background work) may
        take; by default, the implementation's own ``timeout``; ``None`` disables
        the deadline.
    :raises ExceptionGroup: holding every cleanup failure, when any failed.
    """
    feature = declared_feature(implementation)
    timeout = stage_timeout(timeout, implementation)
    check = session_check(feature)
    await anyio.lowlevel.checkpoint_if_cancelled()  # a sync create would not notice
    create_error: BaseException | None = None
    body_error: BaseException | None = None
    cleanup_errors: list[BaseException] = []
    # The task group owns the scope's background work. Errors are caught inside it
    # and re-raised outside, so that the task group does not wrap them in a group.
    async with anyio.create_task_group() as task_group:
        scope = FeatureScope(task_group, feature.id, None, timeout)
        try:
            api = await create_api(implementation, scope)
            # Of the API's shape, and no other live session's API.
            admitted = check.admit(api, scope)
        except BaseException as exc:
            create_error = exc
            if scope._state is _OPEN:  # created, but refused: rolled back
                cleanup_errors = await scope._close()
        else:
            try:
                yield Session(implementation, api, scope)
            except BaseException as exc:
                body_error = exc
            cleanup_errors = await scope._close()
            if admitted is not None:
                check.release(admitted, scope)
            if body_error is None and not cleanup_errors:
                # A cancellation that arrived while cleanups ran shielded.
                await anyio.lowlevel.checkpoint_if_cancelled()
    if create_error is not None:
        if cleanup_errors:
            raise_together(
                f"create() of {type(implementation).__qualname__} returned an API that was "
                f"refused, and {len(cleanup_errors)} rollback cleanup(s) failed",
                [create_error, *cleanup_errors],
            )
        raise create_error
    if cleanup_errors:
        where = f"{len(cleanup_errors)} cleanup(s) of {scope._where()} failed"
        if body_error is not None:
            raise_together(where, [body_error, *cleanup_errors])
        raise_together(where, list(cleanup_errors))
    if body_error is not None:
        raise body_error


# Shown as conformkit.Name, like every export, whichever way it was first imported.
for _export in (FeatureScope, Session, open_feature):
    _export.__module__ = "conformkit"
del _export
