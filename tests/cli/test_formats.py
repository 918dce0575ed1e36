"""The renderers: text, JUnit XML, Markdown and HTML, whatever the strings they are given."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import xmlschema
from hypothesis import given, settings
from hypothesis import strategies as st

import conformkit as ck
from conformkit.cli._characters import printable
from conformkit.cli._grid import NOT_RUN, SYMBOLS, feature_grids, legend
from conformkit.cli._html import render_html
from conformkit.cli._junit import render_junit, xml_attribute, xml_text
from conformkit.cli._markdown import markdown_text, render_markdown
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
from conformkit.cli._text import render_text

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).with_name("junit.xsd")))
RUN = RunInfo(
    "1.0", "CPython 3.11.0", "Linux", "asyncio", "2025-01-01T00:00:00.000+00:00",
    "2025-01-01T00:00:01.500+00:00",
)  # fmt: skip

# Anything at all, lone surrogates and controls included.
anything = st.text(st.characters(exclude_categories=()), max_size=40)
# What a case ID may hold: no whitespace, no brackets (those mark family members).
case_ids = st.text(
    st.characters(
        exclude_categories=("Zs", "Zl", "Zp"),
        exclude_characters="[] \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85",
    ),
    min_size=1,
    max_size=10,
)
XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def slowed(*fields: Any, slow: bool) -> CaseRecord:
    """A case record, slow when asked and it passed: only a pass can be slow."""
    record = CaseRecord(*fields)
    return replace(record, slow=slow and record.status is ck.CaseStatus.PASSED)


@st.composite
def matrices(draw: st.DrawFn) -> Matrix:
    entries = []
    for index in range(draw(st.integers(min_value=0, max_value=3))):
        planned = tuple(draw(st.lists(case_ids, min_size=1, max_size=4, unique=True)))
        results = tuple(
            slowed(
                case,
                draw(st.sampled_from(ck.CaseStatus)),
                draw(st.none() | anything),
                draw(st.floats(min_value=0, max_value=1e4)),
                draw(st.none() | st.builds(ErrorRecord, anything, anything, anything)),
                tuple(
                    draw(st.lists(st.builds(ErrorRecord, anything, anything, anything), max_size=1))
                ),
                draw(
                    st.none()
                    | st.builds(
                        BaselineMark,
                        st.sampled_from(("known", "unexpected-pass", "stale")),
                        anything,
                    )
                ),
                slow=draw(st.booleans()),
            )
            for case in planned
            if draw(st.booleans())
        )
        entries.append(
            Entry(draw(case_ids), f"Impl{index}", draw(anything), None, planned, results)
        )
    stale = tuple(
        draw(
            st.lists(
                st.builds(StaleEntry, anything, anything, anything, anything, anything), max_size=2
            )
        )
    )
    run = replace(RUN, require_full=draw(st.booleans()))
    return Matrix(run, tuple(entries), BaselineInfo("b.toml", stale))


class TestEscaping:
    """What reaches a document or a terminal is always valid there."""

    @given(anything)
    def test_xml_text_and_attributes_parse(self, text: str) -> None:
        """Any string becomes well-formed XML; what XML can hold comes back unchanged."""
        document = f'<a b="{xml_attribute(text, 10**6)}">{xml_text(text, 10**6)}</a>'
        element = ET.fromstring(document.encode("utf-8"))
        expected = XML_INVALID.sub(
            lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 256 else f"\\u{ord(m[0]):04x}", text
        )
        assert element.get("b") == expected
        assert (element.text or "") == expected

    def test_long_text_is_cut_with_a_note(self) -> None:
        """A huge message is cut, saying how much was cut; an attribute is cut shorter."""
        body = xml_text("x" * 200_000)
        assert body.endswith("… (100000 more characters cut)")
        assert len(xml_attribute("y" * 5000)) == 1000

    @given(anything)
    def test_printable_has_no_controls(self, text: str) -> None:
        """A terminal never receives a control character but tab and newline."""
        shown = printable(text)
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]", shown)
        shown.encode("utf-8")

    @given(anything)
    def test_markdown_text_stays_in_its_cell(self, text: str) -> None:
        """Inline Markdown holds no line break and no unescaped markup or pipe."""
        shown = markdown_text(text)
        assert "\n" not in shown
        assert not re.search(r"(?<!\\)[|<>`*_\[\]]", shown.replace("\\\\", ""))


class TestRenderers:
    """Every format renders any run: valid, and saying what the gate says."""

    @settings(max_examples=40, deadline=None)
    @given(matrices())
    def test_junit_is_valid_against_the_schema(self, matrix: Matrix) -> None:
        """The JUnit XML validates whatever the strings, and counts what it holds."""
        text = render_junit(matrix)
        SCHEMA.validate(text)
        root = ET.fromstring(text.encode("utf-8"))
        for suite in root:
            cases = suite.findall("testcase")
            assert suite.get("tests") == str(len(cases))
            assert suite.get("failures") == str(len(suite.findall("testcase/failure")))
            assert suite.get("errors") == str(len(suite.findall("testcase/error")))
            assert suite.get("skipped") == str(len(suite.findall("testcase/skipped")))
        failing = len(root.findall("testsuite/testcase/failure")) + len(
            root.findall("testsuite/testcase/error")
        )
        assert (failing == 0) == matrix.holds

    @settings(max_examples=40, deadline=None)
    @given(matrices())
    def test_html_is_well_formed_and_markdown_rows_have_every_cell(self, matrix: Matrix) -> None:
        """
        The HTML parses as XML; each format has a table per feature, whose every row has
        a cell per implementation of that feature, and no other.
        """
        grids = feature_grids(matrix.entries)
        root = ET.fromstring(render_html(matrix).removeprefix("<!DOCTYPE html>").encode("utf-8"))
        tables = root.findall(".//table")
        assert len(tables) == len(grids)
        for table, grid in zip(tables, grids, strict=True):
            assert len(table.findall("thead/tr/th")) == 1 + len(grid.entries)
            rows = table.findall("tbody/tr")
            assert len(rows) == 1 + len(grid.cases)  # the counts, then a row per case
            assert {len(row) for row in rows} == {1 + len(grid.entries)}
        tables_md = [
            [line for line in block.splitlines() if line.startswith("|")]
            for block in render_markdown(matrix).split("\n\n")
        ]
        tables_md = [table for table in tables_md if table]
        assert len(tables_md) == len(grids)
        for table_md, grid in zip(tables_md, grids, strict=True):
            widths = {len(re.findall(r"(?<!\\)\|", row)) for row in table_md}
            assert widths == {2 + len(grid.entries)}
            assert len(table_md) == 3 + len(grid.cases)  # header, rule, counts, cases

    @settings(max_examples=40, deadline=None)
    @given(matrices())
    def test_the_text_grids_have_a_mark_per_case_and_implementation(self, matrix: Matrix) -> None:
        """matrix_view: whatever the run, each grid row has a mark per column, then the legend."""
        lines = render_text(matrix, matrix_view=True).splitlines()
        grids = feature_grids(matrix.entries)
        marks = {*SYMBOLS.values(), NOT_RUN}
        rows = [line.split() for line in lines if line.startswith("  ") and line.split()]
        widths = {len(grid.entries) for grid in grids}
        marked = [row for row in rows if len(row) > 1 and set(row[1:]) <= marks]
        assert len(marked) == sum(len(grid.cases) for grid in grids)
        assert {len(row) - 1 for row in marked} <= widths
        assert any(line.startswith("legend: ") for line in lines) == bool(grids)
        assert lines[-2].startswith("verdict: ")
        assert lines[-1].startswith("next steps: ")

    @given(matrices())
    def test_text_ends_with_the_verdict(self, matrix: Matrix) -> None:
        """The last line of the text is the verdict, and it says what the gate says."""
        last = render_text(matrix).splitlines()[-1]
        assert (last == "verdict: every contract holds") == matrix.holds
        assert last.startswith("verdict: FAILED (") != matrix.holds

    def test_colour_only_when_asked(self) -> None:
        """ANSI colours appear with colour=True, and never otherwise."""
        failed = CaseRecord("a", ck.CaseStatus.FAILED, "boom", 0.0)
        matrix = Matrix(RUN, (Entry("f", "I", "m", None, ("a",), (failed,)),))
        assert "\x1b[31;1mFAILED\x1b[0m a: boom" in render_text(matrix, colour=True)
        assert "\x1b" not in render_text(matrix)

    def test_quiet_shows_only_what_fails(self) -> None:
        """Below verbosity 0: the entries that fail and the verdict, nothing else."""
        good = Entry(
            "f", "Good", "m", None, ("a",), (CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0),)
        )
        bad = replace(
            good,
            implementation="Bad",
            results=(CaseRecord("a", ck.CaseStatus.FAILED, "boom", 0.0),),
        )
        lines = render_text(Matrix(RUN, (good, bad)), verbosity=-1).splitlines()
        assert lines == [
            "f × Bad: 1 failed in 0.00s (does not hold)",
            "  FAILED a: boom",
            "  NO CASE PASSED: a report that proves nothing cannot hold",
            "verdict: FAILED (1 of 2 reports does not hold)",
        ]

    def test_the_text_matrix(self) -> None:
        """matrix_view: a grid per feature: its implementations numbered, its cases down."""
        passed = CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0)
        entries = (
            Entry("f", "Good", "m", None, ("a", "b"), (passed, replace(passed, case_id="b"))),
            Entry(
                "f",
                "Partial",
                "m",
                None,
                ("a", "b"),
                (replace(passed, status=ck.CaseStatus.UNAVAILABLE, reason="no server"),),
            ),
            Entry(
                "g",
                "Other",
                "m",
                None,
                ("a",),
                (replace(passed, status=ck.CaseStatus.FAILED, reason="x"),),
            ),
        )
        lines = render_text(Matrix(RUN, entries), matrix_view=True).splitlines()
        assert lines[:16] == [
            "f",
            "  1  Good     2 passed",
            "  2  Partial  1 unavailable (does not hold)",
            "",
            "  case  1  2",
            "  a     ✓  !",
            "  b     ✓  ·",
            "",
            "g",
            "  1  Other  1 failed (does not hold)",
            "",
            "  case  1",
            "  a     ✗",
            "",
            "legend: ✓ passed  ✗ failed  – unsupported (-v says why)  ! unavailable  · not run",
            "",
        ]
        assert lines[16] == "cases that did not pass:"
        assert lines[-2] == "verdict: FAILED (2 of 3 reports do not hold)"

    def test_grids_keep_each_feature_to_its_own_implementations(self) -> None:
        """A grid per feature, in the order met: its own columns, the cases some column ran."""
        passed = CaseRecord("a", ck.CaseStatus.PASSED, None, 0.0)
        entries = (
            Entry("f", "One", "m", None, ("a", "b", "c"), (replace(passed, case_id="c"),)),
            Entry("g", "Two", "m", None, ("x",), (replace(passed, case_id="x"),)),
            Entry("f", "Three", "m", None, ("b", "a"), (passed, replace(passed, case_id="b"))),
            Entry("h", "Idle", "m", None, ("z",), ()),  # a shard that ran none of its cases
        )
        f, g = feature_grids(entries)
        assert (f.feature_id, [entry.implementation for entry in f.entries]) == (
            "f",
            ["One", "Three"],
        )
        assert f.cases == ("a", "b", "c")  # the feature's order; "b" and "a" ran, by Three
        assert f.record(0, "a") is None
        assert f.record(1, "a") == passed
        assert f.not_run
        assert (g.cases, g.not_run) == (("x",), False)
        assert legend() == "✓ passed  ✗ failed  – unsupported  ! unavailable"
        assert legend(why="w", not_run=True, separator=", ") == (
            "✓ passed, ✗ failed, – unsupported (w), ! unavailable, · not run"
        )

    def test_a_shard_without_cases(self) -> None:
        """A shard that got no case of a pair shows nothing of it, and holds."""
        empty = Entry("f", "Good", "m", None, ("a",), ())
        text = render_text(Matrix(replace(RUN, shard=None), (empty,)))
        assert text.splitlines() == [
            "0 reports, 0 cases: no case in 1.50s",
            "verdict: every contract holds",
        ]


SLOW_REASON = (
    "slow: passed only when run again under a 30s deadline; the first run: feature 'f', "
    "case 'a': stage 'case' exceeded the 5s deadline"
)


class TestSlowPasses:
    """A case that passed only with more time is counted and shown, with its reason, in each."""

    def matrix(self) -> Matrix:
        slow = CaseRecord("a", ck.CaseStatus.PASSED, SLOW_REASON, 5.5, slow=True)
        plain = CaseRecord("b", ck.CaseStatus.PASSED, None, 0.25)
        return Matrix(RUN, (Entry("f", "I", "m", None, ("a", "b"), (slow, plain)),))

    def test_junit_says_it_in_the_case_output(self) -> None:
        """JUnit: the slow case's reason as its <system-out>; a plain pass has none."""
        text = render_junit(self.matrix())
        SCHEMA.validate(text)
        assert (
            '<testcase name="a" classname="f.I" time="5.500000"><system-out>slow: passed only '
            "when run again under a 30s deadline; the first run: feature 'f', case 'a': stage "
            "'case' exceeded the 5s deadline</system-out></testcase>"
        ) in text
        assert '<testcase name="b" classname="f.I" time="0.250000"/>' in text

    def test_text_grids_head_it_as_a_pass_with_more_time(self) -> None:
        """Text with grids: listed under a heading that says it passed, only with more time."""
        lines = render_text(self.matrix(), matrix_view=True).splitlines()
        assert "cases that did not pass, or passed only with more time:" in lines
        assert "cases that did not pass:" not in lines

    def test_markdown_counts_marks_and_lists_it(self) -> None:
        """Markdown: counted in the summary and its report's cell, marked, listed with why."""
        assert render_markdown(self.matrix()).splitlines() == [
            "## ✅ conformkit: every contract holds",
            "",
            "1 report, 2 cases: 2 passed (1 slow) in 1.50s · asyncio · CPython 3.11.0",
            "",
            "### f",
            "",
            "| case | I |",
            "|---|:-:|",
            "| **all cases** | 🟢 2 passed (1 slow) |",
            "| a | ✓ (slow) |",
            "| b | ✓ |",
            "",
            "✓ passed · ✗ failed · – unsupported (reasons below) · \\! unavailable",
            "",
            "🟢 every case passed · 🟡 holds, with declared or known gaps · 🔴 fails the gate",
            "",
            "## Cases that passed only with more time",
            "",
            "### f × I",
            "",
            "- a: **passed (slow)**: slow: passed only when run again under a 30s deadline; the "
            "first run: feature 'f', case 'a': stage 'case' exceeded the 5s deadline",
        ]

    def test_html_counts_marks_and_opens_to_it(self) -> None:
        """HTML: counted, a mark that opens to its reason, and listed below the grid."""
        text = render_html(self.matrix())
        root = ET.fromstring(text.removeprefix("<!DOCTYPE html>"))
        assert "2 cases: 2 passed (1 slow) in 1.50s" in (root.findtext(".//p[@class='run']") or "")
        [table] = root.findall(".//table")
        totals, slow, plain = table.findall("tbody/tr")
        assert [td.text for td in totals.findall("td")] == ["2 passed (1 slow)"]
        [cell] = slow.findall("td")
        assert cell.get("class") == "mark passed slow"
        assert cell.findtext("details/summary") == "✓ (slow)"
        [item] = cell.findall("details/ul/li")
        assert item.get("class") == "passed"
        assert "".join(item.itertext()) == f"a passed (slow): {SLOW_REASON}"
        assert [(td.get("class"), td.text) for td in plain.findall("td")] == [("mark passed", "✓")]
        headings = ["".join(h.itertext()) for h in root.iter() if h.tag in ("h2", "h3")]
        assert headings[-2:] == ["Cases that passed only with more time", "f × I"]
        [listed] = root.findall("./body/ul/li")
        assert "".join(listed.itertext()) == f"a passed (slow): {SLOW_REASON}"
