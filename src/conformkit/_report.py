"""Reports of a run, and the gate that judges them."""

from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass, field
from typing import Any, cast, final

from ._exceptions import ContractFailure
from ._util import format_error, one_line


@final
class CaseStatus(enum.StrEnum):
    """The outcome of one case; a string enum, so ``CaseStatus.PASSED == "passed"``."""

    PASSED = "passed"
    """The case ran, its expectation held and its cleanup succeeded."""
    FAILED = "failed"
    """Setup, the assertion or cleanup failed or timed out."""
    UNSUPPORTED = "unsupported"
    """Declared outside the implementation's coverage; never run."""
    UNAVAILABLE = "unavailable"
    """``create`` raised :exc:`FeatureUnavailable`: a required facility is absent."""


@final
@dataclass(frozen=True, slots=True)
class CaseResult:
    """
    The outcome of one case of one implementation.

    :ivar case_id: the case's stable ID.
    :ivar status: what happened.
    :ivar reason: why, in words; ``None`` only for a clean pass.
    :ivar error: the exception that decided the outcome, if any.
    :ivar cleanup_errors: failures of the case's cleanups, in the order they happened.
    :ivar duration: seconds from the start of ``create`` to the end of cleanup.
    :ivar stale: the case was declared unsupported, yet passed when probed
        (``probe_unsupported=True``): the declaration has outlived its cause.
    """

    case_id: str
    status: CaseStatus
    reason: str | None = None
    error: BaseException | None = None
    cleanup_errors: tuple[BaseException, ...] = ()
    duration: float = 0.0
    stale: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict: strings, numbers, lists and dicts only."""
        return {
            "case_id": self.case_id,
            "status": self.status.value,
            "reason": self.reason,
            "duration": self.duration,
            "error": None if self.error is None else describe_exception(self.error),
            "cleanup_errors": [describe_exception(exc) for exc in self.cleanup_errors],
            "stale": self.stale,
        }


@final
class _OpenResult:
    """The slots of a :class:`CaseResult`, unfrozen: filled in, then made a ``CaseResult``."""

    __slots__ = CaseResult.__slots__


def case_result(
    case_id: str,
    status: CaseStatus,
    reason: str | None = None,
    error: BaseException | None = None,
    cleanup_errors: tuple[BaseException, ...] = (),
    duration: float = 0.0,
    stale: bool = False,
) -> CaseResult:
    """
    ``CaseResult(...)`` at a quarter of the cost: the runner makes one per case.

    A frozen dataclass sets each of its seven fields through
    ``object.__setattr__``, which takes about four times as long as this does,
    a large share of what a trivial case costs. This fills in plain slots, then
    gives the object its class: the same slots in the same order, so the same
    memory layout, which is what ``__class__`` assignment requires.
    """
    result = _OpenResult()
    result.case_id = case_id  # type: ignore[attr-defined]
    result.status = status  # type: ignore[attr-defined]
    result.reason = reason  # type: ignore[attr-defined]
    result.error = error  # type: ignore[attr-defined]
    result.cleanup_errors = cleanup_errors  # type: ignore[attr-defined]
    result.duration = duration  # type: ignore[attr-defined]
    result.stale = stale  # type: ignore[attr-defined]
    result.__class__ = CaseResult  # type: ignore[assignment]
    return cast("CaseResult", result)


@final
@dataclass(frozen=True, slots=True)
class ContractReport:
    """
    The outcome of running one suite against one implementation.

    ``str(report)`` is a compact summary with one line per case that did not pass;
    :meth:`to_dict` is the whole report as JSON-ready data.

    :ivar feature_id: the feature's ID.
    :ivar implementation: a readable name of the implementation.
    :ivar results: one result per case, in the feature's declared order.
    :ivar cleanup_errors: failures that belong to no single case: background work
        that failed only after its case was judged, because it outlived the
        deadline of its join.
    :ivar unexercised: the API's operations that no case called, when the run
        recorded calls (``reject_vacuous=True``); ``None`` when it did not, or
        when the feature's API type is unknown.
    """

    feature_id: str
    implementation: str
    results: tuple[CaseResult, ...]
    cleanup_errors: tuple[BaseException, ...] = ()
    unexercised: tuple[str, ...] | None = None
    # The results by case ID, made by the first lookup: report[case_id] costs the
    # same whatever the size of the report.
    _by_case_id: dict[str, CaseResult] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def counts(self) -> dict[CaseStatus, int]:
        """Return how many cases have each status, every status present."""
        counts = dict.fromkeys(CaseStatus, 0)
        for result in self.results:
            counts[result.status] += 1
        return counts

    @property
    def duration(self) -> float:
        """Seconds spent in all cases together."""
        return sum(result.duration for result in self.results)

    def __getitem__(self, case_id: str) -> CaseResult:
        by_case_id = self._by_case_id
        if by_case_id is None:
            # Reversed, so that the first of two results with one ID wins, as
            # it did when a lookup scanned the results.
            by_case_id = {result.case_id: result for result in reversed(self.results)}
            object.__setattr__(self, "_by_case_id", by_case_id)
        try:
            return by_case_id[case_id]
        except KeyError:
            raise KeyError(
                f"report of feature {self.feature_id!r} has no case {case_id!r}"
            ) from None

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in self.counts().items() if n)
        lines = [f"{self.feature_id} × {self.implementation}: {counts} in {self.duration:.2f}s"]
        for result in self.results:
            if result.status is not CaseStatus.PASSED:
                lines.append(
                    f"  {result.status.upper()} {result.case_id}: {one_line(result.reason)}"
                )
        if self.unexercised:
            lines.append(f"  operations no case exercised: {', '.join(self.unexercised)}")
        for exc in self.cleanup_errors:
            lines.append(f"  CLEANUP ERROR: {one_line(format_error(exc))}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict: status values as strings, exceptions as dicts."""
        return {
            "feature_id": self.feature_id,
            "implementation": self.implementation,
            "counts": {status.value: n for status, n in self.counts().items()},
            "results": [result.to_dict() for result in self.results],
            "cleanup_errors": [describe_exception(exc) for exc in self.cleanup_errors],
            "unexercised": None if self.unexercised is None else list(self.unexercised),
        }


def describe_exception(exc: BaseException) -> dict[str, str]:
    """An exception as JSON-ready data: its type, its message and its own traceback."""
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return {
        "type": name,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }


def assert_contract(
    report: ContractReport, *, require_full: bool = False, reject_stale: bool = False
) -> None:
    """
    The gate: return quietly if the report holds, raise :exc:`ContractFailure` if not.

    It rejects any ``failed`` case, any ``unavailable`` case (the implementation
    claimed it, and a claim that was not checked is not proven), any cleanup
    failure, and a report in which no case passed at all. With
    ``require_full=True`` every case must have passed. With
    ``reject_stale=True``, a case declared unsupported that passed when probed
    (``probe_unsupported=True``) is rejected too, so a declared gap cannot
    outlive its cause.

    :raises ContractFailure: listing each offending case with its status and reason.
    """
    if not isinstance(report, ContractReport):
        raise TypeError(f"assert_contract() needs a ContractReport, got {report!r}")
    offences: list[str] = []
    for result in report.results:
        rejected = (
            result.status in (CaseStatus.FAILED, CaseStatus.UNAVAILABLE)
            or (require_full and result.status is not CaseStatus.PASSED)
            or (reject_stale and result.stale)
        )
        if rejected:
            offences.append(f"  {result.case_id}: {result.status.value}: {result.reason}")
    for exc in report.cleanup_errors:
        offences.append(f"  cleanup error: {format_error(exc)}")
    counts = report.counts()
    if not counts[CaseStatus.PASSED]:
        offences.append("  no case passed: a report that proves nothing cannot hold")
    if offences:
        full = " (require_full=True: every case must pass)" if require_full else ""
        raise ContractFailure(
            f"contract {report.feature_id!r} does not hold for {report.implementation}{full}:\n"
            + "\n".join(offences),
            report,
        )
