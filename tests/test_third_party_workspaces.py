"""
The workspace profile against zarr's and obstore's stores, through adapters that only translate.

Both libraries keep objects under keys and answer listings by prefix: a directory is a prefix
that some key has, not a thing of its own. They are still the honest fit for the workspace
profile rather than the mapping one: zarr lays out its hierarchies through ``list_dir`` and
``delete_dir``, and obstore lists ``common_prefixes``, so each offers a tree to list and
remove, and neither is a ``MutableMapping``. Each verdict is checked against the library seen
directly: every case that fails has a test below that shows the library doing what the case
catches, without conformkit. The adapters translate calls and errors, and never sort, copy or
validate; obstore's blocking calls run in worker threads, so both run on asyncio and trio.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import obstore
import pytest
import zarr.storage
from obstore.store import LocalStore as ObstoreLocal
from obstore.store import MemoryStore as ObstoreMemory
from zarr.core.buffer import cpu, default_buffer_prototype

import conformkit as ck
from conformkit.profiles import workspace
from conformkit.profiles.workspace import WorkspaceAPI, WorkspaceCase

pytestmark = pytest.mark.anyio

WORKSPACE_CASES = frozenset(workspace.feature.cases)


def failed(report: ck.ContractReport) -> set[str]:
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


def passed(report: ck.ContractReport) -> set[str]:
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.PASSED}


def key_of(path: str) -> str:
    """The store's key for a workspace path: the path without its leading '/'."""
    return path[1:]


# --------------------------------------------------------------------------- zarr


class ZarrWorkspace:
    """A workspace over a zarr 3 store: each call translated into the store's, no more."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def write(self, path: str, data: Any) -> None:
        await self.store.set(key_of(path), cpu.Buffer.from_bytes(data))

    async def read(self, path: str) -> bytes | None:
        buffer = await self.store.get(key_of(path), default_buffer_prototype())
        return None if buffer is None else buffer.to_bytes()

    async def list(self, path: str) -> list[str]:
        return [name async for name in self.store.list_dir(key_of(path))]

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        await self.store.delete(key_of(path))
        if recursive:  # and the keys under it, which zarr deletes with a call of their own
            await self.store.delete_dir(key_of(path))

    async def exists(self, path: str) -> bool:  # a key, or a prefix that some key has
        key = key_of(path)
        if await self.store.exists(key):
            return True
        # is_empty() would do, but leaves list_prefix() unfinished, which trio warns about
        async with contextlib.aclosing(self.store.list_prefix(f"{key}/" if key else "")) as keys:
            async for _ in keys:
                return True
        return False


def outer_root(scope: ck.FeatureScope) -> str:
    """
    A store's root two folders down a temporary folder of the scope's own, so that a key
    that climbs out of the root with '..' lands in that folder, removed afterwards.
    """
    directory = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
    scope.defer(directory.cleanup)
    root = os.path.join(directory.name, "outer", "root")
    os.makedirs(root)
    return root


def zarr_memory(scope: ck.FeatureScope) -> Any:
    return zarr.storage.MemoryStore()


def zarr_local(scope: ck.FeatureScope) -> Any:
    return zarr.storage.LocalStore(outer_root(scope))


def zarr_zip(scope: ck.FeatureScope) -> Any:
    store = zarr.storage.ZipStore(os.path.join(outer_root(scope), "store.zip"), mode="a")
    scope.defer(store.close)
    return store


ESCAPES = (
    "it joins an absolute or '..' key to its root, so the case would write outside the root "
    "(shown by TestZarr.test_local_store_writes_outside_its_root)"
)


class Zarr(ck.FeatureImplementation[WorkspaceAPI, WorkspaceCase]):
    """A ZarrWorkspace over the store that ``make`` opens for each scope."""

    feature = workspace.feature
    coverage = workspace.feature.coverage()

    def __init__(self, make: Callable[[ck.FeatureScope], Any]) -> None:
        self.make = make

    def create(self, scope: ck.FeatureScope) -> WorkspaceAPI:
        return ZarrWorkspace(self.make(scope))


class ZarrOnDisk(Zarr):
    """The same, for LocalStore, which cannot be given the case's invalid paths safely."""

    coverage = workspace.feature.coverage(unsupported={"invalid_paths_rejected": ESCAPES})


DELETES_NOTHING = "a zip archive cannot delete an entry: ZipStore.delete raises NotImplementedError"


class ZarrZip(Zarr):
    """The same, for ZipStore, which deletes nothing."""

    coverage = workspace.feature.coverage(
        unsupported={
            "remove_is_precise": DELETES_NOTHING,
            "remove_non_empty_needs_recursive": DELETES_NOTHING,
            "remove_root_keeps_root": DELETES_NOTHING,
        }
    )


# --------------------------------------------------------------------------- obstore


class ObstoreWorkspace:
    """A workspace over an obstore store, its blocking calls run in worker threads."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(function, self.store, *args)

    async def write(self, path: str, data: Any) -> None:
        await self._call(obstore.put, key_of(path), data)

    async def read(self, path: str) -> Any:
        try:
            result = await self._call(obstore.get, key_of(path))
        except FileNotFoundError:  # nothing there, as obstore says it
            return None
        return await anyio.to_thread.run_sync(result.bytes)

    async def _children(self, key: str) -> dict[str, Any]:
        return await self._call(obstore.list_with_delimiter, key or None)  # type: ignore[no-any-return]

    async def list(self, path: str) -> list[str]:
        listed = await self._children(key_of(path))
        paths = [*listed["common_prefixes"], *(meta["path"] for meta in listed["objects"])]
        return [name.rsplit("/", 1)[-1] for name in paths]

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        key = key_of(path)
        if recursive:  # an object store has no directories: delete each object under the key
            for batch in await self._call(obstore.list, f"{key}/" if key else None):
                for meta in batch:
                    await self._call(obstore.delete, meta["path"])
            if not key:
                return
        await self._call(obstore.delete, key)

    async def exists(self, path: str) -> bool:  # an object, or a prefix that some object has
        key = key_of(path)
        try:
            await self._call(obstore.head, key)
        except FileNotFoundError:
            listed = await self._children(key)
            return bool(listed["common_prefixes"] or listed["objects"])
        return True


def obstore_memory(scope: ck.FeatureScope) -> Any:
    return ObstoreMemory()


def obstore_local(scope: ck.FeatureScope) -> Any:
    return ObstoreLocal(outer_root(scope))


class Obstore(ck.FeatureImplementation[WorkspaceAPI, WorkspaceCase]):
    """An ObstoreWorkspace over the store that ``make`` opens for each scope."""

    feature = workspace.feature
    coverage = workspace.feature.coverage()

    def __init__(self, make: Callable[[ck.FeatureScope], Any]) -> None:
        self.make = make

    def create(self, scope: ck.FeatureScope) -> WorkspaceAPI:
        return ObstoreWorkspace(self.make(scope))


# --------------------------------------------------------------------------- verdicts

LISTED = ["zulu", "9", "Alpha", "été", "10", "_x", "beta", "a b", "mid"]


def local_listing_is_sorted() -> bool:
    """Whether this machine's file system lists the names of listing_is_sorted in order."""
    with tempfile.TemporaryDirectory() as directory:
        for name in LISTED:
            Path(directory, name).write_bytes(b"x")
        listed = os.listdir(directory)
        return listed == sorted(listed)


OBJECT_STORE = {  # what a store whose directories are only prefixes of its keys fails
    "file_directory_conflicts_raise",
    "listing_is_sorted",
    "missing_list_and_remove_raise",
    "remove_non_empty_needs_recursive",
    "remove_root_keeps_root",
}
ZARR_LOCAL = OBJECT_STORE - (set() if not local_listing_is_sorted() else {"listing_is_sorted"})
# ZipStore warns on each overwrite, and its list_prefix() leaves its own list() unfinished,
# which trio warns about once the generator is collected.
ZIP_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object ZipStore.list "
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

STORES: list[Any] = [
    pytest.param(
        Zarr(zarr_memory),
        OBJECT_STORE | {"bytes_cloned_on_write", "remove_is_precise", "invalid_paths_rejected"},
        id="zarr.MemoryStore",
    ),
    pytest.param(
        ZarrZip(zarr_zip),
        {
            "file_directory_conflicts_raise",
            "listing_is_sorted",
            "missing_list_and_remove_raise",
            "invalid_paths_rejected",
        },
        id="zarr.ZipStore",
        marks=ZIP_WARNINGS,
    ),
    pytest.param(
        Obstore(obstore_memory),
        OBJECT_STORE
        | {
            "bytes_cloned_on_write",
            "bytes_cloned_on_read",
            "remove_is_precise",
            "invalid_paths_rejected",
        },
        id="obstore.MemoryStore",
    ),
    pytest.param(
        Obstore(obstore_local),
        OBJECT_STORE
        | {
            "missing_reads_none",
            "bytes_cloned_on_read",
            "remove_is_precise",
            "invalid_paths_rejected",
        },
        id="obstore.LocalStore",
    ),
]


def declared(implementation: ck.FeatureImplementation[WorkspaceAPI, WorkspaceCase]) -> set[str]:
    return {case for case, kind in implementation.coverage.items() if kind != ck.Supported()}


class TestVerdicts:
    """Each store fails exactly the cases whose rule it breaks, on asyncio and trio."""

    @pytest.mark.parametrize(("implementation", "expected"), STORES)
    async def test_fails_exactly_what_it_lacks(
        self,
        implementation: ck.FeatureImplementation[WorkspaceAPI, WorkspaceCase],
        expected: set[str],
    ) -> None:
        """The failed cases are those the direct experiments below show; the rest pass."""
        report = await ck.run_contract(implementation, workspace.suite)
        assert failed(report) == expected, report
        assert passed(report) == WORKSPACE_CASES - expected - declared(implementation)
        blocked = [
            r.case_id for r in report.results if "AssertionError: blocked:" in (r.reason or "")
        ]
        assert blocked == [], report

    @pytest.mark.parametrize("anyio_backend", ["asyncio"])
    async def test_zarr_local_store_on_asyncio(self, anyio_backend: str) -> None:
        """zarr's LocalStore, on the loop it needs: what an object store on disk fails."""
        implementation = ZarrOnDisk(zarr_local)
        report = await ck.run_contract(implementation, workspace.suite)
        assert failed(report) == ZARR_LOCAL, report
        assert passed(report) == WORKSPACE_CASES - ZARR_LOCAL - declared(implementation)

    @pytest.mark.parametrize("anyio_backend", ["trio"])
    async def test_zarr_local_store_on_trio_is_blamed_on_writing(self, anyio_backend: str) -> None:
        """
        Under trio, zarr's LocalStore writes nothing (it calls asyncio.to_thread): every case
        fails, and each blocked one names read_your_writes, not nested writes.
        """
        implementation = ZarrOnDisk(zarr_local)
        report = await ck.run_contract(implementation, workspace.suite)
        assert failed(report) == WORKSPACE_CASES - declared(implementation), report
        for result in report.results:
            if "AssertionError: blocked:" in (result.reason or ""):
                assert "read_your_writes owns that" in (result.reason or ""), result.reason
        assert "RuntimeError: no running event loop" in (report["read_your_writes"].reason or "")


# --------------------------------------------------------------------------- zarr, directly


def buffer(data: Any) -> Any:
    return cpu.Buffer.from_bytes(data)


async def keys_under(listing: Any) -> list[str]:
    """The names an async iterator of zarr's gives, closed even when it is left early."""
    async with contextlib.aclosing(listing) as names:
        return [name async for name in names]


@contextlib.contextmanager
def zarr_store(kind: str, tmp_path: Path) -> Any:
    """A fresh zarr store of each kind, its root two folders down ``tmp_path``."""
    root = tmp_path / "outer" / "root"
    root.mkdir(parents=True)
    if kind == "memory":
        yield zarr.storage.MemoryStore()
    elif kind == "local":
        yield zarr.storage.LocalStore(root)
    else:
        store = zarr.storage.ZipStore(root / "store.zip", mode="a")
        yield store
        store.close()


ZARR_KINDS = ["memory", "local", pytest.param("zip", marks=ZIP_WARNINGS)]


class TestZarr:
    """zarr 3's stores, seen directly: what each failing case catches."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        """LocalStore needs asyncio; what the cases catch does not depend on the loop."""
        return "asyncio"

    async def test_memory_store_keeps_the_callers_buffer(self) -> None:
        """bytes_cloned_on_write: Buffer.from_bytes wraps the bytearray, and the store keeps it."""
        store = zarr.storage.MemoryStore()
        data = bytearray(b"original")
        await store.set("key", buffer(data))
        data[:] = b"MUTATED!"
        got = await store.get("key", default_buffer_prototype())
        assert got is not None
        assert got.to_bytes() == b"MUTATED!"

    @pytest.mark.parametrize("kind", ZARR_KINDS)
    async def test_a_missing_prefix_lists_empty(self, kind: str, tmp_path: Path) -> None:
        """missing_list_and_remove_raise: list_dir of a prefix nothing has gives nothing."""
        with zarr_store(kind, tmp_path) as store:
            await store.set("file.txt", buffer(b"kept"))
            assert await keys_under(store.list_dir("missing")) == []
            await store.delete("missing")  # and deleting it raises nothing

    @pytest.mark.parametrize("kind", ZARR_KINDS)
    async def test_lists_in_its_own_order(self, kind: str, tmp_path: Path) -> None:
        """listing_is_sorted: list_dir gives names in a set's or the file system's order."""
        if kind == "local" and local_listing_is_sorted():
            pytest.skip("this file system lists these names sorted")
        with zarr_store(kind, tmp_path) as store:
            for name in LISTED:
                await store.set(name, buffer(b"x"))
            listed = await keys_under(store.list_dir(""))
            assert sorted(listed) == sorted(LISTED)
            assert listed != sorted(LISTED)

    @pytest.mark.parametrize("kind", ["memory", pytest.param("zip", marks=ZIP_WARNINGS)])
    async def test_a_key_can_be_written_over_a_prefix(self, kind: str, tmp_path: Path) -> None:
        """file_directory_conflicts_raise: 'd' is written while 'd/f.txt' is there."""
        with zarr_store(kind, tmp_path) as store:
            await store.set("d/f.txt", buffer(b"f"))
            await store.set("d", buffer(b"x"))
            assert await store.exists("d")
            assert await keys_under(store.list_dir("d")) == ["f.txt"]

    async def test_local_store_reads_a_directory_as_missing(self, tmp_path: Path) -> None:
        """file_directory_conflicts_raise: get() of a directory gives None."""
        store = zarr.storage.LocalStore(tmp_path)
        await store.set("d/f.txt", buffer(b"f"))
        assert await store.get("d", default_buffer_prototype()) is None

    async def test_memory_store_forgets_an_emptied_prefix(self) -> None:
        """remove_is_precise: once its only key is deleted, 'a/sub' is listed nowhere."""
        store = zarr.storage.MemoryStore()
        await store.set("a/sub/y.txt", buffer(b"y"))
        await store.set("a/x.txt", buffer(b"x"))
        await store.delete("a/sub/y.txt")
        assert await keys_under(store.list_dir("a")) == ["x.txt"]

    async def test_local_store_keeps_an_emptied_directory(self, tmp_path: Path) -> None:
        """LocalStore passes remove_is_precise: the emptied folder is still listed."""
        store = zarr.storage.LocalStore(tmp_path)
        await store.set("a/sub/y.txt", buffer(b"y"))
        await store.delete("a/sub/y.txt")
        assert await keys_under(store.list_dir("a")) == ["sub"]

    async def test_memory_store_deletes_a_prefix_with_keys_under_it_as_nothing(self) -> None:
        """remove_non_empty_needs_recursive: delete('docs') raises nothing, removes nothing."""
        store = zarr.storage.MemoryStore()
        await store.set("docs/a.txt", buffer(b"a"))
        await store.delete("docs")
        assert await keys_under(store.list_prefix("")) == ["docs/a.txt"]

    async def test_local_store_deletes_a_whole_directory(self, tmp_path: Path) -> None:
        """remove_non_empty_needs_recursive: delete('docs') removes the tree, refusing nothing."""
        store = zarr.storage.LocalStore(tmp_path)
        await store.set("docs/a.txt", buffer(b"a"))
        await store.set("docs/sub/b.txt", buffer(b"b"))
        await store.delete("docs")
        assert await keys_under(store.list_prefix("")) == []

    @pytest.mark.parametrize("kind", ["memory", "local"])
    async def test_an_emptied_store_has_no_root(self, kind: str, tmp_path: Path) -> None:
        """remove_root_keeps_root: after delete_dir(''), no key or prefix is there, '' included."""
        with zarr_store(kind, tmp_path) as store:
            await store.set("a.txt", buffer(b"a"))
            await store.delete_dir("")
            assert not await store.exists("")
            assert await store.is_empty("")

    async def test_memory_store_takes_any_key(self) -> None:
        """invalid_paths_rejected: '', '..', '//a' and 'a\\\\b' are keys like any other."""
        store = zarr.storage.MemoryStore()
        for key in ("", "..", "../escape.txt", "/a", "a//b", "a\\b"):
            await store.set(key, buffer(b"x"))
        assert len(await keys_under(store.list_prefix(""))) == 6

    async def test_zip_store_refuses_an_empty_key_with_index_error(self, tmp_path: Path) -> None:
        """invalid_paths_rejected: '' raises IndexError, not ValueError."""
        store = zarr.storage.ZipStore(tmp_path / "store.zip", mode="a")
        with pytest.raises(IndexError):
            await store.set("", buffer(b"x"))
        store.close()

    async def test_zip_store_deletes_nothing(self, tmp_path: Path) -> None:
        """Why ZipStore declares the removal cases unsupported."""
        store = zarr.storage.ZipStore(tmp_path / "store.zip", mode="a")
        await store.set("a.txt", buffer(b"a"))
        with pytest.raises(NotImplementedError):
            await store.delete("a.txt")
        store.close()

    async def test_local_store_writes_outside_its_root(self, tmp_path: Path) -> None:
        """Why LocalStore declares invalid_paths_rejected: '..' and absolute keys leave the root."""
        root = tmp_path / "outer" / "root"
        root.mkdir(parents=True)
        store = zarr.storage.LocalStore(root)
        await store.set("../climbed.txt", buffer(b"x"))
        await store.set(str(tmp_path / "absolute.txt"), buffer(b"x"))
        assert (tmp_path / "outer" / "climbed.txt").read_bytes() == b"x"
        assert (tmp_path / "absolute.txt").read_bytes() == b"x"


class TestZarrUnderTrio:
    """zarr's LocalStore on trio."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        """The point is the other loop."""
        return "trio"

    async def test_local_store_cannot_write(self, tmp_path: Path) -> None:
        """Every case fails under trio: LocalStore's set() calls asyncio.to_thread."""
        store = zarr.storage.LocalStore(tmp_path)
        with pytest.raises(RuntimeError, match="no running event loop"):
            await store.set("a.txt", buffer(b"a"))


# --------------------------------------------------------------------------- obstore, directly


@contextlib.contextmanager
def obstore_store(kind: str, tmp_path: Path) -> Any:
    root = tmp_path / "outer" / "root"
    root.mkdir(parents=True)
    yield ObstoreMemory() if kind == "memory" else ObstoreLocal(str(root))


OBSTORE_KINDS = ["memory", "local"]


class TestObstore:
    """obstore's stores, seen directly (its blocking calls): what each failing case catches."""

    def test_memory_store_keeps_the_callers_buffer(self) -> None:
        """bytes_cloned_on_write: put() of a bytearray keeps that very buffer."""
        store = ObstoreMemory()
        data = bytearray(b"original")
        obstore.put(store, "key", data)
        data[:] = b"MUTATED!"
        assert bytes(obstore.get(store, "key").bytes()) == b"MUTATED!"

    @pytest.mark.parametrize("kind", OBSTORE_KINDS)
    def test_reads_return_its_own_bytes_type(self, kind: str, tmp_path: Path) -> None:
        """bytes_cloned_on_read: a read gives obstore.Bytes, which has no decode()."""
        with obstore_store(kind, tmp_path) as store:
            obstore.put(store, "key", b"data")
            got = obstore.get(store, "key").bytes()
            assert type(got) is obstore.Bytes
            assert not isinstance(got, bytes)
            assert not hasattr(got, "decode")

    @pytest.mark.parametrize("kind", OBSTORE_KINDS)
    def test_lists_prefixes_apart_from_objects(self, kind: str, tmp_path: Path) -> None:
        """listing_is_sorted: directories and files come in two lists, so no one order."""
        with obstore_store(kind, tmp_path) as store:
            obstore.put(store, "mid/inner.txt", b"x")
            obstore.put(store, "zulu", b"x")
            listed = obstore.list_with_delimiter(store)
            assert listed["common_prefixes"] == ["mid"]
            assert [meta["path"] for meta in listed["objects"]] == ["zulu"]

    @pytest.mark.parametrize("kind", OBSTORE_KINDS)
    def test_a_missing_prefix_lists_empty(self, kind: str, tmp_path: Path) -> None:
        """missing_list_and_remove_raise: listing a prefix nothing has gives nothing."""
        with obstore_store(kind, tmp_path) as store:
            listed = obstore.list_with_delimiter(store, "missing")
            assert listed["common_prefixes"] == []
            assert listed["objects"] == []

    def test_memory_store_writes_over_a_prefix(self) -> None:
        """file_directory_conflicts_raise: 'd' is written while 'd/f.txt' is there."""
        store = ObstoreMemory()
        obstore.put(store, "d/f.txt", b"f")
        obstore.put(store, "d", b"x")
        assert bytes(obstore.get(store, "d").bytes()) == b"x"

    def test_local_store_refuses_a_write_over_a_directory_with_its_own_error(
        self, tmp_path: Path
    ) -> None:
        """file_directory_conflicts_raise: GenericError, not IsADirectoryError."""
        store = ObstoreLocal(str(tmp_path))
        obstore.put(store, "d/f.txt", b"f")
        with pytest.raises(obstore.exceptions.GenericError, match="Is a directory"):
            obstore.put(store, "d", b"x")

    def test_local_store_reads_beneath_a_file_with_its_own_error(self, tmp_path: Path) -> None:
        """missing_reads_none: beneath a file, get() raises GenericError, not FileNotFoundError."""
        store = ObstoreLocal(str(tmp_path))
        obstore.put(store, "f.txt", b"f")
        with pytest.raises(obstore.exceptions.GenericError, match="Not a directory"):
            obstore.get(store, "f.txt/beneath")

    def test_memory_store_forgets_an_emptied_prefix(self) -> None:
        """remove_is_precise: once its only object is deleted, 'a/sub' is listed nowhere."""
        store = ObstoreMemory()
        obstore.put(store, "a/sub/y.txt", b"y")
        obstore.put(store, "a/x.txt", b"x")
        obstore.delete(store, "a/sub/y.txt")
        assert obstore.list_with_delimiter(store, "a")["common_prefixes"] == []

    def test_local_store_cannot_delete_an_empty_directory(self, tmp_path: Path) -> None:
        """remove_is_precise: the emptied folder stays, and deleting it raises GenericError."""
        store = ObstoreLocal(str(tmp_path))
        obstore.put(store, "a/sub/y.txt", b"y")
        obstore.delete(store, "a/sub/y.txt")
        with pytest.raises(obstore.exceptions.GenericError, match="Is a directory"):
            obstore.delete(store, "a/sub")

    def test_memory_store_deletes_a_prefix_with_objects_under_it_as_nothing(self) -> None:
        """remove_non_empty_needs_recursive: delete('docs') raises nothing, removes nothing."""
        store = ObstoreMemory()
        obstore.put(store, "docs/a.txt", b"a")
        obstore.delete(store, "docs")
        assert [meta["path"] for batch in obstore.list(store) for meta in batch] == ["docs/a.txt"]

    def test_local_store_refuses_a_non_empty_directory_with_its_own_error(
        self, tmp_path: Path
    ) -> None:
        """remove_non_empty_needs_recursive: GenericError, not OSError(ENOTEMPTY)."""
        store = ObstoreLocal(str(tmp_path))
        obstore.put(store, "docs/a.txt", b"a")
        with pytest.raises(obstore.exceptions.GenericError, match="Is a directory"):
            obstore.delete(store, "docs")

    def test_memory_store_has_no_root_once_emptied(self) -> None:
        """remove_root_keeps_root: nothing is at '' (head fails) and nothing lists under it."""
        store = ObstoreMemory()
        obstore.put(store, "a.txt", b"a")
        obstore.delete(store, "a.txt")
        with pytest.raises(FileNotFoundError):
            obstore.head(store, "")
        assert obstore.list_with_delimiter(store)["objects"] == []

    def test_local_store_refuses_the_empty_path(self, tmp_path: Path) -> None:
        """remove_root_keeps_root, invalid_paths_rejected: '' raises GenericError, no ValueError."""
        store = ObstoreLocal(str(tmp_path))
        for call in (partial(obstore.delete, store, ""), partial(obstore.put, store, "", b"x")):
            with pytest.raises(obstore.exceptions.GenericError) as caught:
                call()
            assert not isinstance(caught.value, ValueError)

    def test_memory_store_takes_an_empty_path_and_strips_slashes(self) -> None:
        """invalid_paths_rejected: '' is an object's path, and '/a' or 'a/' mean 'a'."""
        store = ObstoreMemory()
        obstore.put(store, "", b"empty")
        obstore.put(store, "/a", b"slash")
        assert bytes(obstore.get(store, "a").bytes()) == b"slash"
        assert bytes(obstore.get(store, "a/").bytes()) == b"slash"
