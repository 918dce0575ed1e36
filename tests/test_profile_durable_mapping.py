"""The durable mapping profile (conformkit.profiles.durable_mapping): stores pass, broken fail."""

from __future__ import annotations

import dbm.dumb
import functools
import re
import shelve
import shutil
import sqlite3
import tempfile
import typing
from collections import UserDict
from collections.abc import MutableMapping
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest

import conformkit as ck
from conformkit.profiles import durable_mapping
from conformkit.profiles.durable_mapping import (
    DurableMappingCase,
    MappingStore,
    MemoryMappingStore,
    MemoryMappingStoreImplementation,
    ShelveMappingStoreImplementation,
    SqliteMappingStoreImplementation,
)
from conformkit.profiles.mapping import BYTES_VALUE_SAMPLES, MappingSamples

ALL_CASES = frozenset(durable_mapping.feature.cases)


def failed(report: ck.ContractReport) -> set[str]:
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


# --------------------------------------------------------------------------- broken stores


class SavesNothing(MemoryMappingStore):
    """close() saves nothing: every mapping opens empty."""

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        pass


class RefusesUnknownAttributes(MemoryMappingStore):
    """A correct store whose __getattr__ raises AssertionError, as diskcache's FanoutCache does."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"cannot access {name} in cache shard")


class SavesOnlyNewKeys(MemoryMappingStore):
    """close() adds the keys it has not saved yet, and nothing else."""

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        for key, value in mapping.items():
            self.saved.setdefault(key, value)


class IgnoresDeletes(MemoryMappingStore):
    """close() saves every key of the mapping, and forgets none saved before."""

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        self.saved.update(mapping)


class LosesOverwrites(MemoryMappingStore):
    """close() saves new keys and deletes, but a saved key keeps its old value."""

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        self.saved = {key: self.saved.get(key, value) for key, value in mapping.items()}


class ShelvesNeverClosed:
    """Never closes its shelves: dbm.dumb records where an overwrite went only on close."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.forgotten: list[shelve.Shelf[Any]] = []

    def open(self) -> MutableMapping[Any, Any]:
        # Owned by the shelf, which close_all() closes. typeshed types dbm.dumb's keys
        # as str | bytes and Shelf's as bytes; Shelf takes both.
        database = dbm.dumb.open(self.path, "c")  # noqa: SIM115
        shelf: shelve.Shelf[Any] = shelve.Shelf(cast("MutableMapping[bytes, bytes]", database))
        self.forgotten.append(shelf)
        return shelf

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        pass  # the defect

    def close_all(self) -> None:
        for shelf in self.forgotten:
            shelf.close()


class BytesStore(MemoryMappingStore):
    """
    A correct store whose mappings hold bytes values only and give them back as bytearray,
    as zict.File does; it declares its samples.
    """

    conformkit_samples: MappingSamples | None = BYTES_VALUE_SAMPLES

    def open(self) -> MutableMapping[Any, Any]:
        mapping = BytesOnly()
        mapping.data.update(self.saved)
        return mapping


class UndeclaredBytesStore(BytesStore):
    """The same store, which does not say that it holds bytes only."""

    conformkit_samples = None


class BytesOnly(UserDict[Any, Any]):
    """A dict of bytes values, read back as bytearray."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if not isinstance(value, bytes | bytearray):
            raise TypeError(f"a bytes-like value is required, not {type(value).__name__}")
        super().__setitem__(key, bytes(value))

    def __getitem__(self, key: Any) -> Any:
        return bytearray(super().__getitem__(key))


class OverMemory(MemoryMappingStoreImplementation):
    """The reference, with a broken store in place of MemoryMappingStore."""

    def __init__(self, store: type[MemoryMappingStore]) -> None:
        self.store = store

    def create(self, scope: ck.FeatureScope) -> MappingStore:
        return self.store()


class ShelveNeverClosed(ShelveMappingStoreImplementation):
    """The shelve implementation, with a store that never closes its shelves."""

    def create(self, scope: ck.FeatureScope) -> MappingStore:
        directory = tempfile.mkdtemp(prefix="conformkit-test-")
        scope.defer(functools.partial(shutil.rmtree, directory))
        store = ShelvesNeverClosed(str(Path(directory) / "shelf"))
        scope.defer(store.close_all)
        return store


DEFECTS = [
    pytest.param(OverMemory(MemoryMappingStore), set(), id="reference"),
    pytest.param(OverMemory(SavesNothing), set(ALL_CASES), id="saves-nothing"),
    pytest.param(
        OverMemory(SavesOnlyNewKeys),
        {"overwrite_durable_across_reopen", "delete_durable_across_reopen"},
        id="saves-only-new-keys",
    ),
    pytest.param(
        OverMemory(IgnoresDeletes), {"delete_durable_across_reopen"}, id="ignores-deletes"
    ),
    pytest.param(
        OverMemory(LosesOverwrites), {"overwrite_durable_across_reopen"}, id="loses-overwrites"
    ),
    pytest.param(
        ShelveNeverClosed(), {"overwrite_durable_across_reopen"}, id="shelves-never-closed"
    ),
    pytest.param(OverMemory(RefusesUnknownAttributes), set(), id="refuses-unknown-attributes"),
]

BYTES_ONLY = [
    pytest.param(OverMemory(BytesStore), set(), id="bytes-store-declared"),
    pytest.param(OverMemory(UndeclaredBytesStore), set(ALL_CASES), id="bytes-store-undeclared"),
]


# --------------------------------------------------------------------------- tests


class TestDefinition:
    def test_case_names_match_the_literal(self) -> None:
        """DurableMappingCase lists exactly the feature's cases, in order."""
        assert typing.get_args(DurableMappingCase) == durable_mapping.feature.cases

    def test_feature_says_what_it_does_not_establish(self) -> None:
        """The feature has a description and names what passing it does not prove."""
        assert "close" in durable_mapping.feature.description
        assert "crash" in durable_mapping.feature.does_not_establish

    def test_implementations_holds_one_of_each(self) -> None:
        """`implementations` holds one instance of each bundled implementation."""
        assert [type(each) for each in durable_mapping.implementations] == [
            MemoryMappingStoreImplementation,
            ShelveMappingStoreImplementation,
            SqliteMappingStoreImplementation,
        ]


class TestBundledImplementations:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "implementation", durable_mapping.implementations, ids=lambda each: type(each).__name__
    )
    async def test_passes_everything(
        self, implementation: ck.FeatureImplementation[MappingStore, DurableMappingCase]
    ) -> None:
        """Each bundled store passes every case."""
        report = await ck.run_contract(implementation, durable_mapping.suite)
        ck.assert_contract(report, require_full=True)

    @pytest.mark.anyio
    async def test_sqlite_with_a_path_uses_a_table_per_case(self, tmp_path: Path) -> None:
        """Given a database file, each case gets a table of its own, dropped afterwards."""
        database = tmp_path / "shared.sqlite3"
        report = await ck.run_contract(
            SqliteMappingStoreImplementation(database), durable_mapping.suite
        )
        ck.assert_contract(report, require_full=True)
        with closing(sqlite3.connect(database)) as connection:
            tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            assert [name for (name,) in tables] == ["sqlite_sequence"]

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "implementation", durable_mapping.implementations, ids=lambda each: type(each).__name__
    )
    async def test_no_case_is_vacuous(
        self, implementation: ck.FeatureImplementation[MappingStore, DurableMappingCase]
    ) -> None:
        """Through a recording proxy every case calls the store, open() and close() both."""
        report = await ck.run_contract(implementation, durable_mapping.suite, reject_vacuous=True)
        ck.assert_contract(report, require_full=True)
        assert report.unexercised == ()


class TestDefects:
    @pytest.mark.anyio
    @pytest.mark.parametrize(("implementation", "expected"), DEFECTS)
    async def test_each_defect_fails_exactly_its_cases(
        self,
        implementation: ck.FeatureImplementation[MappingStore, DurableMappingCase],
        expected: set[str],
    ) -> None:
        """Each broken store fails exactly the cases its defect breaks; the rest pass."""
        report = await ck.run_contract(implementation, durable_mapping.suite)
        assert failed(report) == expected, report
        passed = {r.case_id for r in report.results if r.status is ck.CaseStatus.PASSED}
        assert passed == ALL_CASES - expected

    @pytest.mark.parametrize(("implementation", "expected"), DEFECTS + BYTES_ONLY)
    def test_a_blocked_case_names_a_case_that_failed(
        self,
        implementation: ck.FeatureImplementation[MappingStore, DurableMappingCase],
        expected: set[str],
    ) -> None:
        """A blocked case names a case of this profile that failed in the same run, or the
        mapping profile's read_your_writes, and never itself."""
        report = ck.run_contract_sync(implementation, durable_mapping.suite)
        for result in report.results:
            text = result.reason or ""
            if ": AssertionError: blocked: " not in text:
                continue
            owners = set(re.findall(r"\b([a-z_]+) owns\b", text)) - {"read_your_writes"}
            assert "read_your_writes owns" in text or owners, text
            assert result.case_id not in owners, text
            assert owners <= failed(report), text

    def test_failures_say_what_was_expected_and_what_happened(self) -> None:
        """A failed case's reason tells the story, then what was found against what was expected."""
        report = ck.run_contract_sync(OverMemory(IgnoresDeletes), durable_mapping.suite)
        assert (
            "after writing 'key-0' and 'key-1', closing, reopening and deleting 'key-0', closing "
            "and reopening: 'key-0' is there, but should not be "
            "(see docs/profile-mapping.md#durable-mapping-failure-modes)"
        ) in (report["delete_durable_across_reopen"].reason or "")
        report = ck.run_contract_sync(OverMemory(SavesNothing), durable_mapping.suite)
        assert (
            "AssertionError: blocked: after writing 'key-0' and 'key-1', closing and reopening: "
            "'key-0' is missing; 'key-1' is missing; durable_across_reopen owns that"
        ) in (report["delete_durable_across_reopen"].reason or "")

    def test_long_values_are_shortened_in_failures(self) -> None:
        """A value of 2,000 characters shows by its two ends, not in full."""
        report = ck.run_contract_sync(OverMemory(LosesOverwrites), durable_mapping.suite)
        error = report["overwrite_durable_across_reopen"].error
        message = str(error)
        assert "'key-0' reads back 'a value', expected 'a much longer value a much" in message
        assert "...r value a much longer value '" in message
        assert len(message) < 400


class TestFileStores:
    @pytest.mark.anyio
    async def test_close_takes_only_mappings_the_store_has_open(self) -> None:
        """close() refuses a mapping the store did not open, or has closed already."""
        async with ck.open_feature(SqliteMappingStoreImplementation()) as session:
            mapping = session.api.open()
            session.api.close(mapping)
            with pytest.raises(ValueError, match="opened and has not closed, got <SqliteMapping"):
                session.api.close(mapping)
            with pytest.raises(ValueError, match="got {}"):
                session.api.close({})

    @pytest.mark.anyio
    async def test_mappings_left_open_close_with_the_scope(self) -> None:
        """A mapping a failed case left open is closed when the scope closes."""
        async with ck.open_feature(SqliteMappingStoreImplementation()) as session:
            left_open = session.api.open()
            left_open["key"] = "value"
        with pytest.raises(sqlite3.ProgrammingError):
            len(left_open)


class TestSampleDomains:
    """A store that holds only bytes declares it, and is then judged on its durability alone."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(("implementation", "expected"), BYTES_ONLY)
    async def test_a_bytes_store_fails_only_what_it_lacks(
        self,
        implementation: ck.FeatureImplementation[MappingStore, DurableMappingCase],
        expected: set[str],
    ) -> None:
        """Declared, a durable bytes store passes; undeclared, every case is blocked."""
        report = await ck.run_contract(implementation, durable_mapping.suite)
        assert failed(report) == expected, report
        for case in expected:
            reason = report[case].reason or ""
            assert ": AssertionError: blocked: writing the sample value 'a value'" in reason
            assert "the mapping profile's read_your_writes owns that" in reason
