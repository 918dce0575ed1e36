"""
The Markdown output: the compatibility matrix, for a pull-request comment or a
job summary, then each case that did not pass.
"""

from __future__ import annotations

import re
from typing import Final

from .._util import one_line
from ._characters import printable
from ._grid import NOT_RUN, SYMBOLS, feature_grids, legend
from ._matrix import Matrix
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

__all__ = ["markdown_text", "render_markdown"]

_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_{}\[\]<>|~#!])")
_EMOJI: Final = {"holds": "🟢", "gaps": "🟡", "fails": "🔴"}
_SLOW: Final = " (slow)"
"""After the mark of a case that passed only with more time."""


def markdown_text(text: str) -> str:
    """Inline Markdown for ``text``: one line, its markup characters escaped."""
    text = printable(" ".join(text.splitlines())).replace("&", "&amp;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _item(name: str | None, outcome: Outcome) -> str:
    """A list item: the case (if any), the label in bold, the baseline's note, the message."""
    case = "" if name is None else f"{markdown_text(name)}: "
    note = "" if outcome.note is None else f" ({markdown_text(outcome.note)})"
    message = f": {markdown_text(one_line(outcome.message))}" if outcome.message else ""
    return f"- {case}**{markdown_text(outcome.label)}**{note}{message}"


def render_markdown(matrix: Matrix) -> str:
    """
    The compatibility matrix: for each feature, a table of its cases (rows) by its
    implementations (columns), a mark per cell and each implementation's counts
    with a colour; a legend; then each case that did not pass, with its reason, and
    each that passed only with more time (slow), with its reason.
    """
    gate = matrix.run.gate
    said = verdict(matrix)
    icon = "✅" if said == "every contract holds" else "❌"
    lines = [
        f"## {icon} conformkit: {markdown_text(said)}",
        "",
        markdown_text(summary(matrix))
        + f" · {markdown_text(matrix.run.backend)} · {markdown_text(matrix.run.python)}",
        "",
    ]
    grids = feature_grids(matrix.entries)
    for grid in grids:
        lines += [f"### {markdown_text(grid.feature_id)}", ""]
        names = [markdown_text(entry.implementation) for entry in grid.entries]
        lines.append("| case | " + " | ".join(names) + " |")
        lines.append("|---" + "|:-:" * len(names) + "|")
        totals = [
            f"{_EMOJI[cell(entry, gate)]} {counts_text(entry.counts(), slow_count((entry,)))}"
            for entry in grid.entries
        ]
        lines.append("| **all cases** | " + " | ".join(totals) + " |")
        for case in grid.cases:
            marks = []
            for index in range(len(grid.entries)):
                record = grid.record(index, case)
                if record is None:
                    marks.append(NOT_RUN)
                else:
                    marks.append(SYMBOLS[record.status] + (_SLOW if record.slow else ""))
            lines.append(f"| {markdown_text(case)} | " + " | ".join(marks) + " |")
        lines.append("")
    if grids:
        not_run = any(grid.not_run for grid in grids)
        lines.append(markdown_text(legend(why="reasons below", not_run=not_run, separator=" · ")))
        lines.append("")
        lines.append(
            "🟢 every case passed · 🟡 holds, with declared or known gaps · 🔴 fails the gate"
        )
    details: list[str] = []
    slow: list[str] = []
    for entry in shown(matrix.entries):
        items, slow_items = [], []
        for result in entry.results:
            outcome = case_outcome(result, gate)
            if outcome.severity is not Severity.PASSED:
                items.append(_item(result.case_id, outcome))
            elif result.slow:
                slow_items.append(_item(result.case_id, outcome))
        items += [_item(None, note) for note in entry_notes(entry, gate)]
        title = f"### {markdown_text(entry.title)}"
        if items:
            details += ["", title, "", *items]
        if slow_items:
            slow += ["", title, "", *slow_items]
    if matrix.stale:
        details += ["", "### Stale baseline entries", ""]
        details += [_item(None, stale_entry_outcome(stale)) for stale in matrix.stale]
    if details:
        lines += ["", "## Cases that did not pass", *details]
    if slow:
        lines += ["", "## Cases that passed only with more time", *slow]
    return "\n".join(lines) + "\n"
