"""
The types of what the runners return: reports, results, statuses and cases.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, assert_type

import conformkit as ck


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...


class MemoryTextAPI:
    async def read(self, key: str) -> str | None:
        return None


text = ck.Feature[TextAPI]("typing.results", cases=("missing",))
suite = ck.ContractSuite(text)


class MemoryText(ck.FeatureImplementation[TextAPI]):
    feature = text
    coverage = text.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


def check_report() -> None:
    report = ck.run_contract_sync(MemoryText(), suite, backend="trio", max_concurrency=2)
    assert_type(report, ck.ContractReport)
    assert_type(report.feature_id, str)
    assert_type(report.implementation, str)
    assert_type(report.results, tuple[ck.CaseResult, ...])
    assert_type(report.cleanup_errors, tuple[BaseException, ...])
    assert_type(report["missing"], ck.CaseResult)
    assert_type(report.counts(), dict[ck.CaseStatus, int])
    assert_type(report.duration, float)
    assert_type(report.to_dict(), dict[str, Any])
    ck.assert_contract(report, require_full=True)

    ck.run_contract_sync(MemoryText(), suite, backend="curio")  # type: ignore[arg-type]
    ck.run_contract_sync(MemoryText(), suite, timeout="1s")  # type: ignore[arg-type]


def check_result(result: ck.CaseResult) -> None:
    assert_type(result.case_id, str)
    assert_type(result.status, ck.CaseStatus)
    assert_type(result.reason, str | None)
    assert_type(result.error, BaseException | None)
    assert_type(result.cleanup_errors, tuple[BaseException, ...])
    assert_type(result.duration, float)
    assert_type(result.to_dict(), dict[str, Any])


def check_status(status: ck.CaseStatus) -> None:
    # A string enum: a status is a str and compares equal to its value. (mypy
    # wrongly reports the literal comparison `CaseStatus.PASSED == "passed"` as
    # non-overlapping, mypy issue #19576, so it is compared through a variable.)
    assert_type(status == "passed", bool)
    assert_type(ck.CaseStatus.PASSED, Literal[ck.CaseStatus.PASSED])
    assert_type(ck.CaseStatus("unavailable"), ck.CaseStatus)
    as_text: str = ck.CaseStatus.PASSED
    as_text = status
    members: list[ck.CaseStatus] = [
        ck.CaseStatus.PASSED,
        ck.CaseStatus.FAILED,
        ck.CaseStatus.UNSUPPORTED,
        ck.CaseStatus.UNAVAILABLE,
    ]
    ck.CaseStatus.SKIPPED  # type: ignore[attr-defined]


async def check_case(case: ck.ContractCase[TextAPI]) -> None:
    assert_type(case.id, str)
    assert_type(str(case), str)
    assert_type(case.feature_id, str)
    assert_type(case.implementation, str)
    assert_type(case.coverage, ck.Supported | ck.Unsupported)
    await case.run()
    case.run_sync(backend="trio")


def check_failure(failure: ck.ContractFailure) -> None:
    assert_type(failure.report, ck.ContractReport)
    error: AssertionError = failure
    skip: Exception = ck.CaseUnsupported("reason")


# -- deadlines: declared on the class as a float or None, overridden by a run --------


class RemoteText(ck.FeatureImplementation[TextAPI]):
    feature = text
    coverage = text.coverage()
    timeout = 30.0  # a slow backend declares its own deadline

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


class UnboundedText(ck.FeatureImplementation[TextAPI]):
    feature = text
    coverage = text.coverage()
    timeout = None

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


class MisdeclaredText(ck.FeatureImplementation[TextAPI]):
    feature = text
    coverage = text.coverage()
    timeout = "30s"  # type: ignore[assignment]

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


def check_deadlines(implementation: RemoteText) -> None:
    assert_type(ck.FeatureImplementation.timeout, float | None)
    assert_type(ck.DEFAULT_TIMEOUT, float)
    implementation.timeout = 1.0  # type: ignore[misc]
    ck.run_contract_sync(implementation, suite)  # the implementation's own 30 s
    ck.run_contract_sync(implementation, suite, timeout=ck.DEFAULT_TIMEOUT)  # the same
    ck.run_contract_sync(implementation, suite, timeout=None)  # no deadline
    ck.contract_cases(implementation, suite, timeout=2)


def check_tracebacks(implementation: RemoteText) -> None:
    report = ck.run_contract_sync(implementation, suite, keep_tracebacks=True)
    assert_type(report["missing"].error, BaseException | None)
    ck.run_contract_sync(implementation, suite, keep_tracebacks="yes")  # type: ignore[arg-type]
