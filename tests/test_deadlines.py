"""Which deadline a stage has, and how an overrun of each is judged."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import conformkit as ck
from conformkit import _implementation
from conformkit.cli._json import from_json, to_json
from conformkit.cli._matrix import CaseRecord, Entry, Matrix, RunInfo
from conformkit.cli._text import render_text

PASSED, FAILED = ck.CaseStatus.PASSED, ck.CaseStatus.FAILED
GUARD = 0.2
"""The default guard's first deadline in these tests, which its overruns wait out."""
RETRY = 10.0
"""The longer deadline a case that overran the guard runs again under: 50 times what it needs."""


@pytest.fixture(autouse=True)
def short_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the default guard's deadlines: a declared deadline is the test's own.
    monkeypatch.setattr(_implementation, "GUARD_TIMEOUTS", (GUARD, RETRY), raising=False)


class Calls:
    """Counts the runs of a case; the first overruns, the later ones return at once."""

    def __init__(self) -> None:
        self.count = 0

    def first(self) -> bool:
        self.count += 1
        return self.count == 1


Case = Callable[[object], Awaitable[None] | None]


def contract(
    case: Case,
    *,
    beside: bool,
    implementation_timeout: float | None = None,
    own: Any = None,
    create: Callable[[ck.FeatureScope], Any] = lambda scope: object(),
) -> tuple[ck.FeatureImplementation[object, Any], ck.ContractSuite[object, Any]]:
    """
    A feature whose case ``c`` runs ``case``; with ``beside``, a passing case
    ``d`` too, so that the run has a watchdog (a run of one case has none).
    """
    feature = ck.Feature[object]("test.deadlines", cases=("c", "d") if beside else ("c",))
    suite = ck.ContractSuite(feature)
    if own is None:
        suite.case("c")(case)
    else:
        suite.case("c", timeout=own)(case)
    if beside:
        suite.case("d")(lambda api: None)

    namespace: dict[str, Any] = {
        "feature": feature,
        "coverage": feature.coverage(),
        "create": lambda self, scope: create(scope),
    }
    if implementation_timeout is not None:
        namespace["timeout"] = implementation_timeout
    cls = type("Store", (ck.FeatureImplementation,), namespace)
    return cls(), suite


async def run_c(
    case: Case, *, how: str, timeout: Any = ck.DEFAULT_TIMEOUT, **options: Any
) -> ck.CaseResult:
    """Run case ``c`` through ``run_contract`` (with a case beside it) or ``case.run()``."""
    implementation, suite = contract(case, beside=how == "run_contract", **options)
    with anyio.fail_after(60):  # an overrun of 10s at most, twice
        if how == "run_contract":
            return (await ck.run_contract(implementation, suite, timeout=timeout))["c"]
        [case_c] = ck.contract_cases(implementation, suite, timeout=timeout)
        try:
            await case_c.run()
        except TimeoutError as exc:
            return ck.CaseResult("c", FAILED, str(exc))
        return ck.CaseResult("c", PASSED)


HOW = pytest.mark.parametrize("how", ["run_contract", "case.run"])


def overruns_once_waiting(calls: Calls) -> Case:
    async def case(api: object) -> None:
        if calls.first():
            await anyio.sleep_forever()  # cancelled at the guard's deadline

    return case


def overruns_once_blocking(calls: Calls) -> Case:
    def case(api: object) -> None:
        if calls.first():
            time.sleep(GUARD + 0.1)  # sync code past the deadline, never cancelled

    return case


@pytest.mark.anyio
class TestDefaultGuard:
    """Without a declared deadline, an overrun is run again under a longer one before judging."""

    async def test_a_case_that_waits_past_the_guard_once_passes_slow(self) -> None:
        """Cancelled at the guard, then passing when run again: passed, with the slow note."""
        calls = Calls()
        implementation, suite = contract(overruns_once_waiting(calls), beside=True)
        with anyio.fail_after(60):
            report = await ck.run_contract(implementation, suite)
        result = report["c"]
        assert (result.status, result.slow, calls.count) == (PASSED, True, 2)
        assert report.slow == ("c",)
        assert (result.reason or "").startswith(
            "slow: passed only when run again under a 10s deadline; the first run: feature "
            "'test.deadlines', case 'c': stage 'case' exceeded the 0.2s deadline"
        ), result.reason
        assert "SLOW c: slow: passed only when run again" in str(report)
        assert "2 passed (1 slow)" in str(report)
        ck.assert_contract(report, require_full=True)  # a slow pass is a pass

    @HOW
    async def test_a_case_that_blocks_past_the_guard_once_passes(self, how: str) -> None:
        """Sync code that held the event loop past the guard once passes when run again."""
        calls = Calls()
        result = await run_c(overruns_once_blocking(calls), how=how)
        assert (result.status, calls.count) == (PASSED, 2)
        if how == "run_contract":
            assert result.slow
            # How long it ran, and whether the watchdog interrupted it, are the machine's.
            assert re.search(
                r"\(ran [0-9.]+s; sync code blocked the event loop[;)]", result.reason or ""
            ), result.reason

    @HOW
    async def test_a_slow_create_is_run_again_too(self, how: str) -> None:
        """A create stage that overran the guard once: the case runs again and passes."""
        calls = Calls()

        async def create(scope: ck.FeatureScope) -> object:
            if calls.first():
                await anyio.sleep_forever()
            return object()

        implementation, suite = contract(
            lambda api: None, beside=how == "run_contract", create=create
        )
        with anyio.fail_after(60):
            if how == "run_contract":
                result = (await ck.run_contract(implementation, suite))["c"]
                assert (result.status, result.slow) == (PASSED, True)
                assert "stage 'create' exceeded the 0.2s deadline" in (result.reason or "")
            else:
                [case] = ck.contract_cases(implementation, suite)
                await case.run()
        assert calls.count == (3 if how == "run_contract" else 2)  # "d" creates once too

    @HOW
    async def test_a_case_that_always_overruns_fails_naming_both_deadlines(
        self, how: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A hang still fails, once it overran the longer deadline too, and says how to raise it."""
        monkeypatch.setattr(_implementation, "GUARD_TIMEOUTS", (GUARD, 0.5), raising=False)
        calls = Calls()

        async def hangs(api: object) -> None:
            calls.first()
            await anyio.sleep_forever()

        result = await run_c(hangs, how=how)
        assert (result.status, result.slow, calls.count) == (FAILED, False, 2)
        reason = result.reason or ""
        assert "stage 'case' exceeded the 0.5s deadline (cancelled in hangs at " in reason
        assert reason.endswith(
            "the longer deadline it was run again under, once it overran the default 0.2s "
            "guard; to allow more time, set timeout = ... on Store or pass --timeout"
        ), reason

    async def test_a_case_that_fails_when_run_again_is_judged_by_that_run(self) -> None:
        """The second run decides: its own failure, not a slow pass."""
        calls = Calls()

        async def case(api: object) -> None:
            if calls.first():
                await anyio.sleep_forever()
            raise AssertionError("wrong answer")

        result = await run_c(case, how="run_contract")
        assert (result.status, result.slow, calls.count) == (FAILED, False, 2)
        assert "AssertionError: wrong answer" in (result.reason or ""), result.reason


@pytest.mark.anyio
class TestDeclaredDeadlines:
    """A declared deadline is kept to: its overrun fails at once, naming it and how to raise it."""

    @HOW
    async def test_the_implementations_timeout(self, how: str) -> None:
        """``timeout = ...`` on the implementation: no second run, the reason names it."""
        calls = Calls()
        result = await run_c(overruns_once_waiting(calls), how=how, implementation_timeout=0.2)
        assert (result.status, calls.count) == (FAILED, 1)
        assert (result.reason or "").endswith(
            "exceeded the 0.2s deadline (cancelled in case at test_deadlines.py:"
            f"{overruns_once_waiting.__code__.co_firstlineno + 3}): Store.timeout; to allow "
            f"more time, set timeout = ... on Store or pass --timeout"
        ), result.reason

    @HOW
    async def test_the_runs_timeout(self, how: str) -> None:
        """A run's ``timeout=``: no second run, the reason names it."""
        calls = Calls()
        result = await run_c(overruns_once_blocking(calls), how=how, timeout=0.2)
        assert (result.status, calls.count) == (FAILED, 1)
        # How long it ran, and whether the watchdog had to interrupt it, depend on the
        # machine's load: the reason's end, naming the deadline, does not.
        assert re.search(
            r"\(ran [0-9.]+s; sync code blocked the event loop(; interrupted in [^)]*)?\): "
            r"the run's timeout= \(--timeout\); pass a larger one to allow more time$",
            result.reason or "",
        ), result.reason

    @HOW
    async def test_the_cases_own_deadline(self, how: str) -> None:
        """``@suite.case(..., timeout=...)``: no second run, the reason names it."""
        calls = Calls()
        result = await run_c(overruns_once_waiting(calls), how=how, own=0.5)
        assert (result.status, calls.count) == (FAILED, 1)
        reason = result.reason or ""
        assert "stage 'case' exceeded the 0.5s deadline" in reason, reason
        assert reason.endswith(
            "the case's own deadline, @suite.case(..., timeout=0.5); raise it there, or pass "
            "--timeout, to allow more time"
        ), reason

    @HOW
    async def test_the_cases_own_deadline_gives_it_more_time(self, how: str) -> None:
        """A case that needs 0.3s and declares 10s passes at once where the guard is 0.2s."""
        calls = Calls()
        result = await run_c(overruns_once_blocking(calls), how=how, own=RETRY)
        assert (result.status, result.slow, calls.count) == (PASSED, False, 1)

    @HOW
    async def test_the_runs_timeout_overrides_the_cases_own(self, how: str) -> None:
        """A run's ``timeout=`` beats what the case declares."""
        calls = Calls()
        result = await run_c(overruns_once_blocking(calls), how=how, own=RETRY, timeout=0.2)
        assert (result.status, calls.count) == (FAILED, 1)

    @HOW
    async def test_the_implementations_longer_deadline_beats_the_cases_shorter(
        self, how: str
    ) -> None:
        """A case's own deadline raises the implementation's, never lowers it."""
        calls = Calls()
        result = await run_c(
            overruns_once_blocking(calls), how=how, own=0.2, implementation_timeout=RETRY
        )
        assert (result.status, calls.count) == (PASSED, 1)


class TestOwnDeadlineDeclaration:
    """A case's own deadline is checked when it is registered."""

    @pytest.mark.parametrize("bad", [0, -1.0, float("inf"), True, "30"])
    def test_a_malformed_deadline_names_the_case(self, bad: object) -> None:
        """One line naming the case, the feature and the value."""
        suite = ck.ContractSuite(ck.Feature[object]("test.deadlines", cases=("c",)))
        with pytest.raises(ck.ContractDefinitionError) as caught:
            suite.case("c", timeout=bad)(lambda api: None)  # type: ignore[call-overload]
        assert str(caught.value) == (
            f"timeout of case 'c' of feature 'test.deadlines' must be a positive, finite "
            f"number of seconds, got {bad!r}"
        )

    def test_the_keyword_alone_names_the_case_after_the_function(self) -> None:
        """``@suite.case(timeout=30)`` registers the function under its own name."""
        suite = ck.ContractSuite(ck.Feature[object]("test.deadlines", cases=("c",)))

        @suite.case(timeout=30)
        def c(api: object) -> None: ...

        assert suite["c"] is c
        assert suite.own_timeout("c") == 30.0


RUN = RunInfo(
    "1.0", "CPython 3.11.0", "Linux", "asyncio", "2025-01-01T00:00:00.000+00:00",
    "2025-01-01T00:00:01.000+00:00", ("contracts.py",),
)  # fmt: skip


class TestSlowInReports:
    """The slow note is carried by every report format that holds results."""

    def test_json_round_trip_keeps_it(self) -> None:
        """A slow pass written as JSON reads back slow."""
        result = ck.CaseResult("a", PASSED, "slow: passed only when run again", slow=True)
        record = CaseRecord.of(result)
        document = to_json(Matrix(RUN, (Entry("f", "I", "m", None, ("a",), (record,)),)))
        assert document["reports"][0]["results"][0]["slow"] is True
        [entry] = from_json(json.loads(json.dumps(document)), "report.json").entries
        assert entry.results == (record,)
        assert entry.results[0].slow

    def test_the_text_summary_counts_and_shows_it(self) -> None:
        """The text says which case was slow, and counts it."""
        slow = CaseRecord("a", PASSED, "slow: passed only when run again", 0.5, slow=True)
        plain = CaseRecord("b", PASSED, None, 0.1)
        text = render_text(Matrix(RUN, (Entry("f", "I", "m", None, ("a", "b"), (slow, plain)),)))
        assert "f × I: 2 passed (1 slow) in 0.60s" in text, text
        assert "  PASSED (slow) a in 0.500s: slow: passed only when run again" in text, text
        assert "2 cases: 2 passed (1 slow)" in text, text
