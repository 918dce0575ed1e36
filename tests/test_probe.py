"""Probing unsupported cases: declarations that outlived their cause."""

from __future__ import annotations

import pytest

import conformkit as ck

feature = ck.Feature[list[str]]("test.probe", cases=("works", "stale_gap", "real_gap", "needs_db"))
suite = ck.ContractSuite(feature)
ran: list[str] = []


@suite.case
async def works(api: list[str]) -> None:
    ran.append("works")


@suite.case
async def stale_gap(api: list[str]) -> None:
    ran.append("stale_gap")  # passes: the declared gap is gone


@suite.case
async def real_gap(api: list[str]) -> None:
    ran.append("real_gap")
    raise NotImplementedError("still missing")


@suite.case
async def needs_db(api: list[str]) -> None:
    ran.append("needs_db")


class Store(ck.FeatureImplementation[list[str]]):
    feature = feature
    coverage = feature.coverage(
        unsupported={
            "stale_gap": "ordering not implemented",
            "real_gap": "no transactions",
            "needs_db": "needs a server",
        }
    )

    def create(self, scope: ck.FeatureScope) -> list[str]:
        return ran


class TestProbe:
    def test_off_by_default_unsupported_cases_never_run(self) -> None:
        """Without probing, declared gaps are not executed."""
        ran.clear()
        report = ck.run_contract_sync(Store(), suite)
        assert ran == ["works"]
        assert not any(result.stale for result in report.results)

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_probing_runs_them_and_marks_stale_declarations(self, backend: str) -> None:
        """Probed cases stay unsupported; one that passed is marked stale, in every output."""
        ran.clear()
        report = ck.run_contract_sync(Store(), suite, probe_unsupported=True, backend=backend)  # type: ignore[arg-type]
        assert ran == ["works", "stale_gap", "real_gap", "needs_db"]
        assert [r.status.value for r in report.results] == [
            "passed", "unsupported", "unsupported", "unsupported",
        ]  # fmt: skip
        assert [r.stale for r in report.results] == [False, True, False, True]
        assert (
            report["stale_gap"].reason
            == "ordering not implemented (declared unsupported but passed)"
        )
        assert report["real_gap"].reason == "no transactions"
        assert (
            "  UNSUPPORTED stale_gap: ordering not implemented (declared unsupported but passed)"
            in str(report).splitlines()
        )
        assert report.to_dict()["results"][1]["stale"] is True

    def test_the_gate_can_reject_stale_declarations(self) -> None:
        """reject_stale=True fails each stale declaration; the default gate lets them through."""
        report = ck.run_contract_sync(Store(), suite, probe_unsupported=True)
        ck.assert_contract(report)
        with pytest.raises(ck.ContractFailure) as caught:
            ck.assert_contract(report, reject_stale=True)
        lines = str(caught.value).splitlines()[1:]
        assert lines == [
            "  stale_gap: unsupported: ordering not implemented (declared unsupported but passed)",
            "  needs_db: unsupported: needs a server (declared unsupported but passed)",
        ]

    def test_a_probe_that_is_unavailable_stays_unsupported(self) -> None:
        """A probed case whose create raises FeatureUnavailable is neither unavailable nor stale."""

        class Offline(ck.FeatureImplementation[list[str]]):
            feature = feature
            coverage = Store.coverage

            def create(self, scope: ck.FeatureScope) -> list[str]:
                raise ck.FeatureUnavailable("no server")

        ran.clear()
        report = ck.run_contract_sync(Offline(), suite, probe_unsupported=True)
        assert ran == []
        assert [(r.status.value, r.stale) for r in report.results] == [
            ("unavailable", False),
            ("unsupported", False),
            ("unsupported", False),
            ("unsupported", False),
        ]
        assert report["needs_db"].reason == "needs a server"
