"""Reports of a run, and the gate that judges them."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, final

from ._exceptions import ContractFailure
from ._explain import describe_exception, error_line
from ._util import one_line


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
    :ivar slow: the case passed only with more time: a stage overran the default
        deadline, and the case passed when run again under the longer one; its
        ``reason`` says which stage and how long it ran.
    """

    case_id: str
    status: CaseStatus
    reason: str | None = None
    error: BaseException | None = None
    cleanup_errors: tuple[BaseException, ...] = ()
    duration: float = 0.0
    stale: bool = False
    slow: bool = False

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
            "slow": self.slow,
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
    slow: bool = False,
) -> CaseResult:
    """
    ``CaseResult(...)`` at a quarter of the cost: the runner makes one per case.

    A frozen dataclass sets each of its eight fields through
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
    result.slow = slow  # type: ignore[attr-defined]
    result.__class__ = CaseResult  # type: ignore[assignment]
    return result  # type: ignore[return-value]  # a CaseResult now; cast() costs a call


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
    def slow(self) -> tuple[str, ...]:
        """The IDs of the cases that passed only with more time (:attr:`CaseResult.slow`)."""
        return tuple(result.case_id for result in self.results if result.slow)

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
        slow = len(self.slow)
        if slow:
            counts += f" ({slow} slow)"
        lines = [f"{self.feature_id} × {self.implementation}: {counts} in {self.duration:.2f}s"]
        for result in self.results:
            if result.status is not CaseStatus.PASSED:
                lines.append(
                    f"  {result.status.upper()} {result.case_id}: {one_line(result.reason)}"
                )
            elif result.slow:
                lines.append(f"  SLOW {result.case_id}: {one_line(result.reason)}")
        if self.unexercised:
            lines.append(f"  operations no case exercised: {', '.join(self.unexercised)}")
        for exc in self.cleanup_errors:
            lines.append(f"  CLEANUP ERROR: {one_line(error_line(exc))}")
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


@final
@dataclass(frozen=True, slots=True)
class Offence:
    """
    A reason a report fails the gate that belongs to no single case.

    :ivar kind: ``"cleanup"`` for a failure outside any case, ``"gate"`` for a rule
        that the report as a whole breaks.
    """

    kind: Literal["cleanup", "gate"]
    label: str
    message: str

    def __str__(self) -> str:
        return f"{self.label}: {self.message}"


class Judged(Protocol):
    """What the gate reads of a case's result: a :class:`CaseResult`, or a report file's record."""

    @property
    def status(self) -> CaseStatus: ...

    @property
    def stale(self) -> bool: ...


@final
@dataclass(frozen=True, slots=True)
class Gate:
    """
    The gate: what a report must show to hold, decided in this one place.

    :func:`assert_contract` and the command line both judge with it; the command
    line's baseline only overrides its verdict on the cases the baseline lists.

    :ivar require_full: every case must pass: a declared gap offends too.
    :ivar reject_stale: a case declared unsupported that passed when probed
        (``probe_unsupported=True``) offends.
    :ivar require_exercised: every operation of the API must have been called by
        some case; a report that could not tell (it recorded no calls) offends too.
    """

    require_full: bool = False
    reject_stale: bool = False
    require_exercised: bool = False

    def offends(self, result: Judged) -> bool:
        """
        Whether one case's result offends the gate.

        A ``failed`` case always does, and so does an ``unavailable`` one: the
        implementation claimed it, and a claim that was not checked is not proven.
        """
        status = result.status
        return (
            status is CaseStatus.FAILED
            or status is CaseStatus.UNAVAILABLE
            or (self.require_full and status is not CaseStatus.PASSED)
            or (self.reject_stale and result.stale)
        )

    def report_offences(
        self,
        *,
        proven: bool,
        cleanup_errors: Iterable[str],
        unexercised: tuple[str, ...] | None,
        complete: bool = True,
    ) -> list[Offence]:
        """
        The offences of a report that belong to no single case.

        :param proven: whether the report proves anything: some case passed.
        :param cleanup_errors: the failures outside any case, each as one line.
        :param unexercised: the report's operations that no case called, or
            ``None`` when the run did not record calls.
        :param complete: whether the report holds every case of the pair. Only a
            complete one is judged on the operations it exercised: a shard's
            share of the cases is, when its reports are merged.
        """
        offences = [Offence("cleanup", "cleanup error", error) for error in cleanup_errors]
        if not proven:
            offences.append(
                Offence("gate", "no case passed", "a report that proves nothing cannot hold")
            )
        if self.require_exercised and complete:
            if unexercised is None:
                offences.append(
                    Offence(
                        "gate",
                        "operations not recorded",
                        "the run did not record which operations its cases called: that "
                        "needs reject_vacuous=True (conformkit run --reject-vacuous), and "
                        "a feature declared as Feature[API] so that its operations are "
                        "known",
                    )
                )
            elif unexercised:
                offences.append(
                    Offence("gate", "operations no case exercised", ", ".join(unexercised))
                )
        return offences


def assert_contract(
    report: ContractReport,
    *,
    require_full: bool = False,
    reject_stale: bool = False,
    require_exercised: bool = False,
) -> None:
    """
    The gate: return quietly if the report holds, raise :exc:`ContractFailure` if not.

    It rejects any ``failed`` case, any ``unavailable`` case (the implementation
    claimed it, and a claim that was not checked is not proven), any cleanup
    failure, and a report in which no case passed at all. With
    ``require_full=True`` every case must have passed. With
    ``reject_stale=True``, a case declared unsupported that passed when probed
    (``probe_unsupported=True``) is rejected too, so a declared gap cannot
    outlive its cause. With ``require_exercised=True``, every operation of the
    API must have been called by some case (``report.unexercised`` is empty),
    and a report that could not tell, because its run did not record calls
    (``reject_vacuous=True``), is rejected as well.

    :raises ContractFailure: listing each offending case with its status and
        reason, and each rule the report as a whole breaks.
    """
    if not isinstance(report, ContractReport):
        raise TypeError(f"assert_contract() needs a ContractReport, got {report!r}")
    gate = Gate(
        require_full=require_full,
        reject_stale=reject_stale,
        require_exercised=require_exercised,
    )
    offences = [
        f"  {result.case_id}: {result.status.value}: {result.reason}"
        for result in report.results
        if gate.offends(result)
    ]
    offences += [
        f"  {offence}"
        for offence in gate.report_offences(
            proven=any(result.status is CaseStatus.PASSED for result in report.results),
            cleanup_errors=[error_line(exc) for exc in report.cleanup_errors],
            unexercised=report.unexercised,
        )
    ]
    if offences:
        full = " (require_full=True: every case must pass)" if require_full else ""
        raise ContractFailure(
            f"contract {report.feature_id!r} does not hold for {report.implementation}{full}:\n"
            + "\n".join(offences),
            report,
        )


# Shown as conformkit.Name, like every export, whichever way it was first imported.
for _export in (CaseResult, CaseStatus, ContractReport, assert_contract):
    _export.__module__ = "conformkit"
del _export
