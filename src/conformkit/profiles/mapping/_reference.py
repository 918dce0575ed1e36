"""The mapping profile's bundled stores and their implementations."""

from __future__ import annotations

import math
import os
import pickle
import re
import sqlite3
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Final, final

from ..._implementation import FeatureImplementation
from ..._scope import FeatureScope
from ..._util import short_repr
from .._support import (
    connect,
    open_shelf,
    scope_table,
    temporary_directory,
    transaction,
)
from ._api import MappingAPI
from ._cases import MappingCase, feature

# --------------------------------------------------------------------------- reference stores

_PROTOCOL: Final = 5  # fixed, so that a file written by one Python reads in another
_TABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PAGE: Final = 256
_MISSING: Final = object()


def _identity(key: object) -> bytes:
    """
    The bytes that identify a key: keys that are ``==`` give the same bytes.

    Keys of other types raise :exc:`TypeError`: their equality is their class's to
    define, and no encoding could follow it.
    """
    if key is None:
        return b"n"
    if isinstance(key, int):  # bool too: True == 1
        return b"i" + format(int(key), "x").encode("ascii")
    if isinstance(key, float):
        if math.isnan(key):
            raise ValueError(
                "SqliteMapping cannot hold a NaN key: NaN is not equal to itself, so it could "
                "never be looked up"
            )
        if key.is_integer():  # 1.0 == 1
            return b"i" + format(int(key), "x").encode("ascii")
        return b"f" + key.hex().encode("ascii")
    if isinstance(key, str):
        return b"s" + key.encode("utf-8", "surrogatepass")
    if isinstance(key, bytes):
        return b"b" + key
    if isinstance(key, tuple):
        return b"t" + b"".join(map(_framed, key))
    if isinstance(key, frozenset):
        return b"z" + b"".join(sorted(map(_framed, key)))
    raise TypeError(
        f"SqliteMapping cannot hold the key {short_repr(key)} of type {type(key).__qualname__}: "
        f"keys must be None, bool, int, float, str, bytes, or tuples and frozensets of them"
    )


def _framed(key: object) -> bytes:
    identity = _identity(key)
    return b"%d:%s" % (len(identity), identity)


def _dump_value(value: object) -> bytes:
    data = pickle.dumps(value, protocol=_PROTOCOL)
    try:
        pickle.loads(data)
    except Exception as exc:
        raise TypeError(
            f"SqliteMapping cannot hold the value {short_repr(value)}: it pickles, but loading the "
            f"pickle raises {exc!r}"
        ) from exc
    return data


@final
class SqliteMapping(MutableMapping[Any, Any]):
    """
    A mutable mapping stored in a table of a SQLite database file; it behaves like a ``dict``.

    ::

        with SqliteMapping("cache.sqlite3") as cache:
            cache[("user", 42)] = {"name": "Ada"}

    Values are pickled when written (and the pickle is loaded once, so that a value
    that cannot come back raises at the write) and unpickled when read: the mapping
    holds copies. Keys are pickled too, and looked up by an encoding that follows
    Python's ``==`` (``1``, ``1.0`` and ``True`` are one key); they must be
    ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, or tuples and
    frozensets of them, anything else raising :exc:`TypeError` (a NaN key,
    :exc:`ValueError`). Iteration follows insertion order; an overwritten key keeps
    its place, and the key first written is the one kept, as in a ``dict``;
    ``popitem()`` removes the last key. Iteration reads the keys a page at a time:
    a change made meanwhile never makes it fail, and shows if it falls on a page
    not read yet.

    Each operation is its own transaction, committed when it returns. The database
    is in WAL mode with ``synchronous=NORMAL``: a commit survives the application
    crashing, though the last commits may be lost if the machine loses power.

    One handle may be shared between threads: it holds one connection, and every
    operation takes a lock, so operations run one at a time. ``pop``,
    ``popitem`` and ``setdefault`` are atomic. Other handles, in this process or
    another, may use the same file.

    Unpickling runs code named in the data: open only databases you trust.

    :param path: the database file; created if it does not exist.
    :param table: the table that holds the mapping, created if it does not exist;
        several mappings can share one file under different tables.
    :param timeout: seconds to wait for a lock held by another connection.
    :raises ValueError: if ``table`` is not a plain SQL identifier.
    """

    __slots__ = ("_connection", "_lock", "_table", "path", "table")

    def __init__(
        self, path: str | os.PathLike[str], *, table: str = "mapping", timeout: float = 5.0
    ) -> None:
        if not isinstance(table, str) or _TABLE.match(table) is None:
            raise ValueError(
                f"table must be a plain SQL identifier (letters, digits, underscores), "
                f"got {table!r}"
            )
        self.path = os.fspath(path)
        self.table = table
        self._table = f'"{table}"'  # quoted for SQL
        self._lock = threading.RLock()
        self._connection = connect(self.path, timeout=timeout, prepare=self._prepare)

    def _prepare(self, connection: sqlite3.Connection) -> None:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        # AUTOINCREMENT: a position is never reused, so a key written later
        # always iterates later, even after the last one was deleted.
        connection.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} ("
            "position INTEGER PRIMARY KEY AUTOINCREMENT, "
            "identity BLOB NOT NULL UNIQUE, key BLOB NOT NULL, value BLOB NOT NULL)"
        )

    def __repr__(self) -> str:
        return f"<SqliteMapping {self.path!r} table {self.table!r}>"

    def close(self) -> None:
        """Close the connection; closing twice is harmless. Any later operation raises."""
        with self._lock:
            self._connection.close()

    def __enter__(self) -> SqliteMapping:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _query(self, sql: str, parameters: tuple[object, ...] = ()) -> list[Any]:
        with self._lock:
            return self._connection.execute(sql, parameters).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, transaction(self._connection) as connection:
            yield connection

    def __getitem__(self, key: Any) -> Any:
        rows = self._query(f"SELECT value FROM {self._table} WHERE identity = ?", (_identity(key),))
        if not rows:
            raise KeyError(key)
        return pickle.loads(rows[0][0])

    def __setitem__(self, key: Any, value: Any) -> None:
        row = (_identity(key), pickle.dumps(key, protocol=_PROTOCOL), _dump_value(value))
        # An upsert, not INSERT OR REPLACE: a replaced row would move to the end.
        self._query(
            f"INSERT INTO {self._table} (identity, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (identity) DO UPDATE SET value = excluded.value",
            row,
        )

    def __delitem__(self, key: Any) -> None:
        identity = _identity(key)
        with self._lock:
            deleted = self._connection.execute(
                f"DELETE FROM {self._table} WHERE identity = ?", (identity,)
            ).rowcount
        if not deleted:
            raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        position = 0
        while True:
            rows = self._query(
                f"SELECT position, key FROM {self._table} WHERE position > ? "
                "ORDER BY position LIMIT ?",
                (position, _PAGE),
            )
            for _, key in rows:
                yield pickle.loads(key)
            if len(rows) < _PAGE:
                return
            position = rows[-1][0]

    def __len__(self) -> int:
        count: int = self._query(f"SELECT count(*) FROM {self._table}")[0][0]
        return count

    def __contains__(self, key: object) -> bool:
        rows = self._query(f"SELECT 1 FROM {self._table} WHERE identity = ?", (_identity(key),))
        return bool(rows)

    def clear(self) -> None:
        """Remove every key, in one statement."""
        self._query(f"DELETE FROM {self._table}")

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its value, atomically; or return ``default`` if given."""
        identity = _identity(key)
        with self._transaction() as connection:
            row = connection.execute(
                f"SELECT value FROM {self._table} WHERE identity = ?", (identity,)
            ).fetchone()
            if row is not None:
                connection.execute(f"DELETE FROM {self._table} WHERE identity = ?", (identity,))
        if row is not None:
            return pickle.loads(row[0])
        if default is _MISSING:
            raise KeyError(key)
        return default

    def popitem(self) -> tuple[Any, Any]:
        """Remove the key written last and return it with its value, atomically."""
        with self._transaction() as connection:
            row = connection.execute(
                f"SELECT position, key, value FROM {self._table} ORDER BY position DESC LIMIT 1"
            ).fetchone()
            if row is not None:
                connection.execute(f"DELETE FROM {self._table} WHERE position = ?", (row[0],))
        if row is None:
            raise KeyError("popitem(): the mapping is empty")
        return pickle.loads(row[1]), pickle.loads(row[2])

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """Return the value of ``key``, first storing ``default`` under it if it is absent."""
        row = (_identity(key), pickle.dumps(key, protocol=_PROTOCOL), _dump_value(default))
        with self._transaction() as connection:
            found = connection.execute(
                f"SELECT value FROM {self._table} WHERE identity = ?", (row[0],)
            ).fetchone()
            if found is None:
                connection.execute(
                    f"INSERT INTO {self._table} (identity, key, value) VALUES (?, ?, ?)", row
                )
        return pickle.loads(row[2] if found is None else found[0])


# --------------------------------------------------------------------------- implementations


class DictMappingImplementation(FeatureImplementation[MappingAPI, MappingCase]):
    """
    The reference: a built-in ``dict``.

    A ``dict`` holds references, not copies, so the two copy cases are declared
    unsupported.
    """

    feature = feature
    coverage = feature.coverage(
        unsupported={
            "stored_value_is_a_copy": (
                "a dict holds the very object written: mutating that object afterwards "
                "changes what is read back"
            ),
            "returned_value_is_a_copy": (
                "a dict returns the very object it holds: mutating what was read back "
                "changes the stored value"
            ),
        }
    )

    def create(self, scope: FeatureScope) -> MappingAPI:
        return {}


class ShelveMappingImplementation(FeatureImplementation[MappingAPI, MappingCase]):
    """
    :class:`shelve.Shelf` over a :mod:`dbm.dumb` database in a temporary directory.

    A shelf pickles values when written and unpickles them when read, so it holds
    copies; its keys must be ``str``, and it takes no lock.
    """

    feature = feature
    coverage = feature.coverage(
        unsupported={
            "non_str_keys_round_trip": (
                "shelve keys must be str: it encodes each key with key.encode(), so an int, "
                "bytes or tuple key raises AttributeError"
            ),
            "key_equality_follows_python": (
                "shelve keys must be str, so 1 and True cannot be keys at all (AttributeError)"
            ),
            "errors_surface_at_the_failing_call": (
                "shelve pickles a value without checking that it loads: a value that pickles "
                "but cannot be unpickled is accepted, and reading it raises later"
            ),
            "shared_handle_is_thread_safe": (
                "shelve and dbm.dumb take no lock: threads writing through one shelf "
                "interleave their appends to the data file and corrupt values"
            ),
        }
    )

    def create(self, scope: FeatureScope) -> MappingAPI:
        directory = temporary_directory(scope, "shelve")
        shelf = open_shelf(os.path.join(directory, "shelf"))
        scope.defer(shelf.close)
        return shelf


class SqliteMappingImplementation(FeatureImplementation[MappingAPI, MappingCase]):
    """
    A :class:`SqliteMapping`; it supports every case.

    By default each scope gets a database file of its own in a temporary
    directory, removed when the scope closes. Given ``path``, each scope gets a
    table of its own in that database, dropped when the scope closes.

    :param path: a database file to use instead of temporary ones.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = path

    def create(self, scope: FeatureScope) -> MappingAPI:
        database, table = scope_table(scope, self.path, "mapping", "mapping")
        mapping = SqliteMapping(database, table=table)
        scope.defer(mapping.close)
        return mapping


implementations: tuple[FeatureImplementation[MappingAPI, MappingCase], ...] = (
    DictMappingImplementation(),
    ShelveMappingImplementation(),
    SqliteMappingImplementation(),
)
"""One instance of each bundled implementation."""
