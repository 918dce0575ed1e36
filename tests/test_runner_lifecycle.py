"""What a run reports of each case's life: how long it took, whatever its outcome."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import pytest

import conformkit as ck

PAUSE = 0.03  # seconds each stage of a timed case sleeps
TINY = 0.1  # seconds: a deadline for a case that overruns it by design
FAILED = ck.CaseStatus.FAILED
PASSED = ck.CaseStatus.PASSED
UNSUPPORTED = ck.CaseStatus.UNSUPPORTED
UNAVAILABLE = ck.CaseStatus.UNAVAILABLE


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
        report = await ck.run_contract(implementation, suite, timeout=TINY)
        wall = time.perf_counter() - began
        result = report["timed"]
        assert result.status is FAILED
        assert "stage 'case' exceeded the 0.1s deadline" in (result.reason or "")
        assert 2 * PAUSE * 0.9 + TINY * 0.9 <= result.duration <= wall
