"""
The JUnit XML output, as CI systems read it: a ``testsuite`` per implementation
and feature, a ``testcase`` per case, so that the file says what the gate says.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final, final

from .._util import one_line
from ._characters import escape_control
from ._matrix import CaseRecord, Matrix
from ._outcome import (
    Outcome,
    Severity,
    case_outcome,
    entry_notes,
    said,
    shown,
    stale_entry_outcome,
)

__all__ = ["render_junit", "xml_attribute", "xml_text"]

# What XML 1.0 cannot hold at all: most C0 controls, lone surrogates, U+FFFE and U+FFFF.
_XML_INVALID: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MESSAGE_LIMIT: Final = 1000
_BODY_LIMIT: Final = 100_000
# Each severity's child element of a <testcase>; a pass has none.
_TAGS: Final = {
    Severity.GAP: "skipped",
    Severity.KNOWN: "skipped",
    Severity.FAILED: "failure",
    Severity.ERROR: "error",
}


def _xml_safe(text: str) -> str:
    """``text`` with what XML cannot hold shown as escapes, then ``&``, ``<``, ``>`` escaped."""
    text = _XML_INVALID.sub(escape_control, text)
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


def _timestamp(text: str) -> str:
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


def _open(tag: str, attributes: dict[str, str]) -> str:
    return _element(tag, attributes)[:-2] + ">"


def _details(result: CaseRecord, outcome: Outcome) -> str:
    """Everything known about a case that did not pass, for an element's body."""
    parts = [said(outcome, result.status)]
    if result.error is not None and result.error.traceback:
        parts.append(result.error.traceback)
    parts += [f"cleanup error: {error}\n{error.traceback}" for error in result.cleanup_errors]
    return "\n\n".join(part.rstrip("\n") for part in parts if part)


def _child(result: CaseRecord, outcome: Outcome) -> tuple[str, dict[str, str], str] | None:
    """The child element of a case's ``testcase`` (tag, attributes, body); ``None`` for a pass."""
    tag = _TAGS.get(outcome.severity)
    if tag is None:
        return None
    attributes = {"message": one_line(said(outcome, result.status), _MESSAGE_LIMIT)}
    if outcome.severity is Severity.GAP:
        return tag, attributes, ""
    if tag != "skipped":
        error = result.error
        own = error is not None and outcome.kind in ("failed", "unavailable")
        attributes["type"] = error.type if own and error is not None else outcome.kind
    return tag, attributes, _details(result, outcome)


@final
class _Suite:
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
        child: tuple[str, dict[str, str], str] | None,
        output: str | None = None,
    ) -> None:
        """A test case; ``output``, what to say of it beside its outcome, as its ``system-out``."""
        attributes = {"name": name, "classname": classname, "time": f"{duration:.6f}"}
        self.time += duration
        elements = "" if output is None else _element("system-out", {}, output)
        if child is not None:
            tag, child_attributes, body = child
            self.counts[tag] += 1
            elements = _element(tag, child_attributes, body or None) + elements
        if not elements:
            self.cases.append(_element("testcase", attributes))
            return
        self.cases.append(_open("testcase", attributes) + elements + "</testcase>")

    def add_offence(self, name: str, classname: str, outcome: Outcome) -> None:
        """A test case for an offence that belongs to no case of the suite."""
        message = said(outcome)
        attributes = {"message": one_line(message, _MESSAGE_LIMIT), "type": outcome.kind}
        self.add(name, classname, 0.0, (_TAGS[outcome.severity], attributes, message))

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


def render_junit(matrix: Matrix) -> str:
    """
    JUnit XML: a ``testsuite`` per implementation and feature, a ``testcase`` per case.

    What holds with a gap (``unsupported``) or as a known failure is ``<skipped>``;
    what fails the gate is ``<failure>``, or ``<error>`` when there is no verdict on
    the case (``unavailable``, a cleanup error). An offence that belongs to no case
    gets a test case of its own, so the file agrees with the gate. A case that
    passed only with more time says so, and why, in its ``<system-out>``.
    """
    run = matrix.run
    gate = run.gate
    suites: list[_Suite] = []
    for entry in shown(matrix.entries):
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
        suite = _Suite(entry.title, entry.feature_id, properties)
        classname = f"{entry.feature_id}.{entry.implementation}"
        for result in entry.results:
            outcome = case_outcome(result, gate)
            # A slow pass passed: what CI shows of a passing test is its output.
            slow = result.slow and outcome.severity is Severity.PASSED
            output = said(outcome, result.status) if slow else None
            suite.add(result.case_id, classname, result.duration, _child(result, outcome), output)
        for note in entry_notes(entry, gate):
            suite.add_offence(f"({note.kind})", classname, note)
        suites.append(suite)
    if run.stopped is not None:
        suite = _Suite("conformkit run", "conformkit.run", [])
        stopped = Outcome(
            "stopped", "stopped", Severity.ERROR, f"the run stopped early: {run.stopped}"
        )
        suite.add_offence("(stopped)", "conformkit.run", stopped)
        suites.append(suite)
    if matrix.stale:
        suite = _Suite("conformkit baseline", "conformkit.baseline", [])
        for stale in matrix.stale:
            name = f"{stale.feature_id} × {stale.implementation} × {stale.case_id}"
            suite.add_offence(name, "conformkit.baseline", stale_entry_outcome(stale))
        suites.append(suite)
    root = {
        "name": "conformkit",
        "tests": str(sum(len(suite.cases) for suite in suites)),
        "failures": str(sum(suite.counts["failure"] for suite in suites)),
        "errors": str(sum(suite.counts["error"] for suite in suites)),
        "time": f"{sum(suite.time for suite in suites):.6f}",
    }
    timestamp = _timestamp(run.started)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', _open("testsuites", root)]
    for index, suite in enumerate(suites):
        lines += suite.render(index, timestamp)
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"
