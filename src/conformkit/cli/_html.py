"""
The HTML output: the compatibility matrix as one self-contained page, no script
and no external asset: a grid per feature, whose cells open to their reasons.
"""

from __future__ import annotations

import html
import re
from typing import Final

from .._report import Gate
from ._characters import printable
from ._grid import NOT_RUN, SYMBOLS, FeatureGrid, feature_grids, legend
from ._matrix import CaseRecord, Matrix
from ._outcome import (
    Outcome,
    Severity,
    case_outcome,
    cell,
    counts_text,
    entry_notes,
    said,
    shown,
    slow_count,
    stale_entry_outcome,
    summary,
    verdict,
)

__all__ = ["render_html"]

# A list item's class, and a grid cell's, is its outcome's severity.
_STYLE: Final = """\
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f2328; line-height: 1.4; }
h1 { font-size: 1.4rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; }
h3 { font-size: 1rem; }
.verdict { font-weight: 600; }
.verdict.holds { color: #1a7f37; }
.verdict.fails { color: #cf222e; }
.legend { color: #59636e; }
.legend .mark { display: inline-block; min-width: 1.2em; text-align: center; font-weight: 700; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; position: sticky; top: 0; z-index: 1; max-width: 14rem;
  overflow-wrap: break-word; vertical-align: bottom; }
tbody th { font-weight: normal; }
tbody tr:nth-child(even) { background: #f6f8fa; }
tbody tr:hover { background: #eaeef2; }
tr.totals th, tr.totals td { font-weight: 600; border-bottom: 2px solid #8c959f; }
td.holds { background: #dafbe1; }
td.gaps { background: #fff8c5; }
td.fails { background: #ffebe9; }
td.mark { text-align: center; font-weight: 700; min-width: 2.2rem; }
td.mark.passed { color: #1a7f37; }
td.mark.slow summary { white-space: nowrap; }
td.mark.gap, td.mark.known { color: #9a6700; background: #fff8c5; }
td.mark.failed { color: #cf222e; background: #ffebe9; }
td.mark.error { color: #8250df; background: #fbefff; }
td.mark.none { color: #8c959f; }
td.mark details ul { text-align: left; font-weight: normal; color: #1f2328; min-width: 16rem;
  max-width: 32rem; }
summary { cursor: pointer; font-weight: 600; }
td.mark summary { list-style: none; }
td.mark summary::-webkit-details-marker { display: none; }
ul { margin: 0.4rem 0; padding-left: 1.2rem; }
li { margin: 0.2rem 0; white-space: pre-wrap; }
.status { font-weight: 600; }
.passed .status { color: #1a7f37; }
.failed .status, .error .status { color: #cf222e; }
.gap .status, .known .status { color: #9a6700; }
pre { background: #f6f8fa; padding: 0.5rem; overflow-x: auto; font-size: 0.85rem; }
"""


def _h(text: str) -> str:
    return html.escape(printable(text), quote=True)


def _item(outcome: Outcome, case: str | None = None, extra: str = "", trace: str = "") -> str:
    """A list item: the case (if any), the label, the baseline's note and the message."""
    code = "" if case is None else f"<code>{_h(case)}</code> "
    text = extra
    if outcome.note is not None:
        text += f" ({outcome.note})"
    if outcome.message:
        text += f": {outcome.message}"
    return (
        f'<li class="{outcome.severity.value}">{code}'
        f'<span class="status">{_h(outcome.label)}</span>{_h(text)}{trace}</li>'
    )


_WORD_START: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[._])")


def _breakable(name: str) -> str:
    """A name that may wrap where a word starts (``Sqlite|Mapping|Implementation``), not inside."""
    return "<wbr/>".join(_h(part) for part in _WORD_START.split(name))


def _traceback(record: CaseRecord) -> str:
    if record.error is None or not record.error.traceback:
        return ""
    return f"<details><summary>traceback</summary><pre>{_h(record.error.traceback)}</pre></details>"


def render_html(matrix: Matrix) -> str:
    """
    The compatibility matrix as one self-contained HTML page, no script and no
    external asset: for each feature, a table of its cases (rows) by its
    implementations (columns), whose cells open to their reasons; then each case
    that did not pass, and each that passed only with more time (slow).
    """
    grids = feature_grids(matrix.entries)
    verdict_text = verdict(matrix)
    verdict_class = "holds" if verdict_text == "every contract holds" else "fails"
    run = matrix.run
    info = (
        f"{summary(matrix)} · backend {run.backend} · {run.python} · {run.platform} · "
        f"conformkit {run.conformkit} · started {run.started} · finished {run.finished}"
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
        f"<title>conformkit: {_h(verdict_text)}</title>",
        f"<style>\n{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>conformkit compatibility matrix</h1>",
        f'<p class="verdict {verdict_class}">{_h(verdict_text)}</p>',
        f'<p class="run">{_h(info)}</p>',
    ]
    if grids:
        not_run = any(grid.not_run for grid in grids)
        marks = [
            f'<span class="mark">{_h(mark)}</span> {_h(meaning)}'
            for mark, _, meaning in (
                part.partition(" ")
                for part in legend(why="select it for the reason", not_run=not_run).split("  ")
            )
        ]
        out.append(f'<p class="legend">{" · ".join(marks)}</p>')
    for grid in grids:
        out += _grid(matrix, grid)
    out += _listed(matrix)
    if matrix.stale:
        out.append("<h2>Stale baseline entries</h2>")
        out.append("<ul>")
        out += [_item(stale_entry_outcome(stale)) for stale in matrix.stale]
        out.append("</ul>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _grid(matrix: Matrix, grid: FeatureGrid) -> list[str]:
    """One feature's table: a row of counts, then a row per case, a column per implementation."""
    gate = matrix.run.gate
    header = "".join(
        f'<th scope="col">{_breakable(entry.implementation)}</th>' for entry in grid.entries
    )
    out = [
        f"<h2>{_h(grid.feature_id)}</h2>",
        '<table class="grid">',
        f'<thead><tr><th scope="col">case</th>{header}</tr></thead>',
        "<tbody>",
    ]
    totals = ['<th scope="row">all cases</th>']
    for entry in grid.entries:
        notes = "".join(_item(note) for note in entry_notes(entry, gate))
        notes = f"<ul>{notes}</ul>" if notes else ""
        counts = counts_text(entry.counts(), slow_count((entry,)))
        totals.append(f'<td class="{cell(entry, gate)}">{_h(counts)}{notes}</td>')
    out.append(f'<tr class="totals">{"".join(totals)}</tr>')
    for case in grid.cases:
        row = [f'<th scope="row"><code>{_h(case)}</code></th>']
        for index in range(len(grid.entries)):
            record = grid.record(index, case)
            row.append(_mark(record, gate))
        out.append(f"<tr>{''.join(row)}</tr>")
    out += ["</tbody>", "</table>"]
    return out


_NOT_RUN_TITLE: Final = "not run: not selected, or not a case this implementation claims"


def _mark(record: CaseRecord | None, gate: Gate) -> str:
    """
    A case's cell: its mark; a case that did not pass, or passed only with more
    time (slow), opens to its outcome.
    """
    if record is None:
        return f'<td class="mark none" title="{_NOT_RUN_TITLE}">{_h(NOT_RUN)}</td>'
    outcome = case_outcome(record, gate)
    mark = _h(SYMBOLS[record.status])
    kind = outcome.severity.value
    if record.slow:
        kind, mark = f"{kind} slow", f"{mark} (slow)"
    elif outcome.severity is Severity.PASSED:
        return f'<td class="mark {kind}" title="passed in {record.duration:.3f}s">{mark}</td>'
    item = _item(outcome, record.case_id, trace=_traceback(record))
    return (
        f'<td class="mark {kind}"><details><summary title="{_h(said(outcome))}">{mark}'
        f"</summary><ul>{item}</ul></details></td>"
    )


def _listed(matrix: Matrix) -> list[str]:
    """
    Each case that did not pass, then each that passed only with more time, under
    its report's title, as the Markdown lists them.
    """
    gate = matrix.run.gate
    failed: list[str] = []
    slow: list[str] = []
    for entry in shown(matrix.entries):
        items, slow_items = [], []
        for result in entry.results:
            outcome = case_outcome(result, gate)
            if outcome.severity is not Severity.PASSED:
                items.append(_item(outcome, result.case_id, trace=_traceback(result)))
            elif result.slow:
                slow_items.append(_item(outcome, result.case_id))
        items += [_item(note) for note in entry_notes(entry, gate)]
        title = f"<h3>{_h(entry.title)}</h3>"
        if items:
            failed += [title, "<ul>", *items, "</ul>"]
        if slow_items:
            slow += [title, "<ul>", *slow_items, "</ul>"]
    if failed:
        failed.insert(0, "<h2>Cases that did not pass</h2>")
    if slow:
        slow.insert(0, "<h2>Cases that passed only with more time</h2>")
    return failed + slow
