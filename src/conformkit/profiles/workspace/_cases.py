"""
The workspace profile: a byte store with POSIX-style paths.

Passing it establishes that a store keeps the behaviour a consumer of a small
file tree relies on: a write is visible as soon as it resolves and replaces
what was there; the bytes are copied in and out, so neither the caller's
buffer nor the object a read returned can change what is stored; writing a
nested path creates its parents, which then persist until removed; listings
give the names of direct children in code-point order; reads of missing paths
give ``None`` while listing or removing them raises :class:`NotFound`;
removal is precise (``/a`` never takes ``/ab`` with it), refuses a non-empty
directory without ``recursive=True`` and removes nothing when it refuses, and
recursive removal of ``/`` empties the workspace but keeps ``/``; a file and a
directory never stand in for each other; and every operation rejects a path
that is not in canonical form, so no path can reach outside ``/``.

It does not establish atomicity of a write under a crash, durability across
processes, behaviour under concurrent writers, limits on sizes, names or depth,
or how names compare on a file system that folds case or normalises Unicode.

Paths are ``str``: ``/`` is the root, and every other path is ``/`` followed by
names joined by ``/`` (``/a/b.txt``). A name is non-empty, is not ``.`` or
``..``, and holds no ``/``, backslash or NUL and no lone surrogate.
"""

from __future__ import annotations

import builtins
import errno
import os
import re
import shutil
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any, Final, Literal, Protocol, TypeAlias, final, get_args

import anyio
import anyio.lowlevel
import anyio.to_thread
from typing_extensions import Buffer

from ..._feature import Feature
from ..._implementation import FeatureImplementation
from ..._scope import FeatureScope
from ..._suite import ContractSuite
from ..._util import short_repr
from .._support import (
    AsyncSqliteStore,
    NamedError,
    PointAt,
    connect,
    scope_table,
    temporary_directory,
    transaction,
)

__all__ = [
    "DirectoryNotEmpty",
    "InvalidPath",
    "IsADirectory",
    "LocalDirectoryWorkspace",
    "LocalDirectoryWorkspaceImplementation",
    "MemoryWorkspace",
    "MemoryWorkspaceImplementation",
    "NotADirectory",
    "NotFound",
    "SqliteWorkspace",
    "SqliteWorkspaceImplementation",
    "WorkspaceAPI",
    "WorkspaceCase",
    "WorkspaceError",
    "feature",
    "implementations",
    "suite",
]

# --------------------------------------------------------------------------- API and errors


class WorkspaceAPI(Protocol):
    """
    What the consumers of a workspace rely on: bytes stored under POSIX-style paths.

    Directories are created by writing a path beneath them and exist until they
    are removed. Every method raises :class:`InvalidPath` for a path that is not
    in canonical form (see the module's documentation).
    """

    async def write(self, path: str, data: Buffer) -> None:
        """
        Store a copy of ``data`` at ``path``, replacing a file there; create missing parents.

        :raises IsADirectory: if ``path`` is a directory (``/`` included).
        :raises NotADirectory: if a parent of ``path`` is a file; nothing is created.
        """
        ...

    async def read(self, path: str) -> bytes | None:
        """
        Return the bytes of the file at ``path``, or ``None`` if nothing is there.

        A path beneath a file is missing too, and reads as ``None``.

        :raises IsADirectory: if ``path`` is a directory.
        """
        ...

    async def list(self, path: str) -> builtins.list[str]:
        """
        Return the names of the direct children of the directory ``path``, in code-point order.

        :raises NotFound: if nothing is at ``path``.
        :raises NotADirectory: if ``path`` is a file.
        """
        ...

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """
        Remove the file or directory at ``path``.

        A non-empty directory needs ``recursive=True``, which removes it and
        everything under it. ``/`` is never removed itself: removing it
        recursively removes everything under it.

        :raises NotFound: if nothing is at ``path``.
        :raises DirectoryNotEmpty: for a non-empty directory without ``recursive``;
            nothing is removed.
        """
        ...

    async def exists(self, path: str) -> bool:
        """Tell whether a file or a directory is at ``path``; ``/`` always exists."""
        ...


class WorkspaceError(Exception):
    """
    Base class of the errors a workspace raises.

    Each subclass also derives from the standard type that fits it, so that
    ``except FileNotFoundError`` or ``except ValueError`` work as expected. The
    :class:`OSError` subclasses take the usual ``(errno, strerror, filename)``
    arguments, the filename being the workspace path.
    """


class InvalidPath(WorkspaceError, ValueError):
    """A path is not in canonical form, or leads outside the workspace."""


class NotFound(WorkspaceError, FileNotFoundError):
    """Nothing is at the path that was listed or removed."""


class NotADirectory(WorkspaceError, NotADirectoryError):
    """A directory was needed where a file is: listing a file, writing beneath one."""


class IsADirectory(WorkspaceError, IsADirectoryError):
    """A file was needed where a directory is: reading or writing a directory."""


class DirectoryNotEmpty(WorkspaceError, OSError):
    """Removing a non-empty directory needs ``recursive=True``; ``errno`` is ``ENOTEMPTY``."""


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


# --------------------------------------------------------------------------- case names

WorkspaceCase = Literal[
    "read_your_writes",
    "missing_reads_none",
    "overwrite_replaces",
    "bytes_cloned_on_write",
    "bytes_cloned_on_read",
    "nested_write_creates_parents",
    "listing_names_direct_children",
    "listing_is_sorted",
    "file_directory_conflicts_raise",
    "missing_list_and_remove_raise",
    "remove_is_precise",
    "remove_non_empty_needs_recursive",
    "remove_root_keeps_root",
    "invalid_paths_rejected",
]
"""The names of the profile's cases."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[WorkspaceAPI, WorkspaceCase](
    "conformkit.profiles.workspace",
    cases=get_args(WorkspaceCase),
    description=(
        "A byte store with POSIX-style paths rooted at '/': files hold bytes, directories "
        "are created by writing beneath them, listings name direct children in code-point "
        "order, and removal of a non-empty directory needs recursive=True."
    ),
    does_not_establish=(
        "Atomicity of a write under a crash, durability across processes, behaviour under "
        "concurrent writers, limits on file size, name length or depth, and how names compare "
        "on a file system that folds case or normalises Unicode."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

_LARGE: Final = bytes(range(256)) * 1024  # 256 KiB: more than any one buffer or page
_SEE: Final = PointAt("docs/profile-workspace.md#failure-modes")

_INVALID_PATHS: Final = (
    "",
    "relative.txt",
    "a/b",
    "/a/",
    "/a//b",
    "//a",
    "/.",
    "/a/./b",
    "/..",
    "/../escape.txt",
    "/a/../../escape.txt",
    "/a\\b",
    "/..\\escape.txt",
    "/a\x00b",
    "/\ud800",
)


_INVALID: Final = NamedError(InvalidPath, (ValueError,))
_NOT_FOUND: Final = NamedError(NotFound, (FileNotFoundError,))
_NOT_A_DIRECTORY: Final = NamedError(NotADirectory, (NotADirectoryError,))
_IS_A_DIRECTORY: Final = NamedError(IsADirectory, (IsADirectoryError,))
# EEXIST: what rmdir() of a non-empty directory sets on some systems.
_NOT_EMPTY: Final = NamedError(DirectoryNotEmpty, (OSError,), (errno.ENOTEMPTY, errno.EEXIST))


async def _raises(
    expected: NamedError, call: str, operation: Callable[[], Awaitable[object]]
) -> Exception:
    """Await ``operation()`` and return the ``expected`` error it raises; fail otherwise."""
    try:
        outcome = await operation()
    except Exception as exc:
        if expected.matches(exc):
            return exc
        raise AssertionError(f"expected {call} to raise {expected}, it raised {exc!r}") from exc
    raise AssertionError(f"expected {call} to raise {expected}, it returned {outcome!r}")


# What the cases write before they check anything. read_your_writes writes each top-level
# path here, and nested_write_creates_parents each nested one, so that the case a blocked
# case names as the owner of a refused write fails on that same write.
_MISSING_SETUP: Final = ("/dir/file.txt",)
_OVERWRITTEN: Final = ("/overwritten.txt",)
_READ_SETUP: Final = ("/data.bin",)
_REFUSAL_SETUP: Final = ("/file.txt",)
_PRECISION_PATHS: Final = (
    "/a/x.txt",
    "/a/x.txt.bak",
    "/a/sub/y.txt",
    "/ab/z.txt",
    "/a.txt",
    "/a-b/w.txt",
)
# U+FF5E (a fullwidth tilde) sorts before U+1F600 (an emoji) by code point, and after it by
# UTF-16 code unit, as Java and JavaScript compare strings.
_LISTED_NAMES: Final = (
    "zulu",
    "9",
    "\U0001f600",
    "Alpha",
    "mid",
    "été",
    "10",
    "\uff5e",
    "_x",
    "beta",
    "a b",
)
_SORTED_PATHS: Final = tuple(
    "/mid/inner.txt" if name == "mid" else f"/{name}" for name in _LISTED_NAMES
)
_NAMES_PATHS: Final = tuple(f"/names/{name}" for name in _LISTED_NAMES)
_CONFLICT_SETUP: Final = ("/d/f.txt",)
_REFILL: Final = ("/a/q/r.txt",)
_NOT_EMPTY_SETUP: Final = ("/docs/a.txt", "/docs/sub/b.txt")
_ROOT_SETUP: Final = ("/a.txt", "/d/e/f.txt")
_INVALID_SETUP: Final = ("/a/kept.txt",)
_SETUP_PATHS: Final = (
    *_MISSING_SETUP,
    *_OVERWRITTEN,
    *_READ_SETUP,
    *_REFUSAL_SETUP,
    *_PRECISION_PATHS,
    *_SORTED_PATHS,
    *_NAMES_PATHS,
    *_CONFLICT_SETUP,
    *_REFILL,
    *_NOT_EMPTY_SETUP,
    *_ROOT_SETUP,
    *_INVALID_SETUP,
)
_TOP_LEVEL_SETUP: Final = tuple(dict.fromkeys(p for p in _SETUP_PATHS if p.count("/") == 1))
_NESTED_SETUP: Final = tuple(dict.fromkeys(p for p in _SETUP_PATHS if p.count("/") > 1))
_FIRST_WRITE: Final = ("/notes.txt", b"first note")  # read_your_writes' first


async def _setup(api: WorkspaceAPI, paths: Iterable[str]) -> None:
    """Write each path (its own name as bytes); a write that fails blocks the case."""
    for path in paths:
        try:
            await api.write(path, path.encode())
        except Exception as exc:
            owner = await _owner_of_refused_write(api, path)
            raise AssertionError(f"blocked: writing {path!r} raised {exc!r}; {owner}") from exc


async def _owner_of_refused_write(api: WorkspaceAPI, path: str) -> str:
    """
    Who owns a refused setup write, as the end of a blocked reason: read_your_writes for a
    top-level path, or when a plain top-level write fails too; else nested_write_creates_parents.
    """
    if path.count("/") == 1:
        return "read_your_writes owns that"
    probe, data = _FIRST_WRITE
    try:
        await api.write(probe, data)
    except Exception as exc:
        return f"read_your_writes owns that: write({probe!r}, ...) raised {exc!r} too"
    return "nested_write_creates_parents owns that"


async def _expect_read(api: WorkspaceAPI, path: str, expected: bytes, when: str) -> None:
    got = await api.read(path)
    if got != expected:
        raise AssertionError(
            f"expected read({path!r}) {when} to give {short_repr(expected)}, got {short_repr(got)}"
        )


def _names_of(listing: object) -> builtins.list[Any] | None:
    """The entries of what ``list()`` returned, whatever iterable it is; ``None`` if none."""
    if isinstance(listing, Iterable) and not isinstance(listing, str | bytes):
        return builtins.list(listing)
    return None


async def _expect_names(api: WorkspaceAPI, path: str, expected: list[str], when: str) -> list[str]:
    """
    The names ``list(path)`` gives, which must be ``expected`` in some order: for the cases
    whose property is the whole listing. Whether they come in a ``list`` is
    listing_names_direct_children's to check, and only its.
    """
    got = await api.list(path)
    names = _names_of(got)
    if names is None or sorted(names) != sorted(expected):
        raise AssertionError(
            f"expected list({path!r}) {when} to give the names {sorted(expected)!r}, in any "
            f"order; got {got!r}"
        )
    return names


async def _expect_listed(
    api: WorkspaceAPI,
    path: str,
    when: str,
    *,
    present: Iterable[str] = (),
    absent: Iterable[str] = (),
) -> None:
    """
    Check that ``list(path)`` gives each name in ``present`` and none in ``absent``: for the
    cases whose property is about those names. Which other names a listing gives (a
    directory marker, say) is listing_names_direct_children's to check, and only its.
    """
    got = await api.list(path)
    names = _names_of(got)
    present, absent = builtins.list(present), builtins.list(absent)
    for entry in names or ():
        name = entry.rstrip("/").rsplit("/", 1)[-1] if isinstance(entry, str) else entry
        if entry != name and name in present + absent:  # 'sub/' or '/a/sub' for 'sub'
            raise AssertionError(
                f"blocked: list({path!r}) {when} gives {entry!r} for the name {name!r}; "
                f"listing_names_direct_children owns that a listing gives names, not paths"
            )
    if (
        names is None
        or any(name not in names for name in present)
        or any(name in names for name in absent)
    ):
        wanted = " and ".join(
            part
            for part in (
                ", ".join(map(repr, present)),
                "not " + ", ".join(map(repr, absent)) if absent else "",
            )
            if part
        )
        raise AssertionError(f"expected list({path!r}) {when} to give {wanted}, got {got!r}")


async def _expect_exists(api: WorkspaceAPI, path: str, expected: bool, when: str) -> None:
    """Whether ``exists(path)`` is truthy as expected: that it is a bool is read_your_writes'."""
    got = await api.exists(path)
    if bool(got) is not expected:
        raise AssertionError(f"expected exists({path!r}) {when} to be {expected}, got {got!r}")


@suite.case("read_your_writes")
async def _read_your_writes(api: WorkspaceAPI) -> None:
    with _SEE:
        written: dict[str, bytes] = {}
        for path, data in (
            _FIRST_WRITE,
            ("/binary.bin", bytes(range(256))),
            ("/empty", b""),
            ("/large.bin", _LARGE),
            *((path, path.encode()) for path in _TOP_LEVEL_SETUP),  # each name the cases use
        ):
            await api.write(path, data)
            await _expect_read(api, path, data, "right after writing it")
            await _expect_exists(api, path, True, "right after writing it")
            written[path] = data
            for earlier, kept in written.items():
                await _expect_read(api, earlier, kept, f"after writing {path!r}")
        for path, expected in ((_FIRST_WRITE[0], True), ("/never-written", False)):
            got = await api.exists(path)
            if type(got) is not bool:
                raise AssertionError(
                    f"expected exists({path!r}) to return {expected}, a bool; got {got!r}"
                )


@suite.case("missing_reads_none")
async def _missing_reads_none(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _MISSING_SETUP)
        for path in (
            "/never-written",
            "/no/such/deep/path",
            "/dir/other.txt",
            "/dir/file.txt.bak",
            "/di",
            "/dir/file.txt/beneath",
        ):
            got = await api.read(path)
            if got is not None:
                raise AssertionError(
                    f"expected read({path!r}) of a path never written to give None, got "
                    f"{short_repr(got)}"
                )
            await _expect_exists(api, path, False, "of a path never written")


@suite.case("overwrite_replaces")
async def _overwrite_replaces(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _OVERWRITTEN)  # its own name, longer than what replaces it
        path = _OVERWRITTEN[0]
        await api.write(path, b"short")
        await _expect_read(api, path, b"short", "after overwriting a longer file")
        await api.write(path, b"")
        await _expect_read(api, path, b"", "after overwriting with empty bytes")
        longer = b"a version longer than any before it"
        await api.write(path, longer)
        await _expect_read(api, path, longer, "after overwriting an empty file with more")
        got = await api.list("/")
        names = _names_of(got)
        if names is None or names.count(path[1:]) != 1:
            raise AssertionError(
                f"expected list('/') after four writes of one path to give {path[1:]!r} once, "
                f"got {got!r}"
            )


@suite.case("bytes_cloned_on_write")
async def _bytes_cloned_on_write(api: WorkspaceAPI) -> None:
    with _SEE:
        buffer = bytearray(b"original")
        await api.write("/buffer.bin", buffer)
        buffer[:] = b"MUTATED!"
        await _expect_read(
            api, "/buffer.bin", b"original", "after the bytearray written was changed"
        )
        backing = bytearray(b"viewed")
        await api.write("/view.bin", memoryview(backing))
        backing[:] = b"CHANGE"
        await _expect_read(
            api, "/view.bin", b"viewed", "after the buffer under the memoryview written was changed"
        )


@suite.case("bytes_cloned_on_read")
async def _bytes_cloned_on_read(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _READ_SETUP)
        first = await api.read("/data.bin")
        if first is None:
            raise AssertionError("expected read('/data.bin') to give b'/data.bin', got None")
        with memoryview(first) as view:
            if not view.readonly:
                view[:1] = b"X"
        await _expect_read(
            api,
            "/data.bin",
            b"/data.bin",
            f"after changing the {type(first).__name__} a read returned",
        )
        if type(first) is not bytes:
            raise AssertionError(
                f"expected read() to return immutable bytes, got a {type(first).__name__}"
            )


@suite.case("nested_write_creates_parents")
async def _nested_write_creates_parents(api: WorkspaceAPI) -> None:
    with _SEE:
        await api.write("/a/b/c/d.txt", b"deep")
        for parent in ("/a", "/a/b", "/a/b/c"):
            await _expect_exists(api, parent, True, "after writing '/a/b/c/d.txt'")
        for path, names in (("/", ["a"]), ("/a", ["b"]), ("/a/b", ["c"]), ("/a/b/c", ["d.txt"])):
            await _expect_listed(api, path, "after writing '/a/b/c/d.txt'", present=names)
        await api.write("/a/b/e.txt", b"sibling")
        await _expect_listed(api, "/a/b", "after writing '/a/b/e.txt' too", present=["c", "e.txt"])
        await _expect_read(api, "/a/b/c/d.txt", b"deep", "after writing '/a/b/e.txt' too")
        for path in _NESTED_SETUP:  # what the other cases write beneath new directories
            await api.write(path, path.encode())
            await _expect_read(api, path, path.encode(), "right after writing it")


@suite.case("listing_names_direct_children")
async def _listing_names_direct_children(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _PRECISION_PATHS)
        when = f"after writing {', '.join(_PRECISION_PATHS)}"
        await _expect_names(api, "/", ["a", "a-b", "a.txt", "ab"], when)
        got = await api.list("/")
        if not isinstance(got, list):
            raise AssertionError(f"expected list('/') to return a list, got a {type(got).__name__}")
        await _expect_names(api, "/a", ["sub", "x.txt", "x.txt.bak"], when)
        await _expect_names(api, "/a/sub", ["y.txt"], when)
        await _expect_names(api, "/ab", ["z.txt"], when)
        await _setup(api, _NAMES_PATHS)  # the names listing_is_sorted lists: given back as written
        when = f"after writing a file under '/names' for each of {list(_LISTED_NAMES)!r}"
        await _expect_names(api, "/names", list(_LISTED_NAMES), when)


@suite.case("listing_is_sorted")
async def _listing_is_sorted(api: WorkspaceAPI) -> None:
    with _SEE:
        names = list(_LISTED_NAMES)
        await _setup(api, _SORTED_PATHS)
        when = f"after writing {names!r} in that order"
        try:
            got = await _expect_names(api, "/", names, when)
        except AssertionError as exc:
            raise AssertionError(
                f"blocked: {exc}; listing_names_direct_children owns which names a listing gives"
            ) from exc
        if got != sorted(names):
            raise AssertionError(
                f"expected list('/') {when} to give the names in code-point order, "
                f"{sorted(names)!r}; got {got!r}"
            )


@suite.case("file_directory_conflicts_raise")
async def _file_directory_conflicts_raise(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _CONFLICT_SETUP)
        await _raises(
            _IS_A_DIRECTORY, "write('/d', ...) over a directory", partial(api.write, "/d", b"x")
        )
        await _raises(_IS_A_DIRECTORY, "write('/', ...)", partial(api.write, "/", b"x"))
        await _raises(_IS_A_DIRECTORY, "read('/d') of a directory", partial(api.read, "/d"))
        await _raises(_IS_A_DIRECTORY, "read('/')", partial(api.read, "/"))
        for beneath in ("/d/f.txt/g", "/d/f.txt/g/h"):  # a parent, or a grandparent, is a file
            await _raises(
                _NOT_A_DIRECTORY,
                f"write({beneath!r}, ...) beneath a file",
                partial(api.write, beneath, b"x"),
            )
        await _raises(_NOT_A_DIRECTORY, "list('/d/f.txt') of a file", partial(api.list, "/d/f.txt"))
        when = "after the refused operations"
        await _expect_listed(api, "/d", when, present=["f.txt"])
        await _expect_read(api, "/d/f.txt", b"/d/f.txt", when)


@suite.case("missing_list_and_remove_raise")
async def _missing_list_and_remove_raise(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _REFUSAL_SETUP)
        for path in ("/missing", "/missing/deeper", "/file.txt/beneath"):
            await _raises(_NOT_FOUND, f"list({path!r})", partial(api.list, path))
            await _raises(_NOT_FOUND, f"remove({path!r})", partial(api.remove, path))
            await _raises(
                _NOT_FOUND,
                f"remove({path!r}, recursive=True)",
                partial(api.remove, path, recursive=True),
            )
        await _expect_read(api, "/file.txt", b"/file.txt", "after the refused operations")


@suite.case("remove_is_precise")
async def _remove_is_precise(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _PRECISION_PATHS)
        await api.remove("/a/x.txt")
        await _expect_exists(api, "/a/x.txt", False, "after removing it")
        when = "after removing '/a/x.txt'"
        await _expect_read(api, "/a/x.txt.bak", b"/a/x.txt.bak", when)
        await _expect_read(api, "/a/sub/y.txt", b"/a/sub/y.txt", when)
        await api.remove("/a/sub/y.txt")
        # Its parent must still list it: a store that lists any missing path as [] would list
        # a vanished '/a/sub' as [] too. (Whether exists() sees directories is nested_write's.)
        when = "after removing '/a/sub/y.txt', the only file in '/a/sub' (directories persist)"
        await _expect_listed(api, "/a", when, present=["sub"])
        await _expect_listed(api, "/a/sub", when, absent=["y.txt"])
        await api.remove("/a/sub")
        await _expect_exists(api, "/a/sub", False, "after removing the empty directory")
        await _setup(api, _REFILL)
        await api.remove("/a", recursive=True)
        when = "after remove('/a', recursive=True)"
        await _expect_exists(api, "/a", False, when)
        await _expect_exists(api, "/a/q/r.txt", False, when)
        for kept in ("/ab/z.txt", "/a-b/w.txt", "/a.txt"):
            await _expect_read(api, kept, kept.encode(), when)
        await _expect_listed(api, "/", when, present=["a-b", "a.txt", "ab"], absent=["a"])
        await api.remove("/a.txt", recursive=True)
        await _expect_exists(api, "/a.txt", False, "after removing it with recursive=True")
        await _expect_listed(
            api, "/", "after removing '/a.txt' too", present=["a-b", "ab"], absent=["a.txt"]
        )


@suite.case("remove_non_empty_needs_recursive")
async def _remove_non_empty_needs_recursive(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _NOT_EMPTY_SETUP)
        error = await _raises(
            _NOT_EMPTY, "remove('/docs') of a non-empty directory", partial(api.remove, "/docs")
        )
        if "/docs" not in str(error):
            raise AssertionError(f"expected the error to name the path '/docs', got {str(error)!r}")
        when = "after the refused remove('/docs')"
        await _expect_read(api, "/docs/a.txt", b"/docs/a.txt", when)
        await _expect_read(api, "/docs/sub/b.txt", b"/docs/sub/b.txt", when)
        await _expect_listed(api, "/docs", when, present=["a.txt", "sub"])
        await _raises(_NOT_EMPTY, "remove('/') of a non-empty root", partial(api.remove, "/"))
        when = "after the refused remove('/')"
        await _expect_listed(api, "/", when, present=["docs"])
        for path in _NOT_EMPTY_SETUP:
            await _expect_read(api, path, path.encode(), when)
        await api.remove("/docs", recursive=True)
        await _expect_exists(api, "/docs", False, "after remove('/docs', recursive=True)")


@suite.case("remove_root_keeps_root")
async def _remove_root_keeps_root(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _ROOT_SETUP)
        await api.remove("/", recursive=True)
        when = "after remove('/', recursive=True)"
        await _expect_exists(api, "/", True, when)
        await _expect_names(api, "/", [], when)
        await _expect_exists(api, "/a.txt", False, when)
        await _expect_exists(api, "/d", False, when)
        await api.remove("/")  # an empty root: nothing to do, and still no error
        await _expect_exists(api, "/", True, "after remove('/') of the empty root")
        await api.write("/again.txt", b"again")
        await _expect_read(api, "/again.txt", b"again", "after emptying the root and writing again")


@suite.case("invalid_paths_rejected")
async def _invalid_paths_rejected(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _INVALID_SETUP)
        before = {path: _names_of(await api.list(path)) or [] for path in ("/", "/a")}
        for path in _INVALID_PATHS:
            for call, operation in (
                (f"write({path!r}, ...)", partial(api.write, path, b"escaped")),
                (f"read({path!r})", partial(api.read, path)),
                (f"exists({path!r})", partial(api.exists, path)),
                (f"list({path!r})", partial(api.list, path)),
                (f"remove({path!r})", partial(api.remove, path)),
                (f"remove({path!r}, recursive=True)", partial(api.remove, path, recursive=True)),
            ):
                await _raises(_INVALID, call, operation)
        when = "after every operation on invalid paths was refused"
        for path, names in before.items():  # whatever the store lists, the same as before
            await _expect_names(api, path, names, when)
        await _expect_read(api, "/a/kept.txt", b"/a/kept.txt", when)


# --------------------------------------------------------------------------- reference stores


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
