"""
Ready-made profiles: contracts for common interfaces, each proven against an
in-memory reference implementation and a real SQLite-backed one.

Each profile is a module exposing its API protocol, its error types, ``feature``,
``suite``, its implementations and ``implementations``, a tuple of one instance
of each bundled implementation.
"""

from __future__ import annotations

__all__ = ["BUNDLED", "EXTRAS"]

BUNDLED: tuple[str, ...] = (
    "mapping",
    "durable_mapping",
    "workspace",
    "session_events",
    "run_store",
    "invocation",
)
"""The bundled profiles, as module names under ``conformkit.profiles``."""

EXTRAS: dict[str, tuple[str, str]] = {"invocation": ("httpx", "http")}
"""
The bundled profiles that need an optional extra: for each, the module it
imports and the extra that installs it (``pip install 'conformkit[http]'``).
``conformkit demo`` leaves out, and names, a profile whose module is missing.
"""
