"""
The merge of the reports of shards (or of separate runs) into one: each case from
one report only, and every case the runs selected from one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import final

from .._collect import matches
from .._exceptions import UsageError
from ._matrix import ADDED_OPTIONS, BaselineInfo, CaseRecord, Entry, ErrorRecord, Matrix, RunInfo

__all__ = ["merge"]

_MERGED_OPTIONS = (
    ("require_full", "--require-full"),
    ("select", "-k"),
    *((option, f"--{option.replace('_', '-')}") for option in ADDED_OPTIONS),
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
