"""The workspace profile: conformkit.profiles.workspace, its implementations and its teeth."""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import posixpath
import re
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import cast

import anyio
import anyio.to_thread
import pytest
from typing_extensions import Buffer

import conformkit as ck
from conformkit.profiles import workspace
from conformkit.profiles.workspace import (
    DirectoryNotEmpty,
    InvalidPath,
    IsADirectory,
    LocalDirectoryWorkspace,
    LocalDirectoryWorkspaceImplementation,
    MemoryWorkspace,
    MemoryWorkspaceImplementation,
    NotADirectory,
    NotFound,
    SqliteWorkspace,
    SqliteWorkspaceImplementation,
    WorkspaceAPI,
    WorkspaceCase,
    WorkspaceError,
)

pytestmark = pytest.mark.anyio

ALL_CASES = frozenset(workspace.feature.cases)


def failed_cases(report: ck.ContractReport) -> set[str]:
    """The IDs of the cases that failed."""
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


class TestBundledImplementations:
    """Every bundled implementation passes the whole profile."""

    @pytest.mark.parametrize(
        "implementation", workspace.implementations, ids=lambda impl: type(impl).__name__
    )
    async def test_passes_in_full(
        self, implementation: ck.FeatureImplementation[WorkspaceAPI, WorkspaceCase]
    ) -> None:
        """Each implementation passes every case: full coverage, nothing declared unsupported."""
        report = await ck.run_contract(implementation, workspace.suite)
        ck.assert_contract(report, require_full=True)

    async def test_no_case_is_vacuous(self) -> None:
        """With calls recorded, every case calls the API and every operation is exercised."""
        report = await ck.run_contract(
            MemoryWorkspaceImplementation(), workspace.suite, reject_vacuous=True
        )
        ck.assert_contract(report, require_full=True)
        assert report.unexercised == ()

    async def test_implementations_holds_one_of_each(self) -> None:
        """`implementations` has one instance of each bundled implementation class."""
        assert [type(impl) for impl in workspace.implementations] == [
            MemoryWorkspaceImplementation,
            LocalDirectoryWorkspaceImplementation,
            SqliteWorkspaceImplementation,
        ]

    async def test_sqlite_in_a_given_file_uses_a_table_per_case_and_drops_it(
        self, tmp_path: Path
    ) -> None:
        """Given a database file, the cases share it, each in its own table, dropped after."""
        database = tmp_path / "shared.sqlite3"
        report = await ck.run_contract(
            SqliteWorkspaceImplementation(database), workspace.suite, max_concurrency=4
        )
        ck.assert_contract(report, require_full=True)

        def tables() -> list[str]:
            connection = sqlite3.connect(database)
            try:
                rows = connection.execute("SELECT name FROM sqlite_master").fetchall()
            finally:
                connection.close()
            return [str(row[0]) for row in rows]

        assert await anyio.Path(database).exists()
        assert await anyio.to_thread.run_sync(tables) == []

    async def test_local_in_a_given_parent_removes_each_folder(self, tmp_path: Path) -> None:
        """Given a parent folder, each case's folder is made there and removed after."""
        report = await ck.run_contract(
            LocalDirectoryWorkspaceImplementation(tmp_path), workspace.suite
        )
        ck.assert_contract(report, require_full=True)
        assert [path async for path in anyio.Path(tmp_path).iterdir()] == []

    async def test_temporary_folders_are_removed(self) -> None:
        """By default each session's folder (and database file) is gone once it closes."""
        async with ck.open_feature(LocalDirectoryWorkspaceImplementation()) as session:
            assert isinstance(session.api, LocalDirectoryWorkspace)
            folder = anyio.Path(session.api.root)
            await session.api.write("/a/b.txt", b"x")
            assert await (folder / "a" / "b.txt").read_bytes() == b"x"
        assert not await folder.exists()
        async with ck.open_feature(SqliteWorkspaceImplementation()) as session:
            assert isinstance(session.api, SqliteWorkspace)
            database = anyio.Path(session.api.database)
            await session.api.write("/a/b.txt", b"x")
            assert await database.exists()
        assert not await database.parent.exists()


class Delegating:
    """The reference behind a wrapper: each method passes through until a defect overrides it."""

    def __init__(self) -> None:
        self.inner = MemoryWorkspace()

    async def write(self, path: str, data: Buffer) -> None:
        await self.inner.write(path, data)

    async def read(self, path: str) -> bytes | None:
        return await self.inner.read(path)

    async def list(self, path: str) -> builtins.list[str]:
        return await self.inner.list(path)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.inner.remove(path, recursive=recursive)

    async def exists(self, path: str) -> bool:
        return await self.inner.exists(path)

    async def is_file(self, path: str) -> bool:
        """Whether a file (not a directory, not nothing) is at ``path``."""
        try:
            return await self.inner.read(path) is not None
        except IsADirectory:
            return False


class TruncatesLargeWrites(Delegating):
    """Keeps at most 64 KiB of each write, like a fixed-size column."""

    async def write(self, path: str, data: Buffer) -> None:
        await self.inner.write(path, memoryview(data).tobytes()[:65536])


class ReadsMissingAsEmpty(Delegating):
    """Reads a missing path as empty bytes rather than None."""

    async def read(self, path: str) -> bytes | None:
        data = await self.inner.read(path)
        return b"" if data is None else data


class LeaksNotADirectoryOnRead(Delegating):
    """Lets the file system's ENOTDIR through when reading beneath a file."""

    async def read(self, path: str) -> bytes | None:
        parent = posixpath.dirname(path)
        beneath = path.startswith("/") and parent != path and await self.inner.exists(parent)
        if beneath and await self.is_file(parent):
            raise NotADirectory(errno.ENOTDIR, "Not a directory", path)
        return await self.inner.read(path)


class OverwriteKeepsTail(Delegating):
    """Overwrites in place without truncating: a shorter write leaves the old tail."""

    async def write(self, path: str, data: Buffer) -> None:
        new = memoryview(data).tobytes()
        old = await self.inner.read(path)
        await self.inner.write(path, new if old is None else new + old[len(new) :])


class OverwriteKeepsOldSize(Delegating):
    """Overwrites in place within the old file's size: a longer write is cut to it."""

    async def write(self, path: str, data: Buffer) -> None:
        new = memoryview(data).tobytes()
        old = await self.inner.read(path)
        await self.inner.write(path, new if old is None else new[: max(len(old), 1)])


class KeepsCallersBuffer(Delegating):
    """Serves reads from the very buffer the caller wrote, not from a copy."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[str, Buffer] = {}

    async def write(self, path: str, data: Buffer) -> None:
        await self.inner.write(path, data)
        self.live[path] = data

    async def read(self, path: str) -> bytes | None:
        if path in self.live:
            return bytes(self.live[path])
        return await self.inner.read(path)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.inner.remove(path, recursive=recursive)
        self.live.clear()


class HandsOutStoredBuffer(Delegating):
    """Caches each read as a bytearray and hands that same buffer to every reader."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[str, bytearray] = {}

    async def write(self, path: str, data: Buffer) -> None:
        self.cache.clear()
        await self.inner.write(path, data)

    async def read(self, path: str) -> bytes | None:
        if path not in self.cache:
            data = await self.inner.read(path)
            if data is None:
                return None
            self.cache[path] = bytearray(data)
        return cast("bytes", self.cache[path])

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        self.cache.clear()
        await self.inner.remove(path, recursive=recursive)


class DirectoriesDoNotExist(Delegating):
    """Answers exists() for files only, as a flat key-value store would (the root aside)."""

    async def exists(self, path: str) -> bool:
        if path == "/":
            return await self.inner.exists(path)
        return await self.inner.exists(path) and await self.is_file(path)


class ListingMatchesPrefix(Delegating):
    """Lists by name prefix: list('/a') also shows the children of '/ab' and '/a-b'."""

    async def list(self, path: str) -> builtins.list[str]:
        names = await self.inner.list(path)
        if path != "/":
            parent, name = posixpath.split(path)
            for sibling in await self.inner.list(parent):
                if sibling != name and sibling.startswith(name):
                    with contextlib.suppress(NotADirectory):  # a file with the prefix
                        names += await self.inner.list(posixpath.join(parent, sibling))
        return sorted(names)


class SortsCaseInsensitively(Delegating):
    """Sorts listings with str.casefold, as a case-insensitive collation would."""

    async def list(self, path: str) -> builtins.list[str]:
        return sorted(await self.inner.list(path), key=str.casefold)


class WriteReplacesDirectory(Delegating):
    """Writing a file over a directory silently deletes the directory."""

    async def write(self, path: str, data: Buffer) -> None:
        if path != "/" and await self.inner.exists(path) and not await self.is_file(path):
            await self.inner.remove(path, recursive=True)
        await self.inner.write(path, data)


class MissingIsEmpty(Delegating):
    """Lists a missing path as empty and removes it silently, as object stores do."""

    async def list(self, path: str) -> builtins.list[str]:
        try:
            return await self.inner.list(path)
        except NotFound:
            return []

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        with contextlib.suppress(NotFound):
            await self.inner.remove(path, recursive=recursive)


class RemovesByPrefix(Delegating):
    """Removes recursively by name prefix: '/a' takes '/ab' and '/a-b' with it."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.inner.remove(path, recursive=recursive)
        if recursive and path != "/":
            parent, name = posixpath.split(path)
            for sibling in await self.inner.list(parent):
                if sibling.startswith(name):
                    await self.inner.remove(posixpath.join(parent, sibling), recursive=True)


class AlwaysRecursive(Delegating):
    """Ignores recursive=False: every removal takes the whole tree."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.inner.remove(path, recursive=True)


class RemovesFilesBeforeFailing(Delegating):
    """Removes a directory's files one by one, then fails on its subdirectory: half done."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        if not recursive:
            try:
                names = await self.inner.list(path)
            except (NotFound, NotADirectory):
                names = []
            for name in names:
                child = posixpath.join(path, name)
                if await self.is_file(child):
                    await self.inner.remove(child)
        await self.inner.remove(path, recursive=recursive)


class DeletesRoot(Delegating):
    """Removes '/' itself on recursive removal, like shutil.rmtree(root); nothing works after."""

    def __init__(self) -> None:
        super().__init__()
        self.gone = False

    def check_root(self) -> None:
        if self.gone:
            raise NotFound(errno.ENOENT, "the workspace root is gone", "/")

    async def write(self, path: str, data: Buffer) -> None:
        self.check_root()
        await self.inner.write(path, data)

    async def read(self, path: str) -> bytes | None:
        self.check_root()
        return await self.inner.read(path)

    async def list(self, path: str) -> builtins.list[str]:
        self.check_root()
        return await self.inner.list(path)

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        self.check_root()
        await self.inner.remove(path, recursive=recursive)
        self.gone = path == "/" and recursive

    async def exists(self, path: str) -> bool:
        return not self.gone and await self.inner.exists(path)


class NormalisesPaths(Delegating):
    """Normalises paths with posixpath.normpath instead of rejecting them: '/a/../b' is '/b'."""

    @staticmethod
    def normalise(path: str) -> str:
        return posixpath.normpath(path) if path.startswith("/") else path

    async def write(self, path: str, data: Buffer) -> None:
        await self.inner.write(self.normalise(path), data)

    async def read(self, path: str) -> bytes | None:
        return await self.inner.read(self.normalise(path))

    async def list(self, path: str) -> builtins.list[str]:
        return await self.inner.list(self.normalise(path))

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.inner.remove(self.normalise(path), recursive=recursive)

    async def exists(self, path: str) -> bool:
        return await self.inner.exists(self.normalise(path))


def plain(error: WorkspaceError) -> Exception:
    """The standard exception that means what a WorkspaceError means, naming the same path."""
    if isinstance(error, InvalidPath):
        return ValueError(str(error))
    assert isinstance(error, OSError)
    kinds: list[tuple[type[WorkspaceError], type[OSError], int]] = [
        (NotFound, FileNotFoundError, errno.ENOENT),
        (NotADirectory, NotADirectoryError, errno.ENOTDIR),
        (IsADirectory, IsADirectoryError, errno.EISDIR),
        (DirectoryNotEmpty, OSError, errno.ENOTEMPTY),
    ]
    for kind, standard, code in kinds:
        if isinstance(error, kind):
            return standard(code, os.strerror(code), error.filename)
    raise AssertionError(f"no standard exception for {error!r}")


class StandardErrors(Delegating):
    """Raises the standard exceptions, as an adapter over a file-system library does."""

    def __init__(self) -> None:
        super().__init__()
        self.strict = self.inner
        self.inner = cast("MemoryWorkspace", PlainErrors(self.strict))


class PlainErrors:
    """The errors of a workspace, as the standard exceptions that mean the same."""

    def __init__(self, inner: WorkspaceAPI) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Callable[..., Awaitable[object]]:
        method = getattr(self.inner, name)

        async def call(*args: object, **kwargs: object) -> object:
            try:
                return await method(*args, **kwargs)
            except WorkspaceError as error:
                raise plain(error) from None

        return call


class RmdirSaysExists(StandardErrors):
    """Refuses a non-empty directory with errno EEXIST, as rmdir() does on some systems."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        try:
            await super().remove(path, recursive=recursive)
        except OSError as error:
            if error.errno != errno.ENOTEMPTY:
                raise
            raise OSError(errno.EEXIST, os.strerror(errno.EEXIST), path) from None


class NotEmptyAsValueError(StandardErrors):
    """Refuses a non-empty directory with ValueError, as fsspec's LocalFileSystem.rm() does."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        try:
            await super().remove(path, recursive=recursive)
        except OSError as error:
            if error.errno != errno.ENOTEMPTY:
                raise
            raise ValueError("Cannot delete directory, set recursive=True") from None


class BeneathFileAsFileExists(StandardErrors):
    """Refuses a write beneath a file with FileExistsError, as fsspec's MemoryFileSystem does."""

    async def write(self, path: str, data: Buffer) -> None:
        try:
            await super().write(path, data)
        except NotADirectoryError as error:
            raise FileExistsError(errno.EEXIST, "File exists", path) from error


class ListsInReverse(Delegating):
    """Lists names in reverse code-point order."""

    async def list(self, path: str) -> builtins.list[str]:
        return sorted(await self.inner.list(path), reverse=True)


class ListsByLength(Delegating):
    """Lists names shortest first, an order a hash or an index could give."""

    async def list(self, path: str) -> builtins.list[str]:
        return sorted(await self.inner.list(path), key=len)


class NoParents(Delegating):
    """Writes a file only where its parent exists, as open() does without makedirs()."""

    async def write(self, path: str, data: Buffer) -> None:
        parent = posixpath.dirname(path)
        if not await self.inner.exists(parent):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        await self.inner.write(path, data)


class EmptiedDirectoriesVanish(MissingIsEmpty):
    """
    Keeps directories only while something is beneath them, and lists a missing path as
    empty, as an object store's prefixes do (zarr's and obstore's stores).
    """

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await super().remove(path, recursive=recursive)
        parent = posixpath.dirname(path)
        while parent != "/" and await self.inner.exists(parent):
            if await self.inner.list(parent):
                break
            await self.inner.remove(parent)
            parent = posixpath.dirname(parent)


class RefusesSpaces(Delegating):
    """Refuses a name with a space, a valid name, with ValueError."""

    async def write(self, path: str, data: Buffer) -> None:
        if " " in path:
            raise ValueError(f"names may not hold a space: {path!r}")
        await self.inner.write(path, data)


class RefusesHyphens(Delegating):
    """Refuses a name with a hyphen, a valid name, with ValueError."""

    async def write(self, path: str, data: Buffer) -> None:
        if "-" in path:
            raise ValueError(f"names may not hold a hyphen: {path!r}")
        await self.inner.write(path, data)


class RefusesDots(Delegating):
    """Refuses a name with a dot, such as every file name with an extension."""

    async def write(self, path: str, data: Buffer) -> None:
        if "." in path:
            raise ValueError(f"names may not hold a dot: {path!r}")
        await self.inner.write(path, data)


class WritesNothing(Delegating):
    """Every write raises, as an asyncio-only library's does when called from trio."""

    async def write(self, path: str, data: Buffer) -> None:
        raise RuntimeError("no running event loop")


class RecursiveRemovalTakesPrefixedFiles(Delegating):
    """
    Recursive removal of '/a' also removes the files beside it whose name starts with 'a',
    a prefix match that spares directories: '/a.txt' goes, '/ab' and '/a-b' stay.
    """

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.inner.remove(path, recursive=recursive)
        if recursive and path != "/":
            parent, name = posixpath.split(path)
            for sibling in await self.inner.list(parent):
                child = posixpath.join(parent, sibling)
                if sibling.startswith(name) and await self.is_file(child):
                    await self.inner.remove(child)


class RemovalTakesPrefixedFiles(Delegating):
    """Removing a file also removes the files beside it whose name it prefixes."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        removed_a_file = path != "/" and await self.is_file(path)
        await self.inner.remove(path, recursive=recursive)
        if removed_a_file:
            parent, name = posixpath.split(path)
            for sibling in await self.inner.list(parent):
                child = posixpath.join(parent, sibling)
                if sibling.startswith(name) and await self.is_file(child):
                    await self.inner.remove(child)


class FoldsCase(NormalisesPaths):
    """Folds every path to lower case, so that listings give names other than those written."""

    @staticmethod
    def normalise(path: str) -> str:
        return path.lower()


class NormalisesOnPlainRemove(Delegating):
    """Normalises the path of a removal without recursive=True, instead of rejecting it."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        if not recursive and path.startswith("/"):
            path = posixpath.normpath(path)
        await self.inner.remove(path, recursive=recursive)


class ListsATuple(Delegating):
    """Gives each listing as a tuple, not a list."""

    async def list(self, path: str) -> builtins.list[str]:
        return cast("builtins.list[str]", tuple(await self.inner.list(path)))


class RootRefusalHalfDone(Delegating):
    """Refuses remove('/') of a non-empty root only after removing every file in the tree."""

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        if path == "/" and not recursive:
            await self.remove_files("/")
        await self.inner.remove(path, recursive=recursive)

    async def remove_files(self, directory: str) -> None:
        for name in await self.inner.list(directory):
            child = posixpath.join(directory, name)
            if await self.is_file(child):
                await self.inner.remove(child)
            else:
                await self.remove_files(child)


class ChecksOnlyTheDirectParent(Delegating):
    """
    Refuses a write beneath a file only when its direct parent is the file: deeper beneath
    one, the write is taken and lost, as in a flat store that checks one level up.
    """

    async def write(self, path: str, data: Buffer) -> None:
        ancestor = posixpath.dirname(posixpath.dirname(path))
        while ancestor != "/":
            if await self.is_file(ancestor):
                return
            ancestor = posixpath.dirname(ancestor)
        await self.inner.write(path, data)


class SortsByUtf16(Delegating):
    """Sorts listings by UTF-16 code units, as Java or JavaScript would: U+1F600 before U+FF5E."""

    async def list(self, path: str) -> builtins.list[str]:
        names = await self.inner.list(path)
        return sorted(names, key=lambda name: name.encode("utf-16-be", "surrogatepass"))


class ListsItsOwnMarker(Delegating):
    """Lists a directory's own marker object as an entry named '', as S3's 'dir/' key shows up."""

    async def list(self, path: str) -> builtins.list[str]:
        names = await self.inner.list(path)
        return names if path == "/" else ["", *names]


class SlashesDirectories(Delegating):
    """Lists a directory's name with a trailing '/', as some file-system libraries do."""

    async def list(self, path: str) -> builtins.list[str]:
        names = []
        for name in await self.inner.list(path):
            child = posixpath.join(path, name)
            names.append(name if await self.is_file(child) else f"{name}/")
        return names


class ExistsGivesInts(Delegating):
    """Answers exists() with 1 or 0, as a SQL COUNT(*) would, rather than a bool."""

    async def exists(self, path: str) -> bool:
        return cast("bool", int(await self.inner.exists(path)))


class RefusesPath(Delegating):
    """Refuses a write of one path, and of nothing else."""

    def __init__(self, refused: str) -> None:
        super().__init__()
        self.refused = refused

    async def write(self, path: str, data: Buffer) -> None:
        if path == self.refused:
            raise PermissionError(errno.EACCES, "refused", path)
        await self.inner.write(path, data)


class RecordsWrites(Delegating):
    """The reference, keeping the path of every write."""

    written: builtins.list[str] = []

    async def write(self, path: str, data: Buffer) -> None:
        RecordsWrites.written.append(path)
        await self.inner.write(path, data)


class Broken(ck.FeatureImplementation[WorkspaceAPI, WorkspaceCase]):
    """An implementation that claims every case and creates one defective workspace."""

    feature = workspace.feature
    coverage = workspace.feature.coverage()

    def __init__(self, make: Callable[[], WorkspaceAPI]) -> None:
        self.make = make

    def create(self, scope: ck.FeatureScope) -> WorkspaceAPI:
        return self.make()


DEFECTS: list[tuple[Callable[[], WorkspaceAPI], frozenset[str]]] = [
    (TruncatesLargeWrites, frozenset({"read_your_writes"})),
    (ReadsMissingAsEmpty, frozenset({"missing_reads_none"})),
    (LeaksNotADirectoryOnRead, frozenset({"missing_reads_none"})),
    (OverwriteKeepsTail, frozenset({"overwrite_replaces"})),
    (OverwriteKeepsOldSize, frozenset({"overwrite_replaces"})),
    (KeepsCallersBuffer, frozenset({"bytes_cloned_on_write"})),
    (HandsOutStoredBuffer, frozenset({"bytes_cloned_on_read"})),
    (DirectoriesDoNotExist, frozenset({"nested_write_creates_parents"})),
    (ListingMatchesPrefix, frozenset({"listing_names_direct_children"})),
    (SortsCaseInsensitively, frozenset({"listing_is_sorted"})),
    (WriteReplacesDirectory, frozenset({"file_directory_conflicts_raise"})),
    (MissingIsEmpty, frozenset({"missing_list_and_remove_raise"})),
    (RemovesByPrefix, frozenset({"remove_is_precise"})),
    (EmptiedDirectoriesVanish, frozenset({"missing_list_and_remove_raise", "remove_is_precise"})),
    (RecursiveRemovalTakesPrefixedFiles, frozenset({"remove_is_precise"})),
    (RemovalTakesPrefixedFiles, frozenset({"remove_is_precise"})),
    (AlwaysRecursive, frozenset({"remove_non_empty_needs_recursive"})),
    (RemovesFilesBeforeFailing, frozenset({"remove_non_empty_needs_recursive"})),
    (DeletesRoot, frozenset({"remove_root_keeps_root"})),
    (NormalisesPaths, frozenset({"invalid_paths_rejected"})),
    (NormalisesOnPlainRemove, frozenset({"invalid_paths_rejected"})),
    (ListsATuple, frozenset({"listing_names_direct_children"})),
    (ListsItsOwnMarker, frozenset({"listing_names_direct_children"})),
    (RootRefusalHalfDone, frozenset({"remove_non_empty_needs_recursive"})),
    (ChecksOnlyTheDirectParent, frozenset({"file_directory_conflicts_raise"})),
    (SortsByUtf16, frozenset({"listing_is_sorted"})),
    (ExistsGivesInts, frozenset({"read_your_writes"})),
]


STANDARD_EXCEPTIONS: list[tuple[Callable[[], WorkspaceAPI], frozenset[str]]] = [
    (StandardErrors, frozenset()),
    (RmdirSaysExists, frozenset()),
    (NotEmptyAsValueError, frozenset({"remove_non_empty_needs_recursive"})),
    (BeneathFileAsFileExists, frozenset({"file_directory_conflicts_raise"})),
]

UNSORTED_LISTING: list[tuple[Callable[[], WorkspaceAPI], frozenset[str]]] = [
    (ListsInReverse, frozenset({"listing_is_sorted"})),
    (ListsByLength, frozenset({"listing_is_sorted"})),
    (SortsCaseInsensitively, frozenset({"listing_is_sorted"})),
]

NESTED_SETUP = frozenset(
    {
        "missing_reads_none",
        "listing_names_direct_children",
        "listing_is_sorted",
        "file_directory_conflicts_raise",
        "remove_is_precise",
        "remove_non_empty_needs_recursive",
        "remove_root_keeps_root",
        "invalid_paths_rejected",
    }
)


def ids(table: list[tuple[Callable[[], WorkspaceAPI], frozenset[str]]]) -> list[str]:
    return [make.__name__ for make, _ in table]


class TestOwnership:
    """A store fails the cases that own its defect, and only those."""

    @pytest.mark.parametrize(
        ("make", "expected"), STANDARD_EXCEPTIONS, ids=ids(STANDARD_EXCEPTIONS)
    )
    async def test_standard_exceptions_are_accepted(
        self, make: Callable[[], WorkspaceAPI], expected: frozenset[str]
    ) -> None:
        """The standard exception that means the same passes; one that means else fails."""
        report = await ck.run_contract(Broken(make), workspace.suite)
        assert failed_cases(report) == expected, str(report)

    @pytest.mark.parametrize(("make", "expected"), UNSORTED_LISTING, ids=ids(UNSORTED_LISTING))
    async def test_an_unsorted_listing_fails_only_listing_is_sorted(
        self, make: Callable[[], WorkspaceAPI], expected: frozenset[str]
    ) -> None:
        """Listings compare as sets everywhere but in the one case about their order."""
        report = await ck.run_contract(Broken(make), workspace.suite)
        assert failed_cases(report) == expected, str(report)

    async def test_a_case_that_cannot_set_up_says_which_case_owns_that(self) -> None:
        """Without nested writes, the cases that need them are blocked, naming the owner."""
        report = await ck.run_contract(Broken(NoParents), workspace.suite)
        assert failed_cases(report) == NESTED_SETUP | {"nested_write_creates_parents"}
        for case in NESTED_SETUP:
            reason = report[case].reason or ""
            assert ": AssertionError: blocked: writing '/" in reason, reason
            assert "raised FileNotFoundError(2, 'No such file or directory'" in reason
            assert "nested_write_creates_parents owns that" in reason

    async def test_the_wrong_standard_exception_is_named(self) -> None:
        """The reason names the profile's error and the standard one that would do."""
        report = await ck.run_contract(Broken(NotEmptyAsValueError), workspace.suite)
        assert (
            "expected remove('/docs') of a non-empty directory to raise DirectoryNotEmpty (or "
            "OSError with errno ENOTEMPTY or EEXIST), it raised ValueError('Cannot delete "
            "directory, set recursive=True')"
        ) in (report["remove_non_empty_needs_recursive"].reason or "")


MISATTRIBUTED: list[tuple[Callable[[], WorkspaceAPI], frozenset[str]]] = [
    (
        RefusesSpaces,
        frozenset(
            {
                "read_your_writes",
                "nested_write_creates_parents",
                "listing_names_direct_children",
                "listing_is_sorted",
            }
        ),
    ),
    (
        RefusesHyphens,
        frozenset(
            {"nested_write_creates_parents", "listing_names_direct_children", "remove_is_precise"}
        ),
    ),
    (WritesNothing, ALL_CASES),
    (RefusesDots, ALL_CASES),
    (FoldsCase, frozenset({"listing_names_direct_children", "listing_is_sorted"})),
]

OWNER = re.compile(r"blocked: .*; (\w+) owns")


def blocked_owners(report: ck.ContractReport) -> dict[str, str]:
    """Each blocked case, and the case its reason says owns what blocked it."""
    owners = {}
    for result in report.results:
        reason = result.reason or ""
        if "AssertionError: blocked:" in reason:
            found = OWNER.search(reason)
            assert found is not None, reason
            owners[result.case_id] = found.group(1)
    return owners


def written_by_the_suite() -> list[str]:
    """Every path the suite writes, in a run against the reference."""
    RecordsWrites.written = []
    report = ck.run_contract_sync(Broken(RecordsWrites), workspace.suite)
    ck.assert_contract(report, require_full=True)
    return sorted(set(RecordsWrites.written))


class TestAttribution:
    """A case blocked by its setup names the case that owns what failed, and that case fails."""

    @pytest.mark.parametrize(("make", "expected"), MISATTRIBUTED, ids=ids(MISATTRIBUTED))
    async def test_blocked_cases_name_an_owner_that_failed(
        self, make: Callable[[], WorkspaceAPI], expected: frozenset[str]
    ) -> None:
        """The failed set is exact, and every blocked case names a case that failed."""
        report = await ck.run_contract(Broken(make), workspace.suite)
        assert failed_cases(report) == expected, str(report)
        owners = blocked_owners(report)
        assert owners, str(report)
        assert set(owners.values()) <= failed_cases(report), owners

    async def test_names_spelled_as_paths_block_on_listing_names_direct_children(self) -> None:
        """A listing that gives 'a/' for 'a' fails its owner; the cases that look for 'a' block."""
        report = await ck.run_contract(Broken(SlashesDirectories), workspace.suite)
        owners = blocked_owners(report)
        assert failed_cases(report) - set(owners) == {"listing_names_direct_children"}, str(report)
        assert set(owners.values()) == {"listing_names_direct_children"}, str(report)
        assert "gives 'sub/' for the name 'sub'" in (report["remove_is_precise"].reason or "")

    @pytest.mark.parametrize(
        "make", [WritesNothing, RefusesDots], ids=["WritesNothing", "RefusesDots"]
    )
    async def test_a_store_that_writes_nothing_is_blamed_on_read_your_writes(
        self, make: Callable[[], WorkspaceAPI]
    ) -> None:
        """When no plain write works, every blocked case names read_your_writes, not parents."""
        report = await ck.run_contract(Broken(make), workspace.suite)
        assert set(blocked_owners(report).values()) == {"read_your_writes"}, str(report)

    async def test_a_refused_top_level_name_is_blamed_on_read_your_writes(self) -> None:
        """Refusing the valid name '/a b' blocks listing_is_sorted, naming read_your_writes."""
        report = await ck.run_contract(Broken(RefusesSpaces), workspace.suite)
        reason = report["listing_is_sorted"].reason or ""
        assert "blocked: writing '/a b' raised ValueError(" in reason, reason
        assert "read_your_writes owns that" in reason, reason
        own = report["read_your_writes"].reason or ""
        assert "ValueError: names may not hold a space: '/a b'" in own, own

    @pytest.mark.parametrize("refused", written_by_the_suite())
    async def test_each_refused_write_is_blamed_on_a_case_that_fails(self, refused: str) -> None:
        """For each path the suite writes, refusing it alone fails the case that owns it."""
        report = await ck.run_contract(Broken(partial(RefusesPath, refused)), workspace.suite)
        owners = blocked_owners(report)
        assert set(owners.values()) <= failed_cases(report), (owners, str(report))
        assert len(failed_cases(report) - set(owners)) == 1, str(report)  # the owner alone

    async def test_an_emptied_directory_that_vanishes_fails_remove_is_precise(self) -> None:
        """A store whose emptied directories vanish fails on their existence, not on a listing."""
        report = await ck.run_contract(Broken(EmptiedDirectoriesVanish), workspace.suite)
        reason = report["remove_is_precise"].reason or ""
        assert (
            "expected list('/a') after removing '/a/sub/y.txt', the only file in '/a/sub' "
            "(directories persist) to give 'sub', got ['x.txt.bak']"
        ) in reason, reason


class TestBrokenImplementations:
    """Each defect fails exactly the cases that should catch it, and passes the rest."""

    @pytest.mark.parametrize(
        ("make", "expected"), DEFECTS, ids=[make.__name__ for make, _ in DEFECTS]
    )
    async def test_defect_fails_exactly_its_cases(
        self, make: Callable[[], WorkspaceAPI], expected: frozenset[str]
    ) -> None:
        """The failed case IDs are exactly the expected set; every other case passed."""
        report = await ck.run_contract(Broken(make), workspace.suite)
        assert failed_cases(report) == expected, str(report)
        assert report.counts()[ck.CaseStatus.PASSED] == len(ALL_CASES) - len(expected)

    def test_every_case_is_caught_alone_by_some_defect(self) -> None:
        """Every case has a defect that it alone catches: no case leans on another."""
        alone = {case for _, expected in DEFECTS if len(expected) == 1 for case in expected}
        assert alone == ALL_CASES

    async def test_failure_says_what_was_expected_and_what_happened(self) -> None:
        """A failed case's reason names the call, the expected outcome and the actual one."""
        report = await ck.run_contract(Broken(MissingIsEmpty), workspace.suite)
        reason = report["missing_list_and_remove_raise"].reason
        assert reason is not None
        assert (
            "expected list('/missing') to raise NotFound (or FileNotFoundError), it returned [] "
            "(see docs/profile-workspace.md#failure-modes)"
        ) in reason


class TestLocalDirectoryConfinement:
    """LocalDirectoryWorkspace never reads or writes outside its root."""

    @pytest.fixture
    def root(self, tmp_path: Path) -> Path:
        """A workspace root with a neighbour file beside it that must never change."""
        root = tmp_path / "root"
        root.mkdir()
        (tmp_path / "neighbour.txt").write_bytes(b"untouched")
        return root

    @staticmethod
    def assert_outside_untouched(root: Path) -> None:
        """Nothing beside the root changed, and nothing was written into it."""
        assert list(root.iterdir()) == []
        outside = root.parent
        assert sorted(path.name for path in outside.iterdir()) == ["neighbour.txt", "root"]
        assert (outside / "neighbour.txt").read_bytes() == b"untouched"

    @pytest.mark.parametrize(
        "path",
        [
            "/../escape.txt",
            "/a/../../escape.txt",
            "/../neighbour.txt",
            "/..\\escape.txt",
            "../escape.txt",
            "..",
            "/..",
        ],
    )
    async def test_dot_dot_escapes_are_rejected(self, root: Path, path: str) -> None:
        """A path that climbs out of the root with '..' is refused by every operation."""
        store = LocalDirectoryWorkspace(root)
        with pytest.raises(InvalidPath, match="invalid workspace path"):
            await store.write(path, b"escaped")
        with pytest.raises(InvalidPath):
            await store.read(path)
        with pytest.raises(InvalidPath):
            await store.list(path)
        with pytest.raises(InvalidPath):
            await store.remove(path, recursive=True)
        self.assert_outside_untouched(root)

    async def test_host_absolute_path_stays_under_the_root(self, root: Path) -> None:
        """A host's absolute path names a file under the root, never the host's file."""
        target = root.parent / "outside.txt"
        await LocalDirectoryWorkspace(root).write(str(target), b"inside")
        assert not target.exists()
        assert (root / str(target).lstrip("/")).read_bytes() == b"inside"

    async def test_symbolic_link_out_of_the_root_is_refused(self, root: Path) -> None:
        """A symbolic link inside the root that leads outside it cannot be followed."""
        secret = root.parent / "secret"
        secret.mkdir()
        (secret / "key").write_bytes(b"secret")
        (root / "link").symlink_to(secret, target_is_directory=True)
        store = LocalDirectoryWorkspace(root)
        with pytest.raises(InvalidPath, match="leads outside the root"):
            await store.read("/link/key")
        with pytest.raises(InvalidPath):
            await store.write("/link/planted", b"x")
        with pytest.raises(InvalidPath):
            await store.list("/link")
        with pytest.raises(InvalidPath):
            await store.remove("/link", recursive=True)
        assert [path.name for path in secret.iterdir()] == ["key"]
        assert (secret / "key").read_bytes() == b"secret"

    async def test_missing_root_is_reported(self, tmp_path: Path) -> None:
        """A root that is not an existing directory fails every operation with NotFound."""
        with pytest.raises(NotFound, match="not an existing directory"):
            await LocalDirectoryWorkspace(tmp_path / "missing").exists("/")


class TestSqliteWorkspace:
    """SqliteWorkspace over a real database file."""

    async def test_data_outlives_the_connection(self, tmp_path: Path) -> None:
        """What one connection wrote, a later one over the same file reads."""
        database = tmp_path / "kept.sqlite3"
        async with SqliteWorkspace(database) as store:
            await store.write("/a/b.txt", b"kept")
        async with SqliteWorkspace(database) as store:
            assert await store.read("/a/b.txt") == b"kept"
            assert await store.list("/") == ["a"]

    async def test_tables_are_separate_workspaces(self, tmp_path: Path) -> None:
        """Two tables in one file are two independent workspaces."""
        database = tmp_path / "shared.sqlite3"
        async with (
            SqliteWorkspace(database, table="one") as one,
            SqliteWorkspace(database, table="two") as two,
        ):
            await one.write("/only-in-one", b"1")
            assert await two.list("/") == []
            assert await two.read("/only-in-one") is None

    async def test_closed_workspace_refuses_operations(self, tmp_path: Path) -> None:
        """After aclose(), an operation raises ClosedResourceError; closing twice is harmless."""
        store = SqliteWorkspace(tmp_path / "closed.sqlite3")
        await store.write("/x", b"x")
        await store.aclose()
        await store.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await store.read("/x")

    def test_table_name_must_be_an_identifier(self, tmp_path: Path) -> None:
        """A table name that is not a plain identifier is refused before any SQL runs."""
        with pytest.raises(ValueError, match="plain SQL identifier"):
            SqliteWorkspace(tmp_path / "x.sqlite3", table='x"; DROP TABLE y; --')


class TestErrors:
    """The error types and messages every bundled workspace raises."""

    def test_errors_derive_from_the_fitting_standard_types(self) -> None:
        """Each error is a WorkspaceError and the standard exception that fits it."""
        assert issubclass(InvalidPath, ValueError)
        assert issubclass(NotFound, FileNotFoundError)
        assert issubclass(NotADirectory, NotADirectoryError)
        assert issubclass(IsADirectory, IsADirectoryError)
        assert issubclass(DirectoryNotEmpty, OSError)
        for error in (InvalidPath, NotFound, NotADirectory, IsADirectory, DirectoryNotEmpty):
            assert issubclass(error, WorkspaceError)

    async def test_directory_not_empty_names_the_path_and_the_fix(self) -> None:
        """The refusal carries errno ENOTEMPTY and the path, and says to pass recursive=True."""
        store = MemoryWorkspace()
        await store.write("/docs/a.txt", b"a")
        with pytest.raises(DirectoryNotEmpty) as caught:
            await store.remove("/docs")
        assert caught.value.errno == errno.ENOTEMPTY
        assert caught.value.filename == "/docs"
        assert "recursive=True" in str(caught.value)

    async def test_invalid_path_names_the_path_and_the_rule(self) -> None:
        """The message shows the offending path and what a path must look like."""
        with pytest.raises(InvalidPath) as caught:
            await MemoryWorkspace().read("/a/../b")
        assert str(caught.value) == (
            "invalid workspace path '/a/../b': '..' is not a name: paths are never relative; "
            "a path is '/' or '/' followed by names joined by '/', like '/a/b.txt'"
        )

    @pytest.mark.parametrize("data", ["text", 5], ids=["str", "int"])
    async def test_data_must_be_bytes_like(self, data: object) -> None:
        """Text and integers are refused rather than encoded or turned into zero bytes."""
        with pytest.raises(TypeError):
            await MemoryWorkspace().write("/x", cast("bytes", data))

    async def test_path_must_be_a_string(self) -> None:
        """A path that is not a str is a TypeError, not a lookup of something else."""
        with pytest.raises(TypeError, match="must be a str"):
            await MemoryWorkspace().exists(cast("str", Path("/x")))
