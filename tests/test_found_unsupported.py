"""A case that finds its property does not apply raises CaseUnsupported: a gap, never a pass."""

from __future__ import annotations

import unittest
from typing import Any

import pytest

import conformkit as ck

UNSUPPORTED = ck.CaseStatus.UNSUPPORTED
FAILED = ck.CaseStatus.FAILED
PASSED = ck.CaseStatus.PASSED


class Store:
    """An API that says, through itself, which fields it keeps."""

    def __init__(self, kept: frozenset[str]) -> None:
        self.kept = kept
        self.values: dict[str, object] = {}


feature = ck.Feature[Store]("test.found_unsupported", cases=("keeps_a", "keeps_b", "plain"))


def rig(
    case: Any,
    *,
    kept: frozenset[str] = frozenset({"a"}),
    create_raises: BaseException | None = None,
    cleanup_raises: BaseException | None = None,
    unsupported: dict[str, str] | None = None,
) -> tuple[ck.FeatureImplementation[Store], ck.ContractSuite[Store]]:
    the_feature = feature

    class Impl(ck.FeatureImplementation[Store]):
        feature = the_feature
        coverage = the_feature.coverage(unsupported=unsupported or {})

        def create(self, scope: ck.FeatureScope) -> Store:
            if create_raises is not None:
                raise create_raises
            if cleanup_raises is not None:

                def fail() -> None:
                    raise cleanup_raises

                scope.defer(fail)
            return Store(kept)

    suite = ck.ContractSuite(feature, {"keeps_a": case, "keeps_b": case, "plain": plain})
    return Impl(), suite


async def plain(api: Store) -> None:
    api.values["x"] = 1


def field_case(field: str) -> Any:
    async def keeps(api: Store) -> None:
        if field not in api.kept:
            raise ck.CaseUnsupported(f"the store keeps no {field!r} field")
        api.values[field] = 1

    return keeps


async def keeps_b_only_if_declared(api: Store) -> None:
    if "b" not in api.kept:
        raise ck.CaseUnsupported("the store keeps no 'b' field")


@pytest.mark.anyio
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_the_case_is_unsupported_with_its_reason(concurrency: int) -> None:
    report = await ck.run_contract(*rig(keeps_b_only_if_declared), max_concurrency=concurrency)
    assert [(r.case_id, r.status, r.reason) for r in report.results] == [
        ("keeps_a", UNSUPPORTED, "the store keeps no 'b' field"),
        ("keeps_b", UNSUPPORTED, "the store keeps no 'b' field"),
        ("plain", PASSED, None),
    ]
    ck.assert_contract(report)
    with pytest.raises(ck.ContractFailure, match="keeps_a"):
        ck.assert_contract(report, require_full=True)


@pytest.mark.anyio
async def test_a_store_that_declares_the_field_is_checked() -> None:
    report = await ck.run_contract(*rig(keeps_b_only_if_declared, kept=frozenset({"a", "b"})))
    assert [r.status for r in report.results] == [PASSED, PASSED, PASSED]


@pytest.mark.anyio
async def test_a_test_runner_sees_a_skip_with_the_reason() -> None:
    cases = {case.id: case for case in ck.contract_cases(*rig(keeps_b_only_if_declared))}
    with pytest.raises(ck.CaseUnsupported) as raised:
        await cases["keeps_b"].run()
    assert isinstance(raised.value, unittest.SkipTest)
    assert str(raised.value).endswith(": the store keeps no 'b' field")
    await cases["plain"].run()


@pytest.mark.anyio
async def test_raised_from_create_it_fails_the_case() -> None:
    """create() has FeatureUnavailable for a missing backend; this is not it."""
    report = await ck.run_contract(*rig(plain, create_raises=ck.CaseUnsupported("no such field")))
    assert [r.status for r in report.results] == [FAILED, FAILED, FAILED]
    assert (report["plain"].reason or "").startswith(
        "case 'plain' failed in create(): conformkit.CaseUnsupported: no such field"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("reason", ["", "   "])
async def test_with_no_reason_it_fails_the_case(reason: str) -> None:
    async def no_reason(api: Store) -> None:
        raise ck.CaseUnsupported(reason)

    report = await ck.run_contract(*rig(no_reason))
    assert report["keeps_a"].status is FAILED
    assert (report["keeps_a"].reason or "").startswith("case 'keeps_a' failed: ")


class Unreadable:
    """A reason whose ``__str__`` raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __str__(self) -> str:
        raise self.error


@pytest.mark.anyio
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_with_a_reason_that_cannot_be_read_it_fails_the_case(concurrency: int) -> None:
    """The case fails, saying so; the run goes on: the reason's error is not the run's."""

    async def unreadable(api: Store) -> None:
        reason: Any = Unreadable(ValueError("no text"))
        raise ck.CaseUnsupported(reason)

    report = await ck.run_contract(*rig(unreadable), max_concurrency=concurrency)
    assert [r.status for r in report.results] == [FAILED, FAILED, PASSED]
    assert (report["keeps_a"].reason or "").startswith(
        "case 'keeps_a' failed: conformkit.CaseUnsupported: <exception str() failed> (at "
    )


@pytest.mark.anyio
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_keyboard_interrupt_reading_its_reason_stops_the_run(concurrency: int) -> None:
    """KeyboardInterrupt alone stops a run, wherever it is raised."""

    async def interrupts(api: Store) -> None:
        reason: Any = Unreadable(KeyboardInterrupt("reading the reason"))
        raise ck.CaseUnsupported(reason)

    with pytest.raises(KeyboardInterrupt, match="^reading the reason$"):
        await ck.run_contract(*rig(interrupts), max_concurrency=concurrency)


@pytest.mark.anyio
async def test_a_failed_cleanup_still_fails_the_case() -> None:
    report = await ck.run_contract(
        *rig(keeps_b_only_if_declared, cleanup_raises=OSError("disk gone"))
    )
    result = report["keeps_a"]
    assert result.status is FAILED
    assert (result.reason or "").endswith("; 1 cleanup(s) failed too")
    assert [str(error) for error in result.cleanup_errors] == ["disk gone"]


@pytest.mark.anyio
async def test_another_skip_exception_fails_the_case() -> None:
    """Only CaseUnsupported says "does not apply"; a bare unittest.SkipTest is a failure."""

    async def skips(api: Store) -> None:
        raise unittest.SkipTest("not today")

    report = await ck.run_contract(*rig(skips))
    assert report["keeps_a"].status is FAILED
    assert "SkipTest: not today" in (report["keeps_a"].reason or "")


@pytest.mark.anyio
async def test_a_probed_gap_that_still_does_not_apply_is_not_stale() -> None:
    report = await ck.run_contract(
        *rig(keeps_b_only_if_declared, unsupported={"keeps_b": "declared: no b"}),
        probe_unsupported=True,
    )
    result = report["keeps_b"]
    assert (result.status, result.reason) == (UNSUPPORTED, "declared: no b")
    assert not result.stale
