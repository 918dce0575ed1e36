"""Baselines: the file formats, what a baseline makes of a run, and how a run rewrites one."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conformkit as ck
from conformkit._exceptions import UsageError
from conformkit.cli._baseline import (
    Baseline,
    apply_baseline,
    load_baseline,
    render_baseline,
    update_baseline,
)
from conformkit.cli._matrix import CaseRecord, Entry, Matrix, RunInfo

RUN = RunInfo("1.0", "CPython 3.11.0", "Linux", "asyncio", "start", "end")
keys = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
reasons = keys.filter(str.strip)
entry_maps = st.dictionaries(st.tuples(keys, keys, keys), reasons, max_size=6)


def record(case_id: str, status: ck.CaseStatus) -> CaseRecord:
    reason = None if status is ck.CaseStatus.PASSED else f"case {case_id!r} {status.value}"
    return CaseRecord(case_id, status, reason, 0.0)


PASSED, FAILED = ck.CaseStatus.PASSED, ck.CaseStatus.FAILED
UNSUPPORTED = ck.CaseStatus.UNSUPPORTED


def matrix(*results: CaseRecord, planned: tuple[str, ...] = ("a", "b", "c")) -> Matrix:
    return Matrix(RUN, (Entry("f", "Impl", "m", None, planned, results),))


class TestFiles:
    """TOML and JSON files, written by hand and read back by the standard library."""

    @pytest.mark.parametrize("suffix", [".toml", ".json"])
    # Each example overwrites the same file, so sharing tmp_path between them is fine.
    @settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(entries=entry_maps)
    def test_round_trip(
        self, tmp_path: Path, suffix: str, entries: dict[tuple[str, str, str], str]
    ) -> None:
        """Whatever names and reasons hold (quotes, controls, dots), a file reads back the same."""
        path = tmp_path / f"baseline{suffix}"
        path.write_text(render_baseline(Baseline(str(path), entries)), encoding="utf-8")
        assert load_baseline(str(path)).entries == entries

    def test_toml_reads_as_documented(self) -> None:
        """The TOML form: a version, then a table per implementation and feature."""
        text = render_baseline(
            Baseline(
                "b.toml", {("SqliteText", "example.text", "fidelity[history]"): 'no "history"'}
            )
        )
        assert tomllib.loads(text) == {
            "version": 1,
            "implementations": {
                "SqliteText": {"example.text": {"fidelity[history]": 'no "history"'}}
            },
        }
        assert '[implementations.SqliteText."example.text"]' in text.splitlines()

    @pytest.mark.parametrize(
        ("name", "content", "message"),
        [
            ("b.toml", "version = 1\nimplementations = 3\n", r"implementations must be a table"),
            ("b.toml", "implementations = {}\n", r"must say version = 1, got None"),
            ("b.json", '{"version": 1, "known": {}}', r"unknown key\(s\) 'known'"),
            (
                "b.json",
                '{"version": 1, "implementations": {"I": {"f": {"a": " "}}}}',
                r"implementations\.I\.f\.a needs a non-empty reason",
            ),
            ("b.toml", "version = true\n", r"must say version = 1, got True"),
            ("b.toml", "version = 1.0\n", r"must say version = 1, got 1\.0"),
            ("b.json", '{"version": true}', r"must say version = 1, got True"),
            ("b.json", '{"version": 1.0}', r"must say version = 1, got 1\.0"),
            ("b.json", "[1]", r"must hold a table"),
            ("b.json", "{", r"is not valid JSON"),
            ("b.yaml", "", r"must be a \.toml or a \.json file"),
        ],
    )
    def test_malformed_files_are_refused(
        self, tmp_path: Path, name: str, content: str, message: str
    ) -> None:
        """A malformed baseline is a usage error naming the file and the problem."""
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        with pytest.raises(UsageError, match=message):
            load_baseline(str(path))

    def test_a_missing_file(self, tmp_path: Path) -> None:
        """A missing file is an error, unless the run is to write it."""
        path = str(tmp_path / "b.toml")
        with pytest.raises(UsageError, match=r"no such file \(--update-baseline writes one"):
            load_baseline(path)
        assert load_baseline(path, missing_ok=True) == Baseline(path)


class TestApply:
    """What a baseline makes of a run's cases."""

    def test_marks(self) -> None:
        """Listed: failing is known, passing is an unexpected pass, unsupported is stale."""
        baseline = Baseline("b.toml", {("Impl", "f", c): f"why {c}" for c in ("a", "b", "c")})
        applied = apply_baseline(
            matrix(record("a", FAILED), record("b", PASSED), record("c", UNSUPPORTED)), baseline
        )
        outcomes = [result.baseline for result in applied.entries[0].results]
        assert [(mark.outcome, mark.reason) for mark in outcomes if mark] == [
            ("known", "why a"),
            ("unexpected-pass", "why b"),
            ("stale", "why c"),
        ]
        assert applied.stale == ()
        assert not applied.holds

    def test_require_full_lists_unsupported_cases_as_known(self) -> None:
        """Under --require-full an unsupported case fails, so a baseline may know it."""
        baseline = Baseline("b.toml", {("Impl", "f", "c"): "gap"})
        run = matrix(record("a", PASSED), record("c", UNSUPPORTED), planned=("a", "c"))
        applied = apply_baseline(replace(run, run=replace(RUN, require_full=True)), baseline)
        mark = applied.entries[0].results[1].baseline
        assert mark is not None
        assert mark.outcome == "known"
        assert applied.holds

    def test_stale_entries(self) -> None:
        """An entry naming a case or an implementation that is not there is stale."""
        baseline = Baseline(
            "b.toml",
            {("Impl", "f", "bb"): "typo", ("Gone", "f", "a"): "retired", ("Impl", "f", "a"): "x"},
        )
        applied = apply_baseline(matrix(record("a", FAILED)), baseline)
        assert [(s.implementation, s.case_id, s.problem) for s in applied.stale] == [
            ("Impl", "bb", "Impl has no case 'bb'; did you mean 'b'?"),
            ("Gone", "a", "no implementation 'Gone' of feature 'f' ran"),
        ]
        assert not applied.holds

    def test_cases_not_run_are_not_judged(self) -> None:
        """An entry for a case this run did not run (-k, --shard) is neither known nor stale."""
        baseline = Baseline("b.toml", {("Impl", "f", "c"): "slow"})
        applied = apply_baseline(matrix(record("a", PASSED)), baseline)
        assert applied.stale == ()
        assert applied.holds


class TestUpdate:
    """--update-baseline: the failures of the run, reasons kept."""

    def test_keeps_reasons_drops_what_passes_adds_what_fails(self) -> None:
        """Entries that remain keep their reason; fixed and stale ones go; new ones get one."""
        old = Baseline(
            "b.toml",
            {
                ("Impl", "f", "a"): "known since #12",
                ("Impl", "f", "b"): "fixed since",
                ("Gone", "f", "a"): "retired",
            },
        )
        update = update_baseline(
            matrix(record("a", FAILED), record("b", PASSED), record("c", FAILED)), old
        )
        assert update.baseline.entries == {
            ("Impl", "f", "a"): "known since #12",
            ("Impl", "f", "c"): "case 'c' failed",
        }
        assert update.kept == (("Impl", "f", "a"),)
        assert update.added == (("Impl", "f", "c"),)
        assert update.removed == (("Impl", "f", "b"), ("Gone", "f", "a"))
        assert apply_baseline(
            matrix(record("a", FAILED), record("b", PASSED), record("c", FAILED)), update.baseline
        ).holds

    def test_keeps_entries_of_cases_the_run_did_not_run(self) -> None:
        """A partial run (-k, --shard) leaves the entries of the other cases as they were."""
        old = Baseline("b.toml", {("Impl", "f", "c"): "slow", ("Impl", "f", "gone"): "x"})
        update = update_baseline(matrix(record("a", PASSED)), old)
        assert update.baseline.entries == {("Impl", "f", "c"): "slow"}

    def test_writes_the_format_of_its_suffix(self, tmp_path: Path) -> None:
        """The rewritten file is TOML or JSON by its suffix, sorted, and reads back."""
        entries = {("B", "f", "x"): "r1", ("A", "f", "y"): "r2"}
        text = render_baseline(Baseline("b.json", entries))
        assert list(json.loads(text)["implementations"]) == ["B", "A"]
        update = update_baseline(
            Matrix(
                RUN,
                (
                    Entry("f", "B", "m", None, ("x",), (record("x", FAILED),)),
                    Entry("f", "A", "m", None, ("y",), (record("y", FAILED),)),
                ),
            ),
            Baseline("b.json", entries),
        )
        assert list(update.baseline.entries) == [("A", "f", "y"), ("B", "f", "x")]
