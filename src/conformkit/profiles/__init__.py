"""
Ready-made profiles: contracts for common interfaces, each proven against an
in-memory reference implementation and a real SQLite-backed one.

Each profile is a module exposing its API protocol, its error types, ``feature``,
``suite``, its implementations and ``implementations``, a tuple of one instance
of each bundled implementation.
"""

from __future__ import annotations

__all__ = ["BUNDLED"]

BUNDLED: tuple[str, ...] = (
    "mapping",
    "durable_mapping",
    "workspace",
    "session_events",
    "run_store",
    "invocation",
)
"""The bundled profiles, as module names under ``conformkit.profiles``."""
