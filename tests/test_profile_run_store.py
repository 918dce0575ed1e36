"""The run store profile (conformkit.profiles.run_store): its stores pass, broken ones fail."""

from __future__ import annotations

import copy
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

import conformkit as ck
from conformkit.laws import race
from conformkit.profiles import run_store
from conformkit.profiles.run_store import (
    FIELDS,
    AlreadyClaimed,
    LeasedRunStore,
    MemoryRunStore,
    MemoryRunStoreImplementation,
    Run,
    RunStore,
    RunStoreCase,
    SqliteRunStore,
    SqliteRunStoreImplementation,
    StaleVersion,
    UnknownRun,
)

PLAIN_CASES = (
    "create_then_get",
    "unknown_run",
    "update_bumps_version",
    "stale_update_rejected",
    "concurrent_updates_single_winner",
    "invalid_change_rejected",
    "claim_single_owner",
    "claims_are_per_step",
    "claim_lease_expires",
    "list_runs",
)
FIDELITY = tuple(f"fidelity[{name}]" for name in FIELDS)


def case_ids(report: ck.ContractReport) -> list[str]:
    return [result.case_id for result in report.results]


def failed(report: ck.ContractReport) -> set[str]:
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


# --------------------------------------------------------------------------- broken stores


class Wrapper:
    """A RunStore that passes every call to another; each defect overrides one method."""

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner

    @property
    def persisted_fields(self) -> frozenset[str]:
        return frozenset(FIELDS)  # what the inner MemoryRunStore or SqliteRunStore keeps

    async def create(self, params: Any) -> str:
        return await self.inner.create(params)

    async def get(self, run_id: str) -> Run:
        return await self.inner.get(run_id)

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        return await self.inner.update(run_id, changes, expected_version=expected_version)

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:
        await self.inner.claim_step(run_id, step, **lease)

    async def list(self) -> Sequence[Run]:
        # Through this store's own get: a defect of get shows in list alike.
        return [await self.get(run.run_id) for run in await self.inner.list()]

    async def force_update(self, run_id: str, changes: Any) -> Run:
        """Write whatever the version, the way ``UPDATE ... WHERE run_id = ?`` would."""
        while True:
            current = await self.inner.get(run_id)
            try:
                return await self.inner.update(run_id, changes, expected_version=current.version)
            except StaleVersion:
                continue  # somebody wrote in between: write again, over it


class VersionFromZero(Wrapper):
    """Numbers versions from 0: consistent, but not what the profile fixes."""

    @staticmethod
    def shifted(run: Run) -> Run:
        return Run(run.run_id, run.version - 1, run.fields)

    async def get(self, run_id: str) -> Run:
        return self.shifted(await self.inner.get(run_id))

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        run = await self.inner.update(run_id, changes, expected_version=expected_version + 1)
        return self.shifted(run)


class UnknownRunAsKeyError(Wrapper):
    """Raises KeyError, the standard LookupError, for a run that does not exist: correct."""

    async def get(self, run_id: str) -> Run:
        try:
            return await self.inner.get(run_id)
        except UnknownRun:
            raise KeyError(run_id) from None


class UnknownRunAsValueError(Wrapper):
    """Raises ValueError, which does not mean 'not found', for a run that does not exist."""

    async def get(self, run_id: str) -> Run:
        try:
            return await self.inner.get(run_id)
        except UnknownRun:
            raise ValueError(run_id) from None


class ReturnsRunBeforeUpdate(Wrapper):
    """Applies the update, but returns the run as it was before."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        before = await self.inner.get(run_id)
        await self.inner.update(run_id, changes, expected_version=expected_version)
        return before


class IgnoresExpectedVersion(Wrapper):
    """Last writer wins: the expected version is never compared."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        return await self.force_update(run_id, changes)


class CheckThenSetUpdate(Wrapper):
    """Compares the version, then writes in a second round trip: racing updates all win."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        current = await self.inner.get(run_id)
        if current.version != expected_version:
            raise StaleVersion(f"run {run_id!r} is at version {current.version}")
        await anyio.lowlevel.checkpoint()  # the round trip to the database
        return await self.force_update(run_id, changes)


class IgnoresInvalidChanges(Wrapper):
    """Drops the changes it cannot make, silently, and applies the rest."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        kept = {
            name: value
            for name, value in changes.items()
            if name in self.persisted_fields and name != "params"
        }
        return await self.inner.update(run_id, kept, expected_version=expected_version)


class CheckThenSetClaim(Wrapper):
    """Checks for a claim, awaits, then records it: concurrent claims all win."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.claimed: set[tuple[str, str]] = set()

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:  # lease ignored
        await self.inner.get(run_id)  # raises UnknownRun
        if (run_id, step) in self.claimed:
            raise AlreadyClaimed(step)
        await anyio.lowlevel.checkpoint()  # the round trip to the database
        self.claimed.add((run_id, step))


class CheckThenSetSqliteClaim(Wrapper):
    """
    On the SQLite file: reads whether the step is claimed in one transaction, checks the run
    in a second, and writes the claim (INSERT OR REPLACE) in a third. While claims run
    concurrently, each waits after its check until two have checked, so the window is
    always hit, however the machine schedules the threads; a lone claim never waits.
    """

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.in_flight = 0
        self.checked = 0
        self.both_checked = anyio.Event()

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:  # lease ignored
        assert isinstance(self.inner, SqliteRunStore)
        path = self.inner.path

        def claimed() -> bool:
            with closing(sqlite3.connect(path)) as connection:
                row = connection.execute(
                    "SELECT 1 FROM run_store_step_claims WHERE run_id = ? AND step = ?",
                    (run_id, step),
                ).fetchone()
                return row is not None

        def claim() -> None:
            with closing(sqlite3.connect(path, timeout=10)) as connection, connection:
                connection.execute(
                    "INSERT OR REPLACE INTO run_store_step_claims (run_id, step) VALUES (?, ?)",
                    (run_id, step),
                )

        self.in_flight += 1
        try:
            if await anyio.to_thread.run_sync(claimed):
                raise AlreadyClaimed(step)
            self.checked += 1
            if self.checked >= 2:
                self.both_checked.set()
            if self.in_flight >= 2:
                with anyio.move_on_after(5):  # never hang a test on a broken window
                    await self.both_checked.wait()
            await self.inner.get(run_id)  # raises UnknownRun
            await anyio.to_thread.run_sync(claim)
        finally:
            self.in_flight -= 1


class ClaimsKeyedByStep(Wrapper):
    """Keys claims by the step alone: step 'extract' of one run blocks it in every run."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.steps: set[str] = set()

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:  # lease ignored
        await self.inner.get(run_id)  # raises UnknownRun
        if step in self.steps:
            raise AlreadyClaimed(step)
        self.steps.add(step)


class Rewrites(Wrapper):
    """Rewrites the fields of every run it reads: a lossy column."""

    def rewrite(self, fields: dict[str, object]) -> dict[str, object]:
        raise NotImplementedError

    async def get(self, run_id: str) -> Run:
        run = await self.inner.get(run_id)
        return Run(run.run_id, run.version, self.rewrite(dict(run.fields)))

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        run = await self.inner.update(run_id, changes, expected_version=expected_version)
        return Run(run.run_id, run.version, self.rewrite(dict(run.fields)))


class DropsError(Rewrites):
    """Declares 'error' persisted but has no column for it: it always reads back None."""

    def rewrite(self, fields: dict[str, object]) -> dict[str, object]:
        return {**fields, "error": None}


def ints_to_floats(value: object) -> object:
    if isinstance(value, dict):
        return {key: ints_to_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [ints_to_floats(item) for item in value]
    return float(value) if type(value) is int else value


class ResultIntsAsFloats(Rewrites):
    """Keeps 'result' as a JavaScript number would: every int comes back a float."""

    def rewrite(self, fields: dict[str, object]) -> dict[str, object]:
        return {**fields, "result": ints_to_floats(fields["result"])}


class AliasingCache(Wrapper):
    """A cache in front of the store that hands out the very objects it was given."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.cache: dict[str, dict[str, object]] = {}

    def cached(self, run: Run) -> Run:
        return Run(run.run_id, run.version, {**run.fields, **self.cache.get(run.run_id, {})})

    async def create(self, params: Any) -> str:
        run_id = await self.inner.create(params)
        self.cache[run_id] = {"params": params}
        return run_id

    async def get(self, run_id: str) -> Run:
        return self.cached(await self.inner.get(run_id))

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        run = await self.inner.update(run_id, changes, expected_version=expected_version)
        self.cache.setdefault(run_id, {}).update(changes)
        return self.cached(run)


class NaiveJson(Wrapper):
    """Sends every value through json.dumps and json.loads: tuples and int keys are mangled."""

    async def create(self, params: Any) -> str:
        return await self.inner.create(json.loads(json.dumps(params)))

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        mangled = {name: json.loads(json.dumps(value)) for name, value in changes.items()}
        return await self.inner.update(run_id, mangled, expected_version=expected_version)


STATUS_ONLY = frozenset({"params", "status"})


class StatusOnly(Wrapper):
    """A correct store that persists params and status only, and says so."""

    @property
    def persisted_fields(self) -> frozenset[str]:
        return STATUS_ONLY

    def narrowed(self, run: Run) -> Run:
        kept = {name: run.fields[name] for name in self.persisted_fields}
        return Run(run.run_id, run.version, kept)

    async def get(self, run_id: str) -> Run:
        return self.narrowed(await self.inner.get(run_id))

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        for name in changes:
            if name not in self.persisted_fields or name == "params":
                raise ValueError(f"cannot set {name!r}")
        run = await self.inner.update(run_id, changes, expected_version=expected_version)
        return self.narrowed(run)


class Leases(Wrapper):
    """Claims with leases, kept here: each defect below changes one rule of the reference's."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.claims: dict[tuple[str, str], float | None] = {}

    def expiry(self, at: float, lease: float | None) -> float | None:
        return None if lease is None else at + lease

    def held(self, key: tuple[str, str], at: float) -> bool:
        if key not in self.claims:
            return False
        expiry = self.claims[key]
        return expiry is None or at < expiry

    async def replace(self, key: tuple[str, str], at: float, lease: float | None) -> None:
        self.claims[key] = self.expiry(at, lease)

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:
        await self.inner.get(run_id)  # raises UnknownRun
        key = (run_id, step)
        now = lease.get("now")
        at = time.time() if now is None else now
        if self.held(key, at):
            raise AlreadyClaimed(step)
        await self.replace(key, at, lease.get("lease"))


class LeasesIgnored(Leases):
    """Takes a lease and ignores it: every claim is held forever."""

    def expiry(self, at: float, lease: float | None) -> float | None:
        return None


class LeaseInWholeSeconds(Leases):
    """Keeps a claim's expiry in whole seconds (an INTEGER column): it expires early."""

    def expiry(self, at: float, lease: float | None) -> float | None:
        return None if lease is None else float(int(at + lease))


class NoLeaseMeansZero(Leases):
    """Reads a claim without a lease as one of no time: it expires at once."""

    def expiry(self, at: float, lease: float | None) -> float | None:
        return at + (lease or 0.0)


class ReclaimKeepsOldExpiry(Leases):
    """Takes an expired claim over, but keeps the old claim's expiry."""

    async def replace(self, key: tuple[str, str], at: float, lease: float | None) -> None:
        if key not in self.claims:
            self.claims[key] = self.expiry(at, lease)


class CheckThenSetExpiredClaim(Leases):
    """Sees the claim expired, then takes it over in a second round trip: racers all win."""

    async def replace(self, key: tuple[str, str], at: float, lease: float | None) -> None:
        if key in self.claims:
            await anyio.lowlevel.checkpoint()  # the round trip to the database
        self.claims[key] = self.expiry(at, lease)


class ListsAsCreated(Wrapper):
    """Lists each run as it was created: a cache that updates never reach."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.created: dict[str, Run] = {}

    async def create(self, params: Any) -> str:
        run_id = await self.inner.create(params)
        self.created[run_id] = await self.inner.get(run_id)
        return run_id

    async def list(self) -> Sequence[Run]:
        return [*self.created.values()]


class ListsFirstPage(Wrapper):
    """Lists the first page of runs only, two of them, and says nothing of the rest."""

    async def list(self) -> Sequence[Run]:
        return [*(await self.inner.list())][:2]


class ListsTwice(Wrapper):
    """Lists every run twice: a join that repeats rows."""

    async def list(self) -> Sequence[Run]:
        runs = [*(await self.inner.list())]
        return runs + runs


class ResetsUnnamedFields(Wrapper):
    """Writes the whole record on each update: the fields not named go back to their start."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        record: dict[str, object] = {
            "status": "pending",
            "result": None,
            "error": None,
            "labels": {},
            "history": [],
        }
        record.update(changes)
        return await self.inner.update(run_id, record, expected_version=expected_version)


class ListsItsOwnObjects(Wrapper):
    """Lists the very field values it holds: a caller that changes a listed run changes it."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.held: dict[str, dict[str, object]] = {}

    async def get(self, run_id: str) -> Run:
        run = await self.inner.get(run_id)
        held = self.held.setdefault(run_id, {})
        if held.get("version") != run.version:  # a new version: hold its fields
            held.clear()
            held.update(version=run.version, fields=dict(run.fields))
        return Run(run_id, run.version, copy.deepcopy(held["fields"]))  # type: ignore[arg-type]

    async def list(self) -> Sequence[Run]:
        runs = [await self.get(run.run_id) for run in await self.inner.list()]
        return [
            Run(run.run_id, run.version, self.held[run.run_id]["fields"])  # type: ignore[arg-type]
            for run in runs
        ]


class IdsFromParams(Wrapper):
    """Names a run after its params: two runs of the same params are one run."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.ids: dict[str, str] = {}

    async def create(self, params: Any) -> str:
        key = json.dumps(params, sort_keys=True, default=repr)
        if key not in self.ids:
            self.ids[key] = await self.inner.create(params)
        return self.ids[key]


class ExpiresOnlyAfterTheInstant(Leases):
    """Holds a claim through the instant of its expiry (expires_at < now): a convention, correct."""

    def held(self, key: tuple[str, str], at: float) -> bool:
        expiry = self.claims.get(key, -math.inf)
        return key in self.claims and (expiry is None or at <= expiry)


class Wrapped(ck.FeatureImplementation[RunStore, RunStoreCase]):
    """A wrapper around a fresh MemoryRunStore, or around a SqliteRunStore in a temporary file."""

    feature = run_store.feature
    coverage = run_store.feature.coverage()

    def __init__(self, wrapper: Callable[[RunStore], RunStore], *, on_sqlite: bool) -> None:
        self.wrapper = wrapper
        self.on_sqlite = on_sqlite

    async def create(self, scope: ck.FeatureScope) -> RunStore:
        if self.on_sqlite:
            return self.wrapper(await SqliteRunStoreImplementation().create(scope))
        return self.wrapper(MemoryRunStore())


class WrappedWithoutLeases(Wrapped):
    """A wrapper whose claims have no lease, and declares so."""

    coverage = run_store.feature.coverage(
        unsupported={"claim_lease_expires": "claims here never expire"}
    )


class StatusOnlyImplementation(ck.FeatureImplementation[RunStore, RunStoreCase]):
    """Claims the fidelity of the two fields its store persists."""

    feature = run_store.feature
    claims = {"fidelity": STATUS_ONLY}
    coverage = run_store.feature.coverage()

    def create(self, scope: ck.FeatureScope) -> RunStore:
        return StatusOnly(MemoryRunStore())


@dataclass(frozen=True)
class Defect:
    """One broken store, and the exact set of cases it must fail."""

    wrapper: Callable[[RunStore], RunStore]
    fails: frozenset[str]
    on_sqlite: bool = False
    leases: bool = True
    """False for a store whose claims never expire: it declares claim_lease_expires unsupported."""


DEFECTS = {
    "version_from_zero": Defect(VersionFromZero, frozenset({"create_then_get"})),
    "unknown_run_as_key_error": Defect(UnknownRunAsKeyError, frozenset()),
    "unknown_run_as_value_error": Defect(UnknownRunAsValueError, frozenset({"unknown_run"})),
    "returns_run_before_update": Defect(
        ReturnsRunBeforeUpdate, frozenset({"update_bumps_version"})
    ),
    "ignores_expected_version": Defect(
        IgnoresExpectedVersion,
        frozenset({"stale_update_rejected", "concurrent_updates_single_winner"}),
    ),
    "check_then_set_update": Defect(
        CheckThenSetUpdate, frozenset({"concurrent_updates_single_winner"})
    ),
    "ignores_invalid_changes": Defect(
        IgnoresInvalidChanges, frozenset({"invalid_change_rejected"})
    ),
    "check_then_set_claim": Defect(
        CheckThenSetClaim, frozenset({"claim_single_owner"}), leases=False
    ),
    "check_then_set_claim_on_sqlite": Defect(
        CheckThenSetSqliteClaim, frozenset({"claim_single_owner"}), on_sqlite=True, leases=False
    ),
    "claims_keyed_by_step": Defect(
        ClaimsKeyedByStep, frozenset({"claims_are_per_step"}), leases=False
    ),
    "leases_correct": Defect(Leases, frozenset()),
    "leases_ignored": Defect(LeasesIgnored, frozenset({"claim_lease_expires"})),
    "lease_in_whole_seconds": Defect(LeaseInWholeSeconds, frozenset({"claim_lease_expires"})),
    "no_lease_means_zero": Defect(
        NoLeaseMeansZero, frozenset({"claim_single_owner", "claim_lease_expires"})
    ),
    "reclaim_keeps_old_expiry": Defect(ReclaimKeepsOldExpiry, frozenset({"claim_lease_expires"})),
    "check_then_set_expired_claim": Defect(
        CheckThenSetExpiredClaim, frozenset({"claim_lease_expires"})
    ),
    "lists_as_created": Defect(ListsAsCreated, frozenset({"list_runs"})),
    "lists_first_page": Defect(ListsFirstPage, frozenset({"list_runs"})),
    "lists_twice": Defect(ListsTwice, frozenset({"list_runs"})),
    "ids_from_params": Defect(IdsFromParams, frozenset({"create_then_get"})),
    "expires_only_after_the_instant": Defect(ExpiresOnlyAfterTheInstant, frozenset()),
    "resets_unnamed_fields": Defect(ResetsUnnamedFields, frozenset({"update_bumps_version"})),
    "lists_its_own_objects": Defect(ListsItsOwnObjects, frozenset({"list_runs"})),
    "drops_error": Defect(DropsError, frozenset({"update_bumps_version", "fidelity[error]"})),
    "result_ints_as_floats": Defect(ResultIntsAsFloats, frozenset({"fidelity[result]"})),
    "aliasing_cache": Defect(
        AliasingCache,
        frozenset(
            {"fidelity[params]", "fidelity[result]", "fidelity[labels]", "fidelity[history]"}
        ),
    ),
    "naive_json": Defect(NaiveJson, frozenset(FIDELITY)),
}


# --------------------------------------------------------------------------- tests


class TestBundledImplementations:
    """The bundled memory and SQLite implementations, and the feature."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "implementation", run_store.implementations, ids=lambda impl: type(impl).__name__
    )
    async def test_passes_every_case(
        self, implementation: ck.FeatureImplementation[RunStore, RunStoreCase]
    ) -> None:
        """Each bundled implementation passes every case and every field, on both backends."""
        report = await ck.run_contract(implementation, run_store.suite)
        assert case_ids(report) == [*PLAIN_CASES, *FIDELITY]
        ck.assert_contract(report, require_full=True)

    @pytest.mark.parametrize(
        "implementation", run_store.implementations, ids=lambda impl: type(impl).__name__
    )
    def test_no_case_is_vacuous(
        self, implementation: ck.FeatureImplementation[RunStore, RunStoreCase]
    ) -> None:
        """Every case calls the API, and every operation of the API is exercised."""
        report = ck.run_contract_sync(implementation, run_store.suite, reject_vacuous=True)
        ck.assert_contract(report, require_full=True)
        assert report.unexercised == ()

    def test_one_instance_of_each_implementation(self) -> None:
        """`implementations` holds one memory and one SQLite implementation."""
        kinds = [type(implementation) for implementation in run_store.implementations]
        assert kinds == [MemoryRunStoreImplementation, SqliteRunStoreImplementation]

    def test_no_implementation_needs_claims(self) -> None:
        """The bundled implementations claim nothing: the stores' declarations decide."""
        assert MemoryRunStoreImplementation.claims is None
        assert SqliteRunStoreImplementation.claims is None
        assert MemoryRunStore.persisted_fields == frozenset(FIELDS)
        assert SqliteRunStore.persisted_fields == frozenset(FIELDS)

    def test_the_feature_says_what_it_does_not_establish(self) -> None:
        """The feature disclaims cross-host safety, in words."""
        assert "Cross-host safety" in run_store.feature.does_not_establish
        assert "cross-host safety" in (run_store.__doc__ or "")


class TestBrokenStores:
    """Stores with one defect each: the profile fails exactly the cases it should."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", DEFECTS)
    async def test_fails_exactly_the_cases_its_defect_breaks(self, name: str) -> None:
        """A store with one defect fails exactly the cases that pin that behaviour."""
        defect = DEFECTS[name]
        kind = Wrapped if defect.leases else WrappedWithoutLeases
        implementation = kind(defect.wrapper, on_sqlite=defect.on_sqlite)
        report = await ck.run_contract(implementation, run_store.suite)
        assert failed(report) == defect.fails, str(report)
        passed = {r.case_id for r in report.results if r.status is ck.CaseStatus.PASSED}
        unsupported = set() if defect.leases else {"claim_lease_expires"}
        assert passed == set(case_ids(report)) - defect.fails - unsupported
        if defect.fails:
            with pytest.raises(ck.ContractFailure):  # the gate catches every defect
                ck.assert_contract(report)

    def test_a_race_failure_says_what_each_call_did(self) -> None:
        """claim_single_owner's reason names the law and the calls that won."""
        report = ck.run_contract_sync(
            WrappedWithoutLeases(CheckThenSetClaim, on_sqlite=False), run_store.suite
        )
        reason = report["claim_single_owner"].reason or ""
        assert "expected exactly one of 8 calls to succeed" in reason
        assert "8 succeeded" in reason

    def test_a_fidelity_failure_shows_the_difference(self) -> None:
        """fidelity[result] shows the first difference: an int that came back a float."""
        report = ck.run_contract_sync(Wrapped(ResultIntsAsFloats, on_sqlite=False), run_store.suite)
        error = report["fidelity[result]"].error
        assert isinstance(error, ck.LawViolation)
        assert "round trip (encode=update, decode=get)" in str(error)
        assert "first difference at ['rows']: type int vs float" in str(error)


class DropsLabels(Rewrites):
    """Declares every field, but labels always read back empty: it has no column for them."""

    def rewrite(self, fields: dict[str, object]) -> dict[str, object]:
        return {**fields, "labels": {}}


class DeclaresNothing(Wrapper):
    """A correct store that keeps no field at all, and says so."""

    @property
    def persisted_fields(self) -> frozenset[str]:
        return frozenset()

    async def get(self, run_id: str) -> Run:
        run = await self.inner.get(run_id)
        return Run(run.run_id, run.version, {})

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        for name in changes:
            raise ValueError(f"cannot set {name!r}: this store keeps no field")
        await self.inner.update(run_id, {}, expected_version=expected_version)
        return await self.get(run_id)


class ClaimsAllButLabels(ck.FeatureImplementation[RunStore, RunStoreCase]):
    """Claims the fidelity of every field but labels, which its store declares and drops."""

    feature = run_store.feature
    claims = {"fidelity": [name for name in FIELDS if name != "labels"]}
    coverage = run_store.feature.coverage()

    def create(self, scope: ck.FeatureScope) -> RunStore:
        return DropsLabels(MemoryRunStore())


class Unclaimed(ck.FeatureImplementation[RunStore, RunStoreCase]):
    """Claims nothing: the store's persisted_fields alone say what is kept."""

    feature = run_store.feature
    coverage = run_store.feature.coverage()

    def __init__(self, wrapper: Callable[[RunStore], RunStore]) -> None:
        self.wrapper = wrapper

    def create(self, scope: ck.FeatureScope) -> RunStore:
        return self.wrapper(MemoryRunStore())


class Undeclared:
    """A store with no persisted_fields at all: it keeps every field, and declares nothing."""

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner

    async def create(self, params: Any) -> str:
        return await self.inner.create(params)

    async def get(self, run_id: str) -> Run:
        return await self.inner.get(run_id)

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        return await self.inner.update(run_id, changes, expected_version=expected_version)

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:
        await self.inner.claim_step(run_id, step, **lease)

    async def list(self) -> Sequence[Run]:
        # Through this store's own get: a defect of get shows in list alike.
        return [await self.get(run.run_id) for run in await self.inner.list()]


class UndeclaredIntsAsFloats(Undeclared):
    """Declares nothing, and gives every int of 'result' back a float: a lossy column."""

    async def get(self, run_id: str) -> Run:
        run = await self.inner.get(run_id)
        return Run(
            run.run_id, run.version, {**run.fields, "result": ints_to_floats(run.fields["result"])}
        )


class StrictGetattr(Undeclared):
    """Declares nothing, and its __getattr__ raises AssertionError for any name it lacks."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"StrictGetattr has no {name!r}")


class TakesAndDropsLabels(StatusOnly):
    """Declares params and status; an update of labels is taken, and the labels are dropped."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        kept = {name: value for name, value in changes.items() if name != "labels"}
        return await super().update(run_id, kept, expected_version=expected_version)


class KeepsUndeclaredLabels(StatusOnly):
    """Declares params and status, and keeps labels exactly all the same: correct."""

    def narrowed(self, run: Run) -> Run:
        return Run(
            run.run_id,
            run.version,
            {**super().narrowed(run).fields, "labels": run.fields["labels"]},
        )

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        if "labels" in changes:
            run = await self.inner.update(run_id, changes, expected_version=expected_version)
            return self.narrowed(run)
        return await super().update(run_id, changes, expected_version=expected_version)


class MangledUndeclaredLabels(KeepsUndeclaredLabels):
    """Declares params and status, takes labels, and sends them through naive JSON."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        mangled = {
            name: json.loads(json.dumps(value)) if name == "labels" else value
            for name, value in changes.items()
        }
        return await super().update(run_id, mangled, expected_version=expected_version)


UNDECLARED_STORES: dict[str, tuple[Callable[[RunStore], RunStore], frozenset[str]]] = {
    "declares_nothing": (DeclaresNothing, frozenset()),
    "lacks_persisted_fields": (Undeclared, frozenset()),
    "strict_getattr": (StrictGetattr, frozenset()),
    "status_only": (StatusOnly, frozenset()),
    "keeps_undeclared_labels": (KeepsUndeclaredLabels, frozenset()),
    "undeclared_ints_as_floats": (UndeclaredIntsAsFloats, frozenset({"fidelity[result]"})),
    "takes_and_drops_labels": (
        TakesAndDropsLabels,
        frozenset({"invalid_change_rejected", "fidelity[labels]"}),
    ),
    "mangles_undeclared_labels": (MangledUndeclaredLabels, frozenset({"fidelity[labels]"})),
}


class GetsADict(Wrapper):
    """Gets a run as a dict of its parts, not a Run."""

    async def get(self, run_id: str) -> Run:
        run = await self.inner.get(run_id)
        return {"run_id": run.run_id, "version": run.version, "fields": dict(run.fields)}  # type: ignore[return-value]


class UpdateReturnsNothing(Wrapper):
    """Applies an update and returns None, not the run."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        await self.inner.update(run_id, changes, expected_version=expected_version)
        return None  # type: ignore[return-value]


class ListsAGenerator(Wrapper):
    """Lists runs as a generator, which a caller can neither index nor read twice."""

    async def list(self) -> Sequence[Run]:
        runs = await super().list()
        return (run for run in runs)  # type: ignore[return-value]


class ClaimSaysFalse(Wrapper):
    """Says False for a claim it refuses, instead of raising AlreadyClaimed."""

    async def claim_step(self, run_id: str, step: str, **lease: Any) -> None:
        try:
            await self.inner.claim_step(run_id, step, **lease)
        except AlreadyClaimed:
            return False  # type: ignore[return-value]


class UpdateAlwaysRaises(Wrapper):
    """Raises on every valid change; unknown runs, stale and invalid changes go to the inner."""

    async def update(self, run_id: str, changes: Any, *, expected_version: int) -> Run:
        current = await self.inner.get(run_id)
        if (
            current.version != expected_version
            or "params" in changes
            or not set(changes) <= set(FIELDS)
        ):
            return await super().update(run_id, changes, expected_version=expected_version)
        raise OSError("the disk is full")


class DeclarationRaises(Wrapper):
    """Its persisted_fields property raises: the declaration cannot be read."""

    @property
    def persisted_fields(self) -> frozenset[str]:
        raise RuntimeError("the schema is not loaded yet")


# A store that breaks one rule other cases rely on: the owner fails with its own
# reason, and each other case it fails is blocked, naming the owner.
OWNED: dict[str, tuple[Callable[[RunStore], RunStore], str, frozenset[str]]] = {
    "gets_a_dict": (
        GetsADict,
        "create_then_get",
        frozenset(FIDELITY)
        | {
            "create_then_get",
            "update_bumps_version",
            "stale_update_rejected",
            "concurrent_updates_single_winner",
            "invalid_change_rejected",
            "list_runs",
        },
    ),
    "declaration_raises": (
        DeclarationRaises,
        "create_then_get",
        frozenset(FIDELITY)
        | {
            "create_then_get",
            "update_bumps_version",
            "stale_update_rejected",
            "concurrent_updates_single_winner",
            "invalid_change_rejected",
            "list_runs",
        },
    ),
    "update_returns_nothing": (
        UpdateReturnsNothing,
        "update_bumps_version",
        frozenset({"update_bumps_version"}),
    ),
    "update_always_raises": (
        UpdateAlwaysRaises,
        "update_bumps_version",
        (frozenset(FIDELITY) - {"fidelity[params]"})
        | {
            "update_bumps_version",
            "stale_update_rejected",
            "concurrent_updates_single_winner",
            "list_runs",
        },
    ),
    "lists_a_generator": (ListsAGenerator, "list_runs", frozenset({"list_runs"})),
    "claim_says_false": (
        ClaimSaysFalse,
        "claim_single_owner",
        frozenset({"claim_single_owner", "claim_lease_expires"}),
    ),
}


class TestOwners:
    """A broken rule other cases rely on fails its owner; the others are blocked, naming it."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", OWNED)
    async def test_the_owner_fails_and_the_others_name_it(self, name: str) -> None:
        """The owner's reason is its own; every other failure is blocked, naming the owner."""
        wrapper, owner, fails = OWNED[name]
        report = await ck.run_contract(Wrapped(wrapper, on_sqlite=False), run_store.suite)
        reasons = {
            result.case_id: (result.reason or "").splitlines()[0]
            for result in report.results
            if result.status is ck.CaseStatus.FAILED
        }
        assert set(reasons) == fails, str(report)
        assert "blocked:" not in reasons.pop(owner)
        assert "(see docs/profile-run-store.md#failure-modes)" in str(report[owner].reason)
        others = {
            case_id: reason
            for case_id, reason in reasons.items()
            if "' failed: AssertionError: blocked: " not in reason
        }
        assert {
            case_id: reason
            for case_id, reason in others.items()
            if f"{owner} owns that" not in reason
        } == {}


class TestDeclaredFields:
    """The store's persisted_fields decide what is checked; claims can neither hide nor add."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", UNDECLARED_STORES)
    async def test_a_store_declaring_fewer_fields_or_none_has_no_gap(self, name: str) -> None:
        """
        A store that declares fewer fields, none, or has no persisted_fields at all
        runs every case: a correct one passes each, require_full included (no gap);
        one that mangles or drops a field it takes fails exactly the owning cases.
        """
        wrapper, fails = UNDECLARED_STORES[name]
        report = await ck.run_contract(Unclaimed(wrapper), run_store.suite)
        assert case_ids(report) == [*PLAIN_CASES, *FIDELITY]
        assert failed(report) == fails, str(report)
        passed = {r.case_id for r in report.results if r.status is ck.CaseStatus.PASSED}
        assert passed == set(case_ids(report)) - fails
        if not fails:
            ck.assert_contract(report, require_full=True)

    def test_an_undeclared_field_the_store_refuses_passes_its_fidelity_case(self) -> None:
        """A field refused is never mangled: its fidelity case calls the store and passes."""
        report = ck.run_contract_sync(Unclaimed(StatusOnly), run_store.suite, reject_vacuous=True)
        assert report["fidelity[labels]"].status is ck.CaseStatus.PASSED
        ck.assert_contract(report, require_full=True)

    def test_a_dropped_undeclared_field_names_its_owner(self) -> None:
        """An undeclared field taken and dropped fails fidelity as blocked, naming the owner."""
        report = ck.run_contract_sync(Unclaimed(TakesAndDropsLabels), run_store.suite)
        assert "invalid_change_rejected owns that" in (report["fidelity[labels]"].reason or "")

    def test_claiming_fewer_fields_still_gets_the_claimed_cases_only(self) -> None:
        """Claims still narrow the family, as the core allows: two fields, two cases."""
        report = ck.run_contract_sync(StatusOnlyImplementation(), run_store.suite)
        assert case_ids(report) == [*PLAIN_CASES, "fidelity[params]", "fidelity[status]"]
        ck.assert_contract(report, require_full=True)

    def test_a_dropped_field_is_caught_whatever_the_claims(self) -> None:
        """A declared field the store drops fails update_bumps_version though left unclaimed."""
        report = ck.run_contract_sync(ClaimsAllButLabels(), run_store.suite)
        assert "fidelity[labels]" not in case_ids(report)
        assert failed(report) == {"update_bumps_version"}
        reason = report["update_bumps_version"].reason or ""
        assert "'labels': {'writer': '1'}" in reason
        assert "(see docs/profile-run-store.md#failure-modes)" in reason

    def test_a_fidelity_case_that_cannot_start_is_blocked(self) -> None:
        """A field that takes no update at all blocks its fidelity case, naming the owner."""
        report = ck.run_contract_sync(Wrapped(DropsError, on_sqlite=False), run_store.suite)
        assert (report["fidelity[error]"].reason or "").startswith(
            "case 'fidelity[error]' failed: AssertionError: blocked: update('run-1', "
            "{'error': 'writer 0 failed'}) reads back with error None; update_bumps_version "
            "owns that"
        )


class ConnectionLog:
    """The threads that opened sqlite3 connections, and an optional barrier to hold them at."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.barrier: threading.Barrier | None = None


@pytest.fixture
def connection_log(monkeypatch: pytest.MonkeyPatch) -> ConnectionLog:
    """Log each sqlite3 connection opened; with a barrier set, hold each one open there."""
    log = ConnectionLog()
    connect = sqlite3.connect

    def logged_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(*args, **kwargs)
        log.threads.append(threading.get_ident())
        if log.barrier is not None:
            try:
                log.barrier.wait()
            except threading.BrokenBarrierError:
                connection.close()
                raise
        return connection

    monkeypatch.setattr(sqlite3, "connect", logged_connect)
    return log


class TestSqliteRunStore:
    """SqliteRunStore on its own: real connections, a real file."""

    @pytest.mark.anyio
    async def test_claims_contend_on_separate_connections_in_threads(
        self, tmp_path: Path, connection_log: ConnectionLog
    ) -> None:
        """Racing claims hold 8 connections open at once, in 8 threads; the database decides."""
        store = SqliteRunStore(tmp_path / "runs.sqlite3")
        await store.create_schema()
        run_id = await store.create({})
        connection_log.threads.clear()
        # Each connection waits here until all 8 are open: a store that serialised its
        # calls (one connection, a lock in Python) would break the barrier instead.
        connection_log.barrier = threading.Barrier(8, timeout=5)
        outcomes = await race(8, lambda index: store.claim_step(run_id, "extract"))
        outcomes.exactly_one_wins(AlreadyClaimed)
        assert len(set(connection_log.threads)) == 8
        assert threading.get_ident() not in connection_log.threads

    @pytest.mark.anyio
    async def test_runs_outlive_the_store_object(self, tmp_path: Path) -> None:
        """A second store over the same file reads what the first wrote, and its claims."""
        path = tmp_path / "runs.sqlite3"
        first = SqliteRunStore(path)
        await first.create_schema()
        run_id = await first.create({"input": "a"})
        await first.claim_step(run_id, "extract")
        second = SqliteRunStore(os.fspath(path))
        await second.create_schema()  # idempotent
        assert (await second.get(run_id)).fields["params"] == {"input": "a"}
        with pytest.raises(AlreadyClaimed):  # the claim is in the file, not the object
            await second.claim_step(run_id, "extract")

    @pytest.mark.anyio
    async def test_refuses_values_json_cannot_hold(self, tmp_path: Path) -> None:
        """A tuple is refused with a TypeError that names the field and the place."""
        store = SqliteRunStore(tmp_path / "runs.sqlite3")
        await store.create_schema()
        run_id = await store.create({})
        with pytest.raises(TypeError, match=r"result\['point'\] is a tuple"):  # not a list
            await store.update(run_id, {"result": {"point": (1, 2)}}, expected_version=1)
        assert (await store.get(run_id)).version == 1

    @pytest.mark.anyio
    async def test_lists_the_runs_of_its_namespace_in_creation_order(self, tmp_path: Path) -> None:
        """list() shows its own namespace's runs, oldest first; another namespace's are not its."""
        path = tmp_path / "runs.sqlite3"
        mine, theirs = SqliteRunStore(path, namespace="a_"), SqliteRunStore(path, namespace="b_")
        await mine.create_schema()
        created = [await mine.create({"n": index}) for index in range(3)]
        await theirs.create({"n": "other"})
        await mine.update(created[1], {"status": "running"}, expected_version=1)
        runs = await mine.list()
        assert [(run.run_id, run.version) for run in runs] == [
            (created[0], 1),
            (created[1], 2),
            (created[2], 1),
        ]
        assert runs[1] == await mine.get(created[1])

    @pytest.mark.anyio
    async def test_a_claims_table_without_expiries_is_migrated(self, tmp_path: Path) -> None:
        """create_schema() adds the expiry column to a database made before leases existed."""
        path = tmp_path / "runs.sqlite3"
        store = SqliteRunStore(path)
        await store.create_schema()
        run_id = await store.create({})
        with closing(sqlite3.connect(path)) as connection, connection:
            connection.execute("DROP TABLE run_store_step_claims")
            connection.execute(
                "CREATE TABLE run_store_step_claims (run_id TEXT NOT NULL, step TEXT NOT NULL, "
                "PRIMARY KEY (run_id, step)) WITHOUT ROWID"
            )
            connection.execute("INSERT INTO run_store_step_claims VALUES (?, 'extract')", (run_id,))
        await store.create_schema()
        with pytest.raises(AlreadyClaimed):  # the old claim holds, forever
            await store.claim_step(run_id, "extract", now=2e9, lease=1.0)
        await store.claim_step(run_id, "load", now=10.0, lease=1.0)
        await store.claim_step(run_id, "load", now=11.0, lease=1.0)  # expired: taken over

    @pytest.mark.anyio
    async def test_delete_namespace_needs_a_namespace(self, tmp_path: Path) -> None:
        """Without a namespace, delete_namespace() refuses instead of emptying the file."""
        with pytest.raises(ValueError, match="needs a non-empty namespace"):  # a guard, not a bug
            await SqliteRunStore(tmp_path / "runs.sqlite3").delete_namespace()


class TestSqliteImplementation:
    """Where SqliteRunStoreImplementation keeps its databases."""

    @pytest.mark.anyio
    async def test_a_temporary_database_is_removed_with_its_scope(self) -> None:
        """By default each scope's database lives in a directory removed when it closes."""
        async with ck.open_feature(SqliteRunStoreImplementation()) as session:
            store = session.api
            assert isinstance(store, SqliteRunStore)
            await store.create({})
            directory = Path(store.path).parent
            assert directory.is_dir()
        assert not directory.exists()

    def test_an_explicit_path_is_shared_and_left_as_found(self, tmp_path: Path) -> None:
        """Given a file, every case uses it in its own namespace and deletes only that."""
        path = tmp_path / "application.sqlite3"

        async def existing_run() -> str:
            store = SqliteRunStore(path)
            await store.create_schema()
            return await store.create({"keep": True})

        kept = anyio.run(existing_run)
        report = ck.run_contract_sync(SqliteRunStoreImplementation(path), run_store.suite)
        ck.assert_contract(report, require_full=True)
        with closing(sqlite3.connect(path)) as connection:
            runs = connection.execute("SELECT run_id FROM run_store_runs").fetchall()
            claims = connection.execute("SELECT count(*) FROM run_store_step_claims").fetchone()
        assert runs == [(kept,)]
        assert claims == (0,)


class TestLeases:
    """The reference stores' leases, checked where the profile does not reach."""

    @pytest.fixture(params=["memory", "sqlite"])
    async def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> LeasedRunStore:
        if request.param == "memory":
            return MemoryRunStore()
        store = SqliteRunStore(tmp_path / "runs.sqlite3")
        await store.create_schema()
        return store

    @pytest.mark.anyio
    @pytest.mark.parametrize("lease", [0, -1.0, float("nan"), float("inf"), "1", True], ids=repr)
    async def test_a_lease_that_is_not_a_positive_number_is_refused(
        self, store: LeasedRunStore, lease: Any
    ) -> None:
        """A lease of no time, negative, NaN, infinite or not a number: ValueError, no claim."""
        run_id = await store.create({})
        with pytest.raises(ValueError, match="lease must be"):  # refused before any claim
            await store.claim_step(run_id, "extract", now=1.0, lease=lease)
        await store.claim_step(run_id, "extract", now=1.0, lease=1.0)  # nothing was claimed

    @pytest.mark.anyio
    async def test_a_clock_reading_that_is_not_finite_is_refused(
        self, store: LeasedRunStore
    ) -> None:
        """now=NaN cannot be compared with an expiry: ValueError."""
        run_id = await store.create({})
        with pytest.raises(ValueError, match="now must be"):  # refused before any claim
            await store.claim_step(run_id, "extract", now=float("nan"), lease=1.0)

    @pytest.mark.anyio
    async def test_without_now_the_store_s_own_clock_decides(self, store: LeasedRunStore) -> None:
        """A claim with a lease and no now= expires by the wall clock: not before."""
        run_id = await store.create({})
        await store.claim_step(run_id, "extract", lease=3600.0)
        with pytest.raises(AlreadyClaimed):  # an hour is not over
            await store.claim_step(run_id, "extract", lease=3600.0)
        await store.claim_step(run_id, "extract", now=time.time() + 7200.0)  # two hours on
