"""Races: start several calls at once behind a barrier and state what their outcomes must be."""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar, cast, final, overload

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskGroup

from .._exceptions import LawViolation
from .._explain import error_line
from .._util import callable_name, check_timeout, short_repr

_T = TypeVar("_T")

# What a call is doing, as far as the race knows; a finished call has an outcome instead.
_WAITING, _RUNNING = "not started (waiting at the start barrier)", "still running"


@final
@dataclass(frozen=True)  # no slots: typing's CallOutcome[int](...) sets __orig_class__
class CallOutcome(Generic[_T]):
    """
    What one call of a race did: returned a value or raised an exception.

    ``str(outcome)`` reads ``call 0: returned 'run-1'`` or
    ``call 1: raised AlreadyClaimed('step taken')``.

    :ivar index: the call's index, ``0`` to ``n - 1``, the argument it received.
    :ivar value: what the call returned; ``None`` when it raised.
    :ivar error: the exception the call raised; ``None`` when it returned.
    """

    index: int
    value: _T | None = None
    error: Exception | None = None

    @property
    def succeeded(self) -> bool:
        """Whether the call returned rather than raised."""
        return self.error is None

    def __str__(self) -> str:
        if self.error is None:
            return f"call {self.index}: returned {short_repr(self.value)}"
        return f"call {self.index}: raised {short_repr(self.error)}"


@final
class RaceOutcomes(Sequence[CallOutcome[_T]]):
    """
    The outcomes of a race's calls, in start order: ``outcomes[i]`` is call ``i``'s.

    An immutable sequence of :class:`CallOutcome`, with the usual laws of a race
    as methods: :meth:`exactly_one_wins` and :meth:`all_succeed`. ``str(outcomes)``
    is :meth:`describe`, one line per call.

    :param outcomes: one outcome per call, in start order.
    """

    __slots__ = ("_outcomes",)

    def __init__(self, outcomes: Iterable[CallOutcome[_T]]) -> None:
        self._outcomes = tuple(outcomes)

    @overload
    def __getitem__(self, index: int) -> CallOutcome[_T]: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[CallOutcome[_T], ...]: ...

    def __getitem__(self, index: int | slice) -> CallOutcome[_T] | tuple[CallOutcome[_T], ...]:
        return self._outcomes[index]

    def __len__(self) -> int:
        return len(self._outcomes)

    def __iter__(self) -> Iterator[CallOutcome[_T]]:
        return iter(self._outcomes)

    def __repr__(self) -> str:
        return f"RaceOutcomes({list(self._outcomes)!r})"

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """
        Return one line per call saying what it did, in start order.

        ::

            call 0: returned 'run-1'
            call 1: raised AlreadyClaimed('step taken')
        """
        return "\n".join(str(outcome) for outcome in self._outcomes)

    def exactly_one_wins(
        self, loser: type[BaseException] | tuple[type[BaseException], ...]
    ) -> CallOutcome[_T]:
        """
        Check that exactly one call succeeded and every other one raised ``loser``.

        The law of a claim, a lock, a unique insert or a compare-and-set: of the
        calls racing for one thing, one gets it and the others are told no with
        the documented error.

        :param loser: the exception type (or tuple of types, as for ``except``)
            that every losing call must raise; subclasses count.
        :returns: the winning call's outcome.
        :raises LawViolation: when no call or several calls succeeded, or a losing
            call raised anything other than ``loser``; the message says what each
            call did. It is chained from the first unexpected exception, if any.
        :raises TypeError: if ``loser`` is not an exception type or a tuple of them.
        """
        expected = _check_exception_types(loser)
        winners = [outcome for outcome in self._outcomes if outcome.succeeded]
        wrong = [
            outcome
            for outcome in self._outcomes
            if outcome.error is not None and not isinstance(outcome.error, expected)
        ]
        if len(winners) == 1 and not wrong:
            return winners[0]
        problems: list[str] = []
        if not winners:
            problems.append("none succeeded")
        elif len(winners) > 1:
            problems.append(
                f"{len(winners)} succeeded ({_calls([outcome.index for outcome in winners])})"
            )
        if wrong:
            kinds = ", ".join(
                f"call {outcome.index} raised {type(outcome.error).__qualname__}"
                for outcome in wrong
            )
            problems.append(f"{kinds}, not {_names(expected)}")
        message = (
            f"expected exactly one of {len(self)} calls to succeed and the others to raise "
            f"{_names(expected)}, but {' and '.join(problems)}:\n{_indented(self)}"
        )
        cause = wrong[0].error if wrong else None
        raise LawViolation(message) from cause

    def all_succeed(self) -> list[_T]:
        """
        Check that every call succeeded: the law of operations meant to be safe concurrently.

        :returns: the calls' return values, in start order.
        :raises LawViolation: when any call raised; the message says what each call
            did, and it is chained from the first exception.
        """
        failed = [outcome for outcome in self._outcomes if outcome.error is not None]
        if failed:
            raise LawViolation(
                f"expected all {len(self)} calls to succeed, but {len(failed)} raised "
                f"({_calls([outcome.index for outcome in failed])}):\n{_indented(self)}"
            ) from failed[0].error
        return [cast("_T", outcome.value) for outcome in self._outcomes]


def _indented(outcomes: Iterable[CallOutcome[_T]]) -> str:
    return "\n".join(f"  {outcome}" for outcome in outcomes)


def _calls(indices: list[int]) -> str:
    """``call 1``, ``calls 0 and 1``, ``calls 0, 2 and 3``."""
    if len(indices) == 1:
        return f"call {indices[0]}"
    return f"calls {', '.join(map(str, indices[:-1]))} and {indices[-1]}"


def _names(types: tuple[type[BaseException], ...]) -> str:
    return " or ".join(kind.__qualname__ for kind in types)


def _check_exception_types(loser: object) -> tuple[type[BaseException], ...]:
    kinds = loser if isinstance(loser, tuple) else (loser,)
    if not kinds or not all(
        isinstance(kind, type) and issubclass(kind, BaseException) for kind in kinds
    ):
        raise TypeError(f"loser must be an exception type or a tuple of them, got {loser!r}")
    return cast("tuple[type[BaseException], ...]", kinds)


def _check_arguments(
    function_name: str, n: object, fn: object, timeout: object, invariant: object
) -> tuple[int, float | None]:
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an int of at least 2 (a race needs two calls), got {n!r}")
    if not callable(fn):
        raise TypeError(f"{function_name}() needs fn to be a callable taking an index, got {fn!r}")
    if invariant is not None and not callable(invariant):
        raise TypeError(
            f"invariant must be a callable taking no arguments, or None, got {invariant!r}"
        )
    return n, check_timeout(timeout)


@final
class _StartBarrier:
    """Holds every call until all ``parties`` tasks have arrived, then releases them together."""

    __slots__ = ("_arrived", "_parties", "_released")

    def __init__(self, parties: int) -> None:
        self._parties = parties
        self._arrived = 0
        self._released = anyio.Event()

    async def wait(self) -> None:
        self._arrived += 1
        if self._arrived == self._parties:
            self._released.set()
        await self._released.wait()


@final
class _Race(Generic[_T]):
    """The state of one race: what each call is doing, its outcome, an interrupt to re-raise."""

    __slots__ = (
        "checking",
        "interrupt",
        "invariant",
        "n",
        "outcomes",
        "states",
        "timeout",
        "where",
    )

    def __init__(
        self,
        function_name: str,
        n: int,
        fn: object,
        timeout: float | None,
        invariant: Callable[[], Awaitable[None] | None] | None,
    ) -> None:
        self.n = n
        self.where = f"{function_name}({n}, {callable_name(fn)})"
        self.timeout = timeout
        self.invariant = invariant
        self.states = [_WAITING] * n
        self.outcomes: list[CallOutcome[_T] | None] = [None] * n
        self.interrupt: BaseException | None = None
        self.checking = False  # whether the invariant is running

    def started(self, index: int) -> None:
        """Note that call ``index`` is past the barrier: it is inside ``fn`` now."""
        self.states[index] = _RUNNING

    async def run(self, call: Callable[[int], Awaitable[_T]]) -> RaceOutcomes[_T]:
        invariant_error: Exception | None = None
        with anyio.move_on_after(self.timeout) as deadline:
            async with anyio.create_task_group() as task_group:
                for index in range(self.n):
                    task_group.start_soon(
                        self._call, call, index, task_group, name=f"race call {index}"
                    )
            if self.interrupt is None and self.invariant is not None:
                self.checking = True
                invariant_error = await self._check_invariant(self.invariant)
                self.checking = False
        if self.interrupt is not None:
            raise self.interrupt
        # cancel_called, not cancelled_caught: a call that swallowed the deadline's
        # cancellation and returned late must not turn an overrun into a pass.
        if deadline.cancel_called or any(outcome is None for outcome in self.outcomes):
            raise LawViolation(self._timed_out())
        outcomes = RaceOutcomes(cast("list[CallOutcome[_T]]", self.outcomes))
        if invariant_error is not None:
            # On one line: a multi-line message (pytest's rewritten assert) would
            # break the listing of the calls; the whole error is the cause.
            raise LawViolation(
                f"{self.where}: the invariant {callable_name(self.invariant)} failed "
                f"after every call finished: {error_line(invariant_error)}\n"
                f"{_indented(outcomes)}"
            ) from invariant_error
        return outcomes

    async def _call(
        self,
        call: Callable[[int], Awaitable[_T]],
        index: int,
        task_group: TaskGroup,
    ) -> None:
        try:
            value = await call(index)
        except Exception as exc:
            self.outcomes[index] = CallOutcome(index, error=exc)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            # KeyboardInterrupt and the like are not an outcome: stop every call
            # and let run() re-raise it, unwrapped, once the task group is done.
            if self.interrupt is None:
                self.interrupt = exc
            task_group.cancel_scope.cancel()
        else:
            self.outcomes[index] = CallOutcome(index, value=value)

    async def _check_invariant(
        self, invariant: Callable[[], Awaitable[None] | None]
    ) -> Exception | None:
        try:
            result: object = invariant()
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return exc
        if result is not None:
            # A predicate's False would otherwise pass silently.
            raise TypeError(
                f"the invariant {callable_name(invariant)} must return None and raise "
                f"to report a broken invariant; it returned {result!r}"
            )
        return None

    def _timed_out(self) -> str:
        # Only a deadline ends a race early, but say something true without one too.
        deadline = "its deadline" if self.timeout is None else f"its {self.timeout:g}s deadline"
        pending = [index for index, outcome in enumerate(self.outcomes) if outcome is None]
        if pending:
            head = (
                f"{self.where} did not finish within {deadline}; {_calls(pending)} had not finished"
            )
        elif self.checking:
            head = (
                f"{self.where}: every call finished, but the invariant "
                f"{callable_name(self.invariant)} was still running at {deadline}"
            )
        else:
            head = (
                f"{self.where} did not finish within {deadline}; a call caught the "
                f"deadline's cancellation and finished late"
            )
        lines = [
            f"  call {index}: {state}" if outcome is None else f"  {outcome}"
            for index, (state, outcome) in enumerate(zip(self.states, self.outcomes, strict=True))
        ]
        return "\n".join([f"{head}:", *lines])


async def race(
    n: int,
    fn: Callable[[int], Awaitable[_T]],
    *,
    timeout: float | None = 10.0,
    invariant: Callable[[], Awaitable[None] | None] | None = None,
) -> RaceOutcomes[_T]:
    """
    Start ``n`` calls of ``fn`` concurrently, all at once, and return their outcomes.

    Each call runs in a task of its own and receives its index, ``0`` to ``n - 1``.
    No call starts until all ``n`` tasks are ready: they wait at a start barrier
    and are released together, so every call reaches its first ``await`` before
    any call gets further (on asyncio and on trio alike). A call's return value or
    :class:`Exception` becomes its :class:`CallOutcome`; state the law with a
    method of the result::

        outcomes = await race(2, lambda index: store.claim("run-1", "step"))
        winner = outcomes.exactly_one_wins(AlreadyClaimed)

    :param n: how many calls to start; at least 2.
    :param fn: called with each call's index; returns the awaitable to race.
    :param timeout: seconds the whole race, calls and invariant together, may
        take; ``None`` disables the deadline.
    :param invariant: the law "no call corrupts shared state": called (and awaited,
        if it returns an awaitable) once every call has finished, whatever the
        outcomes; it raises, an :class:`AssertionError` say, when the shared state
        is not what the calls' outcomes allow. It must return ``None``.
    :returns: the calls' outcomes, in start order.
    :raises LawViolation: when the deadline passed (the message says which calls
        had finished, with their outcomes, and which were still running or had
        not started), or when the invariant raised (chained from its exception;
        the message lists each call's outcome).
    :raises ValueError: if ``n`` is not an int of at least 2 or ``timeout`` is not
        a positive number or ``None``.
    :raises TypeError: if ``fn`` or ``invariant`` is not callable, or the
        invariant returned something other than ``None``.

    A call that raises a :class:`BaseException` that is not an :class:`Exception`
    (:class:`KeyboardInterrupt`, :class:`SystemExit`) cancels the other calls, and
    it propagates; so does a cancellation from outside the race.
    """
    n, timeout = _check_arguments("race", n, fn, timeout, invariant)
    state: _Race[_T] = _Race("race", n, fn, timeout, invariant)
    barrier = _StartBarrier(n)

    async def call(index: int) -> _T:
        await barrier.wait()
        state.started(index)
        return await fn(index)

    return await state.run(call)


async def race_in_threads(
    n: int,
    fn: Callable[[int], _T],
    *,
    timeout: float | None = 10.0,
    invariant: Callable[[], Awaitable[None] | None] | None = None,
) -> RaceOutcomes[_T]:
    """
    Call the sync ``fn`` in ``n`` worker threads at once, and return the outcomes.

    :func:`race` for code that blocks: each call runs in a daemon thread of its
    own, so a call that never returns cannot keep the process from exiting. No
    call starts until all ``n`` threads are ready:
    they wait at a :class:`threading.Barrier` and are released together, so the
    calls overlap for real, as far as the GIL lets them.

    A thread cannot be cancelled. When the deadline passes, or the race is
    cancelled, the calls still running are abandoned: their threads run on, and
    their results are dropped. A call still waiting at the barrier is released
    without calling ``fn``.

    :param n: how many calls to start; at least 2.
    :param fn: called in a worker thread with each call's index.
    :param timeout: seconds the whole race, calls and invariant together, may
        take; ``None`` disables the deadline.
    :param invariant: as for :func:`race`: called in the event loop's thread once
        every call has finished; it raises when the shared state is corrupt.
    :returns: the calls' outcomes, in start order.
    :raises LawViolation: when the deadline passed or the invariant raised, as for
        :func:`race`.
    :raises ValueError: if ``n`` is not an int of at least 2 or ``timeout`` is not
        a positive number or ``None``.
    :raises TypeError: if ``fn`` or ``invariant`` is not callable, or the
        invariant returned something other than ``None``.
    """
    n, timeout = _check_arguments("race_in_threads", n, fn, timeout, invariant)
    state: _Race[_T] = _Race("race_in_threads", n, fn, timeout, invariant)
    barrier = threading.Barrier(n)

    def in_thread(index: int) -> _T:
        # Raises BrokenBarrierError, once the race is over, in a thread that never
        # got past the barrier; its result is abandoned by then.
        barrier.wait()
        state.started(index)
        return fn(index)

    async def call(index: int) -> _T:
        # A daemon thread of the race's own, not a worker of anyio's pool: a call
        # that never returns is abandoned, and must not keep the process alive
        # (asyncio joins its worker threads when the event loop closes).
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        outcome: list[tuple[bool, object]] = []

        def target() -> None:
            try:
                outcome.append((True, in_thread(index)))
            except BaseException as exc:  # carried to the event loop, raised there
                outcome.append((False, exc))
            # RuntimeError: the event loop has ended, the race abandoned this call.
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(done.set, token=token)

        thread = threading.Thread(target=target, name=f"race_in_threads call {index}", daemon=True)
        thread.start()
        await done.wait()
        [(returned, value)] = outcome
        if returned:
            return cast("_T", value)
        raise cast("BaseException", value)

    try:
        return await state.run(call)
    finally:
        barrier.abort()
