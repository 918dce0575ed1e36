"""The run's model: its gate, its JSON form read back, and the merge of shards."""

from __future__ import annotations

import json
import math
import string
from dataclasses import replace
from typing import Any

import anyio
import pytest
import text_contract as _demo
from hypothesis import given, settings
from hypothesis import strategies as st

import conformkit as ck
from conformkit._collect import Distribution, Shard, collect_modules, select
from conformkit._exceptions import UsageError
from conformkit._report import Gate
from conformkit.cli import _outcome
from conformkit.cli._commands import run_pairs
from conformkit.cli._json import from_json, to_json
from conformkit.cli._matrix import (
    BaselineInfo,
    BaselineMark,
    CaseRecord,
    Entry,
    ErrorRecord,
    Matrix,
    RunInfo,
    StaleEntry,
)
from conformkit.cli._merge import merge

texts = st.text(st.characters(codec="utf-8"), max_size=12)
identifiers = st.text(string.ascii_letters + "._-[]", min_size=1, max_size=10)
errors = st.builds(ErrorRecord, texts, texts, texts)
marks = st.none() | st.builds(
    BaselineMark, st.sampled_from(("known", "unexpected-pass", "stale")), texts
)
durations = st.floats(min_value=0, max_value=1e6, allow_nan=False)
RUN = RunInfo(
    "1.0", "CPython 3.11.0", "Linux", "asyncio", "2025-01-01T00:00:00.000+00:00",
    "2025-01-01T00:00:01.000+00:00", ("contracts.py",),
)  # fmt: skip


def case_records(case_id: str) -> st.SearchStrategy[CaseRecord]:
    return st.builds(
        CaseRecord,
        st.just(case_id),
        st.sampled_from(ck.CaseStatus),
        st.none() | texts,
        durations,
        st.none() | errors,
        st.lists(errors, max_size=2).map(tuple),
        marks,
        st.booleans(),
        st.booleans(),
    )


@st.composite
def entries(draw: st.DrawFn, key: tuple[str, str], *, complete: bool = False) -> Entry:
    planned = draw(st.lists(identifiers, min_size=1, max_size=5, unique=True))
    ran = planned if complete else draw(st.lists(st.sampled_from(planned), unique=True))
    return Entry(
        key[1],
        key[0],
        draw(identifiers),
        draw(st.none() | st.builds(Distribution, identifiers, identifiers)),
        tuple(planned),
        tuple(draw(case_records(case)) for case in planned if case in ran),
        tuple(draw(st.lists(errors, max_size=1))),
        draw(st.none() | st.lists(identifiers, max_size=3, unique=True).map(tuple)),
    )


@st.composite
def matrices(draw: st.DrawFn, *, complete: bool = False) -> Matrix:
    keys = draw(st.lists(st.tuples(identifiers, identifiers), max_size=4, unique=True))
    baseline = draw(
        st.none()
        | st.builds(
            BaselineInfo,
            identifiers,
            st.lists(st.builds(StaleEntry, texts, texts, texts, texts, texts), max_size=2).map(
                tuple
            ),
        )
    )
    run = replace(RUN, require_full=draw(st.booleans()), stopped=draw(st.none() | texts))
    return Matrix(run, tuple(draw(entries(key, complete=complete)) for key in keys), baseline)


def through_json(matrix: Matrix) -> Matrix:
    return from_json(json.loads(json.dumps(to_json(matrix))), "report.json")


RESULT = r"report\.json: reports\[0\]\.results\[0\]"
SECONDS = r"a number of seconds from 0 to 1e\+09"


def with_run(**change: Any) -> dict[str, Any]:
    """A report of no case, with ``change`` made to its run."""
    return {**to_json(Matrix(RUN, ())), "run": {**to_json(Matrix(RUN, ()))["run"], **change}}


def with_result(**change: Any) -> dict[str, Any]:
    """A report of one case, with ``change`` made to its result."""
    record = CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0)
    entry = Entry("f", "I", "m", None, ("a",), (record,))
    document = to_json(Matrix(RUN, (entry,)))
    document["reports"][0]["results"][0].update(change)
    return document


class TestJSON:
    """A report written as JSON reads back as the same report."""

    @given(matrices())
    def test_round_trip(self, matrix: Matrix) -> None:
        """to_json then from_json gives back every field."""
        assert through_json(matrix) == matrix

    def test_lone_surrogates_become_replacement_characters(self) -> None:
        """No file encoding holds a lone surrogate: a report replaces it."""
        result = ck.CaseResult("a", ck.CaseStatus.FAILED, "bad \ud800 byte", ValueError("\udcff"))
        record = CaseRecord.of(result)
        assert record.reason == "bad \ufffd byte"
        assert record.error is not None
        assert record.error.message == "\ufffd"
        entry = Entry("f", "I", "m", None, ("a",), (record,))
        json.dumps(to_json(Matrix(RUN, (entry,))), ensure_ascii=False).encode("utf-8")

    def test_reports_from_before_stale_slow_and_unexercised_read_back(self) -> None:
        """A version-1 report from before "stale", "slow" and "unexercised" reads with defaults."""
        record = CaseRecord("a", ck.CaseStatus.PASSED, None, 0.5)
        document = to_json(Matrix(RUN, (Entry("f", "I", "m", None, ("a",), (record,)),)))
        del document["reports"][0]["unexercised"]
        del document["reports"][0]["results"][0]["stale"]
        del document["reports"][0]["results"][0]["slow"]
        [entry] = from_json(document, "old.json").entries
        assert (entry.unexercised, entry.results) == (None, (record,))

    def test_reports_from_before_stopped_read_back(self) -> None:
        """A version-1 report written before "stopped" reads as a run that went to its end."""
        document = to_json(Matrix(RUN, ()))
        del document["run"]["stopped"]
        assert from_json(document, "old.json").run.stopped is None

    @pytest.mark.parametrize(
        ("document", "message"),
        [
            ([], r"report\.json is not a conformkit report"),
            ({"format": "conformkit.report", "version": True}, r"schema version True"),
            ({"format": "conformkit.report", "version": 1.0}, r"schema version 1\.0"),
            ({"format": "conformkit.report", "version": 2}, r"schema version 2"),
            ({"format": "conformkit.report", "version": 1}, r"report has no 'run'"),
            (
                {
                    "format": "conformkit.report",
                    "version": 1,
                    "run": {**to_json(Matrix(RUN, ()))["run"], "backend": 3},
                },
                r"run\.backend must be a string, got 3",
            ),
            (with_result(duration=math.nan), rf"{RESULT}\.duration must be {SECONDS}, got nan"),
            (with_result(duration=math.inf), rf"{RESULT}\.duration must be {SECONDS}, got inf"),
            (with_result(duration=-5), rf"{RESULT}\.duration must be {SECONDS}, got -5"),
            (with_result(duration=True), rf"{RESULT}\.duration must be {SECONDS}, got True"),
            (with_result(duration=1e10), rf"{RESULT}\.duration must be {SECONDS}, got 1"),
            (with_result(stale=1), rf"{RESULT}\.stale must be a boolean, got 1"),
            (with_result(slow=1), rf"{RESULT}\.slow must be a boolean, got 1"),
            (
                with_run(shard={"index": 1, "count": 0}),
                r"run\.shard\.count must be a whole number of at least 1, got 0",
            ),
            (
                with_run(shard={"index": 0, "count": 2}),
                r"run\.shard\.index must be a whole number of at least 1, got 0",
            ),
            (
                with_run(shard={"index": 3, "count": 2}),
                r"run\.shard\.index must be at most the count, 2, got 3",
            ),
            (
                with_run(shard={"index": True, "count": 2}),
                r"run\.shard\.index must be an integer, got True",
            ),
            (with_run(stopped=1), r"run\.stopped must be a string, got 1"),
        ],
    )
    def test_malformed_reports_name_the_place(self, document: Any, message: str) -> None:
        """A malformed report is a usage error naming the file and the place."""
        with pytest.raises(UsageError, match=message):
            from_json(document, "report.json")


class TestGate:
    """The command line's gate is assert_contract's, plus what the baseline says."""

    @given(
        st.lists(st.tuples(st.sampled_from(ck.CaseStatus), st.booleans()), min_size=1, max_size=6),
        st.booleans(),
        st.booleans(),
        st.booleans(),
        st.booleans(),
        st.none() | st.lists(st.sampled_from(("get", "put", "delete")), unique=True).map(tuple),
    )
    def test_agrees_with_assert_contract(
        self,
        cases: list[tuple[ck.CaseStatus, bool]],
        require_full: bool,
        reject_stale: bool,
        cleanup_error: bool,
        require_exercised: bool,
        unexercised: tuple[str, ...] | None,
    ) -> None:
        """
        Without a baseline, an entry holds exactly when assert_contract passes its
        report, and both name the same cases, stale ones included, also once the
        entry has been through the JSON report.
        """
        report = ck.ContractReport(
            "f",
            "Impl",
            tuple(
                ck.CaseResult(f"c{i}", status, "why", stale=stale)
                for i, (status, stale) in enumerate(cases)
            ),
            (RuntimeError("late"),) if cleanup_error else (),
            unexercised,
        )
        entry = Entry(
            "f",
            "Impl",
            "m",
            None,
            tuple(result.case_id for result in report.results),
            tuple(CaseRecord.of(result) for result in report.results),
            tuple(ErrorRecord.of(error) for error in report.cleanup_errors),
            unexercised,
        )
        [read_back] = through_json(Matrix(RUN, (entry,))).entries
        assert read_back == entry
        gate = Gate(
            require_full=require_full,
            reject_stale=reject_stale,
            require_exercised=require_exercised,
        )
        try:
            ck.assert_contract(
                report,
                require_full=require_full,
                reject_stale=reject_stale,
                require_exercised=require_exercised,
            )
        except ck.ContractFailure as failure:
            lines = str(failure).splitlines()[1:]
        else:
            lines = []
        offences = _outcome.offences(read_back, gate)
        assert [line.split(":")[0].strip() for line in lines] == [
            line.split(":")[0] for line in offences
        ]
        assert read_back.holds(gate) is (lines == [])

    def test_the_gate_judges_each_case_once(self) -> None:
        """Gate.offends: failed and unavailable always; gaps under require_full; stale ones."""
        gate, full, strict = Gate(), Gate(require_full=True), Gate(reject_stale=True)
        for status, offends in (
            (ck.CaseStatus.PASSED, False),
            (ck.CaseStatus.FAILED, True),
            (ck.CaseStatus.UNSUPPORTED, False),
            (ck.CaseStatus.UNAVAILABLE, True),
        ):
            result = ck.CaseResult("c", status)
            assert gate.offends(result) is offends
            assert full.offends(result) is (status is not ck.CaseStatus.PASSED)
        stale = ck.CaseResult("c", ck.CaseStatus.UNSUPPORTED, "gap (passed)", stale=True)
        assert (gate.offends(stale), strict.offends(stale)) == (False, True)
        assert gate.offends(CaseRecord.of(stale)) is False  # a record is judged alike
        assert strict.offends(CaseRecord.of(stale)) is True

    def test_the_gate_on_unexercised_operations(self) -> None:
        """require_exercised rejects operations no case called, and reports without a record."""
        offences = Gate(require_exercised=True).report_offences
        assert offences(proven=True, cleanup_errors=(), unexercised=()) == []
        [unknown] = offences(proven=True, cleanup_errors=(), unexercised=None)
        assert unknown.label == "operations not recorded"
        assert "reject_vacuous=True" in unknown.message
        [missing] = offences(proven=True, cleanup_errors=(), unexercised=("delete",))
        assert str(missing) == "operations no case exercised: delete"
        assert Gate().report_offences(proven=True, cleanup_errors=(), unexercised=None) == []

    def test_known_failures_hold_and_other_marks_fail(self) -> None:
        """A known failure holds; an unexpected pass or a stale mark fails the gate."""
        passed = CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0)
        failed = CaseRecord("b", ck.CaseStatus.FAILED, "boom", 0.0)
        entry = Entry("f", "Impl", "m", None, ("a", "b"), (passed, failed))
        known = replace(failed, baseline=BaselineMark("known", "#12"))
        assert not _outcome.offences(replace(entry, results=(passed, known)), Gate())
        unexpected = replace(passed, baseline=BaselineMark("unexpected-pass", "#12"))
        assert _outcome.offences(replace(entry, results=(unexpected, known)), Gate()) == [
            "a: unexpected pass: the baseline lists it as failing (#12); remove the entry"
        ]

    def test_only_complete_entries_can_prove_nothing(self) -> None:
        """A shard holding only unsupported cases holds; the whole pair would not."""
        gap = CaseRecord("b", ck.CaseStatus.UNSUPPORTED, "not yet", 0.0)
        part = Entry("f", "Impl", "m", None, ("a", "b"), (gap,))
        assert not _outcome.offences(part, Gate())
        whole = replace(part, planned=("b",))
        assert _outcome.offences(whole, Gate()) == [
            "no case passed: a report that proves nothing cannot hold"
        ]

    def test_stale_baseline_entries_fail_the_run(self) -> None:
        """A matrix with a stale baseline entry does not hold, even with every entry holding."""
        stale = StaleEntry("Gone", "f", "a", "old", "no implementation 'Gone' of feature 'f' ran")
        assert Matrix(RUN, (), BaselineInfo("b.toml")).holds
        assert not Matrix(RUN, (), BaselineInfo("b.toml", (stale,))).holds


def split(matrix: Matrix, owners: list[int], parts: int) -> list[tuple[Matrix, str]]:
    """Deal the matrix's cases out to ``parts`` shard reports, case i to ``owners[i]``."""
    counter = iter(owners)
    dealt: list[list[Entry]] = [[] for _ in range(parts)]
    for entry in matrix.entries:
        shares: list[list[CaseRecord]] = [[] for _ in range(parts)]
        for result in entry.results:
            shares[next(counter) % parts].append(result)
        for index, share in enumerate(shares):
            cleanup = entry.cleanup_errors if index == 0 else ()
            dealt[index].append(replace(entry, results=tuple(share), cleanup_errors=cleanup))
    return [
        (
            replace(
                matrix,
                run=replace(matrix.run, shard=Shard(index + 1, parts)),
                entries=tuple(entries),
            ),
            f"shard-{index + 1}.json",
        )
        for index, entries in enumerate(dealt)
    ]


class TestMerge:
    """merge: the shards' reports recombine into the unsharded report."""

    @settings(max_examples=60)
    @given(
        matrices(complete=True),
        st.integers(min_value=1, max_value=4),
        st.lists(st.integers(min_value=0, max_value=3), min_size=30, max_size=30),
    )
    def test_merged_shards_are_the_whole(
        self, matrix: Matrix, parts: int, owners: list[int]
    ) -> None:
        """However the cases are dealt out, the merge of the parts is the whole."""
        shards = split(matrix, owners, parts)
        merged = merge([(through_json(part), source) for part, source in shards])
        assert merged.entries == matrix.entries
        assert merged.holds == matrix.holds
        assert merged.run == replace(matrix.run, shard=None)

    def test_real_shards_merge_into_the_real_run(self) -> None:
        """Running the demo in three shards and merging gives the unsharded results."""
        pairs = collect_modules([_demo])

        def run(shard: Shard | None) -> Matrix:
            entries = anyio.run(run_pairs, pairs, select(pairs, [], shard))
            return Matrix(replace(RUN, shard=shard), tuple(entries))

        whole = run(None)
        merged = merge([(run(Shard(k, 3)), f"{k}.json") for k in (1, 2, 3)])
        assert [[r.status for r in e.results] for e in merged.entries] == [
            [r.status for r in e.results] for e in whole.entries
        ]

    def test_reports_that_disagree_are_refused(self) -> None:
        """Different options, a baseline on one side only, or different cases: usage errors."""
        entry = Entry(
            "f", "Impl", "m", None, ("a",), (CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0),)
        )
        one = Matrix(RUN, (entry,))
        with pytest.raises(UsageError, match=r"different --require-full options"):
            merge([(one, "1.json"), (replace(one, run=replace(RUN, require_full=True)), "2.json")])
        with pytest.raises(UsageError, match=r"disagree on --baseline"):
            merge([(one, "1.json"), (replace(one, baseline=BaselineInfo("b.toml")), "2.json")])
        other = Matrix(RUN, (replace(entry, planned=("a", "b"), results=()),))
        with pytest.raises(UsageError, match=r"disagree on f × Impl"):
            merge([(one, "1.json"), (other, "2.json")])

    def test_an_operation_is_unexercised_when_no_shard_called_it(self) -> None:
        """The merge keeps the operations that every shard left uncalled, in their order."""
        passed = CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0)
        entry = Entry("f", "Impl", "m", None, ("a", "b"), (passed,), (), ("read", "write", "drop"))
        other = replace(
            entry, results=(replace(passed, case_id="b"),), unexercised=("drop", "read")
        )
        merged = merge([(Matrix(RUN, (entry,)), "1.json"), (Matrix(RUN, (other,)), "2.json")])
        assert merged.entries[0].unexercised == ("read", "drop")
        unrecorded = replace(other, unexercised=None)
        merged = merge([(Matrix(RUN, (entry,)), "1.json"), (Matrix(RUN, (unrecorded,)), "2.json")])
        assert merged.entries[0].unexercised is None

    def test_runs_combine_their_information(self) -> None:
        """The merged run spans first start to last end; values that differ are joined."""
        early = replace(RUN, started="2025-01-01T00:00:00.000+00:00", python="CPython 3.11.0")
        late = replace(
            RUN,
            started="2025-01-01T00:00:05.000+00:00",
            finished="2025-01-01T00:00:09.000+00:00",
            python="CPython 3.12.0",
            targets=("other.py",),
        )
        merged = merge([(Matrix(late, ()), "1.json"), (Matrix(early, ()), "2.json")])
        assert merged.run.started == early.started
        assert merged.run.finished == late.finished
        assert merged.run.python == "CPython 3.12.0, CPython 3.11.0"
        assert merged.run.targets == ("other.py", "contracts.py")
