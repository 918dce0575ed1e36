"""
A run of many pairs of implementation and feature: their results, the gate over
all of them, the versioned JSON form, and the merge of shards' reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, TypeVar, cast, final

from .._collect import Distribution, Pair, Shard, matches
from .._exceptions import UsageError
from .._explain import describe_exception, record_line
from .._report import CaseResult, CaseStatus, ContractReport, Gate
from . import _outcome
from ._baseline import MARKS, BaselineInfo, BaselineMark, StaleEntry
from ._console import clean

FORMAT: Final = "conformkit.report"
"""The ``format`` of a JSON report."""
VERSION: Final = 1
"""The version of the JSON report's schema; see docs/report-format.md."""

# Each status's text, and back: `status.value` is a descriptor call, which tells
# in a report of many thousands of cases.
_STATUS_TEXT: Final = {status: status.value for status in CaseStatus}
_STATUSES: Final = {status.value: status for status in CaseStatus}


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

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, "traceback": self.traceback}


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

    def to_json(self) -> dict[str, Any]:
        mark, errors = self.baseline, self.cleanup_errors
        return {
            "case_id": self.case_id,
            "status": _STATUS_TEXT[self.status],
            "reason": self.reason,
            "duration": self.duration,
            "error": None if self.error is None else self.error.to_json(),
            "cleanup_errors": [error.to_json() for error in errors] if errors else [],
            "baseline": None if mark is None else mark.to_json(),
            "stale": self.stale,
            "slow": self.slow,
        }


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

    def offences(self, gate: Gate) -> list[str]:
        """Why the entry fails the gate, with the baseline's say; empty when it holds."""
        return _outcome.offences(self, gate)

    def to_json(self, *, holds: bool) -> dict[str, Any]:
        """The entry in the JSON schema, with the gate's verdict on it."""
        distribution = self.distribution
        unexercised = self.unexercised
        return {
            "feature_id": self.feature_id,
            "implementation": self.implementation,
            "module": self.module,
            "distribution": None
            if distribution is None
            else {"name": distribution.name, "version": distribution.version},
            "holds": holds,
            "counts": {status.value: count for status, count in self.counts().items()},
            "duration": self.duration,
            "planned": list(self.planned),
            "results": [result.to_json() for result in self.results],
            "cleanup_errors": [error.to_json() for error in self.cleanup_errors],
            "unexercised": None if unexercised is None else list(unexercised),
        }


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

    def to_json(self) -> dict[str, Any]:
        shard = self.shard
        return {
            "conformkit": self.conformkit,
            "python": self.python,
            "platform": self.platform,
            "backend": self.backend,
            "started": self.started,
            "finished": self.finished,
            "targets": list(self.targets),
            "installed": self.installed,
            "require_full": self.require_full,
            "select": list(self.select),
            "shard": None if shard is None else {"index": shard.index, "count": shard.count},
            "stopped": self.stopped,
            "reject_stale": self.reject_stale,
            "require_exercised": self.require_exercised,
            "reject_vacuous": self.reject_vacuous,
            "probe_unsupported": self.probe_unsupported,
        }


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
            failing = tuple(entry for entry in self.entries if not _outcome.holds(entry, gate))
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

    def to_json(self) -> dict[str, Any]:
        """The report in the JSON schema of :data:`VERSION`, keys in a stable order."""
        baseline = self.baseline
        failing = {id(entry) for entry in self.failing()}
        return {
            "format": FORMAT,
            "version": VERSION,
            "verdict": "holds" if self.holds else "fails",
            "run": self.run.to_json(),
            "counts": {status.value: count for status, count in self.counts().items()},
            "reports": [entry.to_json(holds=id(entry) not in failing) for entry in self.entries],
            "baseline": None if baseline is None else baseline.to_json(),
        }


# -- the grid: a feature's cases down, its implementations across ---------------------

SYMBOLS: Final = {
    CaseStatus.PASSED: "✓",
    CaseStatus.FAILED: "✗",
    CaseStatus.UNSUPPORTED: "–",
    CaseStatus.UNAVAILABLE: "!",
}
"""The mark of each status in a grid's cell; the legend says what each means."""
NOT_RUN: Final = "·"
"""The mark of a case an implementation did not run: not selected, or not one of its cases."""


@final
@dataclass(frozen=True, slots=True)
class FeatureGrid:
    """
    One feature's grid: its cases (rows) by the implementations that ran it (columns).

    :ivar entries: the columns: one report per implementation, in the order met.
    :ivar cases: the rows: every case that some column ran, in the feature's order.
    """

    feature_id: str
    entries: tuple[Entry, ...]
    cases: tuple[str, ...]
    _records: tuple[Mapping[str, CaseRecord], ...] = field(repr=False, compare=False)

    def record(self, column: int, case_id: str) -> CaseRecord | None:
        """The result of a case in a column; ``None`` when that implementation did not run it."""
        return self._records[column].get(case_id)

    @property
    def not_run(self) -> bool:
        """Whether a cell is empty: a case that some implementation did not run."""
        return any(len(records) < len(self.cases) for records in self._records)


def feature_grids(entries: Iterable[Entry]) -> list[FeatureGrid]:
    """
    A grid per feature, in the order the features are met: each feature's own
    implementations as its columns, so no column is empty for want of a feature.
    Reports with nothing to say (a shard that ran none of a pair's cases) are left out.
    """
    by_feature: dict[str, list[Entry]] = {}
    for entry in _outcome.shown(entries):
        by_feature.setdefault(entry.feature_id, []).append(entry)
    grids = []
    for feature_id, members in by_feature.items():
        records = tuple({record.case_id: record for record in entry.results} for entry in members)
        ran = set().union(*records)
        order = dict.fromkeys(case for entry in members for case in entry.planned)
        order.update(dict.fromkeys(case for each in records for case in each))
        cases = tuple(case for case in order if case in ran)
        grids.append(FeatureGrid(feature_id, tuple(members), cases, records))
    return grids


def legend(*, why: str = "", not_run: bool = False, separator: str = "  ") -> str:
    """
    What each mark of a grid means.

    :param why: where to find an unsupported case's reason, after its mark's meaning.
    :param not_run: whether to say what an empty cell means too.
    :param separator: what stands between two marks' meanings.
    """
    marks = [f"{SYMBOLS[status]} {status.value}" for status in _LEGEND_ORDER]
    if why:
        marks[2] += f" ({why})"
    if not_run:
        marks.append(f"{NOT_RUN} not run")
    return separator.join(marks)


_LEGEND_ORDER: Final = (
    CaseStatus.PASSED,
    CaseStatus.FAILED,
    CaseStatus.UNSUPPORTED,
    CaseStatus.UNAVAILABLE,
)


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


# -- reading reports back ----------------------------------------------------------

_T = TypeVar("_T")


@final
class _Reader:
    """Checks the shape of a JSON report, naming the file and the place of each mistake."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, expected: str, value: object) -> UsageError:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return UsageError(f"{self.source}: {where} must be {expected}, got {shown}")

    def get(self, data: Mapping[str, Any], key: str, kind: type[_T], where: str) -> _T:
        if key not in data:
            raise UsageError(f"{self.source}: {where} has no {key!r}")
        value = data[key]
        # A bool is not a number here, though Python makes it an int.
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.fail(f"{where}.{key}", _kind_name(kind), value)
        if isinstance(value, str):
            value = clean(value)
        return cast("_T", value)  # checked above

    def seconds(self, data: Mapping[str, Any], key: str, where: str) -> float:
        """A duration: a number of seconds, finite, from 0 to :data:`_LONGEST`."""
        if key not in data:
            raise UsageError(f"{self.source}: {where} has no {key!r}")
        value = data[key]
        if type(value) not in (int, float) or not 0 <= value <= _LONGEST:  # NaN fails too
            raise self.fail(f"{where}.{key}", f"a number of seconds from 0 to {_LONGEST:g}", value)
        return float(value)

    def count(self, data: Mapping[str, Any], key: str, where: str, least: int = 1) -> int:
        """A whole number of at least ``least``."""
        value = self.get(data, key, int, where)
        if value < least:
            raise self.fail(f"{where}.{key}", f"a whole number of at least {least}", value)
        return value

    def optional(self, data: Mapping[str, Any], key: str, kind: type[_T], where: str) -> _T | None:
        if data.get(key) is None:
            if key not in data:
                raise UsageError(f"{self.source}: {where} has no {key!r}")
            return None
        return self.get(data, key, kind, where)

    def strings(self, data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
        values = self.get(data, key, list, where)
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise self.fail(f"{where}.{key}[{index}]", "a string", value)
        return tuple(clean(value) for value in values)

    def objects(self, data: Mapping[str, Any], key: str, where: str) -> list[dict[str, Any]]:
        values = self.get(data, key, list, where)
        for index, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.fail(f"{where}.{key}[{index}]", "an object", value)
        return values

    def error(self, data: dict[str, Any], where: str) -> ErrorRecord:
        return ErrorRecord(
            self.get(data, "type", str, where),
            self.get(data, "message", str, where),
            self.get(data, "traceback", str, where),
        )

    def case(self, data: dict[str, Any], where: str) -> CaseRecord:
        status = self.get(data, "status", str, where)
        if status not in CaseStatus.__members__.values():
            raise self.fail(f"{where}.status", "one of " + ", ".join(CaseStatus), status)
        error = self.optional(data, "error", dict, where)
        mark = self.optional(data, "baseline", dict, where)
        baseline = None
        if mark is not None:
            outcome = self.get(mark, "outcome", str, f"{where}.baseline")
            if outcome not in MARKS:
                expected = f"{', '.join(map(repr, MARKS[:-1]))} or {MARKS[-1]!r}"
                raise self.fail(f"{where}.baseline.outcome", expected, outcome)
            baseline = BaselineMark(
                outcome,
                self.get(mark, "reason", str, f"{where}.baseline"),
            )
        return CaseRecord(
            self.get(data, "case_id", str, where),
            CaseStatus(status),
            self.optional(data, "reason", str, where),
            self.seconds(data, "duration", where),
            None if error is None else self.error(error, f"{where}.error"),
            tuple(
                self.error(item, f"{where}.cleanup_errors[{index}]")
                for index, item in enumerate(self.objects(data, "cleanup_errors", where))
            ),
            baseline,
            # Added to version 1: reports written before it have no "stale".
            self.get(data, "stale", bool, where) if "stale" in data else False,
            # Added to version 1 too, later.
            self.get(data, "slow", bool, where) if "slow" in data else False,
        )

    def entry(self, data: dict[str, Any], where: str) -> Entry:
        distribution = self.optional(data, "distribution", dict, where)
        planned = self.strings(data, "planned", where)
        results = tuple(
            _plain_case(item) or self.case(item, f"{where}.results[{index}]")
            for index, item in enumerate(self.objects(data, "results", where))
        )
        known = set(planned)
        unplanned = [result.case_id for result in results if result.case_id not in known]
        if unplanned:
            raise UsageError(
                f"{self.source}: {where} has results for unplanned case(s) {unplanned}"
            )
        return Entry(
            self.get(data, "feature_id", str, where),
            self.get(data, "implementation", str, where),
            self.get(data, "module", str, where),
            None
            if distribution is None
            else Distribution(
                self.get(distribution, "name", str, f"{where}.distribution"),
                self.get(distribution, "version", str, f"{where}.distribution"),
            ),
            planned,
            results,
            tuple(
                self.error(item, f"{where}.cleanup_errors[{index}]")
                for index, item in enumerate(self.objects(data, "cleanup_errors", where))
            ),
            # Added to version 1: reports written before it have no "unexercised".
            None if data.get("unexercised") is None else self.strings(data, "unexercised", where),
        )

    def run(self, data: dict[str, Any]) -> RunInfo:
        shard = self.optional(data, "shard", dict, "run")
        if shard is not None:
            index = self.count(shard, "index", "run.shard")
            count = self.count(shard, "count", "run.shard")
            if index > count:
                raise self.fail("run.shard.index", f"at most the count, {count}", index)
        return RunInfo(
            self.get(data, "conformkit", str, "run"),
            self.get(data, "python", str, "run"),
            self.get(data, "platform", str, "run"),
            self.get(data, "backend", str, "run"),
            self.get(data, "started", str, "run"),
            self.get(data, "finished", str, "run"),
            self.strings(data, "targets", "run"),
            self.get(data, "installed", bool, "run"),
            self.get(data, "require_full", bool, "run"),
            self.strings(data, "select", "run"),
            None if shard is None else Shard(index, count),
            # Added to version 1: reports written before it have no "stopped".
            self.optional(data, "stopped", str, "run") if "stopped" in data else None,
            # Added to version 1, as were the options below.
            *(
                self.get(data, option, bool, "run") if option in data else False
                for option in _ADDED_OPTIONS
            ),
        )

    def baseline(self, data: dict[str, Any]) -> BaselineInfo:
        return BaselineInfo(
            self.get(data, "path", str, "baseline"),
            tuple(
                StaleEntry(
                    *(
                        self.get(item, key, str, f"baseline.stale[{index}]")
                        for key in ("implementation", "feature_id", "case_id", "reason", "problem")
                    )
                )
                for index, item in enumerate(self.objects(data, "stale", "baseline"))
            ),
        )


def _plain_case(data: dict[str, Any]) -> CaseRecord | None:
    """
    A result with nothing but plain values (no error, no cleanup error, no baseline
    mark), as most are, read at once; ``None`` for any other, which the reader then
    reads field by field, naming the first mistake.
    """
    try:
        case_id, status, reason = data["case_id"], data["status"], data["reason"]
        duration, stale = data["duration"], data.get("stale", False)
        slow = data.get("slow", False)
        if data["error"] is not None or data["baseline"] is not None:
            return None
        if data["cleanup_errors"] != []:
            return None
    except KeyError:
        return None
    if (
        type(case_id) is not str
        or type(status) is not str
        or status not in _STATUSES
        or not (reason is None or type(reason) is str)
        or type(duration) is not float
        or not 0.0 <= duration <= _LONGEST  # NaN fails too
        or type(stale) is not bool
        or type(slow) is not bool
    ):
        return None
    return CaseRecord(
        clean(case_id),
        _STATUSES[status],
        None if reason is None else clean(reason),
        duration,
        None,
        (),
        None,
        stale,
        slow,
    )


_LONGEST: Final = 1e9
"""The longest duration a report may hold, in seconds (some 30 years): any sum stays finite."""


def _kind_name(kind: type[Any]) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "an object",
    }.get(kind, kind.__name__)


def from_json(data: object, source: str) -> Matrix:
    """
    Read a report back from its JSON form.

    :param source: the file it came from, for messages.
    :raises UsageError: naming the file and the place of the first mistake.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f'{source} is not a conformkit report (no "format": {FORMAT!r})')
    version = data.get("version")
    if type(version) is not int or version != VERSION:
        raise UsageError(
            f"{source} is a report of schema version {version!r}; this conformkit reads "
            f"version {VERSION}"
        )
    reader = _Reader(source)
    run = reader.run(reader.get(data, "run", dict, "report"))
    entries = tuple(
        reader.entry(item, f"reports[{index}]")
        for index, item in enumerate(reader.objects(data, "reports", "report"))
    )
    baseline = reader.optional(data, "baseline", dict, "report")
    return Matrix(run, entries, None if baseline is None else reader.baseline(baseline))


# -- merging -----------------------------------------------------------------------


_ADDED_OPTIONS = ("reject_stale", "require_exercised", "reject_vacuous", "probe_unsupported")
"""The run's options added within version 1, in the order of :class:`RunInfo`'s fields."""

_MERGED_OPTIONS = (
    ("require_full", "--require-full"),
    ("select", "-k"),
    *((option, f"--{option.replace('_', '-')}") for option in _ADDED_OPTIONS),
)
"""The options that the reports merged must share, each as the command line spells it."""


def merge(reports: Sequence[tuple[Matrix, str]]) -> Matrix:
    """
    Combine the reports of shards (or of separate runs) into one.

    Each case may come from one report only, and together the reports must hold
    every case their runs selected: the merge of every shard of a run equals the
    unsharded run, timings aside.

    :param reports: each report with the file it came from, for messages.
    :raises UsageError: for reports that disagree, overlap or leave cases out.
    """
    if not reports:
        raise UsageError("merge needs at least one report")
    first, first_source = reports[0]
    for matrix, source in reports[1:]:
        for option, shown in _MERGED_OPTIONS:
            if getattr(matrix.run, option) != getattr(first.run, option):
                raise UsageError(
                    f"{source} and {first_source} were run with different {shown} options; "
                    f"only reports of runs with the same options can be merged"
                )
        if (matrix.baseline is None) != (first.baseline is None):
            raise UsageError(
                f"{source} and {first_source} disagree on --baseline: one was judged with a "
                f"baseline and the other without"
            )
    merging: dict[tuple[str, str], _Merging] = {}
    for matrix, source in reports:
        for entry in matrix.entries:
            known = merging.get(entry.key)
            if known is None:
                merging[entry.key] = _Merging(entry, source)
            else:
                known.add(entry, source)
    select = first.run.select
    merged: list[Entry] = []
    for each in merging.values():
        base, results = each.base, each.results
        expected = (
            [case for case in base.planned if matches(select, case)] if select else base.planned
        )
        missing = [case for case in expected if case not in results]
        if missing:
            shards = sorted(
                {str(matrix.run.shard) for matrix, _ in reports if matrix.run.shard is not None}
            )
            found = f" (found shard(s) {', '.join(shards)})" if shards else ""
            stopped = [
                f"; {source} is of a run that stopped early: {matrix.run.stopped}"
                for matrix, source in reports
                if matrix.run.stopped is not None
            ]
            found += "".join(stopped[:1])
            raise UsageError(
                f"the reports lack {len(missing)} case(s) of {base.title}, "
                f"{', '.join(map(repr, missing[:5]))}{', ...' if len(missing) > 5 else ''}: "
                f"merge the reports of every shard{found}"
            )
        merged.append(
            replace(
                base,
                results=tuple(results[case] for case in expected),
                cleanup_errors=tuple(each.cleanup_errors),
                unexercised=each.unexercised,
            )
        )
    return Matrix(
        _merge_runs([matrix.run for matrix, _ in reports]), tuple(merged), _merge_baselines(reports)
    )


@final
class _Merging:
    """What the reports have given so far of one implementation of one feature."""

    __slots__ = ("base", "cleanup_errors", "results", "source", "sources", "unexercised")

    def __init__(self, entry: Entry, source: str) -> None:
        self.base = entry
        self.source = source
        self.results: dict[str, CaseRecord] = {}
        self.sources: dict[str, str] = {}  # the report each case came from
        self.cleanup_errors: list[ErrorRecord] = []
        self.unexercised = entry.unexercised
        self.take(entry, source)

    def add(self, entry: Entry, source: str) -> None:
        base = self.base
        if (base.planned, base.module, base.distribution) != (
            entry.planned,
            entry.module,
            entry.distribution,
        ):
            raise UsageError(
                f"{source} and {self.source} disagree on {entry.title} (its cases, module "
                f"or distribution); were they run from the same code?"
            )
        # An operation is unexercised when no report's cases called it; a report
        # that did not record calls leaves the merge unable to tell.
        if self.unexercised is not None and entry.unexercised is not None:
            called = set(self.unexercised).difference(entry.unexercised)
            self.unexercised = tuple(name for name in self.unexercised if name not in called)
        else:
            self.unexercised = None
        self.take(entry, source)

    def take(self, entry: Entry, source: str) -> None:
        results, sources = self.results, self.sources
        for result in entry.results:
            if result.case_id in results:
                raise UsageError(
                    f"case {result.case_id!r} of {entry.title} is in both "
                    f"{sources[result.case_id]} and {source}; the reports overlap "
                    f"(the same shard twice, or runs of the same targets)"
                )
            results[result.case_id] = result
            sources[result.case_id] = source
        self.cleanup_errors += entry.cleanup_errors


def _merge_runs(runs: Sequence[RunInfo]) -> RunInfo:
    def joined(values: Sequence[str]) -> str:
        return ", ".join(dict.fromkeys(values))

    first = runs[0]
    stops = [run.stopped for run in runs if run.stopped is not None]
    return RunInfo(
        joined([run.conformkit for run in runs]),
        joined([run.python for run in runs]),
        joined([run.platform for run in runs]),
        joined([run.backend for run in runs]),
        min((run.started for run in runs), key=_instant),
        max((run.finished for run in runs), key=_instant),
        tuple(dict.fromkeys(target for run in runs for target in run.targets)),
        any(run.installed for run in runs),
        first.require_full,
        first.select,
        None,
        None if not stops else "; ".join(dict.fromkeys(stops)),
        first.reject_stale,
        first.require_exercised,
        first.reject_vacuous,
        first.probe_unsupported,
    )


def _instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _merge_baselines(reports: Sequence[tuple[Matrix, str]]) -> BaselineInfo | None:
    first = reports[0][0].baseline
    if first is None:
        return None
    # Every shard sees the whole baseline, so each reports the same stale entries.
    stale = dict.fromkeys(
        entry for matrix, _ in reports if matrix.baseline for entry in matrix.baseline.stale
    )
    return BaselineInfo(first.path, tuple(stale))
