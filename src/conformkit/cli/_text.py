"""The text output, for a terminal or a log: a line per report, a line per case to mention."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .._report import CaseStatus
from .._util import one_line
from ._characters import printable
from ._grid import NOT_RUN, SYMBOLS, feature_grids, legend
from ._matrix import CaseRecord, Matrix
from ._outcome import (
    Outcome,
    Severity,
    case_outcome,
    cell,
    counts_text,
    entry_notes,
    shown,
    slow_count,
    stale_entry_outcome,
    summary,
    verdict,
)

__all__ = ["render_text"]

_GREEN, _RED, _YELLOW, _MAGENTA, _BOLD = "32", "31;1", "33", "35;1", "1"
_STYLE: Final = {
    Severity.PASSED: _GREEN,
    Severity.GAP: _YELLOW,
    Severity.KNOWN: _YELLOW,
    Severity.FAILED: _RED,
    Severity.ERROR: _MAGENTA,
}
_NOTE_LIMIT: Final = 87
"""A known failure's note: ``known:`` and 80 characters of the baseline's reason."""

Paint = Callable[[str, str], str]


def _painter(colour: bool) -> Paint:
    def paint(text: str, style: str) -> str:
        return f"\x1b[{style}m{text}\x1b[0m" if colour and text else text

    return paint


def _line(text: str | None, limit: int = 240) -> str:
    return printable(one_line(text, limit))


def _shout(label: str) -> str:
    """A label as the text shows it: the words in capitals, a qualifier as written."""
    words, bracket, qualifier = label.partition(" (")
    return words.upper() + bracket + qualifier


def render_text(
    matrix: Matrix,
    *,
    verbosity: int = 0,
    colour: bool = False,
    matrix_view: bool = False,
) -> str:
    """
    One line per pair of implementation and feature with its counts, a line for each case that
    did not pass, a summary and the verdict.

    :param verbosity: below 0, only what fails the gate; above 0, passing cases too.
    :param colour: ANSI colours, for a terminal.
    :param matrix_view: start with a grid per feature, its cases down and its
        implementations across, and a legend; then only the cases that need words
        (with ``verbosity`` 1, the reasons of unsupported cases too; with 2, every
        case); and end with the next steps.
    """
    paint = _painter(colour)
    gate = matrix.run.gate
    lines: list[str] = []
    grids = matrix_view and verbosity >= 0
    if grids:
        lines += _text_grids(matrix, paint)
    failing = {id(entry) for entry in matrix.failing()}
    details_start = len(lines)
    for entry in shown(matrix.entries):
        fails = id(entry) in failing
        if verbosity < 0 and not fails:
            continue
        details = [
            line
            for result in entry.results
            if (line := _case_line(result, case_outcome(result, gate), paint, verbosity, grids))
            is not None
        ]
        details += [
            f"  {paint(_shout(note.label), _STYLE[note.severity])}: {_line(note.message)}"
            for note in entry_notes(entry, gate)
        ]
        if grids and not details:
            continue  # the grid has said it all
        counts = counts_text(entry.counts(), slow_count((entry,)))
        header = f"{printable(entry.title)}: {counts} in {entry.duration:.2f}s"
        if fails:
            header += " " + paint("(does not hold)", _RED)
        lines.append(header)
        lines += details
    if grids and len(lines) > details_start:
        heading = "cases that did not pass"
        if slow_count(matrix.entries):
            heading += ", or passed only with more time"
        lines.insert(details_start, paint(heading + ":", _BOLD))
    for stale in matrix.stale:
        outcome = stale_entry_outcome(stale)
        lines.append(f"{paint(_shout(outcome.label), _RED)} {_line(outcome.message)}")
    if verbosity >= 0:
        lines.append(summary(matrix))
    said = verdict(matrix)
    lines.append("verdict: " + paint(said, _GREEN if said == "every contract holds" else _RED))
    if grids:
        lines.append(_next_steps(matrix))
    return "\n".join(lines) + "\n"


def _next_steps(matrix: Matrix) -> str:
    """Where to go from the grids: the cases and gaps of one target, and the docs."""
    target = matrix.run.targets[0] if matrix.run.targets else "TARGET"
    return (
        f"next steps: 'conformkit list {printable(target)} -v' shows a contract's cases and "
        f"gaps; read docs/index.md (the terms: docs/glossary.md)"
    )


def _case_line(
    result: CaseRecord, outcome: Outcome, paint: Paint, verbosity: int, grids: bool
) -> str | None:
    """
    A case's line, when it has one: after a grid, which shows every case's mark,
    a gap needs ``verbosity`` 1 and a pass 2; without a grid, a pass needs 1.
    """
    label = paint(_shout(outcome.label), _STYLE[outcome.severity])
    case = printable(result.case_id)
    if outcome.severity is Severity.PASSED:
        if result.slow:  # passed only with more time: worth a line, with its reason
            return f"  {label} {case} in {result.duration:.3f}s: {_line(outcome.message)}"
        shown = verbosity > (1 if grids else 0)
        return f"  {label} {case} in {result.duration:.3f}s" if shown else None
    if grids and outcome.severity is Severity.GAP and verbosity < 1:
        return None
    note = ""
    if outcome.note is not None:
        note = " " + paint(f"({_line(outcome.note, _NOTE_LIMIT)})", _YELLOW)
    return f"  {label} {case}{note}: {_line(outcome.message)}"


_MARK_STYLE: Final = {
    CaseStatus.PASSED: _GREEN,
    CaseStatus.FAILED: _RED,
    CaseStatus.UNSUPPORTED: _YELLOW,
    CaseStatus.UNAVAILABLE: _MAGENTA,
}


def _text_grids(matrix: Matrix, paint: Paint) -> list[str]:
    """
    A grid per feature: a key that numbers its implementations, with each one's
    counts, then its cases down and the numbered implementations across; then
    the legend. Numbers, not names, head the columns, so a grid is as narrow as
    its case IDs, however long the implementations' names.
    """
    gate = matrix.run.gate
    lines: list[str] = []
    not_run = False
    for grid in feature_grids(matrix.entries):
        not_run = not_run or grid.not_run
        lines.append(paint(printable(grid.feature_id), _BOLD))
        numbers = [str(number) for number in range(1, len(grid.entries) + 1)]
        names = [printable(entry.implementation) for entry in grid.entries]
        number_width = max(map(len, numbers))
        name_width = max(map(len, names))
        for number, name, entry in zip(numbers, names, grid.entries, strict=True):
            counts = counts_text(entry.counts())
            if cell(entry, gate) == "fails":
                counts += " " + paint("(does not hold)", _RED)
            lines.append(f"  {number.rjust(number_width)}  {name.ljust(name_width)}  {counts}")
        lines.append("")
        cases = [printable(case) for case in grid.cases]
        case_width = max(len("case"), *map(len, cases))
        column = number_width + 2
        lines.append(
            "  "
            + paint("case".ljust(case_width), _BOLD)
            + "".join(paint(number.rjust(column), _BOLD) for number in numbers)
        )
        for case_id, case in zip(grid.cases, cases, strict=True):
            marks = []
            for index in range(len(grid.entries)):
                record = grid.record(index, case_id)
                if record is None:
                    marks.append(" " * (column - 1) + NOT_RUN)
                else:
                    mark = SYMBOLS[record.status]
                    marks.append(" " * (column - 1) + paint(mark, _MARK_STYLE[record.status]))
            lines.append(f"  {case.ljust(case_width)}{''.join(marks)}")
        lines.append("")
    if lines:
        lines += [f"legend: {legend(why='-v says why', not_run=not_run)}", ""]
    return lines
