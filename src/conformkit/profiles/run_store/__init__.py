"""
A workflow run store: versioned run records with optimistic concurrency, step claims
with leases, and a list of runs.

Passing this profile establishes, for one implementation in one process:

- a new run reads back at version 1, with its params and the initial values of
  the other fields, under a run ID no other run has;
- every field the store declares in ``persisted_fields`` reads back exactly as
  written, by :func:`conformkit.laws.strictly_equal` (the same types all the way
  down), and does not change when the caller changes its own objects afterwards;
  a value that JSON cannot hold is refused or kept exactly, never mangled; a
  field it does not declare (``persisted_fields`` is optional) is refused, or
  kept exactly, never dropped or mangled;
- an update at the current version applies its changes and bumps the version by
  one; an update at any other version raises :exc:`StaleVersion` and changes
  nothing, also when several updates race for the same version;
- a change the store cannot make (``params``, a name outside :data:`FIELDS`) is
  refused with :exc:`ValueError` and changes nothing;
- of several concurrent claims of one step of one run, exactly one wins and the
  others raise :exc:`AlreadyClaimed`; claims of other steps and other runs are
  independent; an unknown run raises :exc:`UnknownRun` everywhere;
- a claim's lease is kept to the millisecond: the claim holds until it
  expires, is then taken over by exactly one of several racers, whose own lease
  runs from then; a claim without a lease never expires (a store whose claims
  never expire declares that case unsupported);
- ``list`` shows every run created, each once, as ``get`` shows it.

It does not establish cross-host safety. The races run in one process: for
:class:`SqliteRunStore` they do contend for real, on separate connections in
separate threads against one database file, but nothing here shows what
happens when several hosts share a database (SQLite's locking is unreliable over
network file systems, and its WAL mode does not work there at all). Nor does it
establish durability across crashes or power loss, that a claim is ever released
before it expires, that a store's own clock is right (the lease case passes the
callers' clock as ``now``), fairness among contenders, or performance.
"""

from __future__ import annotations

from ._api import FIELDS as FIELDS
from ._api import AlreadyClaimed as AlreadyClaimed
from ._api import LeasedRunStore as LeasedRunStore
from ._api import Run as Run
from ._api import RunStore as RunStore
from ._api import RunStoreError as RunStoreError
from ._api import StaleVersion as StaleVersion
from ._api import UnknownRun as UnknownRun
from ._cases import CONTENDERS as CONTENDERS
from ._cases import RunStoreCase as RunStoreCase
from ._cases import feature as feature
from ._cases import suite as suite
from ._reference import MemoryRunStore as MemoryRunStore
from ._reference import MemoryRunStoreImplementation as MemoryRunStoreImplementation
from ._reference import SqliteRunStore as SqliteRunStore
from ._reference import SqliteRunStoreImplementation as SqliteRunStoreImplementation
from ._reference import implementations as implementations

__all__ = [
    "CONTENDERS",
    "FIELDS",
    "AlreadyClaimed",
    "LeasedRunStore",
    "MemoryRunStore",
    "MemoryRunStoreImplementation",
    "Run",
    "RunStore",
    "RunStoreCase",
    "RunStoreError",
    "SqliteRunStore",
    "SqliteRunStoreImplementation",
    "StaleVersion",
    "UnknownRun",
    "feature",
    "implementations",
    "suite",
]

# Each class shows as conformkit.profiles.run_store.Name, whichever submodule defines it:
# in reprs, tracebacks, reports, and where implementations are collected by module.
for _public in (
    AlreadyClaimed,
    LeasedRunStore,
    MemoryRunStore,
    MemoryRunStoreImplementation,
    Run,
    RunStore,
    RunStoreError,
    SqliteRunStore,
    SqliteRunStoreImplementation,
    StaleVersion,
    UnknownRun,
):
    _public.__module__ = __name__
del _public
