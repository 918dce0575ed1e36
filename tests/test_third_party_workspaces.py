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
    pytest.param(ZarrOnDisk(zarr_local), ZARR_LOCAL, id="zarr.LocalStore"),
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
        anyio_backend: str,
    ) -> None:
        """The failed cases are those the direct experiments below show; the rest pass."""
        if anyio_backend == "trio" and isinstance(implementation, ZarrOnDisk):
            pytest.skip("LocalStore needs asyncio: test_local_store_under_trio_blames_writes")
        report = await ck.run_contract(implementation, workspace.suite)
        assert failed(report) == expected, report
        assert passed(report) == WORKSPACE_CASES - expected - declared(implementation)
        blocked = [
            r.case_id for r in report.results if "AssertionError: blocked:" in (r.reason or "")
        ]
        assert blocked == [], report

    async def test_local_store_under_trio_blames_writes(self, anyio_backend: str) -> None:
        """
        Under trio, zarr's LocalStore writes nothing (it calls asyncio.to_thread): every case
        fails, and each blocked one names read_your_writes, not nested writes.
        """
        if anyio_backend != "trio":
            pytest.skip("LocalStore runs on asyncio")
        implementation = ZarrOnDisk(zarr_local)
        report = await ck.run_contract(implementation, workspace.suite)
        assert failed(report) == WORKSPACE_CASES - declared(implementation), report
        for result in report.results:
            if "AssertionError: blocked:" in (result.reason or ""):
                assert "read_your_writes owns that" in (result.reason or ""), result.reason
        assert "RuntimeError: no running event loop" in (report["read_your_writes"].reason or "")
