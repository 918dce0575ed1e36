"""The reference session event stores and the bundled implementations."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Final, cast, final

import anyio
import anyio.lowlevel

from ..._implementation import FeatureImplementation
from ..._scope import FeatureScope
from .._support import (
    AsyncSqliteStore,
    PathAndNamespace,
    connect,
    scope_database,
    transaction,
)
from ._api import (
    JSON,
    Event,
    NotJSON,
    SessionEventsAPI,
    SessionRecord,
    clone_json,
    duplicate_session,
    sequence_conflict,
    unknown_session,
)
from ._cases import SessionEventsCase, feature

# --------------------------------------------------------------------------- reference stores


def _clone_metadata(session_id: str, metadata: object) -> dict[str, JSON]:
    what = f"metadata of session {session_id!r}"
    if type(metadata) is not dict:
        raise NotJSON(f"{what} must be a dict (a JSON object), got {metadata!r}")
    return cast("dict[str, JSON]", clone_json(metadata, what))


def _clone_payload(event: Event) -> JSON:
    return clone_json(event.payload, f"payload of event {event.event_id!r}")


@dataclass(slots=True)
class _StoredSession:
    metadata: dict[str, JSON]
    parent_id: str | None
    events: dict[str, Event] = field(default_factory=dict)  # by event ID
    sequences: dict[int, str] = field(default_factory=dict)  # event ID by sequence
    children: set[str] = field(default_factory=set)


class MemorySessionEvents:
    """
    The in-memory reference store: dicts, with every value copied in and out.

    Each operation checks for cancellation, then runs without awaiting, so
    concurrent calls never interleave. Not final: subclass it to inject a
    fault, as the profile's own tests do.
    """

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, _StoredSession] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} of {len(self._sessions)} session(s)>"

    def _session(self, session_id: str) -> _StoredSession:
        stored = self._sessions.get(session_id)
        if stored is None:
            raise unknown_session(session_id)
        return stored

    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        """See :meth:`SessionEventsAPI.create_session`."""
        await anyio.lowlevel.checkpoint()
        copy = _clone_metadata(session_id, metadata)
        if session_id in self._sessions:
            raise duplicate_session(session_id)
        if parent_id is not None:
            parent = self._sessions.get(parent_id)
            if parent is None:
                raise unknown_session(parent_id, "parent session")
            parent.children.add(session_id)
        self._sessions[session_id] = _StoredSession(copy, parent_id)

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionEventsAPI.load_session`."""
        await anyio.lowlevel.checkpoint()
        stored = self._sessions.get(session_id)
        if stored is None:
            return None
        return SessionRecord(
            session_id, _clone_metadata(session_id, stored.metadata), stored.parent_id
        )

    async def append(self, session_id: str, event: Event) -> bool:
        """See :meth:`SessionEventsAPI.append`."""
        await anyio.lowlevel.checkpoint()
        payload = _clone_payload(event)
        stored = self._session(session_id)
        if event.event_id in stored.events:
            return False
        holder = stored.sequences.get(event.sequence)
        if holder is not None:
            raise sequence_conflict(session_id, event.event_id, event.sequence, holder)
        stored.events[event.event_id] = Event(event.event_id, event.sequence, payload)
        stored.sequences[event.sequence] = event.event_id
        return True

    async def replay(self, session_id: str) -> list[Event]:
        """See :meth:`SessionEventsAPI.replay`."""
        await anyio.lowlevel.checkpoint()
        stored = self._session(session_id)
        return [
            Event(event.event_id, event.sequence, _clone_payload(event))
            for event in sorted(stored.events.values(), key=lambda event: event.sequence)
        ]

    async def children(self, session_id: str) -> list[str]:
        """See :meth:`SessionEventsAPI.children`."""
        await anyio.lowlevel.checkpoint()
        return sorted(self._session(session_id).children)


_SCHEMA: Final = """
PRAGMA journal_mode = WAL;
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS sessions (
    namespace TEXT NOT NULL,
    session_id TEXT NOT NULL,
    parent_id TEXT,
    metadata TEXT NOT NULL,
    PRIMARY KEY (namespace, session_id),
    FOREIGN KEY (namespace, parent_id) REFERENCES sessions (namespace, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (namespace, parent_id, session_id);
CREATE TABLE IF NOT EXISTS events (
    namespace TEXT NOT NULL,
    session_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (namespace, session_id, event_id),
    UNIQUE (namespace, session_id, sequence),
    FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, session_id)
);
COMMIT;
"""

_BUSY_TIMEOUT: Final = 10.0
"""Seconds a connection waits for another process's write lock before giving up."""


def _create_schema(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA foreign_keys = ON")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.executescript(_SCHEMA)


def _dump(value: JSON) -> str:
    # ASCII escapes keep any str, lone surrogates included, storable as SQLite text.
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


@final
class SqliteSessionEvents(AsyncSqliteStore, PathAndNamespace):
    """
    A store in a SQLite database file: metadata and payloads are kept as JSON text.

    The store opens one connection, on first use, and creates the tables if they
    are absent; :meth:`aclose` (or leaving ``async with``) closes it. Every
    operation runs in a worker thread, one at a time, in a transaction of its own
    (writes take the write lock as they begin, so other processes that share the
    file are serialised too); the event loop never blocks on the database. The
    file is switched to WAL journal mode, with ``synchronous = NORMAL``: a
    committed transaction survives the process dying, not the machine.

    Rows belong to a **namespace**, so that several stores can share one file
    without seeing each other's sessions.

    ::

        async with SqliteSessionEvents("sessions.sqlite3") as store:
            await store.create_session("run-1", metadata={"user": "ada"})
            await store.append("run-1", Event("e-1", 0, {"step": "start"}))

    :param path: the database file; created if absent.
    :param namespace: the namespace of this store's rows.
    """

    __slots__ = ("_namespace",)

    _closed_error = RuntimeError

    def __init__(self, path: str | os.PathLike[str], *, namespace: str = "") -> None:
        super().__init__(path)
        self._namespace = namespace

    def __repr__(self) -> str:
        return f"SqliteSessionEvents({self._path!r}, namespace={self._namespace!r})"

    def _open(self) -> sqlite3.Connection:
        return connect(self._path, timeout=_BUSY_TIMEOUT, prepare=_create_schema)

    def _check_known(self, connection: sqlite3.Connection, session_id: str, role: str) -> None:
        """Raise :exc:`UnknownSession` unless the session exists."""
        if not self._exists(connection, session_id):
            raise unknown_session(session_id, role)

    def _exists(self, connection: sqlite3.Connection, session_id: str) -> bool:
        row = connection.execute(
            "SELECT 1 FROM sessions WHERE namespace = ? AND session_id = ?",
            (self._namespace, session_id),
        ).fetchone()
        return row is not None

    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        """See :meth:`SessionEventsAPI.create_session`."""
        text = _dump(_clone_metadata(session_id, metadata))  # copied before any await
        await self._run(self._create_session, session_id, text, parent_id)

    def _create_session(
        self, connection: sqlite3.Connection, session_id: str, text: str, parent_id: str | None
    ) -> None:
        with transaction(connection):
            if self._exists(connection, session_id):
                raise duplicate_session(session_id)
            if parent_id is not None:
                self._check_known(connection, parent_id, "parent session")
            connection.execute(
                "INSERT INTO sessions (namespace, session_id, parent_id, metadata) "
                "VALUES (?, ?, ?, ?)",
                (self._namespace, session_id, parent_id, text),
            )

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionEventsAPI.load_session`."""
        return await self._run(self._load_session, session_id)

    def _load_session(
        self, connection: sqlite3.Connection, session_id: str
    ) -> SessionRecord | None:
        with transaction(connection, "DEFERRED"):
            row = connection.execute(
                "SELECT metadata, parent_id FROM sessions WHERE namespace = ? AND session_id = ?",
                (self._namespace, session_id),
            ).fetchone()
        if row is None:
            return None
        return SessionRecord(session_id, json.loads(row[0]), row[1])

    async def append(self, session_id: str, event: Event) -> bool:
        """See :meth:`SessionEventsAPI.append`."""
        text = _dump(_clone_payload(event))  # copied before any await
        return await self._run(self._append, session_id, event.event_id, event.sequence, text)

    def _append(
        self,
        connection: sqlite3.Connection,
        session_id: str,
        event_id: str,
        sequence: int,
        text: str,
    ) -> bool:
        with transaction(connection):
            self._check_known(connection, session_id, "session")
            key = (self._namespace, session_id)
            duplicate = connection.execute(
                "SELECT 1 FROM events WHERE namespace = ? AND session_id = ? AND event_id = ?",
                (*key, event_id),
            ).fetchone()
            if duplicate is not None:
                return False
            holder = connection.execute(
                "SELECT event_id FROM events WHERE namespace = ? AND session_id = ? "
                "AND sequence = ?",
                (*key, sequence),
            ).fetchone()
            if holder is not None:
                raise sequence_conflict(session_id, event_id, sequence, holder[0])
            connection.execute(
                "INSERT INTO events (namespace, session_id, event_id, sequence, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                (*key, event_id, sequence, text),
            )
            return True

    async def replay(self, session_id: str) -> list[Event]:
        """See :meth:`SessionEventsAPI.replay`."""
        rows = await self._run(
            self._select_in_session,
            "SELECT event_id, sequence, payload FROM events "
            "WHERE namespace = ? AND session_id = ? ORDER BY sequence",
            session_id,
        )
        return [Event(event_id, sequence, json.loads(text)) for event_id, sequence, text in rows]

    async def children(self, session_id: str) -> list[str]:
        """See :meth:`SessionEventsAPI.children`."""
        # SQLite's BINARY collation orders UTF-8 bytes, which is code point order: sorted().
        rows = await self._run(
            self._select_in_session,
            "SELECT session_id FROM sessions WHERE namespace = ? AND parent_id = ? "
            "ORDER BY session_id",
            session_id,
        )
        return [row[0] for row in rows]

    def _select_in_session(
        self, connection: sqlite3.Connection, query: str, session_id: str
    ) -> list[Any]:
        """The rows of ``query`` for a session, which must exist; read in one transaction."""
        with transaction(connection, "DEFERRED"):
            self._check_known(connection, session_id, "session")
            return connection.execute(query, (self._namespace, session_id)).fetchall()

    async def clear(self) -> None:
        """Delete every session and event of this store's namespace, and nothing else."""
        await self._run(self._clear)

    def _clear(self, connection: sqlite3.Connection) -> None:
        with transaction(connection):
            connection.execute("DELETE FROM events WHERE namespace = ?", (self._namespace,))
            connection.execute("DELETE FROM sessions WHERE namespace = ?", (self._namespace,))


# --------------------------------------------------------------------------- implementations


@final
class MemorySessionEventsImplementation(FeatureImplementation[SessionEventsAPI, SessionEventsCase]):
    """The in-memory reference implementation: a fresh :class:`MemorySessionEvents` per scope."""

    feature = feature
    coverage = feature.coverage()

    def create(self, scope: FeatureScope) -> SessionEventsAPI:
        return MemorySessionEvents()


@final
class SqliteSessionEventsImplementation(FeatureImplementation[SessionEventsAPI, SessionEventsCase]):
    """
    The SQLite implementation: a :class:`SqliteSessionEvents` over a real database file.

    By default each scope gets a database file in a temporary directory of its
    own, removed when the scope closes. Given a ``path``, every scope uses that
    file, in a namespace of its own that is cleared when the scope closes; the
    tables stay.

    :param path: a database file to run in, instead of a temporary one.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else os.fspath(path)

    def __repr__(self) -> str:
        where = "temporary files" if self.path is None else repr(self.path)
        return f"<SqliteSessionEventsImplementation on {where}>"

    def create(self, scope: FeatureScope) -> SessionEventsAPI:
        database, namespace = scope_database(scope, self.path, "session-events")
        store = SqliteSessionEvents(database, namespace=namespace or "")
        scope.defer(store.aclose)
        if namespace is not None:
            scope.defer(store.clear)  # runs first: cleanups run in reverse order
        return store


implementations: tuple[FeatureImplementation[SessionEventsAPI, SessionEventsCase], ...] = (
    MemorySessionEventsImplementation(),
    SqliteSessionEventsImplementation(),
)
"""One instance of each bundled implementation."""
