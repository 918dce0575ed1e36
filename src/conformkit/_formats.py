"""
The outputs of a run: text for a terminal or a log, the JSON report, JUnit XML,
and the compatibility matrix in Markdown and in HTML.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final, final

from ._matrix import CaseRecord, Entry, Matrix
from ._report import CaseStatus
from ._util import one_line

FORMATS: Final = ("text", "json", "junit", "markdown", "html")
"""The formats ``--format`` takes."""

SUFFIXES: Final = {
    ".txt": "text",
    ".log": "text",
    ".json": "json",
    ".xml": "junit",
    ".md": "markdown",
    ".html": "html",
    ".htm": "html",
}
"""The format an ``--output`` path implies when no ``--format`` precedes it."""


def render(
    format: str,
    matrix: Matrix,
    *,
    verbosity: int = 0,
    colour: bool = False,
    matrix_view: bool = False,
    width: int | None = None,
) -> str:
    """Render a run in one of :data:`FORMATS`."""
    if format == "json":
        return render_json(matrix)
    if format == "junit":
        return render_junit(matrix)
    if format == "markdown":
        return render_markdown(matrix)
    if format == "html":
        return render_html(matrix)
    return render_text(
        matrix, verbosity=verbosity, colour=colour, matrix_view=matrix_view, width=width
    )


# -- shared --------------------------------------------------------------------------

# C0 and C1 controls but tab and newline, lone surrogates and the noncharacters
# U+FFFE and U+FFFF: shown as escapes,
# never sent to a terminal or written into a document.
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (but tab and newline) shown as escapes."""
    return _CONTROL.sub(_escape_control, text)


def _line(text: str | None, limit: int = 240) -> str:
    return printable(one_line(text, limit))


def counts_text(counts: dict[CaseStatus, int]) -> str:
    """``"4 passed, 1 unsupported"``: each status that occurs, with its count."""
    return ", ".join(f"{n} {status.value}" for status, n in counts.items() if n) or "no case"


def _shown(entries: tuple[Entry, ...]) -> list[Entry]:
    """The entries this run has something to say about: in a shard, not all of them."""
    return [entry for entry in entries if entry.results or entry.cleanup_errors]


def _cell_class(matrix: Matrix, entry: Entry) -> str:
    if matrix.offences(entry):
        return "fails"
    if all(result.status is CaseStatus.PASSED for result in entry.results):
        return "holds"
    return "gaps"


def _verdict(matrix: Matrix) -> str:
    if matrix.holds:
        return "every contract holds"
    problems = []
    failing = matrix.failing()
    if failing:
        shown = len(_shown(matrix.entries))
        problems.append(
            f"{len(failing)} of {shown} report{'s' if shown != 1 else ''} "
            f"{'does' if len(failing) == 1 else 'do'} not hold"
        )
    if matrix.stale:
        count = len(matrix.stale)
        problems.append(f"{count} stale baseline entr{'y' if count == 1 else 'ies'}")
    return f"FAILED ({', '.join(problems)})"


def _scope(matrix: Matrix) -> str:
    """What part of the cases a run ran: `` (shard 1/3, -k 'x')``, or nothing."""
    parts = []
    if matrix.run.shard is not None:
        parts.append(f"shard {matrix.run.shard}")
    parts.extend(f"-k {pattern!r}" for pattern in matrix.run.select)
    return f" ({', '.join(parts)})" if parts else ""


def _wall_time(matrix: Matrix) -> float:
    try:
        started = datetime.fromisoformat(matrix.run.started)
        finished = datetime.fromisoformat(matrix.run.finished)
    except ValueError:
        return sum(entry.duration for entry in matrix.entries)
    return max((finished - started).total_seconds(), 0.0)


def _summary(matrix: Matrix) -> str:
    shown = _shown(matrix.entries)
    cases = sum(len(entry.results) for entry in shown)
    return (
        f"{len(shown)} report{'s' if len(shown) != 1 else ''}, "
        f"{cases} case{'s' if cases != 1 else ''}: {counts_text(matrix.counts())} "
        f"in {_wall_time(matrix):.2f}s{_scope(matrix)}"
    )


def _entry_notes(entry: Entry) -> list[tuple[str, str]]:
    """The offences of an entry that belong to no case: a label and a message for each."""
    notes = [("cleanup error", str(error)) for error in entry.cleanup_errors]
    if entry.proves_nothing:
        notes.append(("no case passed", "a report that proves nothing cannot hold"))
    return notes


# -- text ----------------------------------------------------------------------------

_GREEN, _RED, _YELLOW, _MAGENTA, _BOLD = "32", "31;1", "33", "35;1", "1"
_STATUS_STYLE: Final = {
    CaseStatus.PASSED: _GREEN,
    CaseStatus.FAILED: _RED,
    CaseStatus.UNSUPPORTED: _YELLOW,
    CaseStatus.UNAVAILABLE: _MAGENTA,
}
_CELL_STYLE: Final = {"holds": _GREEN, "gaps": _YELLOW, "fails": _RED}


def _painter(colour: bool) -> Callable[[str, str], str]:
    def paint(text: str, style: str) -> str:
        return f"\x1b[{style}m{text}\x1b[0m" if colour and text else text

    return paint


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
    require_full = matrix.run.require_full
    lines: list[str] = []
    if matrix_view and verbosity >= 0:
        lines += _text_matrix(matrix, paint, width)
    for entry in _shown(matrix.entries):
        offences = matrix.offences(entry)
        if verbosity < 0 and not offences:
            continue
        details = [
            line
            for result in entry.results
            if (line := _case_line(result, require_full, paint, verbosity > 0)) is not None
        ]
        for label, message in _entry_notes(entry):
            details.append(f"  {paint(label.upper(), _RED)}: {_line(message)}")
        if matrix_view and not details:
            continue  # the matrix has said it all
        header = f"{printable(entry.title)}: {counts_text(entry.counts())} in {entry.duration:.2f}s"
        if offences:
            header += " " + paint("(does not hold)", _RED)
        lines.append(header)
        lines += details
    for stale in matrix.stale:
        lines.append(f"{paint('STALE', _RED)} {_line(stale.describe())}")
    if verbosity >= 0:
        lines.append(_summary(matrix))
    verdict = _verdict(matrix)
    lines.append("verdict: " + paint(verdict, _GREEN if matrix.holds else _RED))
    return "\n".join(lines) + "\n"


def _case_line(
    result: CaseRecord, require_full: bool, paint: Callable[[str, str], str], verbose: bool
) -> str | None:
    status = result.status
    label = status.value.upper()
    style = _STATUS_STYLE[status]
    case = printable(result.case_id)
    mark = result.baseline
    if mark is None:
        if status is CaseStatus.PASSED:
            return f"  {paint(label, style)} {case} in {result.duration:.3f}s" if verbose else None
        if require_full and status is CaseStatus.UNSUPPORTED:
            label, style = "UNSUPPORTED (--require-full)", _RED
        return f"  {paint(label, style)} {case}: {_line(result.reason)}"
    if mark.outcome == "known":
        known = paint(f"(known: {_line(mark.reason, 80)})", _YELLOW)
        return f"  {paint(label, style)} {case} {known}: {_line(result.reason)}"
    if mark.outcome == "unexpected-pass":
        return (
            f"  {paint('UNEXPECTED PASS', _RED)} {case}: the baseline lists it as failing "
            f"({_line(mark.reason, 120)}); remove the entry"
        )
    return (
        f"  {paint(label + ' (stale baseline entry)', _RED)} {case}: {_line(result.reason)}; "
        f"the baseline lists it as failing ({_line(mark.reason, 120)}); remove the entry"
    )


def _grid(matrix: Matrix) -> tuple[list[str], list[str], dict[tuple[str, str], Entry]]:
    """Features (rows) and implementations (columns) in the order met, and each cell."""
    cells: dict[tuple[str, str], Entry] = {}
    for entry in _shown(matrix.entries):
        cells[entry.feature_id, entry.implementation] = entry
    features = list(dict.fromkeys(feature for feature, _ in cells))
    implementations = list(dict.fromkeys(name for _, name in cells))
    return features, implementations, cells


def _text_matrix(matrix: Matrix, paint: Callable[[str, str], str], width: int | None) -> list[str]:
    features, implementations, cells = _grid(matrix)
    if not cells:
        return []
    shown: dict[tuple[str, str], tuple[str, str]] = {}
    for key, entry in cells.items():
        kind = _cell_class(matrix, entry)
        mark = "✗" if kind == "fails" else "✓"
        shown[key] = (f"{mark} {counts_text(entry.counts())}", _CELL_STYLE[kind])
    rows: list[list[tuple[str, str]]] = [
        [("feature", _BOLD)] + [(printable(name), _BOLD) for name in implementations]
    ]
    for feature in features:
        row = [(printable(feature), "")]
        row += [shown.get((feature, name), ("-", "")) for name in implementations]
        rows.append(row)
    widths = [max(len(row[column][0]) for row in rows) for column in range(len(rows[0]))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        return _stacked_matrix(features, implementations, shown, paint)
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
    shown: dict[tuple[str, str], tuple[str, str]],
    paint: Callable[[str, str], str],
) -> list[str]:
    """The matrix for a narrow terminal: each feature, then its implementations' cells."""
    lines = []
    for feature in features:
        lines.append(paint(printable(feature), _BOLD))
        names = [name for name in implementations if (feature, name) in shown]
        name_width = max(len(printable(name)) for name in names)
        for name in names:
            text, style = shown[feature, name]
            mark, _, counts = text.partition(" ")
            lines.append(f"  {paint(mark, style)} {printable(name).ljust(name_width)}  {counts}")
    return [*lines, ""]


# -- JSON ----------------------------------------------------------------------------


def render_json(matrix: Matrix) -> str:
    """The versioned JSON report (docs/report-format.md)."""
    return json.dumps(matrix.to_json(), indent=2, ensure_ascii=False) + "\n"


# -- JUnit XML -----------------------------------------------------------------------

# What XML 1.0 cannot hold at all: most C0 controls, lone surrogates, U+FFFE and U+FFFF.
_XML_INVALID: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MESSAGE_LIMIT: Final = 1000
_BODY_LIMIT: Final = 100_000


def _xml_safe(text: str) -> str:
    """``text`` with what XML cannot hold shown as escapes, then ``&``, ``<``, ``>`` escaped."""
    text = _XML_INVALID.sub(_escape_control, text)
    # ">" too, so that "]]>" never appears; "\r" as a reference, or parsers turn it into "\n".
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    )


def xml_text(text: str, limit: int = _BODY_LIMIT) -> str:
    """Character data for an element, cut at ``limit`` characters."""
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters cut)"
    return _xml_safe(text)


def xml_attribute(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """A double-quoted attribute value, cut at ``limit`` characters, whitespace kept."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return _xml_safe(text).replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;")


def _junit_timestamp(text: str) -> str:
    """The Ant schema's timestamp: ISO 8601 in UTC to the second, without a zone."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = datetime.now(UTC)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _element(tag: str, attributes: dict[str, str], body: str | None = None) -> str:
    rendered = "".join(f' {name}="{xml_attribute(value)}"' for name, value in attributes.items())
    if body is None:
        return f"<{tag}{rendered}/>"
    return f"<{tag}{rendered}>{xml_text(body)}</{tag}>"


def _details(result: CaseRecord) -> str:
    """Everything known about a case that did not pass, for an element's body."""
    parts = [result.reason or ""]
    if result.error is not None and result.error.traceback:
        parts.append(result.error.traceback)
    parts += [f"cleanup error: {error}\n{error.traceback}" for error in result.cleanup_errors]
    return "\n\n".join(part.rstrip("\n") for part in parts if part)


def _junit_outcome(
    result: CaseRecord, require_full: bool
) -> tuple[str, dict[str, str], str] | None:
    """The child element of a ``testcase`` (tag, attributes, body), or ``None`` for a pass."""
    mark = result.baseline
    reason = result.reason or ""
    if mark is not None and mark.outcome == "known":
        message = f"known failure (baseline: {mark.reason}): {result.status.value}: {reason}"
        return "skipped", {"message": one_line(message, _MESSAGE_LIMIT)}, _details(result)
    if mark is not None:
        what = "passed" if mark.outcome == "unexpected-pass" else f"is {result.status.value}"
        message = (
            f"{mark.outcome}: the case {what}, but the baseline lists it as failing "
            f"({mark.reason}); remove the entry"
        )
        return "failure", {"message": message, "type": f"baseline.{mark.outcome}"}, message
    if result.status is CaseStatus.PASSED:
        return None
    if result.status is CaseStatus.UNSUPPORTED:
        if require_full:
            message = f"unsupported, and --require-full needs every case to pass: {reason}"
            return "failure", {"message": message, "type": "require-full"}, message
        return "skipped", {"message": one_line(reason, _MESSAGE_LIMIT)}, ""
    kind = result.error.type if result.error is not None else result.status.value
    tag = "error" if result.status is CaseStatus.UNAVAILABLE else "failure"
    return tag, {"message": one_line(reason, _MESSAGE_LIMIT), "type": kind}, _details(result)


@final
class _JUnitSuite:
    """One ``testsuite`` being built: its cases, and how many of each outcome."""

    def __init__(self, name: str, package: str, properties: list[tuple[str, str]]) -> None:
        self.name = name
        self.package = package
        self.properties = properties
        self.cases: list[str] = []
        self.counts = {"failure": 0, "error": 0, "skipped": 0}
        self.time = 0.0

    def add(
        self,
        name: str,
        classname: str,
        duration: float,
        outcome: tuple[str, dict[str, str], str] | None,
    ) -> None:
        attributes = {"name": name, "classname": classname, "time": f"{duration:.6f}"}
        self.time += duration
        if outcome is None:
            self.cases.append(_element("testcase", attributes))
            return
        tag, child_attributes, body = outcome
        self.counts[tag] += 1
        child = _element(tag, child_attributes, body or None)
        self.cases.append(_open("testcase", attributes) + child + "</testcase>")

    def render(self, index: int, timestamp: str) -> list[str]:
        attributes = {
            "name": self.name,
            "tests": str(len(self.cases)),
            "failures": str(self.counts["failure"]),
            "errors": str(self.counts["error"]),
            "skipped": str(self.counts["skipped"]),
            "time": f"{self.time:.6f}",
            "timestamp": timestamp,
            "id": str(index),
            "package": self.package,
        }
        lines = ["  " + _open("testsuite", attributes)]
        if self.properties:
            lines.append("    <properties>")
            lines += [
                f"      {_element('property', {'name': name, 'value': value})}"
                for name, value in self.properties
            ]
            lines.append("    </properties>")
        lines += [f"    {case}" for case in self.cases]
        lines.append("  </testsuite>")
        return lines


def _open(tag: str, attributes: dict[str, str]) -> str:
    return _element(tag, attributes)[:-2] + ">"


def render_junit(matrix: Matrix) -> str:
    """
    JUnit XML: a ``testsuite`` per implementation and feature, a ``testcase`` per case.

    ``unsupported`` is ``<skipped>``, ``failed`` is ``<failure>``, ``unavailable`` (a
    claimed case that could not be checked) is ``<error>``. A failure the baseline
    tolerates is ``<skipped>``; an unexpected pass, a stale entry and an offence
    that belongs to no case are failures, so the file agrees with the gate.
    """
    run = matrix.run
    suites: list[_JUnitSuite] = []
    for entry in _shown(matrix.entries):
        distribution = entry.distribution
        properties = [
            ("feature_id", entry.feature_id),
            ("implementation", entry.implementation),
            ("module", entry.module),
            *(
                [("distribution", f"{distribution.name} {distribution.version}")]
                if distribution is not None
                else []
            ),
            ("backend", run.backend),
        ]
        suite = _JUnitSuite(entry.title, entry.feature_id, properties)
        classname = f"{entry.feature_id}.{entry.implementation}"
        for result in entry.results:
            outcome = _junit_outcome(result, run.require_full)
            suite.add(result.case_id, classname, result.duration, outcome)
        for label, message in _entry_notes(entry):
            tag, name = (
                ("error", "(cleanup)") if label == "cleanup error" else ("failure", "(gate)")
            )
            text = f"{label}: {message}"
            attributes = {"message": one_line(text, _MESSAGE_LIMIT), "type": "gate"}
            suite.add(name, classname, 0.0, (tag, attributes, text))
        suites.append(suite)
    if matrix.stale:
        suite = _JUnitSuite("conformkit baseline", "conformkit.baseline", [])
        for stale in matrix.stale:
            message = stale.offence()
            name = f"{stale.feature_id} × {stale.implementation} × {stale.case_id}"
            outcome = ("failure", {"message": message, "type": "baseline.stale"}, message)
            suite.add(name, "conformkit.baseline", 0.0, outcome)
        suites.append(suite)
    root = {
        "name": "conformkit",
        "tests": str(sum(len(suite.cases) for suite in suites)),
        "failures": str(sum(suite.counts["failure"] for suite in suites)),
        "errors": str(sum(suite.counts["error"] for suite in suites)),
        "time": f"{sum(suite.time for suite in suites):.6f}",
    }
    timestamp = _junit_timestamp(run.started)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', _open("testsuites", root)]
    for index, suite in enumerate(suites):
        lines += suite.render(index, timestamp)
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


# -- Markdown ------------------------------------------------------------------------

_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_{}\[\]<>|~#!])")
_EMOJI: Final = {"holds": "🟢", "gaps": "🟡", "fails": "🔴"}


def markdown_text(text: str) -> str:
    """Inline Markdown for ``text``: one line, its markup characters escaped."""
    text = printable(" ".join(text.splitlines())).replace("&", "&amp;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def render_markdown(matrix: Matrix) -> str:
    """
    The compatibility matrix: a row per feature, a column per implementation, a cell
    per pair with its counts and a colour; then each case that did not pass.
    """
    features, implementations, cells = _grid(matrix)
    verdict = _verdict(matrix)
    icon = "✅" if matrix.holds else "❌"
    lines = [
        f"## {icon} conformkit: {markdown_text(verdict)}",
        "",
        markdown_text(_summary(matrix))
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
                    kind = _cell_class(matrix, entry)
                    row.append(f"{_EMOJI[kind]} {counts_text(entry.counts())}")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        lines.append(
            "🟢 every case passed · 🟡 holds, with declared or known gaps · 🔴 fails the gate"
        )
    details: list[str] = []
    require_full = matrix.run.require_full
    for entry in _shown(matrix.entries):
        items = [
            f"- {markdown_text(result.case_id)}: {_markdown_outcome(result, require_full)}"
            for result in entry.results
            if result.status is not CaseStatus.PASSED or result.baseline is not None
        ]
        items += [
            f"- **{markdown_text(label)}**: {markdown_text(message)}"
            for label, message in _entry_notes(entry)
        ]
        if items:
            details += ["", f"### {markdown_text(entry.title)}", "", *items]
    if matrix.stale:
        details += ["", "### Stale baseline entries", ""]
        details += [f"- {markdown_text(stale.offence())}" for stale in matrix.stale]
    if details:
        lines += ["", "## Cases that did not pass", *details]
    return "\n".join(lines) + "\n"


def _markdown_outcome(result: CaseRecord, require_full: bool) -> str:
    mark = result.baseline
    reason = markdown_text(one_line(result.reason))
    if mark is None:
        suffix = (
            " (--require-full)" if require_full and result.status is CaseStatus.UNSUPPORTED else ""
        )
        return f"**{result.status.value}**{markdown_text(suffix)}: {reason}"
    if mark.outcome == "known":
        return (
            f"**{result.status.value}** (known; baseline: {markdown_text(mark.reason)}): {reason}"
        )
    return (
        f"**{markdown_text(mark.outcome)}**: {result.status.value}, but the baseline lists it "
        f"as failing ({markdown_text(mark.reason)}); remove the entry"
    )


# -- HTML ----------------------------------------------------------------------------

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
.failed .status, .unavailable .status, .offence .status { color: #cf222e; }
.unsupported .status, .known .status { color: #9a6700; }
pre { background: #f6f8fa; padding: 0.5rem; overflow-x: auto; font-size: 0.85rem; }
"""


def _h(text: str) -> str:
    return html.escape(printable(text), quote=True)


def render_html(matrix: Matrix) -> str:
    """
    The compatibility matrix as one self-contained HTML page: no script, no external
    asset; each cell expands to its cases and their reasons.
    """
    features, implementations, cells = _grid(matrix)
    verdict_class = "holds" if matrix.holds else "fails"
    run = matrix.run
    info = (
        f"{_summary(matrix)} · backend {run.backend} · {run.python} · {run.platform} · "
        f"conformkit {run.conformkit} · started {run.started} · finished {run.finished}"
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
        f"<title>conformkit: {_h(_verdict(matrix))}</title>",
        f"<style>\n{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>conformkit compatibility matrix</h1>",
        f'<p class="verdict {verdict_class}">{_h(_verdict(matrix))}</p>',
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
        out += [
            f'<li class="offence"><span class="status">stale</span> {_h(stale.offence())}</li>'
            for stale in matrix.stale
        ]
        out.append("</ul>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _html_cell(matrix: Matrix, entry: Entry) -> str:
    kind = _cell_class(matrix, entry)
    require_full = matrix.run.require_full
    items = []
    for result in entry.results:
        mark = result.baseline
        status = result.status.value
        css = "known" if mark is not None and mark.outcome == "known" else status
        label = status
        text = f" {result.duration:.3f}s" if result.status is CaseStatus.PASSED else ""
        if result.reason:
            text = f": {result.reason}"
        if mark is not None:
            if mark.outcome == "known":
                label = f"{status} (known)"
                text += f" [baseline: {mark.reason}]"
            else:
                css, label = "offence", mark.outcome
                text = (
                    f": {status}, but the baseline lists it as failing ({mark.reason}); "
                    f"remove the entry"
                )
        elif require_full and result.status is CaseStatus.UNSUPPORTED:
            css, label = "offence", "unsupported (--require-full)"
        trace = ""
        if result.error is not None and result.error.traceback:
            trace = (
                "<details><summary>traceback</summary>"
                f"<pre>{_h(result.error.traceback)}</pre></details>"
            )
        items.append(
            f'<li class="{css}"><code>{_h(result.case_id)}</code> '
            f'<span class="status">{_h(label)}</span>{_h(text)}{trace}</li>'
        )
    for label, message in _entry_notes(entry):
        items.append(
            f'<li class="offence"><span class="status">{_h(label)}</span> {_h(message)}</li>'
        )
    opened = ' open="open"' if kind == "fails" else ""
    return (
        f'<td class="{kind}"><details{opened}><summary>{_h(counts_text(entry.counts()))}'
        f"</summary><ul>{''.join(items)}</ul></details></td>"
    )
