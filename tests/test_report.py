"""Reports, their readable and JSON forms, and the gate."""

from __future__ import annotations

import json
import traceback
from typing import Any, Protocol

import pytest
from hypothesis import given
from hypothesis import strategies as st

import conformkit as ck
from conformkit._report import Gate, Offence

PASSED, FAILED = ck.CaseStatus.PASSED, ck.CaseStatus.FAILED
UNSUPPORTED, UNAVAILABLE = ck.CaseStatus.UNSUPPORTED, ck.CaseStatus.UNAVAILABLE


def report(
    *results: ck.CaseResult, cleanup_errors: tuple[BaseException, ...] = ()
) -> ck.ContractReport:
    return ck.ContractReport("kv", "Memory", results, cleanup_errors)


def raised(exc: BaseException) -> BaseException:
    """``exc`` with a real traceback, as the runner records it."""
    try:
        raise exc
    except BaseException as caught:
        return caught


class TestCaseStatus:
    def test_is_a_string_enum(self) -> None:
        """Statuses compare equal to their strings and serialise as them."""
        assert ck.CaseStatus.PASSED == "passed"  # type: ignore[comparison-overlap]
        assert [status.value for status in ck.CaseStatus] == [
            "passed",
            "failed",
            "unsupported",
            "unavailable",
        ]
        assert json.dumps(ck.CaseStatus.FAILED) == '"failed"'


class TestStr:
    def test_summarises_counts_and_each_case_that_did_not_pass(self) -> None:
        """One headline, then one line per non-passing case with its reason; passes stay quiet."""
        text = str(
            report(
                ck.CaseResult("read", PASSED, duration=0.5),
                ck.CaseResult(
                    "write", FAILED, "case 'write' failed: boom\nsecond line", duration=0.25
                ),
                ck.CaseResult("ttl", UNSUPPORTED, "no clock"),
            )
        )
        assert text.splitlines() == [
            "kv × Memory: 1 passed, 1 failed, 1 unsupported in 0.75s",
            "  FAILED write: case 'write' failed: boom…",
            "  UNSUPPORTED ttl: no clock",
        ]

    def test_shortens_long_reasons(self) -> None:
        """A very long reason is cut to one readable line."""
        text = str(report(ck.CaseResult("read", FAILED, "x" * 1000)))
        assert len(text.splitlines()[1]) < 300
        assert text.endswith("…")

    def test_lists_cleanup_errors_outside_cases(self) -> None:
        """Failures that belong to no case get a line of their own."""
        text = str(
            report(ck.CaseResult("read", PASSED), cleanup_errors=(RuntimeError("pool leak"),))
        )
        assert "  CLEANUP ERROR: RuntimeError: pool leak" in text.splitlines()


class TestToDict:
    def test_is_json_ready(self) -> None:
        """Statuses become strings and exceptions type, message and traceback text."""
        error = raised(AssertionError("expected None"))
        data = report(
            ck.CaseResult(
                "read", FAILED, "case 'read' failed", error, (raised(KeyError("k")),), 0.5
            ),
            ck.CaseResult("write", PASSED, duration=0.25),
        ).to_dict()
        assert json.loads(json.dumps(data)) == data
        assert data["counts"] == {"passed": 1, "failed": 1, "unsupported": 0, "unavailable": 0}
        first = data["results"][0]
        assert first["status"] == "failed"
        assert first["error"]["type"] == "AssertionError"
        assert first["error"]["message"] == "expected None"
        assert first["error"]["traceback"] == "".join(traceback.format_exception(error))
        assert "in raised" in first["error"]["traceback"]
        assert first["cleanup_errors"][0]["type"] == "KeyError"
        assert data["results"][1] == {
            "case_id": "write",
            "status": "passed",
            "reason": None,
            "duration": 0.25,
            "error": None,
            "cleanup_errors": [],
            "stale": False,
            "slow": False,
        }

    def test_names_non_builtin_exception_types_with_their_module(self) -> None:
        """A library exception is named by its import path."""
        data = report(
            ck.CaseResult("read", UNAVAILABLE, "no db", ck.FeatureUnavailable("no db"))
        ).to_dict()
        assert data["results"][0]["error"]["type"] == "conformkit.FeatureUnavailable"

    @given(
        st.lists(
            st.tuples(
                st.sampled_from(list(ck.CaseStatus)),
                st.text(),
                st.floats(min_value=0, max_value=1e6),
                st.none() | st.text(),
            ),
            max_size=8,
        )
    )
    def test_every_report_round_trips_through_json(
        self, rows: list[tuple[ck.CaseStatus, str, float, str | None]]
    ) -> None:
        """Whatever the results hold, to_dict() survives json.dumps/json.loads unchanged."""
        results = [
            ck.CaseResult(
                f"case_{index}",
                status,
                reason,
                ValueError(message) if reason else None,
                (),
                duration,
            )
            for index, (status, message, duration, reason) in enumerate(rows)
        ]
        data = report(*results).to_dict()
        assert json.loads(json.dumps(data)) == data
        assert [row["status"] for row in data["results"]] == [status.value for status, *_ in rows]
        assert sum(data["counts"].values()) == len(rows)

    def test_names_the_report_and_its_failures_outside_cases(self) -> None:
        """The report's own fields: feature, implementation, and each failure outside a case."""
        data = report(
            ck.CaseResult("read", PASSED), cleanup_errors=(raised(RuntimeError("pool leak")),)
        ).to_dict()
        assert list(data) == [
            "feature_id",
            "implementation",
            "counts",
            "results",
            "cleanup_errors",
            "unexercised",
        ]
        assert (data["feature_id"], data["implementation"]) == ("kv", "Memory")
        [leak] = data["cleanup_errors"]
        assert (leak["type"], leak["message"]) == ("RuntimeError", "pool leak")
        assert "in raised" in leak["traceback"]


class TestUnexercised:
    def test_the_summary_lists_every_operation_no_case_called(self) -> None:
        """str(report) names each unexercised operation, separated by commas."""
        text = str(
            ck.ContractReport("kv", "Memory", (ck.CaseResult("read", PASSED),), (), ("get", "put"))
        )
        assert "  operations no case exercised: get, put" in text.splitlines()

    def test_the_gate_offences_of_an_unexercised_or_unrecorded_report(self) -> None:
        """require_exercised names the operations no case called, or says none were recorded."""
        offences = Gate(require_exercised=True).report_offences
        assert offences(proven=True, cleanup_errors=(), unexercised=("get", "put")) == [
            Offence("gate", "operations no case exercised", "get, put")
        ]
        assert offences(proven=True, cleanup_errors=(), unexercised=None) == [
            Offence(
                "gate",
                "operations not recorded",
                "the run did not record which operations its cases called: that needs "
                "reject_vacuous=True (conformkit run --reject-vacuous), and a feature declared "
                "as Feature[API] so that its operations are known",
            )
        ]


class TestLookup:
    def test_by_case_id(self) -> None:
        """report[case_id] finds a result; an unknown ID names the feature and the case."""
        result = ck.CaseResult("read", PASSED)
        assert report(result)["read"] is result
        with pytest.raises(KeyError, match="no case 'nope'"):
            report(result)["nope"]

    def test_the_first_result_of_an_id_wins_and_a_lookup_changes_nothing_seen(self) -> None:
        """Of two results with one ID the first is found; a looked-up report equals a fresh one."""
        first, second = ck.CaseResult("read", PASSED), ck.CaseResult("read", FAILED, "broken")
        looked_up = report(first, second, ck.CaseResult("write", PASSED))
        assert looked_up["read"] is first
        assert looked_up["write"].status is PASSED
        fresh = report(first, second, ck.CaseResult("write", PASSED))
        assert looked_up == fresh
        assert hash(looked_up) == hash(fresh)
        assert repr(looked_up) == repr(fresh)


class TestAssertContract:
    def test_a_report_with_passes_and_declared_gaps_holds(self) -> None:
        """Passed and unsupported cases satisfy the default gate."""
        ck.assert_contract(
            report(ck.CaseResult("read", PASSED), ck.CaseResult("ttl", UNSUPPORTED, "no clock"))
        )

    @pytest.mark.parametrize(
        ("result", "line"),
        [
            (ck.CaseResult("write", FAILED, "boom"), "  write: failed: boom"),
            (ck.CaseResult("write", UNAVAILABLE, "no server"), "  write: unavailable: no server"),
        ],
    )
    def test_rejects_failed_and_unavailable_cases(self, result: ck.CaseResult, line: str) -> None:
        """Each offending case is listed with its status and reason."""
        with pytest.raises(ck.ContractFailure) as caught:
            ck.assert_contract(report(ck.CaseResult("read", PASSED), result))
        assert isinstance(caught.value, AssertionError)
        assert str(caught.value).splitlines() == ["contract 'kv' does not hold for Memory:", line]
        assert caught.value.report.results[1] is result

    def test_rejects_cleanup_errors_outside_cases(self) -> None:
        """A cleanup failure outside any case fails the gate."""
        with pytest.raises(ck.ContractFailure, match="cleanup error: RuntimeError: leak"):
            ck.assert_contract(
                report(ck.CaseResult("read", PASSED), cleanup_errors=(RuntimeError("leak"),))
            )

    def test_rejects_a_report_in_which_nothing_passed(self) -> None:
        """Only unsupported cases prove nothing: the gate rejects it."""
        with pytest.raises(ck.ContractFailure, match="no case passed"):
            ck.assert_contract(report(ck.CaseResult("ttl", UNSUPPORTED, "no clock")))
        with pytest.raises(ck.ContractFailure, match="no case passed"):
            ck.assert_contract(report())

    def test_require_full_rejects_unsupported_cases(self) -> None:
        """With require_full=True, a declared gap fails the gate too."""
        with pytest.raises(ck.ContractFailure) as caught:
            ck.assert_contract(
                report(
                    ck.CaseResult("read", PASSED), ck.CaseResult("ttl", UNSUPPORTED, "no clock")
                ),
                require_full=True,
            )
        assert str(caught.value).splitlines() == [
            "contract 'kv' does not hold for Memory (require_full=True: every case must pass):",
            "  ttl: unsupported: no clock",
        ]
        ck.assert_contract(report(ck.CaseResult("read", PASSED)), require_full=True)

    def test_rejects_things_that_are_not_reports(self) -> None:
        """Passing something else is a TypeError, not a silent pass."""
        with pytest.raises(TypeError, match="needs a ContractReport, got None"):
            ck.assert_contract(None)  # type: ignore[arg-type]

    def test_a_declared_gap_takes_no_time(self) -> None:
        """An unsupported case never runs: its duration is 0 and its reason is the declared one."""
        gap = ck.Feature[dict[str, int]]("kv.gap", cases=("ok", "ttl"))

        class Memory(ck.FeatureImplementation[dict[str, int]]):
            feature = gap
            coverage = gap.coverage(unsupported={"ttl": "no clock"})

            def create(self, scope: ck.FeatureScope) -> dict[str, int]:
                return {}

        outcome = ck.run_contract_sync(
            Memory(), ck.ContractSuite(gap, {"ok": lambda api: None, "ttl": lambda api: None})
        )
        assert outcome["ttl"] == ck.CaseResult("ttl", UNSUPPORTED, "no clock", duration=0.0)

    def test_judges_a_real_run(self) -> None:
        """The gate over a real run names the failing case with the error's message."""
        real = ck.Feature[dict[str, int]]("kv.real", cases=("ok", "broken"))

        async def ok(api: dict[str, int]) -> None:
            api["x"] = 1

        async def broken(api: dict[str, int]) -> None:
            raise AssertionError("value lost")

        class Memory(ck.FeatureImplementation[dict[str, int]]):
            feature = real
            coverage = real.coverage()

            def create(self, scope: ck.FeatureScope) -> dict[str, int]:
                return {}

        outcome = ck.run_contract_sync(
            Memory(), ck.ContractSuite(real, {"ok": ok, "broken": broken})
        )
        with pytest.raises(
            ck.ContractFailure,
            match=r"broken: failed: case 'broken' failed: AssertionError: value lost",
        ):
            ck.assert_contract(outcome)


class Counter(Protocol):
    async def increment(self) -> int: ...
    async def value(self) -> int: ...
    async def reset(self) -> None: ...


class MemoryCounterAPI:
    def __init__(self) -> None:
        self.count = 0

    async def increment(self) -> int:
        self.count += 1
        return self.count

    async def value(self) -> int:
        return self.count

    async def reset(self) -> None:
        self.count = 0


counter = ck.Feature[Counter]("gate.counter", cases=("counts", "resets"))


class MemoryCounter(ck.FeatureImplementation[Counter]):
    feature = counter
    coverage = counter.coverage()

    def create(self, scope: ck.FeatureScope) -> Counter:
        return MemoryCounterAPI()


async def counts(api: Counter) -> None:
    await api.increment()
    assert await api.value() == 1


async def resets(api: Counter) -> None:
    await api.increment()
    await api.reset()
    assert await api.value() == 0


async def resets_nothing(api: Counter) -> None:
    """Named for reset, but never calls it: the defect the exercise gate catches."""
    assert await api.value() == 0


thorough = ck.ContractSuite(counter, {"counts": counts, "resets": resets})
forgetful = ck.ContractSuite(counter, {"counts": counts, "resets": resets_nothing})


class TestRequireExercised:
    @pytest.mark.anyio
    async def test_rejects_a_contract_whose_cases_never_call_an_operation(self) -> None:
        """Every case passes, yet reset() was never called: the gate names it."""
        outcome = await ck.run_contract(MemoryCounter(), forgetful, reject_vacuous=True)
        assert outcome.unexercised == ("reset",)
        ck.assert_contract(outcome)  # the default gate does not look
        ck.assert_contract(outcome, require_full=True)
        with pytest.raises(ck.ContractFailure) as caught:
            ck.assert_contract(outcome, require_exercised=True)
        assert str(caught.value).splitlines() == [
            "contract 'gate.counter' does not hold for MemoryCounter:",
            "  operations no case exercised: reset",
        ]
        assert caught.value.report is outcome

    @pytest.mark.anyio
    async def test_holds_when_every_operation_is_called(self) -> None:
        outcome = await ck.run_contract(MemoryCounter(), thorough, reject_vacuous=True)
        assert outcome.unexercised == ()
        ck.assert_contract(outcome, require_exercised=True, require_full=True)

    @pytest.mark.anyio
    async def test_rejects_a_run_that_did_not_record_calls(self) -> None:
        """Without recording, nothing is known: the gate fails and says how to record."""
        outcome = await ck.run_contract(MemoryCounter(), thorough)
        assert outcome.unexercised is None
        with pytest.raises(ck.ContractFailure) as caught:
            ck.assert_contract(outcome, require_exercised=True)
        lines = str(caught.value).splitlines()
        assert lines[1:] == [
            "  operations not recorded: the run did not record which operations its cases "
            "called: that needs reject_vacuous=True (conformkit run --reject-vacuous), and a "
            "feature declared as Feature[API] so that its operations are known"
        ]

    @pytest.mark.anyio
    async def test_rejects_a_feature_whose_api_type_is_unknown(self) -> None:
        """A Feature without [API] has no known operations, recording or not."""
        untyped: ck.Feature[Any] = ck.Feature("gate.untyped", cases=("counts",))

        class Untyped(ck.FeatureImplementation[Any]):
            feature = untyped
            coverage = untyped.coverage()

            def create(self, scope: ck.FeatureScope) -> Any:
                return MemoryCounterAPI()

        suite = ck.ContractSuite(untyped, {"counts": counts})
        outcome = await ck.run_contract(Untyped(), suite, reject_vacuous=True)
        assert outcome.unexercised is None
        with pytest.raises(ck.ContractFailure, match="operations not recorded"):
            ck.assert_contract(outcome, require_exercised=True)

    def test_lists_every_unexercised_operation_with_the_other_offences(self) -> None:
        outcome = ck.ContractReport(
            "kv",
            "Memory",
            (ck.CaseResult("read", PASSED), ck.CaseResult("write", FAILED, "boom")),
            unexercised=("delete", "scan"),
        )
        with pytest.raises(ck.ContractFailure) as caught:
            ck.assert_contract(outcome, require_exercised=True)
        assert str(caught.value).splitlines()[1:] == [
            "  write: failed: boom",
            "  operations no case exercised: delete, scan",
        ]


def test_results_are_immutable() -> None:
    """A recorded result cannot be edited after the fact."""
    import dataclasses

    result = ck.CaseResult("read", PASSED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = FAILED  # type: ignore[misc]
    assert dataclasses.replace(result, reason="x") == ck.CaseResult("read", PASSED, "x")
