"""
The grid of a feature: its cases down, its implementations across, a mark in each
cell; the matrix that the text, Markdown and HTML outputs draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, final

from .._report import CaseStatus
from ._outcome import shown

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ._matrix import CaseRecord, Entry

__all__ = ["NOT_RUN", "SYMBOLS", "FeatureGrid", "feature_grids", "legend"]

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
    for entry in shown(entries):
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
