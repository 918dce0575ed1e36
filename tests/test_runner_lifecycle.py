"""
What a run does over each case's life, and reports of it: how long each case took,
whatever its outcome; an interrupt in one lane; stages that return late or are
interrupted; the deadline of each stage; background work that outlives its join.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import threading
import time
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol

import anyio
import pytest

import conformkit as ck
from conformkit._watchdog import Watch, set_stuck_hook
from test_runner import SHORT, Case, Gate, Probe, Rig, deaf_until, passing, plain, rig, statuses

PAUSE = 0.03  # seconds each stage of a timed case sleeps
FAILED = ck.CaseStatus.FAILED
PASSED = ck.CaseStatus.PASSED
UNSUPPORTED = ck.CaseStatus.UNSUPPORTED
UNAVAILABLE = ck.CaseStatus.UNAVAILABLE

RUN_DEADLINE = ": the run's timeout= (--timeout); pass a larger one to allow more time"
"""What a reason says of an overrun of the run's own timeout=."""
RUN_DEADLINE_RE = re.escape(RUN_DEADLINE)


class Pinger(Protocol):
    async def ping(self) -> None: ...


class Pings:
    """The API of the timed cases: one operation, so that a run can record calls."""

    async def ping(self) -> None:
        await anyio.lowlevel.checkpoint()


def timed_run(
    case: Callable[[Pinger], Awaitable[None]],
    *,
    cases: int = 1,
    create_raises: BaseException | None = None,
    cleanup_raises: BaseException | None = None,
    unsupported: dict[str, str] | None = None,
) -> tuple[ck.FeatureImplementation[Pinger], ck.ContractSuite[Pinger]]:
    """
    An implementation whose create() and async cleanup each sleep PAUSE, and a suite
    whose case "timed" is ``case``; with ``cases=2``, a passing case "other" follows.
    """
    timed_feature = ck.Feature[Pinger]("test.durations", cases=("timed", "other")[:cases])

    class Timed(ck.FeatureImplementation[Pinger]):
        feature = timed_feature
        coverage = timed_feature.coverage(unsupported=unsupported or {})

        async def create(self, scope: ck.FeatureScope) -> Pinger:
            async def cleanup() -> None:
                await anyio.sleep(PAUSE)
                if cleanup_raises is not None:
                    raise cleanup_raises

            scope.defer(cleanup)
            await anyio.sleep(PAUSE)
            if create_raises is not None:
                raise create_raises
            return Pings()

    async def other(api: Pinger) -> None:
        await api.ping()

    functions = {"timed": case, "other": other}
    return Timed(), ck.ContractSuite(
        timed_feature, {name: functions[name] for name in timed_feature.cases}
    )


async def pings(api: Pinger) -> None:
    await anyio.sleep(PAUSE)
    await api.ping()


async def fails(api: Pinger) -> None:
    await anyio.sleep(PAUSE)
    await api.ping()
    raise AssertionError("wrong answer")


async def finds_unsupported(api: Pinger) -> None:
    await anyio.sleep(PAUSE)
    await api.ping()
    raise ck.CaseUnsupported("the store keeps no such field")


async def never_calls(api: Pinger) -> None:
    await anyio.sleep(PAUSE)


# outcome: (case, options of timed_run, options of run_contract, status, stages slept)
OUTCOMES: dict[str, tuple[Any, dict[str, Any], dict[str, Any], ck.CaseStatus, int]] = {
    "passed": (pings, {}, {}, PASSED, 3),
    "passed-recorded": (pings, {}, {"reject_vacuous": True}, PASSED, 3),
    "vacuous": (never_calls, {}, {"reject_vacuous": True}, FAILED, 3),
    "failed": (fails, {}, {}, FAILED, 3),
    "failed-cleanup": (pings, {"cleanup_raises": ValueError("no")}, {}, FAILED, 3),
    "failed-create": (pings, {"create_raises": ValueError("no")}, {}, FAILED, 2),
    "unavailable": (pings, {"create_raises": ck.FeatureUnavailable("down")}, {}, UNAVAILABLE, 2),
    "found-unsupported": (finds_unsupported, {}, {}, UNSUPPORTED, 3),
    "probed-stale": (
        pings, {"unsupported": {"timed": "no pings"}}, {"probe_unsupported": True}, UNSUPPORTED, 3
    ),
    "probed-failing": (
        fails, {"unsupported": {"timed": "no pings"}}, {"probe_unsupported": True}, UNSUPPORTED, 3
    ),
}  # fmt: skip


class TestArming:
    """Each stage is armed and disarmed through the watch's own start() and stop()."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("runner", ["run_contract", "case.run"])
    async def test_every_stage_is_armed_by_watch_start_and_disarmed_by_stop(
        self, runner: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """create, the case and each cleanup, sync or async, start and stop through Watch."""
        events: list[str] = []
        start, start_case, stop = Watch.start, Watch.start_case, Watch.stop

        def recorded_start(watch: Watch, stage: str, due: float) -> None:
            events.append(stage)
            start(watch, stage, due)

        def recorded_start_case(watch: Watch, case_id: str, timeout: float, due: float) -> None:
            events.append(f"create {case_id}")
            start_case(watch, case_id, timeout, due)

        def recorded_stop(watch: Watch) -> None:
            if events and events[-1] != "stop":  # a stage ended: stopping again changes nothing
                events.append("stop")
            stop(watch)

        monkeypatch.setattr(Watch, "start", recorded_start)
        monkeypatch.setattr(Watch, "start_case", recorded_start_case)
        monkeypatch.setattr(Watch, "stop", recorded_stop)

        async def async_cleanup(number: int, scope: ck.FeatureScope) -> None:
            async def later() -> None:
                await anyio.lowlevel.checkpoint()

            scope.defer(later)

        r = rig({"one": passing("one"), "two": passing("two")}, on_create=async_cleanup)
        if runner == "run_contract":
            report = await ck.run_contract(r.implementation, r.suite)
            assert statuses(report) == [PASSED, PASSED]
        else:
            for case in ck.contract_cases(r.implementation, r.suite):
                await case.run()
        # The async cleanup, registered last, runs first.
        each_case = ["case", "stop", "cleanup", "stop", "cleanup", "stop"]
        assert events == ["create one", *each_case, "create two", *each_case]


class TestDurations:
    """
    A case's duration runs from its create() to the end of its last cleanup, whatever
    its outcome: never less than the time its stages slept, never more than the run.
    Both bounds hold on any machine, however loaded.
    """

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    @pytest.mark.parametrize("outcome", list(OUTCOMES))
    async def test_a_duration_spans_every_stage_of_its_case(
        self, outcome: str, timeout: float | None, cases: int
    ) -> None:
        case, rig_options, run_options, status, stages = OUTCOMES[outcome]
        implementation, suite = timed_run(case, cases=cases, **rig_options)
        began = time.perf_counter()
        report = await ck.run_contract(implementation, suite, timeout=timeout, **run_options)
        wall = time.perf_counter() - began
        result = report["timed"]
        assert result.status is status, result.reason
        assert stages * PAUSE * 0.9 <= result.duration <= wall

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_a_case_that_overran_lasted_past_its_deadline(self, cases: int) -> None:
        async def hangs(api: Pinger) -> None:
            await anyio.sleep_forever()

        implementation, suite = timed_run(hangs, cases=cases)
        began = time.perf_counter()
        deadline = 0.5  # far more than a PAUSE, even on a loaded machine
        report = await ck.run_contract(implementation, suite, timeout=deadline)
        wall = time.perf_counter() - began
        result = report["timed"]
        assert result.status is FAILED
        assert "stage 'case' exceeded the 0.5s deadline" in (result.reason or "")
        assert (2 * PAUSE + deadline) * 0.9 <= result.duration <= wall


class TestInterruptsUnderConcurrency:
    """KeyboardInterrupt in one lane stops every lane: the run re-raises the first one."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    async def test_an_interrupt_in_one_of_eight_lanes_stops_the_others(
        self, timeout: float | None
    ) -> None:
        """The cases in flight are cancelled and disposed; no case starts after the interrupt."""
        raised = KeyboardInterrupt()
        gate = Gate(8)

        async def interrupting(api: Probe) -> None:
            await gate.wait()
            raise raised

        async def waiting(api: Probe) -> None:
            await gate.wait()
            await anyio.sleep_forever()

        cases: dict[str, Case] = {"interrupting": interrupting}
        cases.update((f"waiting_{number}", waiting) for number in range(15))
        r = rig(cases)
        with anyio.fail_after(60):  # a lane left running would hang the test: fail instead
            with pytest.raises(KeyboardInterrupt) as excinfo:
                await ck.run_contract(r.implementation, r.suite, timeout=timeout, max_concurrency=8)
        assert excinfo.value is raised
        assert sorted(r.entries("create")) == sorted(f"create {n}" for n in range(8))
        assert sorted(r.entries("cleanup")) == sorted(f"cleanup {n}" for n in range(8))

    @pytest.mark.anyio
    async def test_the_first_interrupt_propagates_and_a_later_one_is_noted(self) -> None:
        """A cancelled case's cleanup raising KeyboardInterrupt too: it is in the first's notes."""
        first = KeyboardInterrupt("first")
        second = KeyboardInterrupt("second")
        gate = Gate(2)

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number == 1:

                def interrupts() -> None:
                    raise second

                scope.defer(interrupts)

        async def interrupting(api: Probe) -> None:
            await gate.wait()
            await anyio.lowlevel.checkpoint()
            raise first

        async def waiting(api: Probe) -> None:
            await gate.wait()
            await anyio.sleep_forever()

        r = rig({"interrupting": interrupting, "waiting": waiting}, on_create=on_create)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            await ck.run_contract(r.implementation, r.suite, max_concurrency=2)
        assert excinfo.value is first
        # The case's own cancellation, the run's doing, is no failure to note.
        assert excinfo.value.__notes__ == ["case 'waiting': KeyboardInterrupt: second"]
        assert sorted(r.entries("cleanup")) == ["cleanup 0", "cleanup 1"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    async def test_the_cleanup_failures_of_the_cases_it_cancelled_are_noted(
        self, timeout: float | None
    ) -> None:
        """A case cancelled by another lane's interrupt: its failed cleanup is in the notes."""
        raised = KeyboardInterrupt()
        gate = Gate(2)

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number == 1:

                def fails() -> None:
                    raise ValueError("cleanup of the cancelled case failed")

                scope.defer(fails)

        async def interrupting(api: Probe) -> None:
            await gate.wait()
            await anyio.lowlevel.checkpoint()
            raise raised

        async def waiting(api: Probe) -> None:
            await gate.wait()
            await anyio.sleep_forever()

        r = rig({"interrupting": interrupting, "waiting": waiting}, on_create=on_create)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            await ck.run_contract(r.implementation, r.suite, timeout=timeout, max_concurrency=2)
        assert excinfo.value is raised
        assert excinfo.value.__notes__ == [
            "case 'waiting': ValueError: cleanup of the cancelled case failed"
        ]
        assert sorted(r.entries("cleanup")) == ["cleanup 0", "cleanup 1"]


def holding_rig(
    stage: str, cases: int, *, seconds: float = 0.0, hold: Callable[[], None] | None = None
) -> Rig:
    """
    Case "held" holds the event loop in ``stage``, ``seconds`` or as long as ``hold()``
    runs; "after" follows, if 2 cases.
    """

    def held() -> None:
        if hold is not None:
            hold()
        else:
            time.sleep(seconds)

    async def on_create(number: int, scope: ck.FeatureScope) -> None:
        if number != 0:
            return
        if stage == "create":
            held()
        if stage == "cleanup":
            scope.defer(held)

    def holding(api: Probe) -> None:
        if stage == "case":
            held()

    names = ("held", "after")[:cases]
    return rig(
        {name: holding if name == "held" else passing(name) for name in names}, on_create=on_create
    )


class TestLateStages:
    """A stage that returns by itself after its deadline fails; its reason says why it was late."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    @pytest.mark.parametrize("stage", ["create", "case"])
    async def test_sync_code_that_held_the_loop_past_the_deadline(
        self, stage: str, cases: int
    ) -> None:
        """Blocking 1.2s under a 1s deadline (interrupted only after 1s more): it blocked."""
        r = holding_rig(stage, cases, seconds=1.2)
        began = time.perf_counter()
        report = await ck.run_contract(r.implementation, r.suite, timeout=1.0)
        wall = time.perf_counter() - began
        reason = report["held"].reason or ""
        assert report["held"].status is FAILED
        found = re.search(
            rf"stage '{stage}' exceeded the 1s deadline \(ran (\d+\.\d)s; sync code blocked the "
            r"event loop\)" + RUN_DEADLINE_RE + "$",
            reason,
        )
        assert found, reason
        assert 1.2 <= float(found[1]) <= wall + 0.05

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_a_stage_that_swallowed_its_cancellation(self, cases: int) -> None:
        """Cancelled at its deadline, a case that returns anyway did not answer its cancellation."""

        async def swallows(api: Probe) -> None:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                pass  # deliberately not re-raised: the defect under test

        names = ("swallows", "after")[:cases]
        r = rig({name: swallows if name == "swallows" else passing(name) for name in names})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        reason = report["swallows"].reason or ""
        assert report["swallows"].status is FAILED
        assert re.search(
            r"stage 'case' exceeded the 0\.3s deadline \(ran \d+\.\ds; it did not answer its "
            r"cancellation\)" + RUN_DEADLINE_RE + "$",
            reason,
        ), reason

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    @pytest.mark.parametrize("stage", ["create", "case", "cleanup"])
    async def test_sync_code_interrupted_past_its_grace_ran_that_long(
        self, stage: str, cases: int
    ) -> None:
        """
        Blocking far past deadline and grace: interrupted, it ran at least both, and
        its blocking call was cut short (the run is on the main thread: a signal ends it).
        """
        seconds = 60.0
        r = holding_rig(stage, cases, seconds=seconds)  # interrupted long before
        began = time.perf_counter()
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        wall = time.perf_counter() - began
        reason = report["held"].reason or ""
        what = "cleanup holding_rig.<locals>.held" if stage == "cleanup" else f"stage {stage!r}"
        found = re.search(
            rf"{what} exceeded the 0\.3s deadline \((stage 'cleanup'; )?ran (\d+\.\d)s; sync "
            r"code blocked the event loop; interrupted in [^()]*held at "
            r"test_runner_lifecycle\.py:\d+",
            reason,
        )
        assert found, reason
        assert 2 * SHORT <= float(found[2]) <= wall + 0.05  # the deadline, then the grace
        assert float(found[2]) < seconds  # not once the call returned by itself
        if cases == 2:
            assert report["after"].status is PASSED

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_a_cancelled_overrun_says_where_the_case_was(self, cases: int) -> None:
        """Where the deadline's cancellation found the case, when that is in the code under test."""

        async def waits(api: Probe) -> None:
            await anyio.sleep_forever()

        names = ("waits", "after")[:cases]
        r = rig({name: waits if name == "waits" else passing(name) for name in names})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        reason = report["waits"].reason or ""
        assert re.search(
            r"exceeded the 0\.3s deadline \(cancelled in waits at test_runner_lifecycle\.py:\d+"
            r"[^()]*\)" + RUN_DEADLINE_RE + "$",  # innermost frame first
            reason,
        ), reason
        error = report["waits"].error
        assert isinstance(error, TimeoutError)
        assert not hasattr(error, "__notes__")  # it was not stuck: no stack to show

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_a_cancelled_overrun_in_library_code_says_only_the_deadline(
        self, cases: int
    ) -> None:
        """A case that returns a library's coroutine has no frame of its own to name."""
        names = ("sleeps", "after")[:cases]

        def sleeps(api: Probe) -> Awaitable[None]:
            return anyio.sleep_forever()  # its own frame has returned when it waits

        r = rig({name: sleeps if name == "sleeps" else passing(name) for name in names})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        reason = plain(report["sleeps"].reason)  # under tools/mutation.py, the trampolines'
        assert report["sleeps"].status is FAILED
        assert reason.endswith("stage 'case' exceeded the 0.3s deadline" + RUN_DEADLINE), reason


class TestBackgroundWorkOutlivingItsJoin:
    """A run of one case waits for background work that outlived its join, as a task group would."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run"])
    async def test_a_cancelled_run_still_waits_for_the_work_to_end(self, runner: str) -> None:
        """Cancelled while it waits for that work, the run ends only after the work ended."""
        started = anyio.Event()
        release = anyio.Event()
        order: list[str] = []

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            async def stubborn() -> None:
                started.set()
                await deaf_until(release)
                order.append("work ended")

            scope.start_soon(stubborn)

        async def awaiting_its_work(api: Probe) -> None:
            await started.wait()

        r = rig({"stubborn": awaiting_its_work}, on_create=on_create)

        async def cancel_then_release(outer: anyio.CancelScope) -> None:
            # The join waits SHORT, then SHORT again for work it interrupts.
            await anyio.sleep(3 * SHORT)
            outer.cancel()
            await anyio.sleep(SHORT)
            release.set()

        async with anyio.create_task_group() as task_group:
            with anyio.CancelScope() as outer:
                task_group.start_soon(cancel_then_release, outer)
                if runner == "run_contract":
                    report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
                    assert statuses(report) == [FAILED]
                    [timeout] = report["stubborn"].cleanup_errors
                    assert "background work did not finish" in str(timeout)
                else:
                    [case] = ck.contract_cases(r.implementation, r.suite, timeout=SHORT)
                    with pytest.raises(ExceptionGroup) as excinfo:
                        await case.run()
                    [timeout] = excinfo.value.exceptions
                    assert "background work did not finish" in str(timeout)
            order.append("run ended")
        assert order == ["work ended", "run ended"]


class TestWatchdog:
    """The run's one watchdog acts on every lane's deadline, whatever the other lanes do."""

    @pytest.mark.frames
    @pytest.mark.anyio
    async def test_a_lane_past_an_idle_one_is_still_watched(self) -> None:
        """The second lane's case is cancelled at its deadline though the first lane is idle."""

        async def waits(api: Probe) -> None:
            await anyio.sleep_forever()

        r = rig({"quick": passing("quick"), "waits": waits})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT, max_concurrency=2)
        assert statuses(report) == [PASSED, FAILED]
        reason = report["waits"].reason or ""
        assert re.search(
            r"exceeded the 0\.3s deadline \(cancelled in waits at test_runner_lifecycle\.py:\d+"
            r"[^()]*\)" + RUN_DEADLINE_RE + "$",  # innermost frame first
            reason,
        ), reason

    @pytest.mark.anyio
    async def test_a_stage_that_outlives_its_cancellation_leaves_the_watchdog_working(
        self,
    ) -> None:
        """A case waiting shielded long past its deadline fails; the next case runs and passes."""

        async def shielded(api: Probe) -> None:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(5 * SHORT)

        r = rig({"shielded": shielded, "after": passing("after")})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert statuses(report) == [FAILED, PASSED]
        assert "stage 'case' exceeded the 0.3s deadline" in (report["shielded"].reason or "")

    @pytest.mark.anyio
    @pytest.mark.parametrize("max_concurrency", [1, 2])
    async def test_a_deadline_armed_while_the_watchdog_sleeps_is_kept(
        self, max_concurrency: int
    ) -> None:
        """
        A stage armed after the watchdog went to sleep is cancelled at its own
        deadline, not when the watchdog next wakes by itself, up to a timeout later.

        No wall-clock bound: the case under test ("last") sets a timer of its own at
        1.5 deadlines and records whether that timer ended its wait. The first cases
        hang until the watchdog cancels them; in that same pass, with no other stage
        armed, it goes to sleep for a whole timeout. Their cleanups take a quarter
        of a timeout, and only then does "last" arm its deadline: a quarter of a
        timeout before the watchdog wakes by itself (a moment would not do: the
        watchdog oversleeps by a moment). Kept, that deadline fires half a timeout
        before the case's own timer; missed, the watchdog's next pass comes a whole
        timeout later, a quarter of a timeout after the case's timer. Two timers
        of one event loop fire in the order of their deadlines however loaded the
        machine is; only the quarter of a timeout the cleanups take could stretch.
        """
        timeout = 0.5
        own_timer: list[str] = []

        async def hangs(api: Probe) -> None:
            await anyio.sleep_forever()

        async def last(api: Probe) -> None:
            with anyio.move_on_after(1.5 * timeout) as own:
                await anyio.sleep_forever()
            if own.cancelled_caught:
                own_timer.append("last")

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number < max_concurrency:  # a first case's
                scope.defer(functools.partial(anyio.sleep, timeout / 4))

        firsts = {f"first{lane}": hangs for lane in range(max_concurrency)}
        r = rig({**firsts, "last": last}, on_create=on_create)
        report = await ck.run_contract(
            r.implementation, r.suite, timeout=timeout, max_concurrency=max_concurrency
        )
        assert statuses(report) == [FAILED] * (max_concurrency + 1)
        assert own_timer == []  # the deadline came first
        reason = report["last"].reason or ""
        assert "stage 'case' exceeded the 0.5s deadline (cancelled in last" in reason, reason


class TestStageDeadlines:
    """Each stage has a deadline of its own, whatever the stages before it did."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_create_and_case_each_get_the_whole_deadline(self, cases: int) -> None:
        """A create and a case each taking 0.55 of the deadline pass: 1.1 deadlines in all."""
        # Two stages that take more than one deadline together leave each at most twice
        # the time it needs: a long deadline makes that 1.8 s, which no load takes away.
        timeout = 4.0

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            await anyio.sleep(0.55 * timeout)

        async def slow(api: Probe) -> None:
            await anyio.sleep(0.55 * timeout)

        names = ("slow", "other")[:cases]
        r = rig({name: slow for name in names}, on_create=on_create)
        report = await ck.run_contract(
            r.implementation, r.suite, timeout=timeout, max_concurrency=cases
        )
        assert statuses(report) == [PASSED] * cases, [result.reason for result in report.results]

    @pytest.mark.frames
    @pytest.mark.anyio
    async def test_an_overrun_cleanup_leaves_the_next_case_its_own_grace(self) -> None:
        """After a case whose async cleanup ignored its deadline, the next case's overrun is
        an ordinary one: cancelled where it waited, not taken as stuck at once."""

        async def deaf() -> None:
            while True:  # swallows every cancellation: interrupted past its grace
                try:
                    await anyio.sleep_forever()
                except anyio.get_cancelled_exc_class():
                    pass

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number == 0:
                scope.defer(deaf)

        async def waits(api: Probe) -> None:
            await anyio.sleep_forever()

        r = rig({"first": passing("first"), "waits": waits}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert statuses(report) == [FAILED, FAILED]
        assert "cleanup" in (report["first"].reason or "")
        reason = report["waits"].reason or ""
        assert re.search(
            r"stage 'case' exceeded the 0\.3s deadline \(cancelled in waits at "
            r"test_runner_lifecycle\.py:\d+[^()]*\)"
            + RUN_DEADLINE_RE
            + "$",  # innermost frame first
            reason,
        ), reason


class TestStuckStages:
    """A stage interrupted past its grace fails with where it was stuck, starting in its code."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_the_timeout_notes_the_stack_from_the_code_under_test(self, cases: int) -> None:
        r = holding_rig("case", cases, seconds=5.0)  # interrupted long before
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        error = report["held"].error
        assert isinstance(error, TimeoutError)
        [note] = error.__notes__
        assert note.startswith("where it was stuck:\n"), note
        frames = re.findall(r'File "([^"]+)", line \d+, in (\w+)', note)
        if os.environ.get("CONFORMKIT_MUTATION"):
            # Under tools/mutation.py each of conformkit's functions is called through
            # mutmut's trampoline, where the trim stops: the case's caller stays.
            frames = [frame for frame in frames if not frame[0].endswith("trampoline.py")]
            if re.fullmatch(r"x__call_sync__mutmut_(orig|\d+)", frames[0][1]):
                del frames[0]  # the unmutated function's, or a mutant's
        assert frames[0] == (__file__, "holding"), note  # conformkit's own frames left out
        assert "held" in [name for _, name in frames], note

    @pytest.mark.anyio
    async def test_a_run_of_one_case_wakes_a_wait_no_cancellation_reaches(
        self, anyio_backend: str
    ) -> None:
        """
        asyncio: woken past its grace, it fails as stuck; trio cannot: it ends late,
        and meanwhile the stuck hook is told where it waits.
        """

        async def shielded(api: Probe) -> None:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)

        stacks: list[str | None] = []
        set_stuck_hook(lambda watch: stacks.append(watch.stack))  # called from its thread
        try:
            r = rig({"shielded": shielded})
            report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        finally:
            set_stuck_hook(None)
        reason = report["shielded"].reason or ""
        assert report["shielded"].status is FAILED
        if anyio_backend == "asyncio":
            assert "; it waited where no cancellation reached it; interrupted in shielded" in (
                reason
            ), reason
            assert stacks == []
        else:
            assert reason.endswith("it did not answer its cancellation)" + RUN_DEADLINE), reason
            [stack] = stacks
            assert ", in shielded\n" in (stack or ""), stack

    @pytest.mark.anyio
    async def test_a_run_awaited_through_a_generator_still_wakes_its_stuck_stage(
        self, anyio_backend: str
    ) -> None:
        """
        A run awaited by a generator-based coroutine (``types.coroutine``, as older
        libraries and nested runs await): on asyncio the stage's task is still found
        and woken through it.
        """

        async def shielded(api: Probe) -> None:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)

        @types.coroutine
        def through_a_generator(awaitable: Any) -> Generator[Any, Any, ck.ContractReport]:
            report: ck.ContractReport = yield from awaitable
            return report

        r = rig({"first": passing("first"), "shielded": shielded})
        run = ck.run_contract(r.implementation, r.suite, timeout=SHORT, max_concurrency=1)
        report = await through_a_generator(run)
        assert statuses(report) == [PASSED, FAILED]
        reason = report["shielded"].reason or ""
        if anyio_backend == "asyncio":
            assert "; it waited where no cancellation reached it; interrupted in shielded" in (
                reason
            ), reason
        else:
            assert reason.endswith("it did not answer its cancellation)" + RUN_DEADLINE), reason

    @pytest.mark.anyio
    async def test_the_stuck_stage_is_found_among_many_tasks(self, anyio_backend: str) -> None:
        """asyncio: its lane's task is found and woken, whichever of the run's tasks is first."""

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            for _ in range(8):
                scope.start_soon(anyio.sleep_forever)  # cancelled as the scope closes

        async def shielded(api: Probe) -> None:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)

        r = rig({"shielded": shielded, "after": passing("after")}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT, max_concurrency=2)
        assert statuses(report) == [FAILED, PASSED]
        reason = report["shielded"].reason or ""
        if anyio_backend == "asyncio":
            assert "; it waited where no cancellation reached it; interrupted in shielded" in (
                reason
            ), reason
        else:
            assert reason.endswith("it did not answer its cancellation)" + RUN_DEADLINE), reason

    @pytest.mark.anyio
    async def test_a_cleanup_waiting_where_no_cancellation_reaches_is_left_to_end(self) -> None:
        """
        A cleanup is shielded, and its own deadline is its guard's: the run's watchdog
        never wakes one. One that waits shielded past its deadline ends by itself and
        fails its case; the run goes on.
        """

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            async def shielded() -> None:
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(1.5)

            if number == 0:
                scope.defer(shielded)

        set_stuck_hook(lambda watch: None)  # it is told where the cleanup waits; not shown
        try:
            r = rig({"first": passing("first"), "second": passing("second")}, on_create=on_create)
            report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        finally:
            set_stuck_hook(None)
        assert statuses(report) == [FAILED, PASSED]
        reason = report["first"].reason or ""
        assert re.search(
            r"failed in cleanup: TimeoutError: .*: cleanup .*shielded exceeded the 0\.3s deadline "
            r"\(stage 'cleanup'; ran \d+\.\ds; it did not answer its cancellation\)$",
            reason,
        ), reason

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    @pytest.mark.parametrize("stage", ["create", "case"])
    async def test_the_stuck_hook_is_told_the_case_and_stage(self, stage: str, cases: int) -> None:
        """A stage that nothing could interrupt is handed to the stuck hook by case and stage."""
        told: list[tuple[str | None, str | None]] = []
        answered = threading.Event()

        def hook(watch: Any) -> None:  # on the watchdog's thread
            told.append((watch.case_id, watch.stage))
            answered.set()

        def held() -> None:
            # Deaf to the signal the watchdog interrupts with, until the hook is told.
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
            try:
                answered.wait(10)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])

        r = holding_rig(stage, cases, hold=held)
        set_stuck_hook(hook)
        try:
            report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        finally:
            set_stuck_hook(None)
        assert told == [("held", stage)]
        assert report["held"].status is FAILED
        if cases == 2:
            assert report["after"].status is PASSED

    @pytest.mark.anyio
    async def test_a_case_after_a_cancelled_one_is_judged_on_its_own(self) -> None:
        """
        The first case of the lane answered its deadline's cancellation; the next, sync
        code blocking past its own, is not said to have ignored a cancellation.
        """

        async def waits(api: Probe) -> None:
            await anyio.sleep_forever()

        def blocks(api: Probe) -> None:
            time.sleep(60.0)  # interrupted long before

        r = rig({"waits": waits, "blocks": blocks})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert statuses(report) == [FAILED, FAILED]
        assert "(cancelled in waits at " in (report["waits"].reason or "")
        reason = report["blocks"].reason or ""
        assert re.search(
            r"stage 'case' exceeded the 0\.3s deadline \(ran \d+\.\ds; sync code blocked the "
            r"event loop; interrupted in [^()]*blocks at test_runner_lifecycle\.py:\d+",
            reason,
        ), reason

    @pytest.mark.anyio
    async def test_the_report_of_a_run_stuck_beyond_interruption(self) -> None:
        """
        What the command line writes when the stuck hook is told: every result so
        far, the stuck case failed with where it was stuck, the cases not reached
        left out.
        """
        from conformkit._runner import Execution, RunPlan

        reports: list[ck.ContractReport] = []
        answered = threading.Event()

        def hook(watch: Any) -> None:  # on the watchdog's thread, as the command line's
            reports.append(execution.stuck_report(watch))
            answered.set()

        def held(api: Probe) -> None:
            # Deaf to the signal the watchdog interrupts with, until the hook is told.
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
            try:
                answered.wait(10)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])

        r = rig({"first": passing("first"), "held": held, "never": passing("never")})
        plan = RunPlan(r.implementation, r.suite, SHORT)
        execution = Execution(plan, plan.case_ids)
        set_stuck_hook(hook)
        try:
            await execution.run(1)
        finally:
            set_stuck_hook(None)
        [report] = reports
        assert (report.feature_id, report.implementation) == (
            r.feature.id,
            type(r.implementation).__qualname__,
        )
        assert [(result.case_id, result.status) for result in report.results] == [
            ("first", PASSED),
            ("held", FAILED),
        ]
        stuck = report["held"]
        reason = (
            f"feature {r.feature.id!r}, case 'held': stage 'case' exceeded the 0.3s deadline "
            "and is stuck: it could not be interrupted, and the run was stopped"
        )
        assert stuck.reason == reason
        assert isinstance(stuck.error, TimeoutError)
        assert str(stuck.error) == reason
        [note] = stuck.error.__notes__
        assert note.startswith("where it was stuck:\n"), note
        assert ", in held\n" in note, note
        assert report.cleanup_errors == ()

    @pytest.mark.anyio
    async def test_the_next_case_of_the_lane_is_cancelled_as_usual(self) -> None:
        """After a stage that had to be woken (asyncio), the next one's deadline cancels it."""

        async def shielded(api: Probe) -> None:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)

        async def slow(api: Probe) -> None:
            await anyio.sleep(5.0)

        r = rig({"shielded": shielded, "slow": slow})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert statuses(report) == [FAILED, FAILED]
        reason = report["slow"].reason or ""
        where = f"slow at test_runner_lifecycle.py:{slow.__code__.co_firstlineno + 1}"
        # Where it was cancelled, innermost first (under tools/mutation.py, trampolines follow).
        assert f"exceeded the {SHORT:g}s deadline (cancelled in {where}" in reason, reason

    @pytest.mark.anyio
    async def test_a_case_that_ignored_its_cancellation_then_waits_where_none_reaches(
        self,
    ) -> None:
        """
        It fails as having ignored its cancellation, interrupted in its wait: on
        asyncio woken there past its grace, on trio as that wait ends.
        """
        cancelled = anyio.get_cancelled_exc_class()
        waits: list[str] = []

        async def deaf(api: Probe) -> None:
            try:
                await anyio.sleep(5.0)
            except cancelled:
                waits.append("swallowed")  # the defect under test
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2.0)
            waits.append("ended")

        r = rig({"deaf": deaf})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        reason = report["deaf"].reason or ""
        assert report["deaf"].status is FAILED
        assert "; it ignored its cancellation; interrupted in deaf at " in reason, reason
        assert waits == ["swallowed"]  # interrupted in its wait, or as it ended


class TestReports:
    """A report names what it judged."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_a_report_names_its_feature_and_implementation(self, cases: int) -> None:
        r = rig({name: passing(name) for name in ("one", "two")[:cases]})
        report = await ck.run_contract(r.implementation, r.suite)
        assert (report.feature_id, report.implementation) == (
            "test.runner",
            "rig.<locals>.ProbeImplementation",
        )


class TestLostResults:
    """The invariant check: a run that lost results gives no report, and names each lost case."""

    @pytest.mark.anyio
    async def test_every_lost_case_is_named(self) -> None:
        from conformkit._runner import Execution, RunPlan

        r = rig({"one": passing("one"), "two": passing("two"), "three": passing("three")})
        plan = RunPlan(r.implementation, r.suite, None)
        execution = Execution(plan, plan.case_ids)
        await execution.run(1)
        execution.results[0] = execution.results[2] = None  # as a bug in conformkit would
        with pytest.raises(RuntimeError) as excinfo:
            execution.report()
        assert str(excinfo.value) == (
            "conformkit lost the result of case(s) 'one', 'three' of feature 'test.runner' for "
            "rig.<locals>.ProbeImplementation; no report is given rather than one that lacks them "
            "(a bug in conformkit: please report it)"
        )
