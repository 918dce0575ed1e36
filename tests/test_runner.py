"""The runners (SPEC §4): run_contract, run_contract_sync and contract_cases."""

from __future__ import annotations

import functools
import gc
import itertools
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import traceback
import tracemalloc
import types
import unittest
import warnings
import weakref
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck
from conformkit._watchdog import StageStuck

Backend: TypeAlias = Literal["asyncio", "trio"]
BACKENDS: tuple[Backend, ...] = ("asyncio", "trio")
STAGES = ("create", "case", "cleanup")
PACKAGE_DIR = os.path.dirname(os.path.abspath(ck.__file__))
FEATURE_ID = "test.runner"
SHORT = 0.3  # seconds: small enough to keep the file fast, never hit by a quick stage
TINY = 0.1  # seconds: a deadline for stages that overrun it by design

RUN_DEADLINE = ": the run's timeout= (--timeout); pass a larger one to allow more time"
"""What a reason says of an overrun of the run's own timeout=."""


TRAMPOLINES = re.compile(
    r" ← _trampoline_wrapper at trampoline\.py:\d+"
    r"| \(at trampoline\.py:\d+ in _trampoline_wrapper\)"
    r"|(?<=cancelled in )_trampoline_wrapper at trampoline\.py:\d+ ← "
)
ONLY_TRAMPOLINES = re.compile(r" \(cancelled in _trampoline_wrapper at trampoline\.py:\d+\)")


def plain(reason: str | None) -> str:
    """
    A reason without the frames of mutmut's trampolines: under tools/mutation.py
    every function of the mutated module runs through one, and a reason's "where"
    shows it.
    """
    if reason is None:
        return ""
    if not os.environ.get("CONFORMKIT_MUTATION"):
        return reason
    return ONLY_TRAMPOLINES.sub("", TRAMPOLINES.sub("", reason))


class Probe:
    """The API the test implementations create: which create() call made it, and the log."""

    __slots__ = ("log", "number")

    def __init__(self, number: int, log: list[str]) -> None:
        self.number = number
        self.log = log


Case: TypeAlias = Callable[[Probe], Awaitable[None] | None]
CreateHook: TypeAlias = Callable[[int, ck.FeatureScope], Awaitable[None]]


@dataclass
class Rig:
    """A feature, its suite and an implementation whose create() logs what it does."""

    feature: ck.Feature[Probe]
    suite: ck.ContractSuite[Probe]
    implementation: ck.FeatureImplementation[Probe]
    log: list[str]
    apis: list[Probe]

    def entries(self, prefix: str) -> list[str]:
        return [entry for entry in self.log if entry.startswith(prefix)]


def rig(
    cases: Mapping[str, Case],
    *,
    unsupported: Mapping[str, str] | None = None,
    on_create: CreateHook | None = None,
    feature_id: str = FEATURE_ID,
    declared_timeout: float | None = ck.DEFAULT_TIMEOUT,
) -> Rig:
    """
    Build a fresh feature with these cases, its suite and an implementation of it.

    Each create() call gets the next number, logs ``create N``, defers a cleanup that
    logs ``cleanup N`` and then awaits ``on_create(N, scope)``. With cases run one at
    a time, the numbers follow the supported cases in declared order. The
    implementation declares ``declared_timeout`` as its own deadline.
    """
    the_feature = ck.Feature[Probe](feature_id, cases=tuple(cases))
    log: list[str] = []
    apis: list[Probe] = []
    numbers = itertools.count()

    class ProbeImplementation(ck.FeatureImplementation[Probe]):
        feature = the_feature
        coverage = the_feature.coverage(unsupported=unsupported)
        timeout = declared_timeout

        async def create(self, scope: ck.FeatureScope) -> Probe:
            number = next(numbers)
            log.append(f"create {number}")
            scope.defer(functools.partial(log.append, f"cleanup {number}"))
            if on_create is not None:
                await on_create(number, scope)
            api = Probe(number, log)
            apis.append(api)
            return api

    suite = ck.ContractSuite(the_feature, dict(cases))
    return Rig(the_feature, suite, ProbeImplementation(), log, apis)


def passing(name: str) -> Case:
    """A case that yields to the event loop once, logs ``case NAME on N`` and passes."""

    async def case(api: Probe) -> None:
        await anyio.lowlevel.checkpoint()
        api.log.append(f"case {name} on {api.number}")

    return case


async def run_one_passing(r: Rig, runner: str, timeout: float | None) -> None:
    """Run the rig's one case through ``run_contract`` or ``ContractCase.run``; it must pass."""
    if runner == "run_contract":
        report = await ck.run_contract(r.implementation, r.suite, timeout=timeout)
        assert statuses(report) == [PASSED]
    else:
        [case] = ck.contract_cases(r.implementation, r.suite, timeout=timeout)
        await case.run()


def quiet(name: str) -> Case:
    """A sync case that never yields to the event loop: it logs ``case NAME on N`` and passes."""

    def case(api: Probe) -> None:
        api.log.append(f"case {name} on {api.number}")

    return case


async def hang(api: Probe) -> None:
    """A case that never finishes by itself."""
    await anyio.sleep_forever()


async def deaf_until(release: anyio.Event) -> None:
    """
    Wait for ``release`` where no cancellation reaches: shielded, and deaf to the
    watchdog that wakes such a wait on asyncio, as work that must outlive its join.
    """
    while not release.is_set():
        try:
            with anyio.CancelScope(shield=True):
                await release.wait()
        except StageStuck:
            pass  # woken on asyncio: the defect under test, deaf all the same


def event_loop() -> str:
    """The event loop running the caller: ``asyncio`` or ``trio``."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "trio"
    return "asyncio"


def failing_with_a_local(api: Probe) -> Awaitable[None]:
    """A case that fails holding the local ``kept``, for the frames of its traceback."""

    async def fails() -> None:
        kept = f"case on {api.number}"
        raise AssertionError(kept)

    return fails()


def kept_locals(error: BaseException) -> list[object]:
    """The ``kept`` local of each frame of ``error``'s traceback that has one."""
    return [
        frame.f_locals["kept"]
        for frame, _ in traceback.walk_tb(error.__traceback__)
        if "kept" in frame.f_locals
    ]


def statuses(report: ck.ContractReport) -> list[ck.CaseStatus]:
    return [result.status for result in report.results]


class Gate:
    """Opens only once ``size`` tasks wait at it together."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.waiting = 0
        self.opened = anyio.Event()

    async def wait(self) -> None:
        self.waiting += 1
        if self.waiting >= self.size:
            self.opened.set()
        await self.opened.wait()


PASSED = ck.CaseStatus.PASSED
FAILED = ck.CaseStatus.FAILED
UNSUPPORTED = ck.CaseStatus.UNSUPPORTED
UNAVAILABLE = ck.CaseStatus.UNAVAILABLE


class TestFreshScope:
    """§4.1: a fresh scope per supported case, always disposed; unsupported cases never run."""

    @pytest.mark.anyio
    async def test_each_case_gets_its_own_create_and_its_cleanups_run_after_it(self) -> None:
        """Cases run one at a time create once each, on distinct APIs, cleaned up in turn."""
        r = rig({name: passing(name) for name in ("a", "b", "c")})
        report = await ck.run_contract(r.implementation, r.suite)
        assert statuses(report) == [PASSED] * 3
        assert [result.reason for result in report.results] == [None] * 3
        assert r.log == [
            "create 0",
            "case a on 0",
            "cleanup 0",
            "create 1",
            "case b on 1",
            "cleanup 1",
            "create 2",
            "case c on 2",
            "cleanup 2",
        ]
        assert len({id(api) for api in r.apis}) == 3

    @pytest.mark.anyio
    async def test_concurrent_cases_each_get_their_own_create_and_cleanup(self) -> None:
        """Under max_concurrency>1 each case has its own API, made before it, cleaned after it."""
        gate = Gate(3)

        def meeting(name: str) -> Case:
            async def case(api: Probe) -> None:
                await gate.wait()
                api.log.append(f"case {name} on {api.number}")

            return case

        r = rig({name: meeting(name) for name in ("a", "b", "c")})
        report = await ck.run_contract(r.implementation, r.suite, timeout=5, max_concurrency=3)
        assert statuses(report) == [PASSED] * 3
        assert len(r.entries("create")) == 3
        assert len({id(api) for api in r.apis}) == 3
        ran = {entry.split()[-1] for entry in r.entries("case")}
        assert ran == {"0", "1", "2"}  # every case ran on an API of its own
        for number in ran:
            create = r.log.index(f"create {number}")
            [case] = [i for i, entry in enumerate(r.log) if entry.endswith(f" on {number}")]
            assert create < case < r.log.index(f"cleanup {number}")

    @pytest.mark.anyio
    @pytest.mark.parametrize("max_concurrency", [1, 3])
    async def test_unsupported_case_is_reported_with_its_reason_and_never_run(
        self, max_concurrency: int
    ) -> None:
        """An unsupported case gets no create() and no call, and reports the declared reason."""
        r = rig(
            {name: passing(name) for name in ("a", "b", "c")},
            unsupported={"b": "no clock in this backend"},
        )
        report = await ck.run_contract(
            r.implementation, r.suite, timeout=5, max_concurrency=max_concurrency
        )
        assert statuses(report) == [PASSED, UNSUPPORTED, PASSED]
        assert report["b"].reason == "no clock in this backend"
        assert report["b"].error is None
        assert len(r.entries("create")) == 2
        assert not [entry for entry in r.log if entry.startswith("case b")]

    @pytest.mark.anyio
    async def test_an_all_unsupported_run_creates_nothing(self) -> None:
        """When no case is supported, create() is never called."""
        r = rig({"a": passing("a")}, unsupported={"a": "read-only backend"})
        report = await ck.run_contract(r.implementation, r.suite)
        assert statuses(report) == [UNSUPPORTED]
        assert r.log == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 3], ids=["one-case", "three-cases"])
    async def test_an_all_unsupported_run_never_waits(self, cases: int) -> None:
        """
        With nothing to run, a run never waits: awaited in a scope already
        cancelled, it still gives its whole report, as a sync call would.
        """
        names = [f"c{index}" for index in range(cases)]
        r = rig(
            {name: passing(name) for name in names},
            unsupported={name: "read-only backend" for name in names},
        )
        with anyio.CancelScope() as scope:
            scope.cancel()
            report = await ck.run_contract(r.implementation, r.suite, max_concurrency=2)
        assert statuses(report) == [UNSUPPORTED] * cases
        assert [result.reason for result in report.results] == ["read-only backend"] * cases
        assert r.log == []


class TestOrder:
    """§4.2: results follow the declared case order, whatever the concurrency."""

    @pytest.mark.anyio
    async def test_results_keep_declared_order_when_cases_finish_in_reverse(self) -> None:
        """Cases finishing last-to-first still report in declared order."""
        names = ("first", "second", "third", "fourth")
        done = {name: anyio.Event() for name in names}
        finished: list[str] = []

        def chained(name: str, after: str | None) -> Case:
            async def case(api: Probe) -> None:
                if after is not None:
                    await done[after].wait()
                finished.append(name)
                done[name].set()

            return case

        successors: list[str | None] = [*names[1:], None]
        r = rig({name: chained(name, after) for name, after in zip(names, successors, strict=True)})
        report = await ck.run_contract(r.implementation, r.suite, timeout=5, max_concurrency=4)
        assert finished == list(reversed(names))
        assert [result.case_id for result in report.results] == list(names)
        assert statuses(report) == [PASSED] * 4

    @pytest.mark.anyio
    async def test_max_concurrency_overlaps_cases_up_to_the_limit(self) -> None:
        """max_concurrency=3 really has three cases in flight at once, and never more."""
        gate = Gate(3)
        in_flight = 0
        peak = 0

        async def meet(api: Probe) -> None:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                await gate.wait()
            finally:
                in_flight -= 1

        r = rig({name: meet for name in ("a", "b", "c", "d", "e")})
        report = await ck.run_contract(r.implementation, r.suite, timeout=5, max_concurrency=3)
        assert statuses(report) == [PASSED] * 5
        assert peak == 3


class TestDeadlines:
    """§4.3: every stage runs under a deadline; an overrun fails only that case."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("stage", STAGES)
    async def test_an_overrunning_stage_fails_its_case_and_the_run_goes_on(
        self, stage: str
    ) -> None:
        """A hanging stage fails its case naming feature, case and stage; later cases still pass."""
        hanging = {1, 3}  # the create() calls of cases 'second' and 'fourth'

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number in hanging and stage == "create":
                await anyio.sleep_forever()
            if number in hanging and stage == "cleanup":
                scope.defer(anyio.sleep_forever)

        def case(name: str) -> Case:
            return hang if stage == "case" and name in ("second", "fourth") else passing(name)

        names = ("first", "second", "third", "fourth")
        r = rig({name: case(name) for name in names}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert statuses(report) == [PASSED, FAILED, PASSED, FAILED]
        for case_id, number in (("second", 1), ("fourth", 3)):
            result = report[case_id]
            assert result.reason is not None
            assert repr(FEATURE_ID) in result.reason
            assert repr(case_id) in result.reason
            assert repr(stage) in result.reason
            if stage == "cleanup":
                assert [type(exc) for exc in result.cleanup_errors] == [TimeoutError]
            else:
                assert isinstance(result.error, TimeoutError)
            assert f"cleanup {number}" in r.log  # the other cleanups still ran
        # The watchdog recovered: the case after the first overrun ran and passed,
        # and the second overrun was caught as well.
        assert "case third on 2" in r.log

    @pytest.mark.anyio
    async def test_timeout_none_disables_deadlines(self) -> None:
        """With timeout=None a case slower than any small deadline passes."""

        async def slow(api: Probe) -> None:
            await anyio.sleep(2 * SHORT)

        r = rig({"slow": slow})
        report = await ck.run_contract(r.implementation, r.suite, timeout=None)
        assert statuses(report) == [PASSED]

    @pytest.mark.anyio
    async def test_a_case_that_swallows_its_deadline_cancellation_still_fails(self) -> None:
        """Swallowing the cancellation a deadline sent does not turn an overrun into a pass."""

        async def swallow(api: Probe) -> None:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                api.log.append("swallowed")  # deliberately not re-raised: the defect under test

        r = rig({"swallow": swallow, "after": passing("after")})
        report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert statuses(report) == [FAILED, PASSED]
        assert "swallowed" in r.log
        assert isinstance(report["swallow"].error, TimeoutError)
        assert "cleanup 0" in r.log

    @pytest.mark.anyio
    async def test_a_deadline_under_concurrency_fails_only_the_overrunning_case(self) -> None:
        """With max_concurrency=2 an overrun cancels its own case, not one in flight beside it."""
        timeout = 0.5
        hang_started = anyio.Event()
        hang_cancelled = anyio.Event()

        async def overrun(api: Probe) -> None:
            hang_started.set()
            try:
                await anyio.sleep_forever()
            finally:
                hang_cancelled.set()

        async def beside(api: Probe) -> None:
            await hang_started.wait()
            # Half a deadline: the next case in this lane then starts its stages
            # well after 'overrun' started, so its own deadlines fire well after.
            await anyio.sleep(timeout / 2)

        async def witness(api: Probe) -> None:
            await hang_cancelled.wait()  # still in flight when the overrun is cancelled

        r = rig({"overrun": overrun, "beside": beside, "witness": witness})
        report = await ck.run_contract(
            r.implementation, r.suite, timeout=timeout, max_concurrency=2
        )
        assert statuses(report) == [FAILED, PASSED, PASSED]
        assert isinstance(report["overrun"].error, TimeoutError)
        assert len(r.entries("cleanup")) == 3

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "two-cases"])
    async def test_an_overrun_in_the_event_loops_own_code_names_no_place(self, cases: int) -> None:
        """
        A case cancelled at its deadline while only the event loop's code runs (a
        sync case that returns ``anyio.sleep()``) exceeded it, and its reason names
        no place: the loop's frames say nothing of the code under test.
        """
        sleeps: Case = lambda api: anyio.sleep(60)  # noqa: E731 - its frame is gone when it waits
        beside: dict[str, Case] = {} if cases == 1 else {"beside": passing("beside")}
        r = rig({"sleeps": sleeps, **beside})
        with anyio.fail_after(20):
            report = await ck.run_contract(
                r.implementation, r.suite, timeout=TINY, max_concurrency=cases
            )
        assert plain(report["sleeps"].reason) == (
            "feature 'test.runner', case 'sleeps': stage 'case' exceeded the 0.1s deadline"
            + RUN_DEADLINE
        )

    @pytest.mark.anyio
    async def test_a_deadline_is_enforced_beside_idle_lanes(self) -> None:
        """
        An overrun is cancelled at its deadline while the lanes beside it have no
        case left: it is failed as cancelled there, not woken later by the watchdog
        thread as a stage no cancellation reached.
        """
        timeout = 0.2

        async def overrun(api: Probe) -> None:
            await anyio.sleep_forever()

        cases: dict[str, Case] = {f"quick_{index}": passing(f"quick_{index}") for index in range(7)}
        r = rig({**cases, "overrun": overrun})
        with anyio.fail_after(10):  # on trio, nothing else would ever end it
            report = await ck.run_contract(
                r.implementation, r.suite, timeout=timeout, max_concurrency=8
            )
        assert statuses(report) == [PASSED] * 7 + [FAILED]
        assert re.fullmatch(
            r"feature 'test\.runner', case 'overrun': stage "
            r"'case' exceeded the 0\.2s deadline \(cancelled in overrun at test_runner\.py:\d+\)"
            + re.escape(RUN_DEADLINE),
            plain(report["overrun"].reason),
        ), report["overrun"].reason

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    async def test_a_run_has_one_watchdog_whatever_its_lanes(self, timeout: float | None) -> None:
        """Four lanes in flight add four tasks and one watchdog (none without deadlines)."""
        lanes = 4
        gate = Gate(lanes)
        counts: list[int] = []

        async def meet(api: Probe) -> None:
            await gate.wait()
            counts.append(len(anyio.get_running_tasks()))

        r = rig({f"case_{index}": meet for index in range(2 * lanes)})
        before = len(anyio.get_running_tasks())
        report = await ck.run_contract(
            r.implementation, r.suite, timeout=timeout, max_concurrency=lanes
        )
        assert statuses(report) == [PASSED] * (2 * lanes)
        watchdogs = 0 if timeout is None else 1
        assert counts[0] == before + lanes + watchdogs

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    @pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run"])
    async def test_a_run_of_one_case_runs_it_in_the_callers_task(
        self, timeout: float | None, runner: str
    ) -> None:
        """One case runs in the task that awaits the run: no task, no watchdog is added."""
        seen: list[tuple[object, int]] = []

        async def where(api: Probe) -> None:
            await anyio.lowlevel.checkpoint()
            seen.append((anyio.get_current_task().id, len(anyio.get_running_tasks())))

        r = rig({"where": where})
        caller = (anyio.get_current_task().id, len(anyio.get_running_tasks()))
        await run_one_passing(r, runner, timeout)
        assert seen == [caller]

    @pytest.mark.anyio
    @pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run"])
    @pytest.mark.parametrize("stage", STAGES)
    async def test_a_run_of_one_case_fails_the_stage_that_overruns(
        self, stage: str, runner: str
    ) -> None:
        """A run of a single case has no watchdog task; its stages have deadlines all the same."""

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if stage == "create":
                await anyio.sleep_forever()
            if stage == "cleanup":
                scope.defer(anyio.sleep_forever)

        r = rig({"only": hang if stage == "case" else passing("only")}, on_create=on_create)
        message = f"feature {FEATURE_ID!r}, case 'only'"
        if runner == "run_contract":
            report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
            assert statuses(report) == [FAILED]
            assert message in (report["only"].reason or "")
            assert repr(stage) in (report["only"].reason or "")
        else:
            [case] = ck.contract_cases(r.implementation, r.suite, timeout=SHORT)
            with pytest.raises((TimeoutError, ExceptionGroup)) as excinfo:
                await case.run()
            error: BaseException = excinfo.value
            if stage == "cleanup":
                assert isinstance(error, ExceptionGroup)
                [error] = error.exceptions
            assert isinstance(error, TimeoutError)
            assert message in str(error)
            assert repr(stage) in str(error)
        assert r.log.count("cleanup 0") == 1

    @pytest.mark.anyio
    @pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run"])
    async def test_a_stage_deadline_passing_during_a_later_cleanup_fails_nothing(
        self, runner: str
    ) -> None:
        """Stages each within their deadline pass, though the case's deadline passes in cleanup."""
        # Two stages that take more than one deadline together leave each at most twice
        # the time it needs: a long deadline makes that 1.8 s, which no load takes away.
        timeout = 4.0
        cleanup_done: list[str] = []

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            async def slow_cleanup() -> None:
                await anyio.sleep(0.55 * timeout)
                cleanup_done.append("slow cleanup")

            scope.defer(slow_cleanup)

        async def slow_case(api: Probe) -> None:
            await anyio.sleep(0.55 * timeout)
            api.log.append("case finished")

        r = rig({"only": slow_case}, on_create=on_create)
        await run_one_passing(r, runner, timeout)
        assert r.log == ["create 0", "case finished", "cleanup 0"]
        assert cleanup_done == ["slow cleanup"]


def blocking(seconds: float) -> Callable[[], None]:
    """Sync code that holds the event loop for ``seconds``: no deadline can cancel it."""
    return functools.partial(time.sleep, seconds)


class TestSyncOverruns:
    """§4.3: a stage that returns after its deadline fails, though nothing could cancel it."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("stage", ["create", "case", "sync cleanup", "async cleanup"])
    @pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run"])
    async def test_a_stage_blocking_past_its_deadline_fails(self, stage: str, runner: str) -> None:
        """Sync code holding the loop past the deadline fails its case, saying what happened."""
        block = blocking(3 * TINY)

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number != 0:
                return
            if stage == "create":
                block()
            if stage == "sync cleanup":
                scope.defer(block)
            if stage == "async cleanup":

                async def no_checkpoint() -> None:
                    block()

                scope.defer(no_checkpoint)

        def held(api: Probe) -> None:
            api.log.append(f"case on {api.number}")
            if stage == "case":
                block()

        r = rig({"held": held, "after": passing("after")}, on_create=on_create)
        expected = f"exceeded the {TINY:g}s deadline"
        blocked = "sync code blocked the event loop"
        if runner == "ContractCase.run":
            held_case, after_case = ck.contract_cases(r.implementation, r.suite, timeout=TINY)
            with pytest.raises((TimeoutError, ExceptionGroup)) as excinfo:
                await held_case.run()
            error: BaseException = excinfo.value
            if isinstance(error, ExceptionGroup):
                [error] = error.exceptions
            assert isinstance(error, TimeoutError)
            assert expected in str(error)
            assert blocked in str(error)
            await after_case.run()
        else:
            report = await ck.run_contract(r.implementation, r.suite, timeout=TINY)
            assert statuses(report) == [FAILED, PASSED]
            result = report["held"]
            if stage.endswith("cleanup"):
                [error] = result.cleanup_errors
            else:
                assert result.error is not None
                error = result.error
                assert f"stage {stage!r}" in str(error)
            assert isinstance(error, TimeoutError)
            assert expected in str(error)
            assert blocked in str(error)
            assert blocked in (result.reason or "")
        assert r.log.count("cleanup 0") == 1
        assert r.log.count("cleanup 1") == 1
        assert ("case on 0" in r.log) is (stage != "create")

    @pytest.mark.anyio
    async def test_a_sync_stage_within_its_deadline_passes(self) -> None:
        """Sync code that returns in time is a pass: only an overrun fails."""
        r = rig({"quick": quiet("quick")})
        report = await ck.run_contract(r.implementation, r.suite, timeout=TINY)
        assert statuses(report) == [PASSED]

    @pytest.mark.anyio
    async def test_the_run_of_several_cases_fails_only_the_late_one(self) -> None:
        """Under concurrency, the case that blocked fails; the others, slowed down, still pass."""

        def held(api: Probe) -> None:
            time.sleep(3 * TINY)

        r = rig({"one": passing("one"), "held": held, "two": passing("two")})
        report = await ck.run_contract(r.implementation, r.suite, timeout=TINY, max_concurrency=3)
        assert report["held"].status is FAILED
        assert "sync code blocked the event loop" in (report["held"].reason or "")


class TestDeclaredTimeout:
    """§4.3: 5 s by default; an implementation may declare its own; a run's timeout= wins."""

    def test_the_default_deadline_is_five_seconds(self) -> None:
        """DEFAULT_TIMEOUT is 5 seconds, and what an implementation declares unless told."""
        assert ck.DEFAULT_TIMEOUT == 5.0
        assert ck.FeatureImplementation.timeout == 5.0
        assert rig({"a": passing("a")}).implementation.timeout == 5.0

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("run_timeout", "status"),
        [(ck.DEFAULT_TIMEOUT, FAILED), (None, PASSED), (1.0, PASSED), (5.0, PASSED)],
        ids=["default", "none", "one-second", "five-seconds"],
    )
    async def test_the_run_overrides_the_declared_deadline(
        self, run_timeout: float | None, status: ck.CaseStatus
    ) -> None:
        """A declared deadline applies unless the run passes timeout=, even 5.0 explicitly."""

        async def slow(api: Probe) -> None:
            await anyio.sleep(3 * TINY)

        r = rig({"slow": slow}, declared_timeout=TINY)
        report = await ck.run_contract(r.implementation, r.suite, timeout=run_timeout)
        assert statuses(report) == [status]
        if status is FAILED:
            assert f"exceeded the {TINY:g}s deadline" in (report["slow"].reason or "")
        [case] = ck.contract_cases(r.implementation, r.suite, timeout=run_timeout)
        if status is FAILED:
            with pytest.raises(TimeoutError):
                await case.run()
        else:
            await case.run()

    @pytest.mark.anyio
    async def test_a_declared_none_disables_the_deadlines(self) -> None:
        """timeout = None on the class: no deadline, unless the run sets one."""

        async def slow(api: Probe) -> None:
            await anyio.sleep(3 * TINY)

        r = rig({"slow": slow}, declared_timeout=None)
        assert statuses(await ck.run_contract(r.implementation, r.suite)) == [PASSED]
        report = await ck.run_contract(r.implementation, r.suite, timeout=TINY)
        assert statuses(report) == [FAILED]

    @pytest.mark.anyio
    async def test_open_feature_bounds_cleanups_by_the_declared_deadline(self) -> None:
        """open_feature's default deadline is the implementation's too."""

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            scope.defer(anyio.sleep_forever)

        r = rig({"a": passing("a")}, on_create=on_create, declared_timeout=TINY)
        with pytest.raises(ExceptionGroup) as excinfo:
            async with ck.open_feature(r.implementation):
                pass
        [error] = excinfo.value.exceptions
        assert isinstance(error, TimeoutError)
        assert f"exceeded the {TINY:g}s deadline" in str(error)

    @pytest.mark.parametrize(
        "value",
        [0, -1, math.nan, math.inf, 10**400, "5", True],
        ids=["zero", "negative", "nan", "inf", "huge", "text", "bool"],
    )
    def test_a_malformed_declared_deadline_is_rejected_at_class_creation(
        self, value: object
    ) -> None:
        """The class attribute is checked like the option: one line naming the class."""
        the_feature = ck.Feature[Probe]("test.runner.declared", cases=("a",))
        with pytest.raises(ck.ContractDefinitionError, match=r"\bSlow\.timeout must be a positive"):

            class Slow(ck.FeatureImplementation[Probe]):
                feature = the_feature
                coverage = the_feature.coverage()
                timeout = value  # type: ignore[assignment]

                def create(self, scope: ck.FeatureScope) -> Probe:
                    return Probe(0, [])

    def test_the_command_line_follows_the_declared_deadline(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without --timeout the command line uses the implementation's deadline."""
        target = tmp_path / "declared_contract.py"
        target.write_text(
            textwrap.dedent(
                """
                import anyio
                import conformkit as ck

                slow = ck.Feature[object]("test.cli.declared", cases=("naps",))
                suite = ck.ContractSuite(slow)

                @suite.case
                async def naps(api: object) -> None:
                    await anyio.sleep(0.6)

                class Impatient(ck.FeatureImplementation[object]):
                    feature = slow
                    coverage = slow.coverage()
                    timeout = 0.2

                    def create(self, scope: ck.FeatureScope) -> object:
                        return object()
                """
            ),
            encoding="utf-8",
        )
        from conformkit.cli import main

        assert main(["run", str(target)]) == 1
        assert "exceeded the 0.2s deadline" in capsys.readouterr().out
        assert main(["run", str(target), "--timeout", "5"]) == 0


class TestCleanupFailure:
    """§4.4: a cleanup failure fails the case even when its assertion held."""

    @pytest.mark.anyio
    async def test_a_failing_cleanup_fails_a_passing_case(self) -> None:
        """The case fails, the reason says cleanup, cleanup_errors holds the exception."""
        boom = RuntimeError("disk still mounted")

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            def unmount() -> None:
                raise boom

            scope.defer(unmount)

        r = rig({"holds": passing("holds")}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite)
        result = report["holds"]
        assert result.status is FAILED
        assert result.reason is not None
        assert "cleanup" in result.reason
        assert "disk still mounted" in result.reason
        assert result.cleanup_errors == (boom,)
        assert r.log == ["create 0", "case holds on 0", "cleanup 0"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run"])
    async def test_background_work_failing_after_its_join_gave_up_is_reported(
        self, runner: str
    ) -> None:
        """Work outliving its join fails its case; its later failure is in the report too."""
        started = anyio.Event()
        release = anyio.Event()
        late = RuntimeError("failed after its case was judged")

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number != 0:
                return

            async def stubborn() -> None:
                started.set()
                await deaf_until(release)
                raise late

            scope.start_soon(stubborn)

        async def awaiting_its_work(api: Probe) -> None:
            await started.wait()

        async def releasing(api: Probe) -> None:
            release.set()
            await anyio.wait_all_tasks_blocked()  # the stubborn work ends, failing
            api.log.append("released")

        r = rig({"stubborn": awaiting_its_work, "after": releasing}, on_create=on_create)
        if runner == "run_contract":
            report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
            assert statuses(report) == [FAILED, PASSED]
            [timeout] = report["stubborn"].cleanup_errors
            assert isinstance(timeout, TimeoutError)
            assert "background work" in str(timeout)
            assert report.cleanup_errors == (late,)
            assert late.__traceback__ is None  # its frames let go, as every failure's
            assert "released" in r.log
        else:
            stubborn, _ = ck.contract_cases(r.implementation, r.suite, timeout=SHORT)

            async def release_after_the_join_gave_up() -> None:
                # The join waits SHORT, then SHORT again for work it interrupts.
                await anyio.sleep(3 * SHORT)
                release.set()

            async with anyio.create_task_group() as task_group:
                task_group.start_soon(release_after_the_join_gave_up)
                with pytest.raises(ExceptionGroup) as excinfo:
                    await stubborn.run()  # returns once the work has ended
            timeout, error = excinfo.value.exceptions
            assert isinstance(timeout, TimeoutError)
            assert "background work" in str(timeout)
            assert error is late


class TestUnavailable:
    """§3.8: FeatureUnavailable means unavailable only when create() raises it."""

    @pytest.mark.anyio
    async def test_feature_unavailable_from_create_makes_the_case_unavailable(self) -> None:
        """create() raising FeatureUnavailable: status unavailable, its message in the reason."""
        absent = ck.FeatureUnavailable("no database server on localhost:5432")

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            raise absent

        r = rig({"needs_server": passing("needs_server")}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite)
        result = report["needs_server"]
        assert result.status is UNAVAILABLE
        assert result.reason is not None
        assert "no database server on localhost:5432" in result.reason
        assert result.error is absent
        assert r.log == ["create 0", "cleanup 0"]  # rolled back; the case never ran

    @pytest.mark.anyio
    async def test_feature_unavailable_inside_a_case_fails_it(self) -> None:
        """A case body raising FeatureUnavailable is failed, not unavailable."""

        async def body(api: Probe) -> None:
            raise ck.FeatureUnavailable("no extension")

        r = rig({"body": body})
        report = await ck.run_contract(r.implementation, r.suite)
        assert statuses(report) == [FAILED]
        assert isinstance(report["body"].error, ck.FeatureUnavailable)
        line = body.__code__.co_firstlineno + 1
        assert report["body"].reason == (
            "case 'body' failed: conformkit.FeatureUnavailable: no extension "
            f"(at test_runner.py:{line} in body) "
            "(FeatureUnavailable means 'unavailable' only when create() raises it)"
        )


class TestCleanupFailureReasons:
    """The reason of a case whose cleanups failed counts them."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("failures", "more"), [(1, ""), (2, " (and 1 more)"), (3, " (and 2 more)")]
    )
    async def test_a_passing_case_names_the_first_failure_and_counts_the_rest(
        self, failures: int, more: str
    ) -> None:
        """Cleanups run last registered first: the first failure is the last one registered."""

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            for index in range(failures):
                scope.defer(functools.partial(fail_with, OSError(f"cleanup {index}")))

        r = rig({"only": passing("only")}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite)
        first = failures - 1
        assert (
            report["only"].reason
            == f"case 'only' failed in cleanup: OSError: cleanup {first}{more}"
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize("failures", [1, 2])
    async def test_a_failing_case_counts_them_after_its_own_reason(self, failures: int) -> None:
        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            for index in range(failures):
                scope.defer(functools.partial(fail_with, OSError(f"cleanup {index}")))

        async def fails(api: Probe) -> None:
            raise ValueError("case failed")

        r = rig({"fails": fails}, on_create=on_create)
        report = await ck.run_contract(r.implementation, r.suite)
        line = fails.__code__.co_firstlineno + 1
        assert report["fails"].reason == (
            f"case 'fails' failed: ValueError: case failed (at test_runner.py:{line} in fails); "
            f"{failures} cleanup(s) failed too"
        )


def fail_with(error: BaseException) -> None:
    raise error


def check_read(value: str | None) -> None:
    if value is None:
        raise AssertionError("expected 'stored' back, got None")


def broken_sync_case(api: Probe) -> None:
    check_read(None)


async def broken_async_case(api: Probe) -> None:
    await anyio.lowlevel.checkpoint()
    check_read(None)


class TestFailureLocalisation:
    """A failed case points at the user's code, not at conformkit's."""

    @pytest.mark.frames
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "function", [broken_sync_case, broken_async_case], ids=["sync", "async"]
    )
    async def test_a_failure_names_the_case_and_starts_in_the_case_function(
        self, function: Case
    ) -> None:
        """Reason names case and message; the traceback starts in the case, free of conformkit."""
        r = rig({"fine": passing("fine"), "read_back": function})
        report = await ck.run_contract(r.implementation, r.suite, keep_tracebacks=True)
        result = report["read_back"]
        assert result.status is FAILED
        assert result.reason is not None
        assert "read_back" in result.reason
        assert "expected 'stored' back, got None" in result.reason
        assert isinstance(result.error, AssertionError)
        first = result.error.__traceback__
        assert first is not None
        assert first.tb_frame.f_code is function.__code__
        text = "".join(traceback.format_exception(result.error))
        assert function.__name__ in text
        assert "check_read" in text
        assert PACKAGE_DIR not in text
        # By default the report keeps the same traceback, as text only.
        report = await ck.run_contract(r.implementation, r.suite)
        result = report["read_back"]
        assert result.error is not None
        assert result.error.__traceback__ is None
        assert result.to_dict()["error"]["traceback"] == text

    @pytest.mark.frames
    @pytest.mark.anyio
    async def test_a_bundled_profile_case_is_located_in_its_own_frame(self) -> None:
        """A bundled profile's case lives in the package too, and still heads its traceback."""
        from conformkit.profiles import mapping

        class Forgetful(dict[object, object]):
            def __setitem__(self, key: object, value: object) -> None:
                pass  # loses every write

        class ForgetfulMapping(ck.FeatureImplementation[mapping.MappingAPI, mapping.MappingCase]):
            feature = mapping.feature
            coverage = mapping.feature.coverage()

            def create(self, scope: ck.FeatureScope) -> mapping.MappingAPI:
                return Forgetful()

        report = await ck.run_contract(ForgetfulMapping(), mapping.suite, keep_tracebacks=True)
        result = report["read_your_writes"]
        assert result.status is FAILED
        assert result.error is not None
        assert result.error.__traceback__ is not None
        frame = result.error.__traceback__.tb_frame
        cases = os.path.join(os.path.dirname(mapping.__file__), "_cases.py")
        assert frame.f_code.co_filename == cases
        assert f"(at _cases.py:{result.error.__traceback__.tb_lineno} in " in (result.reason or "")


class TestReasons:
    """A reason says what happened: group leaves, a forgotten return, an assert's values."""

    @pytest.mark.anyio
    async def test_a_task_group_failure_gives_its_leaves(self) -> None:
        """Not 'unhandled errors in a TaskGroup': each leaf once, with its count."""

        async def fails(message: str) -> None:
            raise ValueError(message)  # before any checkpoint: every task fails

        async def grouped(api: Probe) -> None:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(fails, "bad")
                task_group.start_soon(fails, "bad")
                task_group.start_soon(fails, "worse")

        r = rig({"grouped": grouped})
        report = await ck.run_contract(r.implementation, r.suite)
        reason = report["grouped"].reason or ""
        # Leaves in the order they failed, which the event loop chooses.
        assert "ValueError: bad (×2)" in reason
        assert "ValueError: worse" in reason
        assert "TaskGroup" not in reason

    @pytest.mark.anyio
    @pytest.mark.parametrize("reject_vacuous", [False, True])
    async def test_create_returning_none_says_so(self, reject_vacuous: bool) -> None:
        """None from create(), for an API type that is not None, fails the create stage."""
        the_feature = ck.Feature[Probe]("test.runner.none", cases=("a",))

        class Forgetful(ck.FeatureImplementation[Probe]):
            feature = the_feature
            coverage = the_feature.coverage()

            async def create(self, scope: ck.FeatureScope) -> Probe:
                Probe(0, [])  # the return is forgotten
                return None  # type: ignore[return-value]

        async def reads(api: Probe) -> None:
            api.log.append("never")

        suite = ck.ContractSuite(the_feature, {"a": reads})
        report = await ck.run_contract(Forgetful(), suite, reject_vacuous=reject_vacuous)
        assert report["a"].reason == (
            "case 'a' failed in create(): TypeError: create() returned None (a forgotten return?)"
        )


class AsyncStore:
    """
    An async API, for sync cases that forget to await it. Its sync ``size()``
    lets a sync case be defined at all (see test_suite's TestSyncCasesOverAsyncAPIs);
    the run then catches the coroutine it drops.
    """

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def write(self, key: str, value: str) -> None:
        self.values[key] = value

    def size(self) -> int:
        return len(self.values)


class Courier:
    """Not the API: a dropped coroutine of its method is named after the class."""

    async def fetch(self) -> None:
        await anyio.lowlevel.checkpoint()


async def courier_errand() -> None:
    await anyio.lowlevel.checkpoint()


class TestUnawaitedCoroutines:
    """A sync case that drops a coroutine of the API fails, naming the call."""

    @staticmethod
    def store_rig(
        case: Callable[[AsyncStore], None], store: type[AsyncStore] = AsyncStore
    ) -> tuple[ck.FeatureImplementation[AsyncStore], ck.ContractSuite[AsyncStore]]:
        the_feature = ck.Feature[AsyncStore]("test.runner.unawaited", cases=("writes", "after"))

        class Store(ck.FeatureImplementation[AsyncStore]):
            feature = the_feature
            coverage = the_feature.coverage()

            def create(self, scope: ck.FeatureScope) -> AsyncStore:
                return store()

        async def after(api: AsyncStore) -> None:
            await api.write("k", "v")

        return Store(), ck.ContractSuite(the_feature, {"writes": case, "after": after})

    @pytest.mark.anyio
    @pytest.mark.parametrize("reject_vacuous", [False, True])
    async def test_a_coroutine_never_awaited_fails_the_case(self, reject_vacuous: bool) -> None:
        """`api.write(...)` without await: the case fails; it would pass doing nothing."""

        def writes(api: AsyncStore) -> None:
            api.write("k", "v")  # type: ignore[unused-coroutine]  # the defect under test

        report = await ck.run_contract(*self.store_rig(writes), reject_vacuous=reject_vacuous)
        assert statuses(report) == [FAILED, PASSED]
        assert "RuntimeWarning: coroutine api.write() was never awaited" in (
            report["writes"].reason or ""
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("drop", "named"),
        [
            (lambda api: api.clear(), "api.clear()"),
            (lambda api: api.write("k", "v"), "api.write()"),
            (lambda api: Courier().fetch(), "Courier.fetch()"),
            (lambda api: courier_errand(), "courier_errand()"),
        ],
        ids=["own method", "inherited method", "another class's", "a function's"],
    )
    async def test_a_dropped_coroutine_is_named_after_whose_it_is(
        self, drop: Callable[[Any], object], named: str
    ) -> None:
        """A method of the API, its own or inherited, is ``api.NAME()``, even when the API's
        class is local; any other coroutine is its qualified name."""

        class LocalStore(AsyncStore):
            async def clear(self) -> None:
                self.values.clear()

        def drops(api: AsyncStore) -> None:
            drop(api)  # the defect under test

        report = await ck.run_contract(*self.store_rig(drops, LocalStore))
        assert statuses(report) == [FAILED, PASSED]
        assert f"RuntimeWarning: coroutine {named} was never awaited" in (
            report["writes"].reason or ""
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("dropped", "more"), [(1, ""), (2, " (and 1 more)"), (3, " (and 2 more)")]
    )
    async def test_the_reason_counts_the_other_dropped_coroutines(
        self, dropped: int, more: str
    ) -> None:
        """The first dropped coroutine is named; the others are counted after it."""

        def drops(api: AsyncStore) -> None:
            for index in range(dropped):
                api.write(f"k{index}", "v")  # type: ignore[unused-coroutine]  # under test

        report = await ck.run_contract(*self.store_rig(drops))
        assert statuses(report) == [FAILED, PASSED]
        assert plain(report["writes"].reason) == (
            f"case 'writes' failed: RuntimeWarning: coroutine api.write() was never awaited{more}: "
            "a sync case calls an async API; make it 'async def' and await each call"
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize("category", [UserWarning, RuntimeWarning, ResourceWarning])
    async def test_other_warnings_of_a_sync_case_are_emitted_as_they_came(
        self, category: type[Warning]
    ) -> None:
        """
        A warning the case raises for its own reasons, a RuntimeWarning too, is emitted
        again, not swallowed: its category, place and source (the object it is about) kept.
        """
        about = Courier()

        def warns(api: AsyncStore) -> None:
            warnings.warn("unrelated", category, stacklevel=1, source=about)

        line = warns.__code__.co_firstlineno + 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = await ck.run_contract(*self.store_rig(warns))
        assert statuses(report) == [PASSED, PASSED]
        [warning] = [warning for warning in caught if str(warning.message) == "unrelated"]
        assert warning.category is category
        assert (Path(warning.filename).name, warning.lineno) == ("test_runner.py", line)
        assert warning.source is about


class Deferred:
    """An awaitable that is not a coroutine: awaiting it gives the API."""

    def __init__(self, api: Probe) -> None:
        self.api = api

    def __await__(self) -> Generator[Any, None, Probe]:
        yield from anyio.lowlevel.checkpoint().__await__()
        return self.api


class TestTwoViews:
    """run_contract and open_feature treat what create() returns alike."""

    @pytest.mark.anyio
    async def test_an_awaitable_that_is_not_a_coroutine_is_awaited_by_both(self) -> None:
        """A sync create() returning an awaitable: both await it and get the API."""
        the_feature = ck.Feature[Probe]("test.runner.deferred", cases=("a", "b"))
        log: list[str] = []

        class DeferredCreate(ck.FeatureImplementation[Probe]):
            feature = the_feature
            coverage = the_feature.coverage()

            def create(self, scope: ck.FeatureScope) -> Awaitable[Probe]:
                return Deferred(Probe(1, log))

        async def uses(api: Probe) -> None:
            api.log.append(f"case on {api.number}")

        suite = ck.ContractSuite(the_feature, {"a": uses, "b": uses})
        report = await ck.run_contract(DeferredCreate(), suite)
        assert statuses(report) == [PASSED, PASSED]
        assert log == ["case on 1", "case on 1"]
        async with ck.open_feature(DeferredCreate()) as session:
            assert isinstance(session.api, Probe)


@types.coroutine
def opened(api: Probe) -> Generator[Any, None, Probe]:
    """A generator-based coroutine: awaiting it gives ``api``."""
    yield from anyio.lowlevel.checkpoint().__await__()
    return api


def numbers() -> Generator[int, None, None]:
    """A plain generator: an API, not something to await."""
    yield from range(3)


class TestGeneratorsFromCreate:
    @pytest.mark.anyio
    async def test_each_generator_is_told_apart_as_it_comes(self) -> None:
        """
        A sync create() that returns a plain generator (the API), and then a
        generator-based coroutine: the first is the API as it is, the second is awaited.
        """
        the_feature = ck.Feature[Any]("test.runner.generators", cases=("plain", "awaited"))
        seen: list[object] = []

        def create(scope: ck.FeatureScope) -> object:
            return numbers() if not seen else opened(Probe(2, []))

        async def plain(api: Any) -> None:
            seen.append(list(api))

        async def awaited(api: Any) -> None:
            seen.append(api.number)

        suite = ck.ContractSuite(the_feature, {"plain": plain, "awaited": awaited})
        implementation = the_feature.implementation(create, name="Generators")
        report = await ck.run_contract(implementation, suite)
        assert statuses(report) == [PASSED, PASSED]
        assert seen == [[0, 1, 2], 2]


class TestMemory:
    """A report keeps what a reader needs of each failure, not the failing frames."""

    CASES = 2000
    HELD = 100_000  # bytes each failing case holds in a local variable

    @staticmethod
    def heavy(kept: list[weakref.ref[object]]) -> Case:
        """A case that fails holding ``HELD`` bytes in a local, each a weakref in ``kept``."""

        class Held:
            def __init__(self, size: int) -> None:
                self.data = bytearray(size)

        async def fails(api: Probe) -> None:
            held = Held(TestMemory.HELD)
            kept.append(weakref.ref(held))
            raise ValueError(f"failed holding {len(held.data)} bytes")

        return fails

    @pytest.mark.anyio
    @pytest.mark.parametrize("where", ["case", "cleanup"])
    async def test_a_report_of_many_failures_lets_their_frames_go(self, where: str) -> None:
        """
        2,000 failures of 100 kB each, of cases or of their cleanups: the report keeps
        their text, not 200 MB of locals.
        """
        kept: list[weakref.ref[object]] = []
        fails = self.heavy(kept)
        names = [f"case_{index}" for index in range(self.CASES)]
        if where == "case":
            r = rig(dict.fromkeys(names, fails))
        else:

            async def on_create(number: int, scope: ck.FeatureScope) -> None:
                scope.defer(functools.partial(fails, Probe(number, [])))

            r = rig({name: passing(name) for name in names}, on_create=on_create)
        tracemalloc.start()
        try:
            report = await ck.run_contract(r.implementation, r.suite, timeout=None)
            gc.collect()
            held, _peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert statuses(report) == [FAILED] * self.CASES
        assert sum(ref() is not None for ref in kept) == 0
        assert held < self.CASES * self.HELD / 10  # well under the 200 MB the frames held
        result = report["case_0"].to_dict()
        [error] = [result["error"]] if where == "case" else result["cleanup_errors"]
        assert "in fails" in error["traceback"]
        assert error["message"] == f"failed holding {self.HELD} bytes"

    @pytest.mark.anyio
    async def test_keep_tracebacks_keeps_the_frames(self) -> None:
        """keep_tracebacks=True keeps each failure's live traceback, locals and all."""
        kept: list[weakref.ref[object]] = []
        r = rig({"fails": self.heavy(kept)})
        report = await ck.run_contract(r.implementation, r.suite, keep_tracebacks=True)
        gc.collect()
        assert [ref() is not None for ref in kept] == [True]
        error = report["fails"].error
        assert error is not None
        assert error.__traceback__ is not None


class CustomBase(BaseException):
    """A BaseException of the code under test's own."""


class TestInterrupts:
    """KeyboardInterrupt alone stops the run, bare, once cleanups ran; other BaseExceptions fail."""

    @staticmethod
    def interrupted_rig(raised: BaseException) -> Rig:
        async def interrupting(api: Probe) -> None:
            await anyio.lowlevel.checkpoint()
            raise raised

        return rig(
            {
                "before": passing("before"),
                "interrupting": interrupting,
                "after": passing("after"),
            }
        )

    @pytest.mark.anyio
    async def test_an_interrupt_propagates_bare_after_cleanup(self) -> None:
        """run_contract re-raises the very interrupt, after the case's cleanup, running no more."""
        raised = KeyboardInterrupt("stop")
        r = self.interrupted_rig(raised)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            await ck.run_contract(r.implementation, r.suite)
        assert excinfo.value is raised
        assert r.log == ["create 0", "case before on 0", "cleanup 0", "create 1", "cleanup 1"]

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_an_interrupt_propagates_bare_from_run_contract_sync(self, backend: Backend) -> None:
        """run_contract_sync re-raises the very interrupt, after the case's cleanup."""
        raised = KeyboardInterrupt("stop")
        r = self.interrupted_rig(raised)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            ck.run_contract_sync(r.implementation, r.suite, backend=backend)
        assert excinfo.value is raised
        assert r.log == ["create 0", "case before on 0", "cleanup 0", "create 1", "cleanup 1"]

    @pytest.mark.anyio
    async def test_an_interrupt_in_a_cleanup_propagates_bare_with_notes(self) -> None:
        """A cleanup's KeyboardInterrupt: later cleanups run; it propagates with the rest noted."""
        raised = KeyboardInterrupt()

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            def fails() -> None:
                raise ValueError("first cleanup failed")

            def interrupts() -> None:
                raise raised

            scope.defer(fails)
            scope.defer(interrupts)

        r = rig({"a": passing("a"), "b": passing("b")}, on_create=on_create)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            await ck.run_contract(r.implementation, r.suite)
        assert excinfo.value is raised
        assert excinfo.value.__notes__ == ["case 'a': ValueError: first cleanup failed"]
        assert r.log == ["create 0", "case a on 0", "cleanup 0"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", [SystemExit, GeneratorExit, CustomBase])
    @pytest.mark.parametrize("stage", STAGES)
    async def test_other_base_exceptions_fail_the_case_and_the_run_goes_on(
        self, kind: type[BaseException], stage: str
    ) -> None:
        """sys.exit(0) and the like from any stage fail their case, as pytest fails a test."""
        raised = kind(0)

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number != 1:
                return
            if stage == "create":
                raise raised
            if stage == "cleanup":

                def exits() -> None:
                    raise raised

                scope.defer(exits)

        async def stops(api: Probe) -> None:
            if stage == "case":
                raise raised

        r = rig(
            {"before": passing("before"), "stops": stops, "after": passing("after")},
            on_create=on_create,
        )
        report = await ck.run_contract(r.implementation, r.suite)
        assert statuses(report) == [PASSED, FAILED, PASSED]
        assert f"{kind.__name__}" in (report["stops"].reason or "")
        assert sorted(r.entries("cleanup")) == ["cleanup 0", "cleanup 1", "cleanup 2"]
        with pytest.raises(ck.ContractFailure):
            ck.assert_contract(report)

    @pytest.mark.anyio
    async def test_an_interrupt_under_concurrency_cleans_up_every_case_in_flight(self) -> None:
        """At max_concurrency=3 the interrupt propagates bare; each case in flight is disposed."""
        raised = KeyboardInterrupt()
        gate = Gate(3)
        async_cleanups: list[str] = []

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            async def async_cleanup() -> None:
                await anyio.lowlevel.checkpoint()
                async_cleanups.append(f"async cleanup {number}")

            scope.defer(async_cleanup)

        async def interrupting(api: Probe) -> None:
            await gate.wait()
            raise raised

        async def waiting(api: Probe) -> None:
            await gate.wait()
            await anyio.sleep_forever()

        r = rig({"interrupting": interrupting, "one": waiting, "two": waiting}, on_create=on_create)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            await ck.run_contract(r.implementation, r.suite, timeout=5, max_concurrency=3)
        assert excinfo.value is raised
        assert sorted(r.entries("cleanup")) == ["cleanup 0", "cleanup 1", "cleanup 2"]
        assert sorted(async_cleanups) == [
            "async cleanup 0",
            "async cleanup 1",
            "async cleanup 2",
        ]


async def stale_cancellation() -> BaseException:
    """A cancellation exception caught in a scope that has ended: raising it cancels nothing."""
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class() as exc:
            caught = exc
            raise
    return caught


class TestStrayCancellation:
    """A cancellation exception that no cancellation caused is its case's failure, never a loss."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("max_concurrency", [1, 2, 8])
    @pytest.mark.parametrize("stage", ["create", "case"])
    async def test_a_stray_cancellation_fails_only_its_case(
        self, max_concurrency: int, stage: str
    ) -> None:
        """Every planned case keeps one result; the stray one is failed, naming the cause."""
        stale = await stale_cancellation()

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if stage == "create" and number == 1:
                raise stale

        async def stray(api: Probe) -> None:
            await anyio.lowlevel.checkpoint()
            raise stale

        r = rig(
            {"before": passing("before"), "stray": stray, "after": passing("after")},
            on_create=on_create,
        )
        report = await ck.run_contract(r.implementation, r.suite, max_concurrency=max_concurrency)
        assert [result.case_id for result in report.results] == ["before", "stray", "after"]
        assert statuses(report) == [PASSED, FAILED, PASSED]
        reason = report["stray"].reason or ""
        where = " in create()" if stage == "create" else ""
        assert reason.startswith(
            f"case 'stray' failed{where}: {type(stale).__name__} raised with no "
            "cancellation under way"
        )
        assert report["stray"].error is stale
        assert sorted(r.entries("cleanup")) == ["cleanup 0", "cleanup 1", "cleanup 2"]
        with pytest.raises(ck.ContractFailure, match="stray: failed"):
            ck.assert_contract(report, require_full=True)

    @pytest.mark.anyio
    @pytest.mark.parametrize("anyio_backend", ["trio"])  # a trio program need never import asyncio
    async def test_a_stray_cancellation_where_asyncio_was_never_imported(
        self, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Not taken for asyncio's own cancellation of the task when there is no asyncio."""
        stale = await stale_cancellation()

        async def stray(api: Probe) -> None:
            await anyio.lowlevel.checkpoint()
            raise stale

        r = rig({"stray": stray, "after": passing("after")})
        with monkeypatch.context() as patch:
            patch.delitem(sys.modules, "asyncio")
            report = await ck.run_contract(r.implementation, r.suite)
        assert statuses(report) == [FAILED, PASSED]
        assert report["stray"].error is stale

    @pytest.mark.parametrize("max_concurrency", [1, 2, 8])
    def test_a_case_awaiting_a_task_the_implementation_cancelled_fails(
        self, max_concurrency: int
    ) -> None:
        """asyncio: awaiting a future cancelled elsewhere fails the case, and the run goes on."""
        import asyncio

        async def awaits_cancelled(api: Probe) -> None:
            future = asyncio.get_running_loop().create_future()
            future.cancel()
            await future

        r = rig({"one": passing("one"), "cancelled": awaits_cancelled, "two": passing("two")})
        report = ck.run_contract_sync(
            r.implementation, r.suite, backend="asyncio", max_concurrency=max_concurrency
        )
        assert statuses(report) == [PASSED, FAILED, PASSED]
        assert "CancelledError raised with no cancellation under way" in (
            report["cancelled"].reason or ""
        )

    @pytest.mark.anyio
    async def test_a_stray_cancellation_raised_by_contract_cases_is_the_case_failure(
        self,
    ) -> None:
        """
        A loop's case.run() raises the case's failure chained from the stray exception:
        raised as itself, the caller's task would read it as its own cancellation.
        """
        stale = await stale_cancellation()

        async def stray(api: Probe) -> None:
            raise stale

        r = rig({"stray": stray})
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(ck.ContractFailure) as excinfo:
            await case.run()
        assert excinfo.value.__cause__ is stale
        assert r.log == ["create 0", "cleanup 0"]

    @pytest.mark.anyio
    async def test_a_report_missing_a_planned_case_is_never_returned(self) -> None:
        """The invariant check: an execution that lost a result raises instead of reporting."""
        from conformkit._options import RunOptions
        from conformkit._runner import Execution, RunPlan

        r = rig({"one": passing("one"), "two": passing("two")})
        plan = RunPlan(r.implementation, r.suite, RunOptions(timeout=None))
        execution = Execution(plan, plan.case_ids)
        await execution.run()
        execution.results[1] = None
        with pytest.raises(RuntimeError, match="lost the result of case\\(s\\) 'two'"):
            execution.report()

    @pytest.mark.anyio
    async def test_a_case_stopped_by_ctrl_c_is_not_judged(self) -> None:
        """Ctrl-C (Execution.stop, which the run's SIGINT handler calls) in a run of one case
        under a deadline: the case is cancelled and cleaned up, never judged as overrunning
        its deadline, and KeyboardInterrupt propagates."""
        from conformkit._options import RunOptions
        from conformkit._runner import Execution, RunPlan

        async def stopped(api: Probe) -> None:
            execution.stop()
            await anyio.sleep_forever()

        r = rig({"stopped": stopped})
        plan = RunPlan(r.implementation, r.suite, RunOptions(timeout=600.0))
        execution = Execution(plan, plan.case_ids)
        with pytest.raises(KeyboardInterrupt):
            await execution.run()
        assert execution.finished() == []
        assert r.log == ["create 0", "cleanup 0"]


def presses_twice(log: list[str]) -> Rig:
    """
    A rig whose case presses Ctrl-C and waits on, and whose scope's cleanup presses it
    again; each logs that it went on after its press.
    """

    async def on_create(number: int, scope: ck.FeatureScope) -> None:
        def presses_again() -> None:
            signal.raise_signal(signal.SIGINT)
            log.append("went on after the second")

        scope.defer(presses_again)

    async def presses(api: Probe) -> None:
        signal.raise_signal(signal.SIGINT)
        log.append("went on after the first")
        await anyio.sleep_forever()

    return rig({"presses": presses, "after": passing("after")}, on_create=on_create)


class TestSignals:
    """
    Ctrl-C and the watchdog's own signal, in runs on the main thread: the run's SIGINT
    handler tells them apart, and the code under test may block or replace it.
    """

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 600.0])
    @pytest.mark.parametrize("max_concurrency", [1, 2])
    async def test_ctrl_c_stops_every_lane(
        self, max_concurrency: int, timeout: float | None
    ) -> None:
        """
        Ctrl-C, a real SIGINT to a run on the main thread: every case in flight is
        cancelled and cleaned up, no case starts after it, KeyboardInterrupt propagates.
        """
        waiting = anyio.Event()

        async def waits(api: Probe) -> None:
            waiting.set()
            await anyio.sleep_forever()

        async def presses(api: Probe) -> None:
            if max_concurrency > 1:
                await waiting.wait()  # the other lane's case is in flight
            signal.raise_signal(signal.SIGINT)
            await anyio.sleep_forever()

        cases = {"waits": waits, "presses": presses, "third": waits, "fourth": waits}
        r = rig(cases if max_concurrency > 1 else {"presses": presses, "waits": waits})
        with pytest.raises(KeyboardInterrupt), anyio.fail_after(10):  # a run not stopped fails
            await ck.run_contract(
                r.implementation, r.suite, timeout=timeout, max_concurrency=max_concurrency
            )
        in_flight = max_concurrency
        assert sorted(r.entries("create")) == [f"create {n}" for n in range(in_flight)]
        assert sorted(r.entries("cleanup")) == [f"cleanup {n}" for n in range(in_flight)]

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 600.0])
    async def test_a_second_ctrl_c_stops_at_once(self, timeout: float | None) -> None:
        """
        The first Ctrl-C cancels the case, which goes on to its next await, and lets the
        cleanups run; a second, pressed in one, cuts it short.
        """
        log: list[str] = []
        r = presses_twice(log)
        with pytest.raises(KeyboardInterrupt), anyio.fail_after(10):
            await ck.run_contract(r.implementation, r.suite, timeout=timeout)
        assert log == ["went on after the first"]
        assert r.log == ["create 0", "cleanup 0"]  # the scope's other cleanup still ran

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 600.0])
    @pytest.mark.parametrize("cases", [1, 2])
    async def test_ctrl_c_after_the_last_wait_still_stops_the_run(
        self, cases: int, timeout: float | None
    ) -> None:
        """
        Ctrl-C pressed in the last case, which then returns without waiting again:
        the run may end before the event loop gets to stop it, and raises
        KeyboardInterrupt all the same, its cleanups run.
        """

        def presses(api: Probe) -> None:
            signal.raise_signal(signal.SIGINT)

        before: dict[str, Case] = {} if cases == 1 else {"before": passing("before")}
        r = rig({**before, "presses": presses})
        handler = signal.getsignal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt), anyio.fail_after(10):
            await ck.run_contract(r.implementation, r.suite, timeout=timeout)
        assert r.entries("cleanup") == [f"cleanup {n}" for n in range(cases)]
        assert signal.getsignal(signal.SIGINT) is handler

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 600.0])
    @pytest.mark.parametrize("cases", [1, 2])
    async def test_the_sigint_handler_found_is_put_back(
        self, cases: int, timeout: float | None
    ) -> None:
        """A run on the main thread handles SIGINT while it runs, and no longer after."""
        before = signal.getsignal(signal.SIGINT)
        during: list[object] = []

        async def looks(api: Probe) -> None:
            during.append(signal.getsignal(signal.SIGINT))

        r = (
            rig({"looks": looks, "after": passing("after")})
            if cases == 2
            else rig({"looks": looks})
        )
        await ck.run_contract(r.implementation, r.suite, timeout=timeout)
        assert signal.getsignal(signal.SIGINT) is before
        [handler] = during
        assert handler is not before
        assert callable(handler)

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 600.0])
    async def test_overlapping_runs_put_back_the_handler_found_whichever_ends_first(
        self, timeout: float | None
    ) -> None:
        """
        Two runs at once on the main thread, the one started first ending first: once
        both have ended, the handler found before them is back, not the first run's
        own, which outside its run cannot act on Ctrl-C.
        """
        before = signal.getsignal(signal.SIGINT)
        first_running, second_running, first_ended = anyio.Event(), anyio.Event(), anyio.Event()

        async def waits_for_the_second(api: Probe) -> None:
            first_running.set()
            await second_running.wait()

        async def outlives_the_first(api: Probe) -> None:
            second_running.set()
            await first_ended.wait()

        first = rig({"waits": waits_for_the_second})
        second = rig({"outlives": outlives_the_first})
        reports: list[ck.ContractReport] = []

        async def run_first() -> None:
            reports.append(
                await ck.run_contract(first.implementation, first.suite, timeout=timeout)
            )
            first_ended.set()

        async def run_second() -> None:
            await first_running.wait()
            reports.append(
                await ck.run_contract(second.implementation, second.suite, timeout=timeout)
            )

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(run_first)
                group.start_soon(run_second)
        assert [statuses(report) for report in reports] == [[PASSED], [PASSED]]
        assert signal.getsignal(signal.SIGINT) is before

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 600.0])
    async def test_the_ctrl_c_hook_sees_each_ctrl_c(self, timeout: float | None) -> None:
        """
        set_ctrl_c_hook: the hook is called at each Ctrl-C a run takes, in its
        SIGINT handler, before the run acts on it (the second raises at once).
        """
        from conformkit._runner import set_ctrl_c_hook

        log: list[str] = []
        r = presses_twice(log)
        set_ctrl_c_hook(lambda: log.append("pressed"))
        try:
            with pytest.raises(KeyboardInterrupt), anyio.fail_after(10):
                await ck.run_contract(r.implementation, r.suite, timeout=timeout)
        finally:
            set_ctrl_c_hook(None)
        assert log == ["pressed", "went on after the first", "pressed"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2])
    async def test_a_run_where_sigint_is_ignored_leaves_it_ignored(self, cases: int) -> None:
        """
        Over a handler not in Python (SIGINT ignored), a run under deadlines installs
        none of its own: its cases run and are judged, and SIGINT stays ignored.
        """
        during: list[object] = []

        async def looks(api: Probe) -> None:
            during.append(signal.getsignal(signal.SIGINT))

        beside: dict[str, Case] = {} if cases == 1 else {"beside": passing("beside")}
        r = rig({"looks": looks, **beside})
        before = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            report = await ck.run_contract(r.implementation, r.suite, timeout=600.0)
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        finally:
            signal.signal(signal.SIGINT, before)
        assert statuses(report) == [PASSED] * cases
        assert during == [signal.SIG_IGN]

    @pytest.mark.anyio
    async def test_a_sigint_handler_the_code_under_test_installed_is_left(self) -> None:
        """The run puts back the handler it found only over its own: the case's stays."""
        before = signal.getsignal(signal.SIGINT)

        def own(signum: int, frame: object) -> None:
            pass

        async def installs(api: Probe) -> None:
            signal.signal(signal.SIGINT, own)

        r = rig({"installs": installs})
        try:
            await ck.run_contract(r.implementation, r.suite)
            assert signal.getsignal(signal.SIGINT) is own
        finally:
            signal.signal(signal.SIGINT, before)

    @pytest.mark.anyio
    async def test_ctrl_c_after_the_watchdog_interrupted_a_case(self) -> None:
        """
        The signal that interrupted a blocked case was the watchdog's; Ctrl-C after it
        is Ctrl-C again: the run stops cleanly.
        """
        log: list[str] = []

        def blocks(api: Probe) -> None:
            time.sleep(60.0)  # interrupted long before

        async def presses(api: Probe) -> None:
            signal.raise_signal(signal.SIGINT)
            log.append("went on after Ctrl-C")
            await anyio.sleep_forever()

        r = rig({"blocks": blocks, "presses": presses, "after": passing("after")})
        with pytest.raises(KeyboardInterrupt), anyio.fail_after(10):
            await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert log == ["went on after Ctrl-C"]
        assert r.entries("create") == ["create 0", "create 1"]

    @pytest.mark.anyio
    async def test_a_case_that_replaced_the_sigint_handler_is_still_interrupted(self) -> None:
        """
        Sync code whose SIGINT handler is its own is interrupted without the signal;
        once it put the run's back, Ctrl-C is Ctrl-C again.
        """
        log: list[str] = []

        def blocks(api: Probe) -> None:
            run_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)
            try:
                until = time.monotonic() + 10.0  # interrupted long before
                while time.monotonic() < until:
                    time.sleep(0.01)
                log.append("ran its course")
            finally:
                signal.signal(signal.SIGINT, run_handler)

        async def presses(api: Probe) -> None:
            signal.raise_signal(signal.SIGINT)
            log.append("went on after Ctrl-C")
            await anyio.sleep_forever()

        from conformkit._options import RunOptions
        from conformkit._runner import Execution, RunPlan

        r = rig({"blocks": blocks, "presses": presses})
        plan = RunPlan(r.implementation, r.suite, RunOptions(timeout=SHORT))
        execution = Execution(plan, plan.case_ids)
        with pytest.raises(KeyboardInterrupt), anyio.fail_after(20):
            await execution.run()
        assert log == ["went on after Ctrl-C"]
        [blocked] = execution.finished()  # what the run had judged as it stopped
        assert blocked.status is FAILED
        assert "; sync code blocked the event loop; interrupted in " in (blocked.reason or "")

    @pytest.mark.anyio
    async def test_the_watchdogs_signal_arriving_elsewhere_interrupts_nothing(self) -> None:
        """
        The signal sent to interrupt a blocked stage, held back until the stage had
        moved on to an await, is not raised into whatever code runs when it arrives.
        """
        log: list[str] = []
        sent = anyio.Event()

        unblocked = anyio.Event()

        async def unblocks() -> None:  # background work of the case's scope
            await sent.wait()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])  # it arrives here
            log.append("unblocked")
            unblocked.set()

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            scope.start_soon(unblocks)

        async def deaf(api: Probe) -> None:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
            until = time.monotonic() + 10.0
            while signal.SIGINT not in signal.sigpending() and time.monotonic() < until:
                time.sleep(0.01)  # noqa: ASYNC251  # blocks the loop till the signal is sent
            log.append("signalled")
            sent.set()
            with anyio.move_on_after(5.0, shield=True):  # its cancellation waits meanwhile
                await unblocked.wait()
            await anyio.sleep_forever()  # cancelled: past its deadline

        r = rig({"deaf": deaf, "after": passing("after")}, on_create=on_create)
        try:
            report = await ck.run_contract(r.implementation, r.suite, timeout=SHORT)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        assert log == ["signalled", "unblocked"]
        assert statuses(report) == [FAILED, PASSED]
        assert report["deaf"].cleanup_errors == ()


class TestOutsideCancellation:
    """Cancelling a run from outside propagates, cleans up the interrupted case, records nothing."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("anyio_backend", ["asyncio"])  # Task.cancel() is asyncio's own
    @pytest.mark.parametrize("max_concurrency", [1, 2])
    async def test_cancelling_the_runs_asyncio_task(
        self, anyio_backend: str, max_concurrency: int
    ) -> None:
        """Task.cancel() on the task awaiting the run: CancelledError propagates once every
        case begun is cleaned up; at one lane, the next case never starts."""
        import asyncio

        started = anyio.Event()

        async def waits(api: Probe) -> None:
            started.set()
            await anyio.sleep_forever()

        r = rig({"waits": waits, "after": passing("after")})
        task = asyncio.ensure_future(
            ck.run_contract(r.implementation, r.suite, max_concurrency=max_concurrency)
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        created = [entry for entry in r.log if entry.startswith("create")]
        cleaned = [entry for entry in r.log if entry.startswith("cleanup")]
        assert sorted(cleaned) == [entry.replace("create", "cleanup") for entry in sorted(created)]
        if max_concurrency == 1:
            assert r.log == ["create 0", "cleanup 0"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    @pytest.mark.parametrize("stage", STAGES)
    async def test_cancelling_the_run_during_a_stage(
        self, stage: str, timeout: float | None
    ) -> None:
        """Cancelled mid-stage, the run propagates it, cleans up once and starts nothing more."""
        started = anyio.Event()
        release = anyio.Event()
        events: list[str] = []

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            if number != 1:
                return
            if stage == "create":
                started.set()
                await anyio.sleep_forever()
            if stage == "cleanup":

                async def slow_cleanup() -> None:
                    started.set()
                    await release.wait()
                    events.append("slow cleanup finished")

                scope.defer(slow_cleanup)

        async def interrupted(api: Probe) -> None:
            if stage == "case":
                started.set()
                await anyio.sleep_forever()

        # 'after' never yields: only the runner itself can notice the cancellation
        # before starting it, or before returning a report.
        r = rig(
            {"before": passing("before"), "interrupted": interrupted, "after": quiet("after")},
            on_create=on_create,
        )
        report: ck.ContractReport | None = None
        async with anyio.create_task_group() as task_group:
            with anyio.CancelScope() as outer:

                async def cancel_once_started() -> None:
                    await started.wait()
                    outer.cancel()
                    release.set()

                task_group.start_soon(cancel_once_started)
                report = await ck.run_contract(r.implementation, r.suite, timeout=timeout)
            task_group.cancel_scope.cancel()  # if the run ended by itself, stop waiting for it
        assert outer.cancelled_caught, "the cancellation did not propagate out of run_contract"
        assert report is None
        assert r.log.count("cleanup 1") == 1
        assert "create 2" not in r.log  # no case starts once the run is cancelled
        if stage == "cleanup":
            assert events == ["slow cleanup finished"]  # shielded: not cut short

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 5.0], ids=["no-deadline", "deadline"])
    async def test_cancelling_the_run_during_the_last_cleanup(self, timeout: float | None) -> None:
        """Cancelled while the last case's cleanup runs, the run still returns no report."""
        started = anyio.Event()
        release = anyio.Event()

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            async def slow_cleanup() -> None:
                started.set()
                await release.wait()

            scope.defer(slow_cleanup)

        r = rig({"only": quiet("only")}, on_create=on_create)
        report: ck.ContractReport | None = None
        async with anyio.create_task_group() as task_group:
            with anyio.CancelScope() as outer:

                async def cancel_once_started() -> None:
                    await started.wait()
                    outer.cancel()
                    release.set()

                task_group.start_soon(cancel_once_started)
                report = await ck.run_contract(r.implementation, r.suite, timeout=timeout)
            task_group.cancel_scope.cancel()  # if the run ended by itself, stop waiting for it
        assert outer.cancelled_caught, "the cancellation did not propagate out of run_contract"
        assert report is None
        assert r.log == ["create 0", "case only on 0", "cleanup 0"]

    @pytest.mark.anyio
    async def test_move_on_after_around_run_contract(self) -> None:
        """A move_on_after deadline around the run cancels a hanging case and disposes it once."""
        r = rig({"hangs": hang, "after": passing("after")})
        report: ck.ContractReport | None = None
        with anyio.move_on_after(SHORT) as outer:
            report = await ck.run_contract(r.implementation, r.suite, timeout=None)
        assert outer.cancelled_caught
        assert report is None
        assert r.log == ["create 0", "cleanup 0"]

    @pytest.mark.anyio
    async def test_a_run_started_in_a_cancelled_scope_runs_nothing(self) -> None:
        """Cases that never await cannot miss a cancellation that came before the run."""
        log: list[str] = []
        the_feature = ck.Feature[list[str]]("test.runner.sync", cases=("one", "two"))

        class SyncOnly(ck.FeatureImplementation[list[str]]):
            feature = the_feature
            coverage = the_feature.coverage()

            def create(self, scope: ck.FeatureScope) -> list[str]:
                log.append("create")
                return log

        suite = ck.ContractSuite(the_feature, {"one": quiet_append, "two": quiet_append})
        report: ck.ContractReport | None = None
        with anyio.CancelScope() as outer:
            outer.cancel()
            report = await ck.run_contract(SyncOnly(), suite)
        assert outer.cancelled_caught
        assert report is None
        assert log == []


def quiet_append(api: list[str]) -> None:
    """A sync case that never yields to the event loop."""
    api.append("case")


async def expect_rejection(
    r: Rig,
    implementation: Any,
    suite: Any,
    fragments: Sequence[str],
    *,
    error: type[Exception] = ck.ContractDefinitionError,
    **options: Any,
) -> None:
    """Both run_contract and contract_cases refuse, naming each fragment, running nothing."""
    with pytest.raises(error) as excinfo:
        await ck.run_contract(implementation, suite, **options)
    for fragment in fragments:
        assert fragment in str(excinfo.value)
    if "max_concurrency" not in options:
        with pytest.raises(error) as excinfo:
            ck.contract_cases(implementation, suite, **options)
        for fragment in fragments:
            assert fragment in str(excinfo.value)
    assert r.log == []


class TestDefinitionChecks:
    """§4.6: definitions and options are checked before anything runs."""

    @pytest.mark.anyio
    async def test_a_suite_for_a_different_feature_is_rejected(self) -> None:
        """The error names both features."""
        left = rig({"a": passing("a")}, feature_id="test.left")
        right = rig({"a": passing("a")}, feature_id="test.right")
        await expect_rejection(left, left.implementation, right.suite, ["test.left", "test.right"])

    @pytest.mark.anyio
    async def test_features_sharing_an_id_are_still_different(self) -> None:
        """Two Feature objects with one ID do not match, and the error says they share it."""
        one = rig({"a": passing("a")}, feature_id="test.shared")
        two = rig({"a": passing("a")}, feature_id="test.shared")
        await expect_rejection(one, one.implementation, two.suite, ["test.shared", "share"])
        assert two.log == []

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "mismatch",
        ["not-an-implementation", "not-a-suite", "other-feature", "same-id", "coverage", "claims"],
    )
    async def test_each_rejection_says_what_it_got_whole(self, mismatch: str) -> None:
        """
        Each rejection's whole message: what was passed instead, the implementation's
        class by name, and the phrase about a shared ID only when the IDs are the same.
        """
        r = rig({"kept": passing("kept")}, feature_id="test.left")
        implementation: Any = r.implementation
        suite: Any = r.suite
        name = "rig.<locals>.ProbeImplementation"
        suite_of = "the suite is for feature 'test.{}' but {} implements feature 'test.left'"
        same_object = "; a suite runs only against implementations of the same Feature object"
        if mismatch == "not-an-implementation":
            implementation = Probe(0, [])
            message = f"expected a FeatureImplementation instance, got {implementation!r}"
        elif mismatch == "not-a-suite":
            suite = "not a suite"
            message = "expected a ContractSuite, got 'not a suite'"
        elif mismatch == "other-feature":
            suite = rig({"kept": passing("kept")}, feature_id="test.right").suite
            message = suite_of.format("right", name) + same_object
        elif mismatch == "same-id":
            suite = rig({"kept": passing("kept")}, feature_id="test.left").suite
            shared = " (two different Feature objects share that ID)"
            message = suite_of.format("left", name) + shared + same_object
        elif mismatch == "coverage":
            implementation.coverage = {"kept": ck.Supported(), "invented": ck.Supported()}
            message = (
                f"{name}.coverage names case 'invented', but feature 'test.left' declares "
                f"no such case"
            )
        else:
            implementation.claims = {"nope"}
            message = (
                f"{name}.claims must map family names to the parameters claimed, got {{'nope'}}"
            )
        with pytest.raises(ck.ContractDefinitionError) as raised:
            await ck.run_contract(implementation, suite)
        assert str(raised.value) == message
        with pytest.raises(ck.ContractDefinitionError) as raised:
            ck.contract_cases(implementation, suite)
        assert str(raised.value) == message
        assert r.log == []

    @pytest.mark.anyio
    async def test_a_suite_missing_a_case_is_rejected(self) -> None:
        """The error names the case the suite has no function for."""
        r = rig({"present": passing("present"), "absent": passing("absent")})
        incomplete = ck.ContractSuite(r.feature, {"present": passing("present")})
        await expect_rejection(r, r.implementation, incomplete, ["'absent'"])

    @pytest.mark.anyio
    async def test_an_implementation_class_instead_of_an_instance_is_rejected(self) -> None:
        """The error names the class and asks for an instance."""
        r = rig({"a": passing("a")})
        await expect_rejection(
            r, type(r.implementation), r.suite, ["ProbeImplementation", "instance"]
        )

    @pytest.mark.anyio
    async def test_coverage_missing_a_case_on_the_instance_is_rejected(self) -> None:
        """Coverage changed on the instance to drop a case is caught at run start."""
        r = rig({"kept": passing("kept"), "dropped": passing("dropped")})
        r.implementation.coverage = {"kept": ck.Supported()}
        await expect_rejection(r, r.implementation, r.suite, ["'dropped'"])

    @pytest.mark.anyio
    async def test_coverage_inventing_a_case_on_the_instance_is_rejected(self) -> None:
        """Coverage changed on the instance to add an undeclared case is caught at run start."""
        r = rig({"kept": passing("kept")})
        r.implementation.coverage = {"kept": ck.Supported(), "invented": ck.Supported()}
        await expect_rejection(r, r.implementation, r.suite, ["'invented'"])

    @pytest.mark.anyio
    @pytest.mark.parametrize("max_concurrency", [0, True, "2"])
    async def test_a_bad_max_concurrency_is_a_value_error(self, max_concurrency: object) -> None:
        """max_concurrency must be an int of at least 1; nothing runs otherwise."""
        r = rig({"a": passing("a")})
        await expect_rejection(
            r,
            r.implementation,
            r.suite,
            ["max_concurrency", repr(max_concurrency)],
            error=ValueError,
            max_concurrency=max_concurrency,
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, 10**400])
    async def test_a_bad_timeout_is_a_definition_error(self, timeout: float) -> None:
        """timeout must be a positive, finite number or None; nothing runs otherwise."""
        r = rig({"a": passing("a")})
        await expect_rejection(
            r, r.implementation, r.suite, ["timeout"], error=ck.ContractDefinitionError,
            timeout=timeout,
        )  # fmt: skip

    def test_an_unknown_backend_is_a_value_error(self) -> None:
        """run_contract_sync and run_sync reject backend='curio' before anything runs."""
        r = rig({"a": passing("a")})
        with pytest.raises(ValueError, match="curio"):
            ck.run_contract_sync(r.implementation, r.suite, backend="curio")  # type: ignore[arg-type]
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(ValueError, match="curio"):
            case.run_sync(backend="curio")  # type: ignore[arg-type]
        assert r.log == []

    def test_backend_trio_without_trio_says_how_to_install_it(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without trio, backend='trio' is a ModuleNotFoundError naming trio and its extra,
        raised before anything runs; backend='asyncio' runs as before."""
        r = rig({"a": passing("a")})
        [case] = ck.contract_cases(r.implementation, r.suite)
        monkeypatch.setitem(sys.modules, "trio", None)  # trio cannot be imported
        message = r"^backend 'trio' needs trio installed: pip install 'conformkit\[trio\]'$"
        with pytest.raises(ModuleNotFoundError, match=message) as raised:
            ck.run_contract_sync(r.implementation, r.suite, backend="trio")
        assert raised.value.name == "trio"
        with pytest.raises(ModuleNotFoundError, match=message):
            case.run_sync(backend="trio")
        assert r.log == []
        assert statuses(ck.run_contract_sync(r.implementation, r.suite, backend="asyncio")) == [
            PASSED
        ]
        case.run_sync(backend="asyncio")

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_run_contract_sync_checks_definitions_first(self, backend: Backend) -> None:
        """run_contract_sync raises ContractDefinitionError before running anything."""
        r = rig({"present": passing("present"), "absent": passing("absent")})
        incomplete = ck.ContractSuite(r.feature, {"present": passing("present")})
        with pytest.raises(ck.ContractDefinitionError, match="'absent'"):
            ck.run_contract_sync(r.implementation, incomplete, backend=backend)
        assert r.log == []


class TestContractCases:
    """§4.8: contract_cases gives one runnable case per declared case."""

    def test_one_case_per_declared_case_with_stable_ids(self) -> None:
        """IDs follow the declared order, are stable across calls, and str(case) is the ID."""
        names = ("zeta", "alpha", "mid")
        r = rig({name: passing(name) for name in names}, unsupported={"alpha": "not here"})
        cases = ck.contract_cases(r.implementation, r.suite)
        assert all(isinstance(case, ck.ContractCase) for case in cases)
        assert [case.id for case in cases] == list(names)
        assert [str(case) for case in cases] == list(names)
        again = ck.contract_cases(r.implementation, r.suite)
        assert [case.id for case in again] == list(names)
        assert r.log == []  # building the cases runs nothing

    def test_a_case_names_its_feature_and_implementation(self) -> None:
        """Its attributes and its repr name the case, the implementation and the feature."""
        r = rig({"a": passing("a")})
        [case] = ck.contract_cases(r.implementation, r.suite)
        name = type(r.implementation).__qualname__
        assert (case.id, case.feature_id, case.implementation) == ("a", FEATURE_ID, name)
        assert repr(case) == f"<ContractCase 'a' of {name} ({FEATURE_ID!r})>"

    @pytest.mark.parametrize("backend", [*BACKENDS, None])
    def test_a_failure_is_raised_with_its_frames_live(self, backend: Backend | None) -> None:
        """The error run_sync() raises keeps the case's frames, locals and all, for a
        debugger or pytest; run_sync() runs on asyncio by default."""
        loops: list[str] = []

        def fails(api: Probe) -> Awaitable[None]:
            loops.append(event_loop())
            return failing_with_a_local(api)

        r = rig({"fails": fails})
        [case] = ck.contract_cases(r.implementation, r.suite)
        run = (
            case.run_sync if backend is None else functools.partial(case.run_sync, backend=backend)
        )
        with pytest.raises(AssertionError) as excinfo:
            run()
        assert loops == [backend or "asyncio"]
        assert kept_locals(excinfo.value) == ["case on 0"]

    @pytest.mark.anyio
    async def test_a_passing_case_runs_once_and_returns(self) -> None:
        """run() on a passing case creates, runs and cleans up that case only."""
        r = rig({"a": passing("a"), "b": passing("b")})
        _, second = ck.contract_cases(r.implementation, r.suite)
        await second.run()
        assert r.log == ["create 0", "case b on 0", "cleanup 0"]

    @pytest.mark.anyio
    async def test_a_failing_case_raises_its_own_error(self) -> None:
        """run() re-raises the very exception the case raised, after cleanup."""
        error = AssertionError("expected 'stored' back")

        async def fails(api: Probe) -> None:
            raise error

        r = rig({"fails": fails})
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(AssertionError) as excinfo:
            await case.run()
        assert excinfo.value is error
        assert r.log == ["create 0", "cleanup 0"]

    @pytest.mark.anyio
    async def test_an_unsupported_case_raises_skip_test_with_the_reason(self) -> None:
        """run() on an unsupported case raises CaseUnsupported, a SkipTest, without running it."""
        r = rig({"a": passing("a")}, unsupported={"a": "no clock in this backend"})
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(unittest.SkipTest) as excinfo:
            await case.run()
        assert isinstance(excinfo.value, ck.CaseUnsupported)
        assert "no clock in this backend" in str(excinfo.value)
        assert r.log == []

    def test_case_unsupported_imports_unittest_only_when_first_used(self) -> None:
        """import conformkit loads no unittest; ck.CaseUnsupported does, a SkipTest all the same."""
        code = textwrap.dedent(
            """
            import sys
            import conformkit
            print("unittest" in sys.modules)
            import unittest
            print(issubclass(conformkit.CaseUnsupported, unittest.SkipTest))
            print(conformkit.CaseUnsupported.__module__)
            from conformkit import CaseUnsupported
            print(CaseUnsupported is conformkit.CaseUnsupported)
            """
        )
        output = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert output.stdout.split() == ["False", "True", "conformkit", "True"]

    @pytest.mark.anyio
    async def test_an_unavailable_case_raises_the_feature_unavailable(self) -> None:
        """run() on a case whose create() lacks a facility raises that FeatureUnavailable."""
        absent = ck.FeatureUnavailable("no database server")

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            raise absent

        r = rig({"a": passing("a")}, on_create=on_create)
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(ck.FeatureUnavailable) as excinfo:
            await case.run()
        assert excinfo.value is absent

    @pytest.mark.anyio
    async def test_failed_cleanups_raise_an_exception_group(self) -> None:
        """run() on a case whose cleanup failed raises a group holding the cleanup error."""
        boom = OSError("socket still bound")

        async def on_create(number: int, scope: ck.FeatureScope) -> None:
            def unbind() -> None:
                raise boom

            scope.defer(unbind)

        r = rig({"a": passing("a")}, on_create=on_create)
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(ExceptionGroup) as excinfo:
            await case.run()
        assert excinfo.value.exceptions == (boom,)
        # Its message is the reason a report gives.
        report = await ck.run_contract(r.implementation, r.suite)
        assert excinfo.value.message == report["a"].reason
        assert excinfo.value.message == "case 'a' failed in cleanup: OSError: socket still bound"

    @pytest.mark.anyio
    async def test_an_overrun_raises_timeout_error(self) -> None:
        """run() on a case that overruns its deadline raises TimeoutError naming the stage."""
        r = rig({"hangs": hang, "after": passing("after")})
        hangs, after = ck.contract_cases(r.implementation, r.suite, timeout=SHORT)
        with pytest.raises(TimeoutError, match="'case'"):
            await hangs.run()
        await after.run()
        assert r.log == ["create 0", "cleanup 0", "create 1", "case after on 1", "cleanup 1"]

    @pytest.mark.anyio
    async def test_an_interrupt_propagates_bare_from_run(self) -> None:
        """run() re-raises a KeyboardInterrupt unwrapped, after the case's cleanup."""
        raised = KeyboardInterrupt()

        async def interrupting(api: Probe) -> None:
            raise raised

        r = rig({"a": interrupting})
        [case] = ck.contract_cases(r.implementation, r.suite)
        with pytest.raises(KeyboardInterrupt) as excinfo:
            await case.run()
        assert excinfo.value is raised
        assert r.log == ["create 0", "cleanup 0"]

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_run_sync_works_on_both_backends(self, backend: Backend) -> None:
        """run_sync passes, fails with the case's error and skips, on either backend."""
        error = AssertionError("broken")

        async def fails(api: Probe) -> None:
            raise error

        r = rig(
            {"holds": passing("holds"), "fails": fails, "skipped": passing("skipped")},
            unsupported={"skipped": "not here"},
        )
        holds, failing, skipped = ck.contract_cases(r.implementation, r.suite)
        holds.run_sync(backend=backend)
        with pytest.raises(AssertionError) as excinfo:
            failing.run_sync(backend=backend)
        assert excinfo.value is error
        with pytest.raises(unittest.SkipTest, match="not here"):
            skipped.run_sync(backend=backend)
        assert r.log == ["create 0", "case holds on 0", "cleanup 0", "create 1", "cleanup 1"]

    @pytest.mark.anyio
    async def test_concurrent_runs_of_one_plan_do_not_interfere(self) -> None:
        """Three runs of two cases of one plan, in flight at once, each pass on their own API."""
        gate = Gate(3)

        async def meet(api: Probe) -> None:
            await gate.wait()
            api.log.append(f"met on {api.number}")

        r = rig({"one": meet, "two": meet})
        one, two = ck.contract_cases(r.implementation, r.suite, timeout=5)
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(one.run)
            task_group.start_soon(one.run)
            task_group.start_soon(two.run)
        assert sorted(r.entries("create")) == ["create 0", "create 1", "create 2"]
        assert sorted(r.entries("met")) == ["met on 0", "met on 1", "met on 2"]
        assert sorted(r.entries("cleanup")) == ["cleanup 0", "cleanup 1", "cleanup 2"]
        assert len({id(api) for api in r.apis}) == 3


CONTRACT_MODULE = """
from __future__ import annotations

import conformkit as ck


class API:
    value = 1


feature = ck.Feature[API]("demo.sub", cases=("holds", "breaks", "later"))
suite = ck.ContractSuite(feature)


@suite.case
async def holds(api: API) -> None:
    assert api.value == 1


@suite.case
async def breaks(api: API) -> None:
    raise AssertionError("value drifted to 2")


@suite.case
async def later(api: API) -> None:
    raise AssertionError("an unsupported case must never run")


class Memory(ck.FeatureImplementation[API]):
    feature = feature
    coverage = feature.coverage(unsupported={"later": "no clock in this backend"})

    def create(self, scope: ck.FeatureScope) -> API:
        return API()
"""

PYTEST_FILE = """
import pytest

from contract_demo import Memory, ck, suite


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("case", ck.contract_cases(Memory(), suite), ids=str)
async def test_memory(case):
    await case.run()
"""

UNITTEST_FILE = """
import unittest

from contract_demo import Memory, ck, suite


class TestMemory(unittest.IsolatedAsyncioTestCase):
    async def test_contract(self):
        for case in ck.contract_cases(Memory(), suite):
            with self.subTest(case=case.id):
                await case.run()
"""


def run_python(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    environment.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class TestTestRunners:
    """§4.8: pytest and unittest loops over contract_cases report pass, fail and skip."""

    def test_a_pytest_loop_reports_the_skip_with_its_reason_and_the_failure(
        self, tmp_path: Path
    ) -> None:
        """pytest shows 1 failed, 1 passed, 1 skipped, the skip's reason under -rs."""
        (tmp_path / "contract_demo.py").write_text(textwrap.dedent(CONTRACT_MODULE))
        (tmp_path / "test_contract.py").write_text(textwrap.dedent(PYTEST_FILE))
        (tmp_path / "pytest.ini").write_text("[pytest]\n")
        done = run_python(
            tmp_path, "-m", "pytest", "-rs", "-p", "no:cacheprovider", "test_contract.py"
        )
        output = done.stdout
        assert done.returncode == 1, output + done.stderr
        assert re.search(r"\b1 failed, 1 passed, 1 skipped\b", output), output
        assert re.search(r"SKIPPED \[1\] .*no clock in this backend", output), output
        assert "test_memory[breaks]" in output
        assert "value drifted to 2" in output

    def test_a_unittest_subtest_loop_reports_the_skip_with_its_reason(self, tmp_path: Path) -> None:
        """unittest -v shows the unsupported subtest as skipped with the reason, and the failure."""
        (tmp_path / "contract_demo.py").write_text(textwrap.dedent(CONTRACT_MODULE))
        (tmp_path / "test_unit_contract.py").write_text(textwrap.dedent(UNITTEST_FILE))
        done = run_python(tmp_path, "-m", "unittest", "-v", "test_unit_contract")
        output = done.stderr
        assert done.returncode == 1, output
        assert re.search(r"skipped '.*no clock in this backend'", output), output
        assert "value drifted to 2" in output
        assert "FAILED (failures=1, skipped=1)" in output


def mixed_rig() -> Rig:
    """A rig whose four cases pass, fail, are unsupported and are unavailable."""

    async def on_create(number: int, scope: ck.FeatureScope) -> None:
        if number == 2:  # the third supported case, 'needs_server'
            raise ck.FeatureUnavailable("no server")

    async def fails(api: Probe) -> None:
        raise AssertionError("broken")

    return rig(
        {
            "holds": passing("holds"),
            "fails": fails,
            "skipped": passing("skipped"),
            "needs_server": passing("needs_server"),
        },
        unsupported={"skipped": "not here"},
        on_create=on_create,
    )


class TestRunContractSync:
    """§4.7: run_contract_sync runs the same thing from synchronous code."""

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_run_contract_sync_reports_what_run_contract_reports(self, backend: Backend) -> None:
        """Same case IDs, statuses and reasons as run_contract on the same backend."""
        expected = [PASSED, FAILED, UNSUPPORTED, UNAVAILABLE]
        sync_rig, async_rig = mixed_rig(), mixed_rig()
        sync_report = ck.run_contract_sync(sync_rig.implementation, sync_rig.suite, backend=backend)
        async_report = anyio.run(
            functools.partial(ck.run_contract, async_rig.implementation, async_rig.suite),
            backend=backend,
        )
        assert statuses(sync_report) == expected
        assert statuses(async_report) == expected
        assert [(result.case_id, result.reason) for result in sync_report.results] == [
            (result.case_id, result.reason) for result in async_report.results
        ]
        assert sync_rig.log == async_rig.log

    @pytest.mark.parametrize("backend", [*BACKENDS, None])
    def test_it_runs_on_the_backend_asked_for(self, backend: Backend | None) -> None:
        """The cases run on the backend named; asyncio by default."""

        async def where(api: Probe) -> None:
            api.log.append(event_loop())

        r = rig({"where": where})
        if backend is None:
            report = ck.run_contract_sync(r.implementation, r.suite)
        else:
            report = ck.run_contract_sync(r.implementation, r.suite, backend=backend)
        assert statuses(report) == [PASSED]
        assert r.log == ["create 0", backend or "asyncio", "cleanup 0"]

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_its_timeout_bounds_the_stages(self, backend: Backend) -> None:
        """A case that never ends fails at the deadline given, not the declared one."""
        r = rig({"hangs": hang})
        report = ck.run_contract_sync(r.implementation, r.suite, backend=backend, timeout=TINY)
        assert statuses(report) == [FAILED]
        assert f"stage 'case' exceeded the {TINY:g}s deadline" in (report["hangs"].reason or "")

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_its_max_concurrency_runs_cases_side_by_side(self, backend: Backend) -> None:
        """Two cases that each wait for the other pass only when both run at once."""
        gate = Gate(2)

        async def meets(api: Probe) -> None:
            await gate.wait()

        r = rig({"one": meets, "two": meets})
        report = ck.run_contract_sync(
            r.implementation, r.suite, backend=backend, timeout=5.0, max_concurrency=2
        )
        assert statuses(report) == [PASSED, PASSED]

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_keep_tracebacks_keeps_the_frames(self, backend: Backend) -> None:
        """keep_tracebacks=True keeps the failure's frames; by default they are let go."""
        reports = [
            ck.run_contract_sync(r.implementation, r.suite, backend=backend, **options)
            for r, options in (
                (rig({"fails": failing_with_a_local}), {}),
                (rig({"fails": failing_with_a_local}), {"keep_tracebacks": True}),
            )
        ]
        released, kept = (report["fails"].error for report in reports)
        assert released is not None
        assert kept is not None
        assert released.__traceback__ is None
        assert kept_locals(kept) == ["case on 0"]

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_check_isolation_reaches_the_run(self, backend: Backend) -> None:
        """check_isolation=True fails a create that returns one object for every scope."""
        shared_feature = ck.Feature[object]("test.shared", cases=("a",))
        shared = object()

        class Shared(ck.FeatureImplementation[object]):
            feature = shared_feature
            coverage = shared_feature.coverage()

            async def create(self, scope: ck.FeatureScope) -> object:
                return shared

        suite = ck.ContractSuite(shared_feature, {"a": lambda api: None})
        unchecked = ck.run_contract_sync(Shared(), suite, backend=backend)
        checked = ck.run_contract_sync(Shared(), suite, backend=backend, check_isolation=True)
        assert statuses(unchecked) == [PASSED]
        assert statuses(checked) == [FAILED]
        assert "TypeError: isolation broken" in (checked["a"].reason or "")

    @pytest.mark.anyio
    async def test_run_contract_reports_the_mixed_statuses(self) -> None:
        """run_contract itself gives passed, failed, unsupported and unavailable in order."""
        r = mixed_rig()
        report = await ck.run_contract(r.implementation, r.suite)
        assert statuses(report) == [PASSED, FAILED, UNSUPPORTED, UNAVAILABLE]
        assert report.feature_id == FEATURE_ID
