"""
The report of a run of many pairs of implementation and feature: each case's
outcome, what the baseline makes of it, and the gate's verdict on each report and
on the run. Every output reads it; it reads nothing of the command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal, final

from .._explain import describe_exception, record_line
from .._report import CaseResult, CaseStatus, ContractReport, Gate, Offence
from ._characters import clean

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from .._collect import Distribution, Pair, Shard

_PASSED: Final = CaseStatus.PASSED

Mark = Literal["known", "unexpected-pass", "stale"]
"""What the baseline makes of a case it lists."""

MARKS: Final[tuple[Mark, ...]] = ("known", "unexpected-pass", "stale")


@final
@dataclass(frozen=True, slots=True)
class BaselineMark:
    """
    A case the baseline lists, and what became of it.

    :ivar outcome: ``"known"``: it still fails, which the gate tolerates;
        ``"unexpected-pass"``: it passed; ``"stale"``: it no longer fails without
        having passed (it is now declared unsupported). The last two fail the gate.
    :ivar reason: the reason the baseline gives.
    """

    outcome: Mark
    reason: str


@final
@dataclass(frozen=True, slots=True)
class StaleEntry:
    """A baseline entry that names a case or an implementation the run does not have."""

    implementation: str
    feature_id: str
    case_id: str
    reason: str
    problem: str


@final
@dataclass(frozen=True, slots=True)
class BaselineInfo:
    """The baseline a run was judged with: its path, and its entries that are stale."""

    path: str
    stale: tuple[StaleEntry, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """An exception as a report holds it: its qualified type name, message and traceback."""

    type: str
    message: str
    traceback: str

    @classmethod
    def of(cls, error: BaseException) -> ErrorRecord:
        described = describe_exception(error)
        return cls(
            clean(described["type"]), clean(described["message"]), clean(described["traceback"])
        )

    def __str__(self) -> str:
        return record_line(self.type, self.message)


@final
@dataclass(frozen=True, slots=True)
class CaseRecord:
    """
    The outcome of one case of one pair, as a report holds it.

    :ivar stale: declared unsupported, yet passed when probed.
    :ivar baseline: what the baseline makes of the case, when it lists it.
    :ivar slow: passed only when run again under a longer deadline.
    """

    case_id: str
    status: CaseStatus
    reason: str | None
    duration: float
    error: ErrorRecord | None = None
    cleanup_errors: tuple[ErrorRecord, ...] = ()
    baseline: BaselineMark | None = None
    stale: bool = False
    slow: bool = False

    @classmethod
    def of(cls, result: CaseResult) -> CaseRecord:
        return cls(
            clean(result.case_id),
            result.status,
            None if result.reason is None else clean(result.reason),
            result.duration,
            None if result.error is None else ErrorRecord.of(result.error),
            tuple(ErrorRecord.of(error) for error in result.cleanup_errors),
            None,
            result.stale,
            result.slow,
        )

    def offends(self, gate: Gate) -> bool:
        """
        Whether the case fails the gate: the gate's verdict, or the baseline's when
        it lists the case (a known failure holds; any other mark fails).
        """
        mark = self.baseline
        if mark is not None:
            return mark.outcome != "known"
        return gate.offends(self)


@final
@dataclass(frozen=True, slots=True)
class Entry:
    """
    The report of one implementation on one feature: the cases this run ran of it.

    :ivar planned: every case of the pair, in the feature's order, whether this
        run ran it or not (``-k``, ``--shard``).
    :ivar results: the cases this run ran, in the same order.
    :ivar unexercised: the API's operations that no case called, when the run
        recorded calls; else ``None``.
    """

    feature_id: str
    implementation: str
    module: str
    distribution: Distribution | None
    planned: tuple[str, ...]
    results: tuple[CaseRecord, ...]
    cleanup_errors: tuple[ErrorRecord, ...] = ()
    unexercised: tuple[str, ...] | None = None

    @classmethod
    def of(cls, pair: Pair, report: ContractReport) -> Entry:
        return cls(
            clean(report.feature_id),
            clean(report.implementation),
            clean(pair.module),
            pair.distribution,
            tuple(clean(case_id) for case_id in pair.case_ids),
            tuple(CaseRecord.of(result) for result in report.results),
            tuple(ErrorRecord.of(error) for error in report.cleanup_errors),
            report.unexercised,
        )

    @classmethod
    def partial(
        cls,
        pair: Pair,
        results: Iterable[CaseResult] = (),
        cleanup_errors: Iterable[BaseException] = (),
    ) -> Entry:
        """The entry of a pair whose run stopped early: the cases it judged, if any."""
        return cls(
            clean(pair.feature_id),
            clean(pair.name),
            clean(pair.module),
            pair.distribution,
            tuple(clean(case_id) for case_id in pair.case_ids),
            tuple(CaseRecord.of(result) for result in results),
            tuple(ErrorRecord.of(error) for error in cleanup_errors),
        )

    @property
    def key(self) -> tuple[str, str]:
        return (self.implementation, self.feature_id)

    @property
    def title(self) -> str:
        return f"{self.feature_id} × {self.implementation}"

    @property
    def duration(self) -> float:
        return sum(result.duration for result in self.results)

    def counts(self) -> dict[CaseStatus, int]:
        counts = dict.fromkeys(CaseStatus, 0)
        for result in self.results:
            counts[result.status] += 1
        return counts

    @property
    def complete(self) -> bool:
        """Whether this run judged every case of the pair, not a share of them."""
        return len(self.results) == len(self.planned)

    @property
    def proven(self) -> bool:
        """
        Whether the report proves anything: a case passed, or failed as the baseline
        knows (known broken is not empty). Only a complete report can prove nothing:
        a shard may hold only unsupported cases of a pair.
        """
        return not self.complete or any(
            record.status is _PASSED
            or (record.baseline is not None and record.baseline.outcome == "known")
            for record in self.results
        )

    def report_offences(self, gate: Gate) -> list[Offence]:
        """The offences of the report that belong to no case: cleanup errors, the gate's rules."""
        return gate.report_offences(
            proven=self.proven,
            cleanup_errors=[str(error) for error in self.cleanup_errors],
            unexercised=self.unexercised,
            complete=self.complete,
        )

    def holds(self, gate: Gate) -> bool:
        """Whether the report holds the gate, with the baseline's say on the cases it lists."""
        return not any(record.offends(gate) for record in self.results) and not (
            self.report_offences(gate)
        )


@final
@dataclass(frozen=True, slots=True)
class RunInfo:
    """
    What ran, where and how.

    :ivar stopped: why the run stopped before it judged every case it selected
        (Ctrl-C); ``None`` for a run that went to its end. A stopped run fails the gate.
    :ivar reject_stale, require_exercised: the gate's options besides ``require_full``.
    :ivar reject_vacuous, probe_unsupported: how the cases were run, as for ``run_contract``.
    """

    conformkit: str
    python: str
    platform: str
    backend: str
    started: str
    finished: str
    targets: tuple[str, ...] = ()
    installed: bool = False
    require_full: bool = False
    select: tuple[str, ...] = ()
    shard: Shard | None = None
    stopped: str | None = None
    reject_stale: bool = False
    require_exercised: bool = False
    reject_vacuous: bool = False
    probe_unsupported: bool = False

    @property
    def gate(self) -> Gate:
        """The gate the run's options ask for."""
        return Gate(
            require_full=self.require_full,
            reject_stale=self.reject_stale,
            require_exercised=self.require_exercised,
        )


ADDED_OPTIONS: Final = ("reject_stale", "require_exercised", "reject_vacuous", "probe_unsupported")
"""The run's options added within version 1 of the JSON report, in :class:`RunInfo`'s order."""


@final
@dataclass(frozen=True, slots=True)
class Matrix:
    """Every entry of a run (or of merged runs), and what the gate makes of them."""

    run: RunInfo
    entries: tuple[Entry, ...]
    baseline: BaselineInfo | None = None
    # The gate's verdict, once judged: every output asks for it, and a run may
    # hold many thousands of cases. A matrix never changes, so neither does this.
    _failing: tuple[Entry, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def stale(self) -> tuple[StaleEntry, ...]:
        return () if self.baseline is None else self.baseline.stale

    def failing(self) -> tuple[Entry, ...]:
        """The entries that fail the gate."""
        if self._failing is None:
            gate = self.run.gate
            failing = tuple(entry for entry in self.entries if not entry.holds(gate))
            object.__setattr__(self, "_failing", failing)
            return failing
        return self._failing

    @property
    def holds(self) -> bool:
        """The gate: the run went to its end, every entry holds and no baseline entry is stale."""
        return self.run.stopped is None and not self.stale and not self.failing()

    def counts(self) -> dict[CaseStatus, int]:
        counts = dict.fromkeys(CaseStatus, 0)
        for entry in self.entries:
            for status, count in entry.counts().items():
                counts[status] += count
        return counts


def now() -> str:
    """The current time, as reports write it: ISO 8601 in UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def run_information(
    backend: str,
    started: str,
    finished: str,
    *,
    targets: Sequence[str] = (),
    installed: bool = False,
    require_full: bool = False,
    select: Sequence[str] = (),
    shard: Shard | None = None,
    stopped: str | None = None,
    reject_stale: bool = False,
    require_exercised: bool = False,
    reject_vacuous: bool = False,
    probe_unsupported: bool = False,
) -> RunInfo:
    """
    What a run was: the versions, the platform, the options and the times.

    Targets and patterns are text as the command line got them: a byte of a path
    that is not UTF-8 becomes U+FFFD, which files can hold.
    """
    import importlib.metadata
    import platform

    try:
        version = importlib.metadata.version("conformkit")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return RunInfo(
        version,
        f"{platform.python_implementation()} {platform.python_version()}",
        platform.platform(),
        backend,
        started,
        finished,
        tuple(clean(target) for target in targets),
        installed,
        require_full,
        tuple(clean(pattern) for pattern in select),
        shard,
        None if stopped is None else clean(stopped),
        reject_stale,
        require_exercised,
        reject_vacuous,
        probe_unsupported,
    )
