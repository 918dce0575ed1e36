"""The run-store profile's reference stores, in memory and on SQLite, and its implementations."""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import sqlite3
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Final, final

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..._implementation import FeatureImplementation
from ..._scope import FeatureScope
from .._support import (
    PathAndNamespace,
    connect,
    scope_database,
    transaction,
)
from ._api import (
    FIELDS,
    INITIAL,
    AlreadyClaimed,
    Run,
    RunStore,
    StaleVersion,
    UnknownRun,
)
from ._cases import RunStoreCase, feature

# --------------------------------------------------------------------------- reference stores


def _check_json(
    name: str, value: object, path: str = "", active: frozenset[int] = frozenset()
) -> None:
    """Raise TypeError (ValueError for NaN, an infinity or a cycle) unless ``value`` is JSON."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return
    where = f"{name}{path}"
    if isinstance(value, float) and kind is float:
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}, which JSON cannot hold; use None or a string")
        return
    if id(value) in active:
        raise ValueError(f"{where} contains itself, which JSON cannot hold")
    inside = active | {id(value)}
    if isinstance(value, list) and kind is list:
        for index, item in enumerate(value):
            _check_json(name, item, f"{path}[{index}]", inside)
        return
    if isinstance(value, dict) and kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(
                    f"{where} has the key {key!r} of type {type(key).__name__}; JSON keys are str"
                )
            _check_json(name, item, f"{path}[{key!r}]", inside)
        return
    raise TypeError(
        f"{where} is a {kind.__qualname__}, {value!r}, which JSON cannot hold; a run store "
        f"keeps None, bool, int, float, str, list and dict with str keys"
    )


def _checked_params(params: Mapping[str, object]) -> dict[str, object]:
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of str to JSON values, got {params!r}")
    copied = dict(params)
    _check_json("params", copied)
    return copy.deepcopy(copied)


def _checked_changes(persisted: frozenset[str], changes: Mapping[str, object]) -> dict[str, object]:
    if not isinstance(changes, Mapping):
        raise TypeError(f"changes must be a mapping of field name to value, got {changes!r}")
    for name, value in changes.items():
        if name == "params":
            raise ValueError(
                "a run's params are fixed when it is created; update cannot change them"
            )
        if name not in persisted:
            raise ValueError(
                f"update cannot set {name!r}: this store persists only {sorted(persisted)!r}"
            )
        _check_json(name, value)
    return copy.deepcopy(dict(changes))


def _checked_lease(now: float | None, lease: float | None) -> tuple[float, float | None]:
    """The clock reading (the wall clock's for ``None``) and the lease, checked."""
    if lease is not None and (
        type(lease) not in (int, float) or not math.isfinite(lease) or lease <= 0
    ):
        raise ValueError(
            f"lease must be a positive finite number of seconds or None, got {lease!r}"
        )
    if now is None:
        return time.time(), lease
    if type(now) not in (int, float) or not math.isfinite(now):
        raise ValueError(f"now must be a finite number of seconds or None, got {now!r}")
    return float(now), lease


@dataclass(slots=True)
class _Stored:
    version: int
    fields: dict[str, object]


@final
class MemoryRunStore:
    """
    The reference implementation: runs and claims in dicts, in one event loop.

    Each operation yields to the event loop once, first, and then does all its
    work without awaiting, so checking and setting are one step. Values are
    checked as :class:`SqliteRunStore` checks them and copied in and out.
    Not safe to share between threads.
    """

    persisted_fields: Final = frozenset(FIELDS)
    """Every field of :data:`FIELDS`."""

    def __init__(self) -> None:
        self._runs: dict[str, _Stored] = {}
        # The expiry of each claim on the callers' clock; None for one held for ever.
        self._claims: dict[tuple[str, str], float | None] = {}
        self._numbers = itertools.count(1)

    def __repr__(self) -> str:
        return f"<MemoryRunStore of {len(self._runs)} run(s)>"

    def _stored(self, run_id: str) -> _Stored:
        try:
            return self._runs[run_id]
        except KeyError:
            raise UnknownRun(f"no run has the ID {run_id!r}") from None

    def _snapshot(self, run_id: str) -> Run:
        stored = self._stored(run_id)
        return Run(run_id, stored.version, copy.deepcopy(stored.fields))

    async def create(self, params: Mapping[str, object]) -> str:
        """Create a run at version 1; see :meth:`RunStore.create`."""
        await anyio.lowlevel.checkpoint()
        fields = {"params": _checked_params(params), **copy.deepcopy(dict(INITIAL))}
        run_id = f"run-{next(self._numbers)}"
        self._runs[run_id] = _Stored(1, fields)
        return run_id

    async def get(self, run_id: str) -> Run:
        """Return a snapshot of the run; see :meth:`RunStore.get`."""
        await anyio.lowlevel.checkpoint()
        return self._snapshot(run_id)

    async def update(
        self, run_id: str, changes: Mapping[str, object], *, expected_version: int
    ) -> Run:
        """Compare the version and set the changes, as one step; see :meth:`RunStore.update`."""
        await anyio.lowlevel.checkpoint()
        stored = self._stored(run_id)
        checked = _checked_changes(self.persisted_fields, changes)
        if stored.version != expected_version:
            raise StaleVersion(
                f"run {run_id!r} is at version {stored.version}, not {expected_version!r}"
            )
        stored.fields.update(checked)
        stored.version += 1
        return self._snapshot(run_id)

    async def claim_step(
        self, run_id: str, step: str, *, now: float | None = None, lease: float | None = None
    ) -> None:
        """Claim the step, as one step; see :meth:`RunStore.claim_step`."""
        await anyio.lowlevel.checkpoint()
        at, lease = _checked_lease(now, lease)
        self._stored(run_id)
        key = (run_id, step)
        if key in self._claims:
            expiry = self._claims[key]
            if expiry is None or at < expiry:
                raise AlreadyClaimed(f"step {step!r} of run {run_id!r} is already claimed")
        self._claims[key] = None if lease is None else at + lease

    async def list(self) -> Sequence[Run]:
        """Every run, in the order they were created; see :meth:`RunStore.list`."""
        await anyio.lowlevel.checkpoint()
        return [self._snapshot(run_id) for run_id in self._runs]


_RUNS: Final = "run_store_runs"
_CLAIMS: Final = "run_store_step_claims"
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {_RUNS} ("
    "run_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, "
    + ", ".join(f"{name} TEXT NOT NULL" for name in FIELDS)
    + ")",
    f"CREATE TABLE IF NOT EXISTS {_CLAIMS} ("
    "run_id TEXT NOT NULL, step TEXT NOT NULL, expires_at REAL, "
    "PRIMARY KEY (run_id, step)) WITHOUT ROWID",
)


def _encode(value: object) -> str:
    # ASCII-only JSON: any str, even one SQLite could not store as UTF-8 text, survives.
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


@final
class SqliteRunStore(PathAndNamespace):
    """
    A run store in a SQLite database file, through the standard library's :mod:`sqlite3`.

    Every operation runs in a worker thread (:func:`anyio.to_thread.run_sync`) on a
    connection of its own, opened and closed for it, so the event loop never waits
    for the database and concurrent operations contend in the database itself:
    updates are a compare-and-set inside a ``BEGIN IMMEDIATE`` transaction, and a
    claim is a row whose primary key is the run and the step. Locks are SQLite's,
    with a busy timeout; there is no lock in Python. Safe to share between tasks
    and threads, and between processes on one host.

    Each field is a column of JSON text; values that JSON cannot hold exactly are
    refused with :exc:`TypeError` (or :exc:`ValueError` for NaN and infinities).

    Call :meth:`create_schema` once before use::

        store = SqliteRunStore("runs.sqlite3")
        await store.create_schema()
        run_id = await store.create({"input": "s3://bucket/key"})

    :param path: the database file; created if absent.
    :param namespace: a prefix for the IDs of the runs this store creates, so that
        :meth:`delete_namespace` can delete them; runs of other namespaces in the
        same file stay readable.
    :param busy_timeout: seconds an operation waits for another connection's lock
        before it fails with :exc:`sqlite3.OperationalError`.
    """

    persisted_fields: Final = frozenset(FIELDS)
    """Every field of :data:`FIELDS`."""

    __slots__ = ("_busy_timeout", "_namespace", "_path")

    def __init__(
        self, path: str | os.PathLike[str], *, namespace: str = "", busy_timeout: float = 10.0
    ) -> None:
        self._path = os.fspath(path)
        self._namespace = namespace
        self._busy_timeout = busy_timeout

    def __repr__(self) -> str:
        namespace = f", namespace={self._namespace!r}" if self._namespace else ""
        return f"SqliteRunStore({self._path!r}{namespace})"

    def _connect(self) -> sqlite3.Connection:
        return connect(self._path, timeout=self._busy_timeout)

    async def create_schema(self) -> None:
        """Create the tables if they do not exist, and put the database in WAL mode."""

        def in_thread() -> None:
            with closing(self._connect()) as connection:
                connection.execute("PRAGMA journal_mode = WAL")
                for statement in _SCHEMA:
                    connection.execute(statement)
                columns = {row[1] for row in connection.execute(f"PRAGMA table_info({_CLAIMS})")}
                if "expires_at" not in columns:  # a database from before claims had leases
                    with transaction(connection):
                        connection.execute(f"ALTER TABLE {_CLAIMS} ADD COLUMN expires_at REAL")

        await anyio.to_thread.run_sync(in_thread)

    async def create(self, params: Mapping[str, object]) -> str:
        """Create a run at version 1; see :meth:`RunStore.create`."""
        row = {"params": _checked_params(params), **INITIAL}
        run_id = f"{self._namespace}{uuid.uuid4().hex}"
        values = (run_id, 1, *(_encode(row[name]) for name in FIELDS))

        def in_thread() -> None:
            with closing(self._connect()) as connection:
                connection.execute(
                    f"INSERT INTO {_RUNS} (run_id, version, {', '.join(FIELDS)}) "
                    f"VALUES ({', '.join('?' * len(values))})",
                    values,
                )

        await anyio.to_thread.run_sync(in_thread)
        return run_id

    @staticmethod
    def _read(connection: sqlite3.Connection, run_id: str) -> Run:
        row = connection.execute(
            f"SELECT version, {', '.join(FIELDS)} FROM {_RUNS} WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise UnknownRun(f"no run has the ID {run_id!r}")
        version, *texts = row
        return Run(
            run_id,
            version,
            {name: json.loads(text) for name, text in zip(FIELDS, texts, strict=True)},
        )

    async def get(self, run_id: str) -> Run:
        """Return a snapshot of the run; see :meth:`RunStore.get`."""

        def in_thread() -> Run:
            with closing(self._connect()) as connection:
                return self._read(connection, run_id)

        return await anyio.to_thread.run_sync(in_thread)

    async def update(
        self, run_id: str, changes: Mapping[str, object], *, expected_version: int
    ) -> Run:
        """Compare the version and set the changes, one transaction; see :meth:`RunStore.update`."""
        checked = _checked_changes(self.persisted_fields, changes)
        # The names are checked against FIELDS above: only they reach the SQL text.
        assignments = "".join(f", {name} = ?" for name in checked)
        values = (*(_encode(value) for value in checked.values()), run_id, expected_version)

        def in_thread() -> Run:
            with closing(self._connect()) as connection, transaction(connection):
                cursor = connection.execute(
                    f"UPDATE {_RUNS} SET version = version + 1{assignments} "
                    "WHERE run_id = ? AND version = ?",
                    values,
                )
                if cursor.rowcount == 0:
                    current = self._read(connection, run_id)  # raises UnknownRun
                    raise StaleVersion(
                        f"run {run_id!r} is at version {current.version}, not {expected_version!r}"
                    )
                return self._read(connection, run_id)

        return await anyio.to_thread.run_sync(in_thread)

    async def claim_step(
        self, run_id: str, step: str, *, now: float | None = None, lease: float | None = None
    ) -> None:
        """
        Claim the step: a primary key decides, and an expired claim is taken over in
        the same statement; see :meth:`RunStore.claim_step`.
        """
        at, lease = _checked_lease(now, lease)
        expiry = None if lease is None else at + lease

        def in_thread() -> None:
            with closing(self._connect()) as connection, transaction(connection):
                known = connection.execute(
                    f"SELECT 1 FROM {_RUNS} WHERE run_id = ?", (run_id,)
                ).fetchone()
                if known is None:
                    raise UnknownRun(f"no run has the ID {run_id!r}")
                taken = connection.execute(
                    f"INSERT INTO {_CLAIMS} (run_id, step, expires_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (run_id, step) DO UPDATE SET expires_at = excluded.expires_at "
                    f"WHERE {_CLAIMS}.expires_at IS NOT NULL AND {_CLAIMS}.expires_at <= ?",
                    (run_id, step, expiry, at),
                ).rowcount
                if taken == 0:
                    raise AlreadyClaimed(f"step {step!r} of run {run_id!r} is already claimed")

        await anyio.to_thread.run_sync(in_thread)

    async def list(self) -> Sequence[Run]:
        """
        Every run of this store's namespace (of the file, with none), in the order
        they were created; see :meth:`RunStore.list`.
        """
        prefix = self._namespace

        def in_thread() -> Sequence[Run]:
            with closing(self._connect()) as connection:
                rows = connection.execute(
                    f"SELECT run_id, version, {', '.join(FIELDS)} FROM {_RUNS} "
                    "WHERE substr(run_id, 1, ?) = ? ORDER BY rowid",
                    (len(prefix), prefix),
                ).fetchall()
            return [
                Run(
                    run_id,
                    version,
                    {name: json.loads(text) for name, text in zip(FIELDS, texts, strict=True)},
                )
                for run_id, version, *texts in rows
            ]

        return await anyio.to_thread.run_sync(in_thread)

    async def delete_namespace(self) -> int:
        """
        Delete the runs of this store's namespace, and their claims; return how many runs.

        :raises ValueError: if the namespace is empty: that would delete every run
            in the file.
        """
        prefix = self._namespace
        if not prefix:
            raise ValueError(
                "delete_namespace() needs a non-empty namespace; "
                "with none it would delete every run in the file"
            )

        def in_thread() -> int:
            where = "WHERE substr(run_id, 1, ?) = ?"
            with closing(self._connect()) as connection, transaction(connection):
                connection.execute(f"DELETE FROM {_CLAIMS} {where}", (len(prefix), prefix))
                return connection.execute(
                    f"DELETE FROM {_RUNS} {where}", (len(prefix), prefix)
                ).rowcount

        return await anyio.to_thread.run_sync(in_thread)


# --------------------------------------------------------------------------- implementations


@final
class MemoryRunStoreImplementation(FeatureImplementation[RunStore, RunStoreCase]):
    """The in-memory reference, :class:`MemoryRunStore`: every case, every field."""

    feature = feature
    coverage = feature.coverage()

    def create(self, scope: FeatureScope) -> MemoryRunStore:
        return MemoryRunStore()


@final
class SqliteRunStoreImplementation(FeatureImplementation[RunStore, RunStoreCase]):
    """
    :class:`SqliteRunStore` over a real database file: every case, every field.

    By default each scope gets a database file of its own in a new temporary
    directory, removed when the scope closes. Given ``path``, every scope uses that
    file, each in a namespace of its own whose runs are deleted when it closes;
    point it at the file system your application's database lives on.

    :param path: a database file to use instead of temporary ones.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else os.fspath(path)

    async def create(self, scope: FeatureScope) -> SqliteRunStore:
        database, namespace = scope_database(scope, self.path, "run-store")
        store = SqliteRunStore(database, namespace="" if namespace is None else f"{namespace}_")
        await store.create_schema()  # before any run of the namespace exists
        if namespace is not None:
            scope.defer(store.delete_namespace)
        return store


implementations: tuple[FeatureImplementation[RunStore, RunStoreCase], ...] = (
    MemoryRunStoreImplementation(),
    SqliteRunStoreImplementation(),
)
"""One instance of each bundled implementation."""
