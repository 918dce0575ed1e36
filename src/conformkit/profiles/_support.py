"""
What the bundled profiles' implementations and stores share: where a scope's
database lives, and the SQLite plumbing of the stores.
"""

from __future__ import annotations

import dbm.dumb
import errno
import functools
import os
import shelve
import shutil
import sqlite3
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Literal, Self, TypeVar, TypeVarTuple, cast, final

import anyio
import anyio.to_thread

from .._scope import FeatureScope

__all__ = [
    "AsyncSqliteStore",
    "NamedError",
    "PathAndNamespace",
    "PointAt",
    "connect",
    "open_shelf",
    "scope_database",
    "scope_table",
    "temporary_directory",
    "transaction",
]

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")

# --------------------------------------------------------------------------- per scope


def temporary_directory(scope: FeatureScope, name: str, parent: str | None = None) -> str:
    """
    Make a directory, named for ``name``, that the scope removes with everything in it.

    One ``mkdir``, made here and not in a worker thread: a cancellation that came
    while a thread made it would lose its name, and the directory with it. The
    removal is registered before anything else can fail, and runs in a worker thread.

    :param parent: where to make it; the system's temporary directory by default.
    """
    directory = tempfile.mkdtemp(prefix=f"conformkit-{name}-", dir=parent)
    scope.defer(functools.partial(anyio.to_thread.run_sync, shutil.rmtree, directory))
    return directory


def scope_database(
    scope: FeatureScope, path: str | os.PathLike[str] | None, name: str
) -> tuple[str, str | None]:
    """
    The database file for one scope's store, and the namespace the store takes in it.

    Without ``path``: the file ``<name>.sqlite3`` in a temporary directory that the
    scope removes, and ``None``. With ``path``: that file, and a namespace no other
    scope has, made of letters, digits and ``_`` so that it also serves as a table
    name; the caller registers the namespace's cleanup.
    """
    if path is None:
        directory = temporary_directory(scope, name)
        return os.path.join(directory, f"{name}.sqlite3"), None
    return os.fspath(path), f"conformkit_{uuid.uuid4().hex}"


def scope_table(
    scope: FeatureScope, path: str | os.PathLike[str] | None, name: str, default: str
) -> tuple[str, str]:
    """
    The database file and table for one scope's store, as :func:`scope_database`
    chooses them: the table ``default`` of a temporary file, or a table of the
    scope's own in ``path``, which the scope drops, in a worker thread, when it
    closes (after the cleanups registered later, such as closing the store).
    """
    database, table = scope_database(scope, path, name)
    if table is None:
        return database, default
    scope.defer(functools.partial(anyio.to_thread.run_sync, _drop_table, database, table))
    return database, table


def _drop_table(path: str, table: str) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute(f'DROP TABLE IF EXISTS "{table}"')


def open_shelf(path: str) -> shelve.Shelf[Any]:
    """A :class:`shelve.Shelf` over a :mod:`dbm.dumb` database, created if absent."""
    # typeshed types dbm.dumb's keys as str | bytes and Shelf's as bytes; it takes both.
    return shelve.Shelf(cast("MutableMapping[bytes, bytes]", dbm.dumb.open(path, "c")))


# --------------------------------------------------------------------------- failures


@final
@dataclass(frozen=True, slots=True)
class NamedError:
    """
    An error a profile names, and the standard exceptions that mean the same thing.

    A case that expects it accepts the profile's own class, or one of the standard
    exceptions (for an :exc:`OSError`, with one of the ``errnos`` given), so that an
    adapter over a library need not import conformkit to translate its errors.

    :ivar own: the profile's class, which derives from the standard type that fits.
    :ivar standard: the standard exceptions that mean the same, if any.
    :ivar errnos: the ``errno`` values a standard :exc:`OSError` must carry, if any.
    """

    own: type[Exception]
    standard: tuple[type[Exception], ...] = ()
    errnos: tuple[int, ...] = ()

    def matches(self, error: BaseException) -> bool:
        """Whether ``error`` means this error."""
        if isinstance(error, self.own):
            return True
        if not isinstance(error, self.standard):
            return False
        return not self.errnos or getattr(error, "errno", None) in self.errnos

    def __str__(self) -> str:
        if not self.standard:
            return self.own.__name__
        names = " or ".join(kind.__name__ for kind in self.standard)
        if self.errnos:
            codes = " or ".join(errno.errorcode.get(code, str(code)) for code in self.errnos)
            names = f"{names} with errno {codes}"
        return f"{self.own.__name__} (or {names})"


@final
class PointAt:
    """
    A context manager that points the failure raised inside it at a page of the docs.

    An :exc:`AssertionError` gets `` (see <where>)`` at the end of its first line,
    which every report shows; any other exception gets the pointer as a note. The
    error keeps its type and its traceback, so a report still names the line of
    the case that failed. Cancellation, and any other exception that is not an
    :exc:`Exception`, passes untouched.

    :param where: the page and anchor, ``docs/profile-mapping.md#failure-modes``.
    """

    __slots__ = ("where",)

    def __init__(self, where: str) -> None:
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        pointer = f"see {self.where}"
        if isinstance(error, AssertionError):
            message = str(error)
            if pointer not in message:
                first, newline, rest = message.partition("\n")
                error.args = (f"{first} ({pointer}){newline}{rest}" if first else pointer,)
        elif isinstance(error, Exception) and pointer not in getattr(error, "__notes__", ()):
            error.add_note(pointer)
        return False


# --------------------------------------------------------------------------- SQLite


def connect(
    path: str,
    *,
    timeout: float,
    prepare: Callable[[sqlite3.Connection], object] | None = None,
) -> sqlite3.Connection:
    """
    Open a connection in autocommit mode, usable from any thread, and ``prepare`` it.

    Autocommit: each operation says where its transaction begins (:func:`transaction`).
    A connection whose ``prepare`` fails is closed again.

    :param timeout: seconds to wait for a lock that another connection holds.
    :param prepare: sets the connection up, typically its pragmas and tables.
    """
    connection = sqlite3.connect(
        path, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    if prepare is not None:
        try:
            prepare(connection)
        except BaseException:
            connection.close()
            raise
    return connection


@contextmanager
def transaction(
    connection: sqlite3.Connection, kind: Literal["IMMEDIATE", "DEFERRED"] = "IMMEDIATE"
) -> Iterator[sqlite3.Connection]:
    """
    A transaction on ``connection``: committed if the block succeeds, else rolled back.

    ``IMMEDIATE`` takes the database's write lock as it begins, so that checking
    and writing are one step; ``DEFERRED`` suits a read.
    """
    connection.execute(f"BEGIN {kind}")
    try:
        yield connection
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:  # SQLite may have rolled back already
            connection.execute("ROLLBACK")
        raise


class PathAndNamespace:
    """The ``path`` and ``namespace`` properties of a store in a shared database file."""

    __slots__ = ()

    _path: str
    _namespace: str

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    @property
    def namespace(self) -> str:
        """The store's namespace in the file: the ``namespace`` it was made with."""
        return self._namespace


class AsyncSqliteStore:
    """
    The base of an async store over one SQLite connection.

    The connection is opened on first use, by :meth:`_open`; each operation runs
    in a worker thread, one at a time, through :meth:`_run`, so the event loop
    never waits for the database. :meth:`aclose` or leaving ``async with``
    closes the connection.
    """

    __slots__ = ("_closed", "_connection", "_lock", "_path")

    _closed_error: ClassVar[type[Exception]]
    """What an operation raises once the store is closed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._lock = threading.Lock()  # one operation at a time on the connection
        self._connection: sqlite3.Connection | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection; later operations raise. Closing twice is harmless."""
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _open(self) -> sqlite3.Connection:
        """Open the store's connection and make its tables: the subclass says how."""
        raise NotImplementedError

    async def _run(
        self, operation: Callable[[sqlite3.Connection, *_Args], _T], *args: *_Args
    ) -> _T:
        """Run ``operation(connection, *args)`` in a worker thread, alone on the connection."""
        return await anyio.to_thread.run_sync(self._locked, operation, *args)

    def _locked(self, operation: Callable[[sqlite3.Connection, *_Args], _T], *args: *_Args) -> _T:
        with self._lock:
            if self._closed:
                raise self._closed_error(f"{self!r} is closed")
            if self._connection is None:
                self._connection = self._open()
            return operation(self._connection, *args)
