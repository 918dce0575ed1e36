"""
The Markdown output: the compatibility matrix, for a pull-request comment or a
job summary, then each case that did not pass.
"""

from __future__ import annotations

import re
from typing import Final

from .._util import one_line
from ._console import printable
from ._matrix import Matrix
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

__all__ = ["markdown_text", "render_markdown"]

_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_{}\[\]<>|~#!])")
_EMOJI: Final = {"holds": "🟢", "gaps": "🟡", "fails": "🔴"}


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
    The compatibility matrix: a row per feature, a column per implementation, a cell
    per pair with its counts and a colour; then each case that did not pass.
    """
    features, implementations, cells = grid(matrix.entries)
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
    if cells:
        lines.append("| feature | " + " | ".join(map(markdown_text, implementations)) + " |")
        lines.append("|---" * (len(implementations) + 1) + "|")
        for feature in features:
            row = [markdown_text(feature)]
            for name in implementations:
                entry = cells.get((feature, name))
                if entry is None:
                    row.append("—")
                else:
                    row.append(f"{_EMOJI[cell(entry, gate)]} {counts_text(entry.counts())}")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        lines.append(
            "🟢 every case passed · 🟡 holds, with declared or known gaps · 🔴 fails the gate"
        )
    details: list[str] = []
    for entry in shown(matrix.entries):
        items = []
        for result in entry.results:
            outcome = case_outcome(result, gate)
            if outcome.severity is not Severity.PASSED:
                items.append(_item(result.case_id, outcome))
        items += [_item(None, note) for note in entry_notes(entry, gate)]
        if items:
            details += ["", f"### {markdown_text(entry.title)}", "", *items]
    if matrix.stale:
        details += ["", "### Stale baseline entries", ""]
        details += [_item(None, stale_entry_outcome(stale)) for stale in matrix.stale]
    if details:
        lines += ["", "## Cases that did not pass", *details]
    return "\n".join(lines) + "\n"
