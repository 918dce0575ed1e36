"""What a report says of each case and of itself, worded once for every format."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import conformkit as ck
from conformkit._report import Gate
from conformkit._util import one_line
from conformkit.cli._html import render_html
from conformkit.cli._junit import render_junit
from conformkit.cli._markdown import markdown_text, render_markdown
from conformkit.cli._matrix import (
    MARKS,
    BaselineInfo,
    BaselineMark,
    CaseRecord,
    Entry,
    ErrorRecord,
    Mark,
    Matrix,
    RunInfo,
    StaleEntry,
)
from conformkit.cli._outcome import (
    Outcome,
    Severity,
    case_outcome,
    entry_notes,
    severity,
    stale_entry_outcome,
    verdict,
)
from conformkit.cli._text import render_text

PASSED, FAILED = ck.CaseStatus.PASSED, ck.CaseStatus.FAILED
UNSUPPORTED, UNAVAILABLE = ck.CaseStatus.UNSUPPORTED, ck.CaseStatus.UNAVAILABLE
RUN = RunInfo("1.0", "CPython 3.11.0", "Linux", "asyncio", "start", "end")


def record(status: ck.CaseStatus, *, stale: bool = False) -> CaseRecord:
    reason = None if status is PASSED else f"why it is {status.value}"
    return CaseRecord("c", status, reason, 0.0, stale=stale)


def marked(status: ck.CaseStatus, outcome: str) -> CaseRecord:
    mark = BaselineMark(outcome, "#12")  # type: ignore[arg-type]  # one of the three
    return CaseRecord("c", status, f"why it is {status.value}", 0.0, baseline=mark)


class TestCaseOutcome:
    """Each case's label, severity and message."""

    @pytest.mark.parametrize(
        ("status", "expected"),
        [
            (PASSED, Outcome("passed", "passed", Severity.PASSED, "")),
            (FAILED, Outcome("failed", "failed", Severity.FAILED, "why it is failed")),
            (
                UNSUPPORTED,
                Outcome("unsupported", "unsupported", Severity.GAP, "why it is unsupported"),
            ),
            (
                UNAVAILABLE,
                Outcome("unavailable", "unavailable", Severity.ERROR, "why it is unavailable"),
            ),
        ],
    )
    def test_each_status(self, status: ck.CaseStatus, expected: Outcome) -> None:
        """Without options or a baseline, the label is the status and the message the reason."""
        assert case_outcome(record(status), Gate()) == expected

    def test_require_full_marks_a_declared_gap(self) -> None:
        """Under require_full an unsupported case fails, and its label says why."""
        outcome = case_outcome(record(UNSUPPORTED), Gate(require_full=True))
        assert outcome == Outcome(
            "require-full",
            "unsupported (--require-full)",
            Severity.FAILED,
            "why it is unsupported",
        )

    def test_reject_stale_marks_a_stale_declaration(self) -> None:
        """A declaration that passed when probed is a gap, or fails under reject_stale."""
        stale = record(UNSUPPORTED, stale=True)
        assert case_outcome(stale, Gate()).severity is Severity.GAP
        outcome = case_outcome(stale, Gate(reject_stale=True))
        assert (outcome.kind, outcome.label, outcome.severity) == (
            "reject-stale",
            "unsupported (--reject-stale)",
            Severity.FAILED,
        )

    def test_the_baseline_overrides_the_gate(self) -> None:
        """Known holds with the baseline's note; an unexpected pass and a stale mark fail."""
        known = case_outcome(marked(FAILED, "known"), Gate())
        assert known == Outcome(
            "baseline.known", "failed", Severity.KNOWN, "why it is failed", "known: #12"
        )
        listed = "the baseline lists it as failing (#12); remove the entry"
        assert case_outcome(marked(PASSED, "unexpected-pass"), Gate()) == Outcome(
            "baseline.unexpected-pass", "unexpected pass", Severity.FAILED, listed
        )
        assert case_outcome(marked(UNSUPPORTED, "stale"), Gate()) == Outcome(
            "baseline.stale",
            "unsupported (stale baseline entry)",
            Severity.FAILED,
            f"why it is unsupported; {listed}",
        )

    @given(
        st.sampled_from(ck.CaseStatus),
        st.booleans(),
        st.builds(Gate, st.booleans(), st.booleans(), st.booleans()),
        st.none() | st.sampled_from(MARKS),
    )
    def test_severity_is_the_verdict(
        self, status: ck.CaseStatus, stale: bool, gate: Gate, mark: Mark | None
    ) -> None:
        """
        A case's severity fails the gate exactly when the report's verdict on it
        does: the gate's, or the baseline's when it lists the case.
        """
        case = record(status, stale=stale)
        if mark is not None:
            case = replace(case, baseline=BaselineMark(mark, "#12"))
        offends = severity(case, gate) in (Severity.FAILED, Severity.ERROR)
        assert offends is case.offends(gate)
        assert offends is (gate.offends(case) if mark is None else mark != "known")
        assert case_outcome(case, gate).severity is severity(case, gate)


class TestEntryNotes:
    """The offences of a report that belong to no case."""

    def test_cleanup_errors_and_a_report_that_proves_nothing(self) -> None:
        """A cleanup error is an error; a complete report with no pass proves nothing."""
        gap = record(UNSUPPORTED)
        entry = Entry("f", "I", "m", None, ("c",), (gap,), (ErrorRecord("OSError", "x", ""),))
        assert entry_notes(entry, Gate()) == [
            Outcome("cleanup", "cleanup error", Severity.ERROR, "OSError: x"),
            Outcome(
                "gate",
                "no case passed",
                Severity.FAILED,
                "a report that proves nothing cannot hold",
            ),
        ]

    def test_a_part_or_a_known_failure_proves_something(self) -> None:
        """A shard cannot judge "no case passed"; a failure the baseline knows is not empty."""
        part = Entry("f", "I", "m", None, ("c", "d"), (record(UNSUPPORTED),))
        assert entry_notes(part, Gate()) == []
        known = Entry("f", "I", "m", None, ("c",), (marked(FAILED, "known"),))
        assert entry_notes(known, Gate()) == []

    @pytest.mark.parametrize(
        ("unexercised", "labels"),
        [
            (None, ["operations not recorded"]),
            ((), []),
            (("write", "delete"), ["operations no case exercised"]),
        ],
    )
    def test_require_exercised(
        self, unexercised: tuple[str, ...] | None, labels: list[str]
    ) -> None:
        """require_exercised rejects operations no case called, and a run that cannot tell."""
        entry = Entry("f", "I", "m", None, ("c",), (record(PASSED),), (), unexercised)
        assert entry_notes(entry, Gate()) == []
        notes = entry_notes(entry, Gate(require_exercised=True))
        assert [note.label for note in notes] == labels
        if unexercised:
            assert notes[0].message == "write, delete"


class TestEveryFormatSaysTheSame:
    """The formats style the outcome; its words come from one place."""

    def matrix(self) -> Matrix:
        results = (
            record(PASSED),
            CaseRecord("f", FAILED, "boom", 0.0),
            CaseRecord("u", UNSUPPORTED, "no clock", 0.0),
            CaseRecord("k", FAILED, "known boom", 0.0, baseline=BaselineMark("known", "#1")),
            CaseRecord("x", PASSED, None, 0.0, baseline=BaselineMark("unexpected-pass", "#2")),
        )
        entry = Entry("feat", "Impl", "m", None, tuple(r.case_id for r in results), results)
        stale = StaleEntry("Gone", "feat", "a", "old", "no implementation 'Gone' ran")
        return Matrix(RUN, (entry,), BaselineInfo("b.toml", (stale,)))

    def test_each_format_shows_each_label_and_message(self) -> None:
        """Text, Markdown, HTML and JUnit each carry every outcome's label and message."""
        matrix = self.matrix()
        gate = matrix.run.gate
        outcomes = [case_outcome(result, gate) for result in matrix.entries[0].results[1:]]
        outcomes.append(stale_entry_outcome(matrix.stale[0]))
        text, markdown = render_text(matrix), render_markdown(matrix)
        html = ET.fromstring(render_html(matrix).removeprefix("<!DOCTYPE html>"))
        html_text = "".join(html.itertext())
        junit = ET.fromstring(render_junit(matrix))
        junit_messages = " ".join(
            element.get("message", "") for element in junit.iter() if element.get("message")
        )
        for outcome in outcomes:
            words, bracket, qualifier = outcome.label.partition(" (")
            assert words.upper() + bracket + qualifier in text, outcome  # words in capitals
            assert one_line(outcome.message) in text, outcome
            assert f"**{markdown_text(outcome.label)}**" in markdown, outcome
            assert markdown_text(one_line(outcome.message)) in markdown, outcome
            assert outcome.label in html_text, outcome
            assert outcome.message in html_text, outcome
            assert outcome.message in junit_messages, outcome

    def test_the_verdict_counts_what_fails(self) -> None:
        """The verdict names the reports that fail and the stale baseline entries."""
        assert (
            verdict(self.matrix()) == "FAILED (1 of 1 report does not hold, 1 stale baseline entry)"
        )
        assert verdict(Matrix(RUN, ())) == "every contract holds"
