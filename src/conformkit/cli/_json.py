"""
The JSON output: the versioned report of docs/report-format.md, written and read
back, and the encoder that writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any, Final, TypeVar, cast, final

from .._collect import Distribution, Shard
from .._exceptions import UsageError
from .._report import CaseStatus
from ._characters import clean
from ._matrix import (
    ADDED_OPTIONS,
    MARKS,
    BaselineInfo,
    BaselineMark,
    CaseRecord,
    Entry,
    ErrorRecord,
    Matrix,
    RunInfo,
    StaleEntry,
)

__all__ = ["FORMAT", "VERSION", "dumps", "from_json", "render_json", "to_json"]

FORMAT: Final = "conformkit.report"
"""The ``format`` of a JSON report."""
VERSION: Final = 1
"""The version of the JSON report's schema; see docs/report-format.md."""

# Each status's text, and back: `status.value` is a descriptor call, which tells
# in a report of many thousands of cases.
_STATUS_TEXT: Final = {status: status.value for status in CaseStatus}
_STATUSES: Final = {status.value: status for status in CaseStatus}


def render_json(matrix: Matrix) -> str:
    """The versioned JSON report (docs/report-format.md)."""
    return dumps(to_json(matrix)) + "\n"


# -- the report as JSON data -----------------------------------------------------------


def to_json(matrix: Matrix) -> dict[str, Any]:
    """The report in the JSON schema of :data:`VERSION`, keys in a stable order."""
    baseline = matrix.baseline
    failing = {id(entry) for entry in matrix.failing()}
    return {
        "format": FORMAT,
        "version": VERSION,
        "verdict": "holds" if matrix.holds else "fails",
        "run": _run_json(matrix.run),
        "counts": {status.value: count for status, count in matrix.counts().items()},
        "reports": [_entry_json(entry, holds=id(entry) not in failing) for entry in matrix.entries],
        "baseline": None if baseline is None else _baseline_json(baseline),
    }


def _error_json(error: ErrorRecord) -> dict[str, Any]:
    return {"type": error.type, "message": error.message, "traceback": error.traceback}


def _case_json(record: CaseRecord) -> dict[str, Any]:
    mark, errors = record.baseline, record.cleanup_errors
    return {
        "case_id": record.case_id,
        "status": _STATUS_TEXT[record.status],
        "reason": record.reason,
        "duration": record.duration,
        "error": None if record.error is None else _error_json(record.error),
        "cleanup_errors": [_error_json(error) for error in errors] if errors else [],
        "baseline": None if mark is None else {"outcome": mark.outcome, "reason": mark.reason},
        "stale": record.stale,
        "slow": record.slow,
    }


def _entry_json(entry: Entry, *, holds: bool) -> dict[str, Any]:
    """The entry in the JSON schema, with the gate's verdict on it."""
    distribution = entry.distribution
    unexercised = entry.unexercised
    return {
        "feature_id": entry.feature_id,
        "implementation": entry.implementation,
        "module": entry.module,
        "distribution": None
        if distribution is None
        else {"name": distribution.name, "version": distribution.version},
        "holds": holds,
        "counts": {status.value: count for status, count in entry.counts().items()},
        "duration": entry.duration,
        "planned": list(entry.planned),
        "results": [_case_json(record) for record in entry.results],
        "cleanup_errors": [_error_json(error) for error in entry.cleanup_errors],
        "unexercised": None if unexercised is None else list(unexercised),
    }


def _run_json(run: RunInfo) -> dict[str, Any]:
    shard = run.shard
    return {
        "conformkit": run.conformkit,
        "python": run.python,
        "platform": run.platform,
        "backend": run.backend,
        "started": run.started,
        "finished": run.finished,
        "targets": list(run.targets),
        "installed": run.installed,
        "require_full": run.require_full,
        "select": list(run.select),
        "shard": None if shard is None else {"index": shard.index, "count": shard.count},
        "stopped": run.stopped,
        "reject_stale": run.reject_stale,
        "require_exercised": run.require_exercised,
        "reject_vacuous": run.reject_vacuous,
        "probe_unsupported": run.probe_unsupported,
    }


def _baseline_json(baseline: BaselineInfo) -> dict[str, Any]:
    return {
        "path": baseline.path,
        "stale": [
            {
                "implementation": stale.implementation,
                "feature_id": stale.feature_id,
                "case_id": stale.case_id,
                "reason": stale.reason,
                "problem": stale.problem,
            }
            for stale in baseline.stale
        ],
    }


# -- reading reports back --------------------------------------------------------------

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
                for option in ADDED_OPTIONS
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


# -- the encoder -----------------------------------------------------------------------


def dumps(value: object) -> str:
    """
    ``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)``, character
    for character, for JSON data: dicts with string keys, lists, strings, finite
    numbers, booleans and ``None``: always strict JSON (RFC 8259), which has no NaN
    and no infinity. With an indent, the standard library encodes in Python, token by
    token through nested generators; this writes each line whole, about twice as
    fast, which a report of many thousands of cases notices.

    :raises TypeError: for a value that is not JSON data.
    :raises ValueError: for a float that is NaN or infinite.
    """
    chunks: list[str] = []
    append = chunks.append

    def scalar(item: object) -> str | None:
        """The JSON of a value that needs no line of its own, or ``None``."""
        if type(item) is str:
            return encode_basestring(item)
        if item is None:
            return "null"
        if type(item) is float:
            text = float.__repr__(item)
            if text[-1] > "9":  # "nan", "inf", "-inf", which strict JSON cannot hold
                raise ValueError(f"Out of range float values are not JSON compliant: {text}")
            return text
        if type(item) is bool:
            return "true" if item else "false"
        if type(item) is int:
            return int.__repr__(item)
        if type(item) is list and not item:
            return "[]"
        if type(item) is dict and not item:
            return "{}"
        return None

    def walk(item: object, indent: str) -> None:
        text = scalar(item)
        if text is not None:
            append(text)
            return
        inner = indent + "  "
        separator = ",\n" + inner
        if type(item) is dict:
            append("{\n" + inner)
            first = True
            for key, member in item.items():
                if type(key) is not str:
                    raise TypeError(f"keys must be strings, not {type(key).__name__}")
                if first:
                    first = False
                else:
                    append(separator)
                text = scalar(member)
                if text is None:
                    append(encode_basestring(key) + ": ")
                    walk(member, inner)
                else:
                    append(encode_basestring(key) + ": " + text)
            append("\n" + indent + "}")
        elif type(item) is list:
            if all(type(member) is str for member in item):
                append("[\n" + inner + separator.join(map(encode_basestring, item)))
            else:
                append("[\n" + inner)
                first = True
                for member in item:
                    if first:
                        first = False
                    else:
                        append(separator)
                    walk(member, inner)
            append("\n" + indent + "]")
        else:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")

    walk(value, "")
    return "".join(chunks)
