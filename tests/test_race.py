"""The race law (conformkit.laws.race): concurrent calls behind a start barrier, and their laws."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Coroutine
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest

from conformkit import ContractDefinitionError, LawViolation
from conformkit.laws import CallOutcome, RaceOutcomes, race, race_in_threads

DEADLINE = 0.05
"""The deadline of the races here that are meant to overrun it: small, so they fail fast."""

FOREVER = 5.0
"""How long "forever" lasts here: a broken barrier fails a test instead of hanging it."""


class AlreadyClaimed(Exception):
    """What a claim store raises for a step that someone already claimed."""


class Interrupt(BaseException):
    """A BaseException that is not an Exception, as KeyboardInterrupt is."""


class RacyClaimStore:
    """The bug the law exists for: check, then await, then set; two claims can both win."""

    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], int] = {}

    async def claim(self, run_id: str, step: str) -> str:
        if (run_id, step) in self.claims:
            raise AlreadyClaimed("step taken")
        await anyio.lowlevel.checkpoint()  # a round trip to the database, say
        self.claims[run_id, step] = self.claims.get((run_id, step), 0) + 1
        return run_id


class AtomicClaimStore(RacyClaimStore):
    """Correct: the round trip comes first; checking and setting have no await between them."""

    async def claim(self, run_id: str, step: str) -> str:
        await anyio.lowlevel.checkpoint()
        if (run_id, step) in self.claims:
            raise AlreadyClaimed("step taken")
        self.claims[run_id, step] = 1
        return run_id


class LockedClaimStore(RacyClaimStore):
    """Correct: the racy check-then-set, under an anyio.Lock."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = anyio.Lock()

    async def claim(self, run_id: str, step: str) -> str:
        async with self._lock:
            return await super().claim(run_id, step)


class WrongErrorClaimStore(AtomicClaimStore):
    """Has one winner, but tells the loser with the wrong exception type."""

    async def claim(self, run_id: str, step: str) -> str:
        try:
            return await super().claim(run_id, step)
        except AlreadyClaimed:
            raise KeyError((run_id, step)) from None


class SyncClaimStore:
    """A blocking store whose claim checks, calls ``window()``, then sets: racy across threads."""

    def __init__(self, window: Callable[[], object]) -> None:
        self.claims: dict[tuple[str, str], int] = {}
        self._window = window

    def claim(self, run_id: str, step: str) -> str:
        if (run_id, step) in self.claims:
            raise AlreadyClaimed("step taken")
        self._window()
        self.claims[run_id, step] = self.claims.get((run_id, step), 0) + 1
        return run_id


class LockedSyncClaimStore(SyncClaimStore):
    """Correct: the same check-window-set, under a threading.Lock."""

    def __init__(self, window: Callable[[], object]) -> None:
        super().__init__(window)
        self._lock = threading.Lock()

    def claim(self, run_id: str, step: str) -> str:
        with self._lock:
            return super().claim(run_id, step)


def outcomes(*items: CallOutcome[str]) -> RaceOutcomes[str]:
    """Outcomes made by hand, for the laws that judge them."""
    return RaceOutcomes(items)


class TestExactlyOneWins:
    """RaceOutcomes.exactly_one_wins: one call wins, every other raises the given error."""

    @pytest.mark.anyio
    async def test_catches_a_check_then_set_race(self) -> None:
        """Both calls win against the racy store, and the message says what each call did."""
        store = RacyClaimStore()
        result = await race(2, lambda index: store.claim("run-1", "step"))
        with pytest.raises(LawViolation) as caught:
            result.exactly_one_wins(AlreadyClaimed)
        assert str(caught.value) == (
            "expected exactly one of 2 calls to succeed and the others to raise "
            "AlreadyClaimed, but 2 succeeded (calls 0 and 1):\n"
            "  call 0: returned 'run-1'\n"
            "  call 1: returned 'run-1'"
        )
        assert store.claims == {("run-1", "step"): 2}  # the race really happened

    @pytest.mark.anyio
    @pytest.mark.parametrize("store_class", [AtomicClaimStore, LockedClaimStore])
    async def test_passes_a_correct_store_and_returns_the_winner(
        self, store_class: type[RacyClaimStore]
    ) -> None:
        """A store that checks and sets atomically has one winner, which the law returns."""
        store = store_class()
        result = await race(3, lambda index: store.claim("run-1", "step"))
        winner = result.exactly_one_wins(AlreadyClaimed)
        assert winner.succeeded
        assert winner.value == "run-1"
        assert [outcome.succeeded for outcome in result].count(True) == 1
        assert store.claims == {("run-1", "step"): 1}

    @pytest.mark.anyio
    async def test_names_a_loser_that_raised_the_wrong_error(self) -> None:
        """A loser raising another type fails the law, naming the call, its error and the cause."""
        store = WrongErrorClaimStore()
        result = await race(2, lambda index: store.claim("run-1", "step"))
        loser = next(outcome for outcome in result if not outcome.succeeded)
        with pytest.raises(LawViolation) as caught:
            result.exactly_one_wins(AlreadyClaimed)
        message = str(caught.value)
        assert f"but call {loser.index} raised KeyError, not AlreadyClaimed:\n" in message
        assert f"  call {loser.index}: raised KeyError(('run-1', 'step'))" in message
        assert caught.value.__cause__ is loser.error

    def test_fails_when_no_call_succeeded(self) -> None:
        """Every call losing is not one winning: the law says none succeeded."""
        lost = outcomes(
            CallOutcome(0, error=AlreadyClaimed("step taken")),
            CallOutcome(1, error=AlreadyClaimed("step taken")),
        )
        with pytest.raises(LawViolation, match=r"but none succeeded:\n  call 0: raised "):
            lost.exactly_one_wins(AlreadyClaimed)

    def test_reports_every_problem_at_once(self) -> None:
        """Several winners and a wrong loser error are both named in one message."""
        mixed = outcomes(
            CallOutcome(0, value="a"),
            CallOutcome(1, error=ValueError("bad")),
            CallOutcome(2, value="b"),
        )
        with pytest.raises(LawViolation) as caught:
            mixed.exactly_one_wins(AlreadyClaimed)
        assert str(caught.value).splitlines()[0] == (
            "expected exactly one of 3 calls to succeed and the others to raise AlreadyClaimed, "
            "but 2 succeeded (calls 0 and 2) and call 1 raised ValueError, not AlreadyClaimed:"
        )

    def test_accepts_subclasses_and_tuples_of_loser_types(self) -> None:
        """The loser types match as in an except clause: subclasses and tuples count."""

        class StepTaken(AlreadyClaimed):
            """A more specific refusal."""

        result = outcomes(
            CallOutcome(0, error=StepTaken("taken")),
            CallOutcome(1, value="run-1"),
            CallOutcome(2, error=TimeoutError("lock wait")),
        )
        assert result.exactly_one_wins((AlreadyClaimed, TimeoutError)).index == 1
        with pytest.raises(LawViolation, match=r"call 2 raised TimeoutError, not AlreadyClaimed:"):
            result.exactly_one_wins(AlreadyClaimed)

    @pytest.mark.parametrize("loser", [AlreadyClaimed("x"), "AlreadyClaimed", (), (int,), None])
    def test_rejects_a_loser_that_is_not_exception_types(self, loser: object) -> None:
        """loser must be an exception type or a tuple of them: a one-line TypeError."""
        result = outcomes(CallOutcome(0, value="a"), CallOutcome(1, value="b"))
        with pytest.raises(TypeError, match=r"^loser must be an exception type or a tuple") as e:
            result.exactly_one_wins(cast("type[Exception]", loser))
        assert "\n" not in str(e.value)


class TestAllSucceed:
    """RaceOutcomes.all_succeed: every call returned."""

    @pytest.mark.anyio
    async def test_returns_the_values_in_start_order(self) -> None:
        """The values come back in call order, whatever order the calls finished in."""

        async def echo(index: int) -> int:
            for _ in range(3 - index):  # call 0 finishes last
                await anyio.lowlevel.checkpoint()
            return index * 10

        assert (await race(3, echo)).all_succeed() == [0, 10, 20]

    @pytest.mark.anyio
    async def test_fails_naming_each_call_that_raised(self) -> None:
        """One raising call fails the law; the message lists every call, chained to the error."""
        store = AtomicClaimStore()
        result = await race(2, lambda index: store.claim("run-1", "step"))
        loser = next(outcome for outcome in result if not outcome.succeeded)
        with pytest.raises(LawViolation) as caught:
            result.all_succeed()
        lines = str(caught.value).splitlines()
        assert lines[0] == f"expected all 2 calls to succeed, but 1 raised (call {loser.index}):"
        assert f"  call {loser.index}: raised AlreadyClaimed('step taken')" in lines
        assert caught.value.__cause__ is loser.error


class TestOutcomes:
    """RaceOutcomes and CallOutcome: an immutable, readable sequence in start order."""

    def test_describe_lists_each_call(self) -> None:
        """describe() and str() give one line per call: what it returned or raised."""
        result = outcomes(
            CallOutcome(0, value="run-1"), CallOutcome(1, error=AlreadyClaimed("step taken"))
        )
        expected = "call 0: returned 'run-1'\ncall 1: raised AlreadyClaimed('step taken')"
        assert result.describe() == expected
        assert str(result) == expected
        assert str(result[1]) == "call 1: raised AlreadyClaimed('step taken')"

    def test_is_a_sequence_of_outcomes(self) -> None:
        """Indexing, negative indices, slices, len and iteration behave as for a tuple."""
        first = CallOutcome(0, value="a")
        second: CallOutcome[str] = CallOutcome(1, error=AlreadyClaimed("x"))
        result = outcomes(first, second)
        assert len(result) == 2
        assert result[0] is first
        assert result[-1] is second
        assert result[1:] == (second,)
        assert list(result) == [first, second]
        assert second in result
        assert first.succeeded
        assert not second.succeeded
        assert second.value is None
        assert "RaceOutcomes([CallOutcome(index=0" in repr(result)

    def test_outcomes_are_immutable(self) -> None:
        """An outcome cannot be changed after the race, nor the sequence extended."""
        outcome = CallOutcome(0, value="a")
        with pytest.raises(AttributeError):  # frozen dataclass
            outcome.value = "b"  # type: ignore[misc]
        result = outcomes(outcome)
        with pytest.raises(TypeError):  # no item assignment on a Sequence
            result[0] = outcome  # type: ignore[index]
        with pytest.raises(AttributeError):  # slots: no new attributes
            result.extra = 1  # type: ignore[attr-defined]

    def test_can_be_made_with_explicit_type_arguments(self) -> None:
        """CallOutcome[int](...) and RaceOutcomes[int](...) work at run time, as in a type test."""
        outcome = CallOutcome[int](0, value=1)
        assert RaceOutcomes[int]([outcome]).all_succeed() == [1]

    def test_long_values_are_shortened(self) -> None:
        """A huge return value does not flood the message: its repr is cut, both ends shown."""
        line = str(CallOutcome(0, value="x" * 1000))
        assert line.startswith("call 0: returned 'xxx")
        assert "..." in line
        assert line.endswith("xxx'")
        assert len(line) <= len("call 0: returned ") + 200

    def test_big_containers_and_errors_are_shortened(self) -> None:
        """A huge list shows its first items only, and a long error its type and both ends."""
        listed = str(CallOutcome(0, value=list(range(100_000))))
        assert listed == "call 0: returned [0, 1, 2, 3, 4, 5, 6, 7, ...]"
        raised = str(CallOutcome(1, error=ValueError("y" * 1000)))
        assert raised.startswith("call 1: raised ValueError('yyy")
        assert raised.endswith("yyy')")
        assert len(raised) <= len("call 1: raised ") + 200


def _unstarted_siblings() -> tuple[int, int]:
    """How many other tasks of the caller's task group there are, and how many have not run."""
    current = anyio.get_current_task()
    siblings = [
        task
        for task in anyio.get_running_tasks()
        if task.parent_id == current.parent_id and task.id != current.id
    ]
    unstarted = [
        task
        for task in siblings
        if isinstance(task.coro, Coroutine)
        and inspect.getcoroutinestate(task.coro) == inspect.CORO_CREATED
    ]
    return len(siblings), len(unstarted)


class TestStartBarrier:
    """No call starts until every call is ready."""

    @pytest.mark.anyio
    async def test_the_probe_sees_tasks_that_have_not_run(self) -> None:
        """Control: without a barrier, the first call sees its siblings not yet started."""
        seen: dict[int, tuple[int, int]] = {}

        async def probe(index: int) -> None:
            seen[index] = _unstarted_siblings()
            await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as task_group:
            for index in range(4):
                task_group.start_soon(probe, index)
        # The call that runs first (which one is up to the scheduler) sees all 3 unstarted.
        assert max(seen.values()) == (3, 3)

    @pytest.mark.anyio
    async def test_no_call_starts_before_every_task_is_ready(self) -> None:
        """When any call starts, every other call's task has already run up to the barrier."""
        seen: dict[int, tuple[int, int]] = {}

        async def probe(index: int) -> None:
            seen[index] = _unstarted_siblings()
            await anyio.lowlevel.checkpoint()  # stay alive until every call has probed

        (await race(4, probe)).all_succeed()
        assert seen == dict.fromkeys(range(4), (3, 0))

    @pytest.mark.anyio
    async def test_every_call_reaches_its_first_await_before_any_goes_further(self) -> None:
        """The calls are released together: all start before any resumes from its first await."""
        sequence: list[str] = []

        async def step(index: int) -> None:
            sequence.append(f"start {index}")
            await anyio.lowlevel.checkpoint()
            sequence.append(f"resume {index}")

        (await race(3, step)).all_succeed()
        assert sorted(sequence[:3]) == ["start 0", "start 1", "start 2"]
        assert sorted(sequence[3:]) == ["resume 0", "resume 1", "resume 2"]

    @pytest.mark.anyio
    async def test_threads_are_inside_fn_together(self) -> None:
        """Every call of race_in_threads runs in its own thread, all n inside fn at once."""
        together = threading.Barrier(5, timeout=FOREVER)  # broken unless all 5 arrive

        def meet(index: int) -> int:
            together.wait()
            return threading.get_ident()

        threads = (await race_in_threads(5, meet)).all_succeed()
        assert len(set(threads)) == 5


class TestDeadline:
    """The whole race runs under a deadline that names the calls still running."""

    @pytest.mark.anyio
    async def test_names_the_calls_still_running(self) -> None:
        """On expiry, the message gives each finished call's outcome and names the stuck ones."""

        async def stuck(index: int) -> str:
            if index == 0:
                return "done"
            if index == 1:
                raise AlreadyClaimed("step taken")
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        # Long enough that calls 0 and 1 surely finish first, even on a loaded machine.
        with pytest.raises(LawViolation) as caught:
            await race(4, stuck, timeout=0.5)
        lines = str(caught.value).splitlines()
        assert lines[0].startswith("race(4, ")
        assert lines[0].endswith(
            "stuck) did not finish within its 0.5s deadline; calls 2 and 3 had not finished:"
        )
        assert lines[1:] == [
            "  call 0: returned 'done'",
            "  call 1: raised AlreadyClaimed('step taken')",
            "  call 2: still running",
            "  call 3: still running",
        ]

    @pytest.mark.anyio
    async def test_names_the_threads_still_running(self) -> None:
        """A blocked thread is abandoned at the deadline and named as still running."""
        release = threading.Event()

        def blocked(index: int) -> int:
            if index == 1:
                release.wait(FOREVER)
            return index

        try:
            with pytest.raises(LawViolation) as caught:
                # Long enough for call 0's thread to start and return on a loaded machine.
                await race_in_threads(2, blocked, timeout=0.5)
        finally:
            release.set()
        lines = str(caught.value).splitlines()
        assert lines[0].startswith("race_in_threads(2, ")
        assert lines[0].endswith("call 1 had not finished:")
        assert lines[1:] == ["  call 0: returned 0", "  call 1: still running"]

    @pytest.mark.anyio
    async def test_a_call_that_swallows_the_cancellation_still_overran(self) -> None:
        """Returning late after catching the deadline's cancellation is no pass."""

        async def stubborn(index: int) -> str:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                return "late"  # the bug under test: it swallows the cancellation
            raise AssertionError("unreachable")

        with pytest.raises(LawViolation) as caught:
            # Long enough for both calls to start waiting on a loaded machine.
            await race(2, stubborn, timeout=0.5)
        lines = str(caught.value).splitlines()
        assert lines[0].endswith("caught the deadline's cancellation and finished late:")
        assert lines[1:] == ["  call 0: returned 'late'", "  call 1: returned 'late'"]

    @pytest.mark.anyio
    async def test_covers_the_invariant(self) -> None:
        """An invariant that hangs overruns the same deadline, and the message says so."""

        async def hang() -> None:
            await anyio.sleep_forever()

        async def returns(index: int) -> int:
            return index

        # Long enough for both calls to finish first on a loaded machine.
        with pytest.raises(LawViolation, match=r"every call finished, but the invariant .*hang"):
            await race(2, returns, timeout=0.5, invariant=hang)

    @pytest.mark.anyio
    async def test_none_disables_the_deadline(self) -> None:
        """timeout=None runs the race without a deadline."""

        async def returns(index: int) -> int:
            return index

        assert (await race(2, returns, timeout=None)).all_succeed() == [0, 1]


class Counter:
    """Shared state for the invariant: a counter each call increments."""

    def __init__(self) -> None:
        self.value = 0

    async def increment_racily(self) -> None:
        value = self.value
        await anyio.lowlevel.checkpoint()  # the lost update happens here
        self.value = value + 1

    async def increment(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.value += 1


class TestInvariant:
    """The invariant: no call corrupts shared state."""

    @pytest.mark.anyio
    async def test_catches_a_lost_update(self) -> None:
        """A counter incremented across an await loses updates; the invariant fails the race."""
        counter = Counter()

        def counted() -> None:
            assert counter.value == 3, f"counter is {counter.value}, expected 3"

        with pytest.raises(LawViolation) as caught:
            await race(3, lambda index: counter.increment_racily(), invariant=counted)
        lines = str(caught.value).splitlines()
        # pytest's explanation of its rewritten assert follows, on the same line.
        assert (
            "the invariant TestInvariant.test_catches_a_lost_update.<locals>.counted failed "
            "after every call finished: AssertionError: counter is 1, expected 3 assert 1 == 3"
        ) in lines[0]
        assert lines[1:] == [f"  call {index}: returned None" for index in range(3)]
        assert isinstance(caught.value.__cause__, AssertionError)

    @pytest.mark.anyio
    async def test_passes_atomic_updates_and_runs_after_every_call(self) -> None:
        """An async invariant runs once every call has finished, and passes a sound counter."""
        counter = Counter()
        checked: list[int] = []

        async def counted() -> None:
            checked.append(counter.value)
            assert counter.value == 3

        result = await race(3, lambda index: counter.increment(), invariant=counted)
        assert result.all_succeed() == [None, None, None]
        assert checked == [3]

    @pytest.mark.anyio
    async def test_runs_after_calls_that_raised(self) -> None:
        """The invariant is checked whatever the outcomes, losers included."""
        store = AtomicClaimStore()
        checked: list[dict[tuple[str, str], int]] = []
        await race(
            2,
            lambda index: store.claim("run-1", "step"),
            invariant=lambda: checked.append(dict(store.claims)),
        )
        assert checked == [{("run-1", "step"): 1}]

    @pytest.mark.anyio
    async def test_rejects_an_invariant_that_returns_a_verdict(self) -> None:
        """An invariant must raise, not return False: a returned value is a TypeError."""

        async def returns(index: int) -> int:
            return index

        with pytest.raises(TypeError, match=r"must return None and raise .* it returned False$"):
            await race(2, returns, invariant=cast("Callable[[], None]", lambda: False))


class TestThreads:
    """race_in_threads: the same laws for code that blocks in threads."""

    @pytest.mark.anyio
    async def test_catches_a_thread_level_check_then_set_race(self) -> None:
        """Both threads check before either sets, held in the window by a barrier: both win."""
        window = threading.Barrier(2, timeout=FOREVER)
        store = SyncClaimStore(window.wait)
        result = await race_in_threads(2, lambda index: store.claim("run-1", "step"))
        with pytest.raises(LawViolation, match=r"but 2 succeeded \(calls 0 and 1\):"):
            result.exactly_one_wins(AlreadyClaimed)
        assert store.claims == {("run-1", "step"): 2}

    @pytest.mark.anyio
    async def test_passes_a_store_under_a_threading_lock(self) -> None:
        """The same window, under a threading.Lock: one winner, the others AlreadyClaimed."""
        store = LockedSyncClaimStore(lambda: threading.Event().wait(0.005))
        result = await race_in_threads(4, lambda index: store.claim("run-1", "step"))
        assert result.exactly_one_wins(AlreadyClaimed).value == "run-1"
        assert store.claims == {("run-1", "step"): 1}

    @pytest.mark.anyio
    async def test_invariant_runs_after_the_threads(self) -> None:
        """The invariant sees the shared state once every thread has finished."""
        lock = threading.Lock()
        total: list[int] = []

        def add(index: int) -> None:
            with lock:
                total.append(index)

        def complete() -> None:
            assert sorted(total) == [0, 1, 2]

        await race_in_threads(3, add, invariant=complete)

        def incomplete() -> None:
            assert len(total) == 99, "not every call added its index"

        with pytest.raises(LawViolation, match=r"AssertionError: not every call added its index"):
            await race_in_threads(3, add, invariant=incomplete)

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_call_that_never_returns_does_not_keep_the_process_alive(self, backend: str) -> None:
        """After the verdict, the process exits although one thread is stuck for good."""
        code = textwrap.dedent(
            f"""
            import sys, threading, anyio
            from conformkit import LawViolation
            from conformkit.laws import race_in_threads

            stuck = threading.Event()

            def fn(index):
                if index == 0:
                    stuck.wait()
                return index

            async def main():
                try:
                    await race_in_threads(2, fn, timeout=0.2)
                except LawViolation as exc:
                    print(str(exc).splitlines()[0])

            anyio.run(main, backend={backend!r})
            print("exited")
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "race_in_threads(2, fn) did not finish within its 0.2s deadline; "
            "call 0 had not finished:",
            "exited",
        ]


class TestPropagation:
    """What is not an outcome propagates: interrupts and outside cancellation."""

    @pytest.mark.anyio
    async def test_base_exceptions_propagate_unwrapped(self) -> None:
        """A call raising a BaseException that is no Exception stops the race; it propagates."""

        async def interrupted(index: int) -> None:
            if index == 1:
                raise Interrupt
            await anyio.sleep_forever()

        with anyio.fail_after(FOREVER), pytest.raises(Interrupt):  # not in an exception group
            await race(3, interrupted)

    @pytest.mark.anyio
    async def test_outside_cancellation_propagates(self) -> None:
        """Cancelling the caller cancels the race: no LawViolation, no outcomes."""

        async def forever(index: int) -> None:
            await anyio.sleep_forever()

        with anyio.move_on_after(DEADLINE) as scope:
            await race(2, forever, timeout=None)
        assert scope.cancelled_caught

    @pytest.mark.anyio
    async def test_outside_cancellation_abandons_threads(self) -> None:
        """Cancelling a race in threads returns at once; the blocked threads are abandoned."""
        release = threading.Event()
        try:
            with anyio.move_on_after(DEADLINE) as scope:
                await race_in_threads(2, lambda index: release.wait(FOREVER), timeout=None)
        finally:
            release.set()
        assert scope.cancelled_caught


async def _returns(index: int) -> int:
    return index


BAD_NS: list[object] = [1, 0, -2, True, 2.0, "2", None]
BAD_TIMEOUTS: list[object] = [0, -1.0, math.nan, "1", True]


class TestArguments:
    """Bad arguments give one-line errors naming the argument."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("n", BAD_NS)
    async def test_n_must_be_an_int_of_at_least_two(self, n: object) -> None:
        """n is checked for both functions."""
        for function in (race, race_in_threads):
            with pytest.raises(ValueError, match=r"^n must be an int of at least 2") as caught:
                await function(cast("int", n), cast("Any", _returns))
            assert repr(n) in str(caught.value)
            assert "\n" not in str(caught.value)

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", BAD_TIMEOUTS)
    async def test_timeout_must_be_positive_or_none(self, timeout: object) -> None:
        """timeout is a positive number of seconds or None, as everywhere in conformkit."""
        for function in (race, race_in_threads):
            with pytest.raises(
                ContractDefinitionError, match=r"^timeout must be a positive, finite number"
            ) as caught:
                await function(2, cast("Any", _returns), timeout=cast("float", timeout))
            assert "\n" not in str(caught.value)

    @pytest.mark.anyio
    async def test_fn_and_invariant_must_be_callable(self) -> None:
        """A fn or invariant that cannot be called is a TypeError naming it."""
        for name, function in (("race", race), ("race_in_threads", race_in_threads)):
            with pytest.raises(TypeError, match=rf"^{name}\(\) needs fn to be a callable"):
                await function(2, cast("Any", "claim"))
            with pytest.raises(TypeError, match=r"^invariant must be a callable"):
                await function(2, cast("Any", _returns), invariant=cast("Any", True))
