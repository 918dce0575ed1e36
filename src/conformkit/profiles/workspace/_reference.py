"""The workspace profile's reference stores and the implementations bundled with it."""

from __future__ import annotations

import builtins
import errno
import os
import re
import shutil
import sqlite3
from functools import partial
from typing import Final, TypeAlias, final

import anyio
import anyio.lowlevel
import anyio.to_thread
from typing_extensions import Buffer

from ..._implementation import FeatureImplementation
from ..._scope import FeatureScope
from .._support import (
    AsyncSqliteStore,
    connect,
    scope_table,
    temporary_directory,
    transaction,
)
from ._api import (
    DirectoryNotEmpty,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotFound,
    WorkspaceAPI,
)
from ._cases import WorkspaceCase, feature

# --------------------------------------------------------------------------- reference stores


def _invalid(path: str, why: str) -> InvalidPath:
    return InvalidPath(
        f"invalid workspace path {path!r}: {why}; a path is '/' or '/' followed by names "
        f"joined by '/', like '/a/b.txt'"
    )


def _not_found(path: str) -> NotFound:
    return NotFound(errno.ENOENT, "no file or directory at this workspace path", path)


def _not_a_directory(path: str, why: str) -> NotADirectory:
    return NotADirectory(errno.ENOTDIR, why, path)


def _is_a_directory(path: str, action: str) -> IsADirectory:
    return IsADirectory(errno.EISDIR, f"cannot {action} a directory", path)


def _not_empty(path: str) -> DirectoryNotEmpty:
    return DirectoryNotEmpty(
        errno.ENOTEMPTY,
        "directory is not empty; remove(path, recursive=True) removes it and everything under it",
        path,
    )


def _split(path: object) -> tuple[str, ...]:
    """
    Return the names of a canonical workspace path, ``()`` for ``/``.

    :raises TypeError: if ``path`` is not a ``str``.
    :raises InvalidPath: if it is not in canonical form.
    """
    if not isinstance(path, str):
        raise TypeError(f"a workspace path must be a str, got {type(path).__name__}: {path!r}")
    if path == "/":
        return ()
    if not path.startswith("/"):
        raise _invalid(path, "it must be absolute, starting with '/'")
    names = tuple(path[1:].split("/"))
    for name in names:
        if not name:
            raise _invalid(path, "it has an empty name ('//' or a trailing '/')")
        if name in (".", ".."):
            raise _invalid(path, f"{name!r} is not a name: paths are never relative")
        if "\\" in name:
            raise _invalid(path, "a name may not hold a backslash")
        if "\x00" in name:
            raise _invalid(path, "a name may not hold a NUL character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _invalid(path, "it holds a lone surrogate, which has no UTF-8 form") from exc
    return names


def _join(names: tuple[str, ...]) -> str:
    return "/" + "/".join(names)


def _clone(data: Buffer) -> bytes:
    """An immutable copy of ``data``, taken before anything awaits; rejects str and int."""
    if type(data) is bytes:
        return data
    if isinstance(data, str):
        raise TypeError("workspace data must be bytes-like, not str; encode it first")
    with memoryview(data) as view:
        return view.tobytes()


_Directory: TypeAlias = "dict[str, _Directory | bytes]"


@final
class MemoryWorkspace:
    """The reference implementation: a tree of dicts, held in memory."""

    def __init__(self) -> None:
        self._root: _Directory = {}

    def __repr__(self) -> str:
        return f"<MemoryWorkspace of {len(self._root)} top-level entries>"

    def _find(self, names: tuple[str, ...]) -> _Directory | bytes | None:
        node: _Directory | bytes = self._root
        for name in names:
            if not isinstance(node, dict):
                return None
            child = node.get(name)
            if child is None:
                return None
            node = child
        return node

    async def write(self, path: str, data: Buffer) -> None:
        """Store a copy of ``data`` at ``path``; see :meth:`WorkspaceAPI.write`."""
        data = _clone(data)
        names = _split(path)
        await anyio.lowlevel.checkpoint()
        if not names:
            raise _is_a_directory(path, "write")
        # Check the whole path before creating anything: a refused write creates nothing.
        node: _Directory | bytes | None = self._root
        for name in names[:-1]:
            if not isinstance(node, dict):
                break
            node = node.get(name)
            if isinstance(node, bytes):
                raise _not_a_directory(path, "a parent of this path is a file")
        if isinstance(node, dict) and isinstance(node.get(names[-1]), dict):
            raise _is_a_directory(path, "write")
        directory = self._root
        for name in names[:-1]:
            child = directory.setdefault(name, {})
            assert isinstance(child, dict)  # checked above
            directory = child
        directory[names[-1]] = data

    async def read(self, path: str) -> bytes | None:
        """Return the bytes at ``path``; see :meth:`WorkspaceAPI.read`."""
        names = _split(path)
        await anyio.lowlevel.checkpoint()
        node = self._find(names)
        if isinstance(node, dict):
            raise _is_a_directory(path, "read")
        return node  # bytes are immutable: handing out the stored object is safe

    async def list(self, path: str) -> builtins.list[str]:
        """Return the names under ``path``; see :meth:`WorkspaceAPI.list`."""
        names = _split(path)
        await anyio.lowlevel.checkpoint()
        node = self._find(names)
        if node is None:
            raise _not_found(path)
        if not isinstance(node, dict):
            raise _not_a_directory(path, "cannot list a file")
        return sorted(node)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Remove what is at ``path``; see :meth:`WorkspaceAPI.remove`."""
        names = _split(path)
        await anyio.lowlevel.checkpoint()
        if not names:
            if self._root and not recursive:
                raise _not_empty(path)
            self._root.clear()
            return
        parent = self._find(names[:-1])
        if not isinstance(parent, dict) or names[-1] not in parent:
            raise _not_found(path)
        node = parent[names[-1]]
        if isinstance(node, dict) and node and not recursive:
            raise _not_empty(path)
        del parent[names[-1]]

    async def exists(self, path: str) -> bool:
        """Tell whether anything is at ``path``."""
        names = _split(path)
        await anyio.lowlevel.checkpoint()
        return self._find(names) is not None


@final
class LocalDirectoryWorkspace:
    """
    A workspace over a real folder: each path is a file or a directory under ``root``.

    Paths never reach the file system unchecked: they are validated, then joined
    to the root name by name, so ``/etc/passwd`` means ``<root>/etc/passwd``.
    A path that would still resolve outside the root, through a symbolic link,
    is refused with :class:`InvalidPath`. File-system calls run in worker threads.
    Writes are not atomic: a crash during one can leave a partial file.

    :param root: an existing directory; it is resolved when first used.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = os.path.abspath(os.fspath(root))
        self._resolved: str | None = None

    def __repr__(self) -> str:
        return f"LocalDirectoryWorkspace({self._root!r})"

    @property
    def root(self) -> str:
        """The folder that holds the workspace, as an absolute path."""
        return self._root

    def _real_root(self) -> str:
        resolved = self._resolved
        if resolved is None:
            resolved = os.path.realpath(self._root)
            if not os.path.isdir(resolved):
                raise NotFound(
                    errno.ENOENT, "the workspace root is not an existing directory", self._root
                )
            self._resolved = resolved
        return resolved

    def _host(self, path: str, names: tuple[str, ...]) -> str:
        """The host path of a workspace path, refused if it resolves outside the root."""
        root = self._real_root()
        host = os.path.join(root, *names)
        try:
            inside = os.path.commonpath([root, os.path.realpath(host)]) == root
        except ValueError:  # on another drive
            inside = False
        if not inside:
            raise InvalidPath(
                f"workspace path {path!r} leads outside the root {self._root!r} "
                f"(through a symbolic link)"
            )
        return host

    async def write(self, path: str, data: Buffer) -> None:
        """Store a copy of ``data`` at ``path``; see :meth:`WorkspaceAPI.write`."""
        data = _clone(data)
        names = _split(path)
        await anyio.to_thread.run_sync(partial(self._write, path, names, data))

    def _write(self, path: str, names: tuple[str, ...], data: bytes) -> None:
        host = self._host(path, names)
        if not names or os.path.isdir(host):
            raise _is_a_directory(path, "write")
        try:
            os.makedirs(os.path.dirname(host), exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise _not_a_directory(path, "a parent of this path is a file") from exc
        try:
            with open(host, "wb") as file:
                file.write(data)
        except IsADirectoryError as exc:  # made a directory meanwhile
            raise _is_a_directory(path, "write") from exc

    async def read(self, path: str) -> bytes | None:
        """Return the bytes at ``path``; see :meth:`WorkspaceAPI.read`."""
        names = _split(path)
        return await anyio.to_thread.run_sync(partial(self._read, path, names))

    def _read(self, path: str, names: tuple[str, ...]) -> bytes | None:
        host = self._host(path, names)
        if os.path.isdir(host):
            raise _is_a_directory(path, "read")
        try:
            with open(host, "rb") as file:
                return file.read()
        except (FileNotFoundError, NotADirectoryError):  # missing, or beneath a file
            return None
        except IsADirectoryError as exc:  # made a directory meanwhile
            raise _is_a_directory(path, "read") from exc

    async def list(self, path: str) -> builtins.list[str]:
        """Return the names under ``path``; see :meth:`WorkspaceAPI.list`."""
        names = _split(path)
        return await anyio.to_thread.run_sync(partial(self._list, path, names))

    def _list(self, path: str, names: tuple[str, ...]) -> builtins.list[str]:
        host = self._host(path, names)
        try:
            return sorted(os.listdir(host))  # the file system's order is arbitrary
        except FileNotFoundError as exc:
            raise _not_found(path) from exc
        except NotADirectoryError as exc:
            if os.path.lexists(host):
                raise _not_a_directory(path, "cannot list a file") from exc
            raise _not_found(path) from exc  # beneath a file

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Remove what is at ``path``; see :meth:`WorkspaceAPI.remove`."""
        names = _split(path)
        await anyio.to_thread.run_sync(partial(self._remove, path, names, recursive))

    def _remove(self, path: str, names: tuple[str, ...], recursive: bool) -> None:
        host = self._host(path, names)
        if not names:
            entries = os.listdir(host)
            if entries and not recursive:
                raise _not_empty(path)
            for name in entries:
                _remove_entry(os.path.join(host, name))
            return
        if not os.path.lexists(host):
            raise _not_found(path)
        if recursive or os.path.islink(host) or not os.path.isdir(host):
            _remove_entry(host)
            return
        try:
            os.rmdir(host)  # refuses a non-empty directory, removing nothing
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise _not_empty(path) from exc
            raise

    async def exists(self, path: str) -> bool:
        """Tell whether anything is at ``path``."""
        names = _split(path)
        return await anyio.to_thread.run_sync(partial(self._exists, path, names))

    def _exists(self, path: str, names: tuple[str, ...]) -> bool:
        return os.path.exists(self._host(path, names))


def _remove_entry(host: str) -> None:
    """Remove a file, a symbolic link (not its target) or a directory tree."""
    if os.path.isdir(host) and not os.path.islink(host):
        shutil.rmtree(host)
    else:
        os.unlink(host)


_TABLE_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@final
class SqliteWorkspace(AsyncSqliteStore):
    """
    A workspace in a SQLite database file: one row per file or directory.

    Each row holds a path, its parent, its name and, for a file, its bytes
    (a directory's are ``NULL``); ``/`` is implicit. Writes and removals run in
    ``BEGIN IMMEDIATE`` transactions, so a refused operation changes nothing.
    The connection is opened on first use and used from worker threads, one
    operation at a time; close it with :meth:`aclose` or ``async with``.
    Several workspaces can share one file under different table names.

    :param database: the database file; it is created if missing.
    :param table: the table that holds this workspace, created if missing.
    :raises ValueError: if ``table`` is not a plain SQL identifier.
    """

    _closed_error = anyio.ClosedResourceError

    def __init__(self, database: str | os.PathLike[str], *, table: str = "workspace") -> None:
        if not isinstance(table, str) or not _TABLE_NAME.match(table):
            raise ValueError(
                f"table must be a plain SQL identifier (letters, digits, '_'), got {table!r}"
            )
        super().__init__(database)
        self._table = table

    def __repr__(self) -> str:
        return f"SqliteWorkspace({self._path!r}, table={self._table!r})"

    @property
    def database(self) -> str:
        """The database file."""
        return self._path

    @property
    def table(self) -> str:
        """The table that holds the workspace."""
        return self._table

    def _open(self) -> sqlite3.Connection:
        return connect(self._path, timeout=5.0, prepare=self._create_table)  # sqlite3's default

    def _create_table(self, connection: sqlite3.Connection) -> None:
        with transaction(connection):
            connection.execute(
                f'CREATE TABLE IF NOT EXISTS "{self._table}" ('
                "path TEXT PRIMARY KEY, parent TEXT NOT NULL, name TEXT NOT NULL, data BLOB)"
            )
            connection.execute(
                f'CREATE INDEX IF NOT EXISTS "{self._table}_by_parent" ON "{self._table}" (parent)'
            )

    def _kind(self, connection: sqlite3.Connection, path: str) -> bool | None:
        """``True`` for a directory, ``False`` for a file, ``None`` for nothing."""
        if path == "/":
            return True
        row = connection.execute(
            f'SELECT data IS NULL FROM "{self._table}" WHERE path = ?', (path,)
        ).fetchone()
        return None if row is None else bool(row[0])

    async def write(self, path: str, data: Buffer) -> None:
        """Store a copy of ``data`` at ``path``; see :meth:`WorkspaceAPI.write`."""
        data = _clone(data)
        names = _split(path)

        def write(connection: sqlite3.Connection) -> None:
            if not names:
                raise _is_a_directory(path, "write")
            with transaction(connection):
                for depth in range(1, len(names)):
                    ancestor = _join(names[:depth])
                    kind = self._kind(connection, ancestor)
                    if kind is None:
                        self._insert(connection, names[:depth], None)
                    elif not kind:
                        raise _not_a_directory(path, "a parent of this path is a file")
                if self._kind(connection, path):
                    raise _is_a_directory(path, "write")
                self._insert(connection, names, data)

        await self._run(write)

    def _insert(
        self, connection: sqlite3.Connection, names: tuple[str, ...], data: bytes | None
    ) -> None:
        connection.execute(
            f'INSERT INTO "{self._table}" (path, parent, name, data) VALUES (?, ?, ?, ?) '
            "ON CONFLICT (path) DO UPDATE SET data = excluded.data",
            (_join(names), _join(names[:-1]), names[-1], data),
        )

    async def read(self, path: str) -> bytes | None:
        """Return the bytes at ``path``; see :meth:`WorkspaceAPI.read`."""
        names = _split(path)

        def read(connection: sqlite3.Connection) -> bytes | None:
            if not names:
                raise _is_a_directory(path, "read")
            row = connection.execute(
                f'SELECT data FROM "{self._table}" WHERE path = ?', (path,)
            ).fetchone()
            if row is None:
                return None
            if row[0] is None:
                raise _is_a_directory(path, "read")
            return bytes(row[0])

        return await self._run(read)

    async def list(self, path: str) -> builtins.list[str]:
        """Return the names under ``path``; see :meth:`WorkspaceAPI.list`."""
        _split(path)

        def list_(connection: sqlite3.Connection) -> builtins.list[str]:
            with transaction(connection, "DEFERRED"):
                kind = self._kind(connection, path)
                if kind is None:
                    raise _not_found(path)
                if not kind:
                    raise _not_a_directory(path, "cannot list a file")
                rows = connection.execute(
                    f'SELECT name FROM "{self._table}" WHERE parent = ?', (path,)
                ).fetchall()
            return sorted(str(row[0]) for row in rows)  # whatever the collation

        return await self._run(list_)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Remove what is at ``path``; see :meth:`WorkspaceAPI.remove`."""
        names = _split(path)

        def remove(connection: sqlite3.Connection) -> None:
            table = self._table
            with transaction(connection):
                if not names:
                    if not recursive and self._has_children(connection, path):
                        raise _not_empty(path)
                    connection.execute(f'DELETE FROM "{table}"')
                    return
                kind = self._kind(connection, path)
                if kind is None:
                    raise _not_found(path)
                if kind and not recursive and self._has_children(connection, path):
                    raise _not_empty(path)
                # Everything under `path` sorts between `path/` and `path0`: '0' follows '/'.
                connection.execute(
                    f'DELETE FROM "{table}" WHERE path = ? OR (path >= ? AND path < ?)',
                    (path, path + "/", path + "0"),
                )

        await self._run(remove)

    def _has_children(self, connection: sqlite3.Connection, path: str) -> bool:
        row = connection.execute(
            f'SELECT EXISTS (SELECT 1 FROM "{self._table}" WHERE parent = ?)', (path,)
        ).fetchone()
        return bool(row[0])

    async def exists(self, path: str) -> bool:
        """Tell whether anything is at ``path``."""
        _split(path)
        return await self._run(lambda connection: self._kind(connection, path) is not None)


# --------------------------------------------------------------------------- implementations


@final
class MemoryWorkspaceImplementation(FeatureImplementation[WorkspaceAPI, WorkspaceCase]):
    """The in-memory reference: a fresh :class:`MemoryWorkspace` per scope."""

    feature = feature
    coverage = feature.coverage()

    def create(self, scope: FeatureScope) -> WorkspaceAPI:
        return MemoryWorkspace()


@final
class LocalDirectoryWorkspaceImplementation(FeatureImplementation[WorkspaceAPI, WorkspaceCase]):
    """
    A :class:`LocalDirectoryWorkspace` over a fresh temporary folder per scope, removed after.

    :param parent: where to make each scope's folder, to check the store on a
        particular file system; the system's temporary directory by default.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, parent: str | os.PathLike[str] | None = None) -> None:
        self.parent = None if parent is None else os.fspath(parent)

    async def create(self, scope: FeatureScope) -> WorkspaceAPI:
        return LocalDirectoryWorkspace(temporary_directory(scope, "workspace", self.parent))


@final
class SqliteWorkspaceImplementation(FeatureImplementation[WorkspaceAPI, WorkspaceCase]):
    """
    A :class:`SqliteWorkspace` per scope, closed after.

    By default each scope gets a fresh database file in a temporary folder,
    removed after. Given a database file, each scope gets its own table in it,
    dropped after, so that the file can be shared, kept, and inspected.

    :param database: a database file to use instead of a temporary one.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, database: str | os.PathLike[str] | None = None) -> None:
        self.database = None if database is None else os.fspath(database)

    async def create(self, scope: FeatureScope) -> WorkspaceAPI:
        database, table = scope_table(scope, self.database, "workspace", "workspace")
        workspace = SqliteWorkspace(database, table=table)
        scope.defer(workspace.aclose)
        await workspace.exists("/")  # opens the connection and makes the table now
        return workspace


implementations: tuple[FeatureImplementation[WorkspaceAPI, WorkspaceCase], ...] = (
    MemoryWorkspaceImplementation(),
    LocalDirectoryWorkspaceImplementation(),
    SqliteWorkspaceImplementation(),
)
"""One instance of each bundled implementation, as ``conformkit demo`` runs them."""
