"""The text output, for a terminal or a log: a line per report, a line per case to mention."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .._util import one_line
from ._console import printable
from ._matrix import CaseRecord, Matrix
from ._outcome import (
    Outcome,
    Severity,
    case_outcome,
    cell,
    counts_text,
    entry_notes,
    grid,
    shown,
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
_CELL_STYLE: Final = {"holds": _GREEN, "gaps": _YELLOW, "fails": _RED}
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
    width: int | None = None,
) -> str:
    """
    One line per pair of implementation and feature with its counts, a line for each case that
    did not pass, a summary and the verdict.

    :param verbosity: below 0, only what fails the gate; above 0, passing cases too.
    :param colour: ANSI colours, for a terminal.
    :param matrix_view: start with the matrix of features and implementations: a
        grid, or, when the grid is wider than ``width``, each feature's cells below it.
    """
    paint = _painter(colour)
    gate = matrix.run.gate
    lines: list[str] = []
    if matrix_view and verbosity >= 0:
        lines += _text_matrix(matrix, paint, width)
    failing = {id(entry) for entry in matrix.failing()}
    for entry in shown(matrix.entries):
        fails = id(entry) in failing
        if verbosity < 0 and not fails:
            continue
        details = [
            line
            for result in entry.results
            if (line := _case_line(result, case_outcome(result, gate), paint, verbosity > 0))
            is not None
        ]
        details += [
            f"  {paint(_shout(note.label), _STYLE[note.severity])}: {_line(note.message)}"
            for note in entry_notes(entry, gate)
        ]
        if matrix_view and not details:
            continue  # the matrix has said it all
        header = f"{printable(entry.title)}: {counts_text(entry.counts())} in {entry.duration:.2f}s"
        if fails:
            header += " " + paint("(does not hold)", _RED)
        lines.append(header)
        lines += details
    for stale in matrix.stale:
        outcome = stale_entry_outcome(stale)
        lines.append(f"{paint(_shout(outcome.label), _RED)} {_line(outcome.message)}")
    if verbosity >= 0:
        lines.append(summary(matrix))
    said = verdict(matrix)
    lines.append("verdict: " + paint(said, _GREEN if said == "every contract holds" else _RED))
    return "\n".join(lines) + "\n"


def _case_line(result: CaseRecord, outcome: Outcome, paint: Paint, verbose: bool) -> str | None:
    label = paint(_shout(outcome.label), _STYLE[outcome.severity])
    case = printable(result.case_id)
    if outcome.severity is Severity.PASSED:
        return f"  {label} {case} in {result.duration:.3f}s" if verbose else None
    note = ""
    if outcome.note is not None:
        note = " " + paint(f"({_line(outcome.note, _NOTE_LIMIT)})", _YELLOW)
    return f"  {label} {case}{note}: {_line(outcome.message)}"


def _text_matrix(matrix: Matrix, paint: Paint, width: int | None) -> list[str]:
    features, implementations, cells = grid(matrix.entries)
    if not cells:
        return []
    gate = matrix.run.gate
    drawn: dict[tuple[str, str], tuple[str, str]] = {}
    for key, entry in cells.items():
        kind = cell(entry, gate)
        mark = "✗" if kind == "fails" else "✓"
        drawn[key] = (f"{mark} {counts_text(entry.counts())}", _CELL_STYLE[kind])
    rows: list[list[tuple[str, str]]] = [
        [("feature", _BOLD)] + [(printable(name), _BOLD) for name in implementations]
    ]
    for feature in features:
        row = [(printable(feature), "")]
        row += [drawn.get((feature, name), ("-", "")) for name in implementations]
        rows.append(row)
    widths = [max(len(row[column][0]) for row in rows) for column in range(len(rows[0]))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        return _stacked_matrix(features, implementations, drawn, paint)
    lines = []
    for row in rows:
        cells_text = [
            paint(text, style) + " " * (column_width - len(text))
            for (text, style), column_width in zip(row, widths, strict=True)
        ]
        lines.append("  ".join(cells_text).rstrip())
    return [*lines, ""]


def _stacked_matrix(
    features: list[str],
    implementations: list[str],
    drawn: dict[tuple[str, str], tuple[str, str]],
    paint: Paint,
) -> list[str]:
    """The matrix for a narrow terminal: each feature, then its implementations' cells."""
    lines = []
    for feature in features:
        lines.append(paint(printable(feature), _BOLD))
        names = [name for name in implementations if (feature, name) in drawn]
        name_width = max(len(printable(name)) for name in names)
        for name in names:
            text, style = drawn[feature, name]
            mark, _, counts = text.partition(" ")
            lines.append(f"  {paint(mark, style)} {printable(name).ljust(name_width)}  {counts}")
    return [*lines, ""]
