"""The JSON output: the versioned report of docs/report-format.md."""

from __future__ import annotations

import json

from ._matrix import Matrix

__all__ = ["render_json"]


def render_json(matrix: Matrix) -> str:
    """The versioned JSON report (docs/report-format.md)."""
    return json.dumps(matrix.to_json(), indent=2, ensure_ascii=False) + "\n"
