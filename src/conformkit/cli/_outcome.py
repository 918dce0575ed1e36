"""
What a run says, worded once: for each case its label, its severity and its
message; the offences of a report that belong to no case; the verdict and the
summary. Every output format reads them here and only styles them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, final

from .._report import CaseStatus, Gate

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._matrix import CaseRecord, Entry, Matrix, StaleEntry

_PASSED: Final = CaseStatus.PASSED
_UNAVAILABLE: Final = CaseStatus.UNAVAILABLE


@final
class Severity(enum.Enum):
    """How an outcome stands with the gate; each format styles it its own way."""

    PASSED = "passed"
    """Holds, with nothing to say."""
    GAP = "gap"
    """Holds, with a declared gap: an unsupported case."""
    KNOWN = "known"
    """Fails, but the baseline knows it: holds."""
    FAILED = "failed"
    """Fails the gate."""
    ERROR = "error"
    """Fails the gate without a verdict on the case: unavailable, or a cleanup error."""


@final
@dataclass(frozen=True, slots=True)
class Outcome:
    """
    One thing a report says: about a case, or about the report as a whole.

    :ivar kind: a stable name for machines: a status (``"failed"``), a gate
        option (``"require-full"``), a baseline's mark (``"baseline.known"``), or
        ``"cleanup"`` and ``"gate"`` for the offences that belong to no case.
    :ivar label: a few words to show before the case: ``"unsupported"``,
        ``"unexpected pass"``; a qualifier comes in parentheses.
    :ivar message: the reason, in words: one line, or empty for a pass.
    :ivar note: what the baseline says of a known failure, shown beside the case.
    """

    kind: str
    label: str
    severity: Severity
    message: str
    note: str | None = None


def said(outcome: Outcome, status: CaseStatus | None = None) -> str:
    """
    An outcome as one message, for a place with room for one: its reason, led by
    its label and the baseline's note unless the label is just the case's status.
    """
    if status is not None and outcome.kind == status.value:
        return outcome.message
    note = "" if outcome.note is None else f" ({outcome.note})"
    return f"{outcome.label}{note}: {outcome.message}" if outcome.message else outcome.label


def severity(record: CaseRecord, gate: Gate) -> Severity:
    """How a case stands: the gate's verdict, which the baseline's mark, if any, overrides."""
    listed = record.baseline is not None
    if record.offends(gate):
        return Severity.ERROR if record.status is _UNAVAILABLE and not listed else Severity.FAILED
    if listed:
        return Severity.KNOWN
    return Severity.PASSED if record.status is _PASSED else Severity.GAP


def case_outcome(record: CaseRecord, gate: Gate) -> Outcome:
    """What a report says of one case."""
    status = record.status.value
    reason = record.reason or ""
    judged = severity(record, gate)
    mark = record.baseline
    if mark is None or mark.outcome == "known":
        kind, label = status, status
        if record.slow and record.status is _PASSED:
            label = f"{status} (slow)"
        if gate.offends(record) and record.status is CaseStatus.UNSUPPORTED:
            option = "require-full" if gate.require_full else "reject-stale"
            kind, label = option, f"{status} (--{option})"
        if mark is not None:
            return Outcome("baseline.known", label, judged, reason, f"known: {mark.reason}")
        return Outcome(kind, label, judged, reason)
    listed = f"the baseline lists it as failing ({mark.reason}); remove the entry"
    if mark.outcome == "unexpected-pass":
        return Outcome("baseline.unexpected-pass", "unexpected pass", judged, listed)
    return Outcome(
        "baseline.stale", f"{status} (stale baseline entry)", judged, f"{reason}; {listed}"
    )


def entry_notes(entry: Entry, gate: Gate) -> list[Outcome]:
    """The offences of a report that belong to no case: cleanup errors, and the gate's rules."""
    return [
        Outcome(
            offence.kind,
            offence.label,
            Severity.ERROR if offence.kind == "cleanup" else Severity.FAILED,
            offence.message,
        )
        for offence in entry.report_offences(gate)
    ]


def offences(entry: Entry, gate: Gate) -> list[str]:
    """Why a report fails the gate, a line for each offence; empty when it holds."""
    lines = []
    for record in entry.results:
        if record.offends(gate):
            outcome = case_outcome(record, gate)
            lines.append(f"{record.case_id}: {outcome.label}: {outcome.message}")
    lines += [f"{note.label}: {note.message}" for note in entry_notes(entry, gate)]
    return lines


def stale_entry_outcome(stale: StaleEntry) -> Outcome:
    """A baseline entry that names a case or an implementation the run does not have."""
    return Outcome(
        "baseline.stale",
        "stale",
        Severity.FAILED,
        f"baseline entry {stale.feature_id} × {stale.implementation} × {stale.case_id}: "
        f"{stale.problem}; remove it",
    )


# -- the run as a whole ----------------------------------------------------------------


def shown(entries: Iterable[Entry]) -> list[Entry]:
    """The reports a run has something to say about: in a shard, not all of them."""
    return [entry for entry in entries if entry.results or entry.cleanup_errors]


def counts_text(counts: dict[CaseStatus, int], slow: int = 0) -> str:
    """
    ``"4 passed, 1 unsupported"``: each status that occurs, with its count; with
    ``slow``, how many passes were slow: ``"4 passed (1 slow)"``.
    """
    return (
        ", ".join(
            f"{n} {status.value}{f' ({slow} slow)' if slow and status is _PASSED else ''}"
            for status, n in counts.items()
            if n
        )
        or "no case"
    )


def slow_count(entries: Iterable[Entry]) -> int:
    """How many cases of the reports passed only when run again with more time."""
    return sum(record.slow for entry in entries for record in entry.results)


def cell(entry: Entry, gate: Gate) -> str:
    """The colour of a report's cell in a matrix: ``"holds"``, ``"gaps"`` or ``"fails"``."""
    if not entry.holds(gate):
        return "fails"
    if all(severity(record, gate) is Severity.PASSED for record in entry.results):
        return "holds"
    return "gaps"


def verdict(matrix: Matrix) -> str:
    """
    ``"every contract holds"``, or what fails: ``"FAILED (1 of 3 reports does not hold)"``,
    ``"FAILED (the run stopped early: interrupted (Ctrl-C))"``.
    """
    failing = len(matrix.failing())
    stale = len(matrix.stale)
    stopped = matrix.run.stopped
    if not failing and not stale and stopped is None:
        return "every contract holds"
    problems = [] if stopped is None else [f"the run stopped early: {stopped}"]
    if failing:
        count = len(shown(matrix.entries))
        problems.append(
            f"{failing} of {count} report{'s' if count != 1 else ''} "
            f"{'does' if failing == 1 else 'do'} not hold"
        )
    if stale:
        problems.append(f"{stale} stale baseline entr{'y' if stale == 1 else 'ies'}")
    return f"FAILED ({', '.join(problems)})"


def summary(matrix: Matrix) -> str:
    """``"2 reports, 6 cases: 5 passed, 1 unsupported in 0.03s"``, and what part ran."""
    reports = shown(matrix.entries)
    cases = sum(len(entry.results) for entry in reports)
    return (
        f"{len(reports)} report{'s' if len(reports) != 1 else ''}, "
        f"{cases} case{'s' if cases != 1 else ''}: "
        f"{counts_text(matrix.counts(), slow_count(matrix.entries))} "
        f"in {_wall_time(matrix):.2f}s{_scope(matrix)}"
    )


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
