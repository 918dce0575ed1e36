"""
The HTML output: the compatibility matrix as one self-contained page, no script
and no external asset, in which each cell expands to its cases.
"""

from __future__ import annotations

import html
from typing import Final

from ._console import printable
from ._matrix import Entry, Matrix
from ._outcome import (
    Outcome,
    Severity,
    case_outcome,
    cell,
    counts_text,
    entry_notes,
    grid,
    stale_entry_outcome,
    summary,
    verdict,
)

__all__ = ["render_html"]

# A list item's class is its outcome's severity.
_STYLE: Final = """\
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f2328; }
h1 { font-size: 1.4rem; }
.verdict { font-weight: 600; }
.verdict.holds { color: #1a7f37; }
.verdict.fails { color: #cf222e; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #d0d7de; padding: 0.4rem 0.6rem; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
td.holds { background: #dafbe1; }
td.gaps { background: #fff8c5; }
td.fails { background: #ffebe9; }
td.none { color: #8c959f; }
summary { cursor: pointer; font-weight: 600; }
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


def render_html(matrix: Matrix) -> str:
    """
    The compatibility matrix as one self-contained HTML page: no script, no external
    asset; each cell expands to its cases and their reasons.
    """
    features, implementations, cells = grid(matrix.entries)
    said = verdict(matrix)
    verdict_class = "holds" if said == "every contract holds" else "fails"
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
        f"<title>conformkit: {_h(said)}</title>",
        f"<style>\n{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>conformkit compatibility matrix</h1>",
        f'<p class="verdict {verdict_class}">{_h(said)}</p>',
        f'<p class="run">{_h(info)}</p>',
    ]
    if cells:
        out.append("<table>")
        header = "".join(f'<th scope="col">{_h(name)}</th>' for name in implementations)
        out.append(f'<thead><tr><th scope="col">feature</th>{header}</tr></thead>')
        out.append("<tbody>")
        for feature in features:
            row = [f'<th scope="row">{_h(feature)}</th>']
            for name in implementations:
                entry = cells.get((feature, name))
                row.append(
                    '<td class="none">—</td>' if entry is None else _html_cell(matrix, entry)
                )
            out.append(f"<tr>{''.join(row)}</tr>")
        out.append("</tbody>")
        out.append("</table>")
    if matrix.stale:
        out.append("<h2>Stale baseline entries</h2>")
        out.append("<ul>")
        out += [_item(stale_entry_outcome(stale)) for stale in matrix.stale]
        out.append("</ul>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _html_cell(matrix: Matrix, entry: Entry) -> str:
    gate = matrix.run.gate
    kind = cell(entry, gate)
    items = []
    for result in entry.results:
        outcome = case_outcome(result, gate)
        duration = f" {result.duration:.3f}s" if outcome.severity is Severity.PASSED else ""
        trace = ""
        if result.error is not None and result.error.traceback:
            trace = (
                "<details><summary>traceback</summary>"
                f"<pre>{_h(result.error.traceback)}</pre></details>"
            )
        items.append(_item(outcome, result.case_id, duration, trace))
    items += [_item(note) for note in entry_notes(entry, gate)]
    opened = ' open="open"' if kind == "fails" else ""
    return (
        f'<td class="{kind}"><details{opened}><summary>{_h(counts_text(entry.counts()))}'
        f"</summary><ul>{''.join(items)}</ul></details></td>"
    )
