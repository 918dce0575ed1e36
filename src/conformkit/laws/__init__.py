"""Reusable laws to check inside any case: races, cancellation, round trips, call recording."""

from __future__ import annotations

from .._exceptions import LawViolation as LawViolation

__all__ = [
    "LawViolation",
]
