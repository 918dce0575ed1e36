"""Baselines: the known failing cases of each implementation, a list that can only shrink."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, final

from .._exceptions import UsageError
from .._feature import suggest
from .._report import CaseStatus
from .._util import one_line
from ._characters import clean
from ._matrix import BaselineInfo, BaselineMark, StaleEntry
from ._outcome import case_outcome, said

if TYPE_CHECKING:
    from .._report import Gate
    from ._matrix import CaseRecord, Matrix

BASELINE_VERSION: Final = 1
"""The version of the baseline file format; see docs/report-format.md."""

Key = tuple[str, str, str]
"""A baseline entry's key: implementation, feature ID, case ID."""

_SUFFIXES: Final = (".toml", ".json")


@final
@dataclass(frozen=True, slots=True)
class Baseline:
    """
    Known failing cases, each with the reason it is known to fail.

    :ivar path: the file it was read from, or will be written to.
    :ivar entries: reasons by (implementation, feature ID, case ID).
    """

    path: str
    entries: dict[Key, str] = field(default_factory=dict)


@final
@dataclass(frozen=True, slots=True)
class BaselineUpdate:
    """What rewriting a baseline from a run changed."""

    baseline: Baseline
    added: tuple[Key, ...]
    removed: tuple[Key, ...]
    kept: tuple[Key, ...]

    def __str__(self) -> str:
        return (
            f"baseline {self.baseline.path}: {len(self.kept)} kept, {len(self.added)} added, "
            f"{len(self.removed)} removed"
        )


def _check_suffix(path: str) -> str:
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in _SUFFIXES:
        raise UsageError(f"baseline {path!r} must be a .toml or a .json file")
    return suffix


def load_baseline(path: str, *, missing_ok: bool = False) -> Baseline:
    """
    Read a baseline file, TOML or JSON by its suffix.

    :param missing_ok: an absent file is an empty baseline (for ``--update-baseline``).
    :raises UsageError: naming the file and what is wrong with it.
    """
    import tomllib

    suffix = _check_suffix(path)
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except FileNotFoundError as error:
        if missing_ok:
            return Baseline(path)
        raise UsageError(
            f"baseline {path!r}: no such file (--update-baseline writes one from a run)"
        ) from error
    except OSError as error:
        raise UsageError(f"cannot read baseline {path!r}: {error.strerror or error}") from error
    try:
        text = raw.decode("utf-8")
        data: object = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as error:
        kind = "TOML" if suffix == ".toml" else "JSON"
        raise UsageError(f"baseline {path!r} is not valid {kind}: {error}") from error
    return Baseline(path, _read_entries(path, data))


def _read_entries(path: str, data: object) -> dict[Key, str]:
    where = f"baseline {path!r}"
    if not isinstance(data, dict):
        raise UsageError(f"{where} must hold a table with 'version' and 'implementations'")
    unknown = sorted(set(data) - {"version", "implementations"})
    if unknown:
        raise UsageError(
            f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; "
            f"it holds 'version' and 'implementations'"
        )
    version = data.get("version")
    # Exactly the integer: `true` and `1.0` are equal to 1 in Python, not in the format.
    if type(version) is not int or version != BASELINE_VERSION:
        raise UsageError(f"{where} must say version = {BASELINE_VERSION}, got {version!r}")
    implementations = data.get("implementations", {})
    entries: dict[Key, str] = {}
    for implementation, features in _table(where, "implementations", implementations).items():
        place = f"implementations.{implementation}"
        for feature_id, cases in _table(where, place, features).items():
            for case_id, reason in _table(where, f"{place}.{feature_id}", cases).items():
                if not isinstance(reason, str) or not reason.strip():
                    raise UsageError(
                        f"{where}: {place}.{feature_id}.{case_id} needs a non-empty reason, "
                        f"got {reason!r}"
                    )
                entries[clean(implementation), clean(feature_id), clean(case_id)] = clean(reason)
    return entries


def _table(where: str, place: str, value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise UsageError(f"{where}: {place} must be a table, got {value!r}")
    return value


def apply_baseline(matrix: Matrix, baseline: Baseline) -> Matrix:
    """
    Mark each case the baseline lists, and find the entries that are stale.

    A listed case that still fails is ``known``, which the gate tolerates; one that
    passed is an ``unexpected-pass``; one that no longer fails without passing is
    ``stale``. An entry naming an implementation, feature or case the run did not
    collect is a stale entry. Only the last three fail the gate.
    """
    gate = matrix.run.gate
    planned = {entry.key: entry.planned for entry in matrix.entries}
    lookup: dict[tuple[str, str], frozenset[str]] = {}
    stale: list[StaleEntry] = []
    for (implementation, feature_id, case_id), reason in baseline.entries.items():
        cases = planned.get((implementation, feature_id))
        if cases is None:
            names = [name for name, feature in planned if feature == feature_id]
            problem = (
                f"no implementation {implementation!r} of feature {feature_id!r} ran"
                f"{suggest(implementation, names)}"
            )
            stale.append(StaleEntry(implementation, feature_id, case_id, reason, problem))
        elif case_id not in lookup.setdefault((implementation, feature_id), frozenset(cases)):
            problem = f"{implementation} has no case {case_id!r}{suggest(case_id, cases)}"
            stale.append(StaleEntry(implementation, feature_id, case_id, reason, problem))

    def mark(implementation: str, feature_id: str, result: CaseRecord) -> CaseRecord:
        reason = baseline.entries.get((implementation, feature_id, result.case_id))
        if reason is None:
            return result if result.baseline is None else replace(result, baseline=None)
        if gate.offends(result):
            return replace(result, baseline=BaselineMark("known", reason))
        if result.status is CaseStatus.PASSED:
            return replace(result, baseline=BaselineMark("unexpected-pass", reason))
        return replace(result, baseline=BaselineMark("stale", reason))

    entries = tuple(
        replace(
            entry,
            results=tuple(
                mark(entry.implementation, entry.feature_id, result) for result in entry.results
            ),
        )
        for entry in matrix.entries
    )
    info = BaselineInfo(clean(baseline.path), tuple(stale))
    return replace(matrix, entries=entries, baseline=info)


def update_baseline(matrix: Matrix, old: Baseline) -> BaselineUpdate:
    """
    The baseline that the run would hold against: its failing cases, nothing else.

    An entry that remains keeps its reason; a new one takes the case's reason (edit
    it to say why). A case the run did not run (``-k``, ``--shard``) keeps the
    entry it had, unless that entry is stale.
    """
    gate = matrix.run.gate
    new: dict[Key, str] = {}
    for entry in sorted(matrix.entries, key=lambda entry: entry.key):
        ran = {result.case_id: result for result in entry.results}
        for case_id in entry.planned:
            key = (entry.implementation, entry.feature_id, case_id)
            result = ran.get(case_id)
            if result is None:
                if key in old.entries:
                    new[key] = old.entries[key]
            elif gate.offends(result):
                new[key] = old.entries.get(key) or _new_reason(result, gate)
    return BaselineUpdate(
        Baseline(old.path, new),
        tuple(key for key in new if key not in old.entries),
        tuple(key for key in old.entries if key not in new),
        tuple(key for key in new if key in old.entries),
    )


def _new_reason(result: CaseRecord, gate: Gate) -> str:
    """The reason a new entry starts with: what the report says of the case."""
    outcome = case_outcome(replace(result, baseline=None), gate)
    return one_line(said(outcome, result.status) or result.status.value, 200)


def render_baseline(baseline: Baseline) -> str:
    """The baseline as its file holds it: TOML or JSON by the path's suffix."""
    suffix = _check_suffix(baseline.path)
    nested: dict[str, dict[str, dict[str, str]]] = {}
    for (implementation, feature_id, case_id), reason in baseline.entries.items():
        nested.setdefault(implementation, {}).setdefault(feature_id, {})[case_id] = reason
    if suffix == ".json":
        data = {"version": BASELINE_VERSION, "implementations": nested}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    lines = [
        "# Known failing cases, per implementation and feature, each with its reason.",
        "# `conformkit run --baseline` tolerates them; a case that passes again, or an",
        "# entry for a case that is gone, fails the gate until the entry is removed.",
        f"version = {BASELINE_VERSION}",
    ]
    for implementation, features in nested.items():
        for feature_id, cases in features.items():
            lines += ["", f"[implementations.{_toml_key(implementation)}.{_toml_key(feature_id)}]"]
            lines += [
                f"{_toml_key(case)} = {_toml_string(reason)}" for case, reason in cases.items()
            ]
    return "\n".join(lines) + "\n"


_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ESCAPES: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
