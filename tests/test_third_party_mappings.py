"""
The mapping profiles against more real stores, through adapters that only translate.

cachetools' TTLCache and LFUCache, diskcache's FanoutCache, rocksdict, semidbm, lmdb,
fakeredis and TinyDB, each run as a user would run it, on both backends. Every case
that fails has a test here that shows the library doing what the case catches, without
conformkit. An adapter translates calls and errors (``None`` from a lookup becomes
``KeyError``) and declares the store's sample domain; it never sorts, copies or checks.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import cachetools
import diskcache  # type: ignore[import-untyped]
import fakeredis
import lmdb
import pytest
import redis
import rocksdict
import semidbm  # type: ignore[import-untyped]
import tinydb

import conformkit as ck
from conformkit.profiles import durable_mapping, mapping
from conformkit.profiles.mapping import BYTES_SAMPLES, RICH_SAMPLES, STR_SAMPLES
from third_party import (
    Make,
    ReopenedStore,
    ThirdPartyDurable,
    ThirdPartyMapping,
    WithoutThreads,
    close_it,
    failed,
    passed,
)

pytestmark = pytest.mark.anyio

ALL_CASES = frozenset(mapping.feature.cases)
TYPE_CASES = frozenset(
    {
        "stored_value_is_a_copy",  # a dict cannot be written, or is held as the very object
        "returned_value_is_a_copy",
        "non_str_keys_round_trip",
        "key_equality_follows_python",
        "none_value_round_trips",
    }
)


# --------------------------------------------------------------------------- adapters


def ttl_cache(scope: ck.FeatureScope, directory: str) -> Any:
    return cachetools.TTLCache(maxsize=100_000, ttl=3600)


def lfu_cache(scope: ck.FeatureScope, directory: str) -> Any:
    return cachetools.LFUCache(maxsize=100_000)


def fanout_cache(scope: ck.FeatureScope, directory: str) -> Any:
    store = diskcache.FanoutCache(directory)  # its __getattr__ raises AssertionError
    scope.defer(store.close)
    return store


class DeclaredRdict:
    """
    rocksdict's Rdict, a type that takes no attributes, wrapped to declare its domain.

    Each operation is the Rdict's own; iteration is its keys(), as Rdict has no
    ``__iter__``. What Rdict lacks (``len()``, ``pop()``, ``clear()``) stays missing.
    """

    conformkit_samples = RICH_SAMPLES  # it pickles values, and takes str, int, bytes keys

    def __init__(self, store: rocksdict.Rdict) -> None:
        self.store = store

    def __getitem__(self, key: Any) -> Any:
        return self.store[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.store[key] = value

    def __delitem__(self, key: Any) -> None:
        del self.store[key]

    def __contains__(self, key: Any) -> bool:
        return key in self.store

    def __iter__(self) -> Iterator[Any]:
        return iter(self.store.keys())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def rdict(scope: ck.FeatureScope, directory: str) -> Any:
    store = rocksdict.Rdict(os.path.join(directory, "db"))
    scope.defer(store.close)
    return DeclaredRdict(store)


def semidbm_store(scope: ck.FeatureScope, directory: str) -> Any:
    store = semidbm.open(os.path.join(directory, "db"), "c")
    scope.defer(store.close)
    store.conformkit_samples = BYTES_SAMPLES
    return store


class LmdbMapping(MutableMapping[bytes, bytes]):
    """An lmdb environment's main database, one transaction per operation."""

    conformkit_samples = BYTES_SAMPLES

    def __init__(self, environment: lmdb.Environment) -> None:
        self.environment = environment

    def __getitem__(self, key: bytes) -> bytes:
        with self.environment.begin() as transaction:
            value = transaction.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: bytes, value: bytes) -> None:
        with self.environment.begin(write=True) as transaction:
            transaction.put(key, value)

    def __delitem__(self, key: bytes) -> None:
        with self.environment.begin(write=True) as transaction:
            if not transaction.delete(key):
                raise KeyError(key)

    def __iter__(self) -> Iterator[bytes]:
        with self.environment.begin() as transaction:
            return iter(list(transaction.cursor().iternext(values=False)))

    def __len__(self) -> int:
        return int(self.environment.stat()["entries"])


def lmdb_store(scope: ck.FeatureScope, directory: str) -> Any:
    environment = lmdb.open(directory, map_size=2**26)
    scope.defer(environment.close)
    return LmdbMapping(environment)


class RedisMapping(MutableMapping[str, str]):
    """A Redis database's string keys, through a client that decodes responses."""

    conformkit_samples = STR_SAMPLES

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __getitem__(self, key: str) -> str:
        value = self.client.get(key)
        if value is None:
            raise KeyError(key)
        return value  # type: ignore[return-value]

    def __setitem__(self, key: str, value: str) -> None:
        self.client.set(key, value)

    def __delitem__(self, key: str) -> None:
        if not self.client.delete(key):
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.client.scan_iter())

    def __len__(self) -> int:
        return int(self.client.dbsize())


def redis_client() -> redis.Redis:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)


def redis_store(scope: ck.FeatureScope, directory: str) -> Any:
    client = redis_client()  # a server of its own: nothing is shared between scopes
    scope.defer(client.close)
    return RedisMapping(client)


class TinyMapping(MutableMapping[Any, Any]):
    """A TinyDB table of documents ``{"key": key, "value": value}``."""

    conformkit_samples = STR_SAMPLES  # JSON: lists for tuples, no bytes

    def __init__(self, database: tinydb.TinyDB) -> None:
        self.database = database
        self.field = tinydb.Query().key

    def __getitem__(self, key: Any) -> Any:
        document = self.database.get(self.field == key)
        if document is None:
            raise KeyError(key)
        return document["value"]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.database.upsert({"key": key, "value": value}, self.field == key)

    def __delitem__(self, key: Any) -> None:
        if not self.database.remove(self.field == key):
            raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        return iter([document["key"] for document in self.database.all()])

    def __len__(self) -> int:
        return len(self.database)


def tinydb_store(scope: ck.FeatureScope, directory: str) -> Any:
    database = tinydb.TinyDB(os.path.join(directory, "db.json"))
    scope.defer(database.close)
    return TinyMapping(database)


NOT_A_MUTABLE_MAPPING = frozenset({"is_mutable_mapping"})
BLOCKED_BY_SHAPE = {  # cases blocked, naming is_mutable_mapping, by the methods a store lacks
    "semidbm": {
        "missing_key_raises_key_error",  # get()
        "pop_missing_raises_key_error",  # pop()
        "overwrite_keeps_length",  # len()
        "clear_empties",  # clear()
    },
    "rocksdict": {"pop_missing_raises_key_error", "overwrite_keeps_length", "clear_empties"},
}

MAPPINGS = [
    pytest.param(
        WithoutThreads(ttl_cache),
        {"stored_value_is_a_copy", "returned_value_is_a_copy"},
        id="cachetools.TTLCache",
    ),
    pytest.param(
        WithoutThreads(lfu_cache),
        {"stored_value_is_a_copy", "returned_value_is_a_copy"},
        id="cachetools.LFUCache",
    ),
    pytest.param(
        ThirdPartyMapping(fanout_cache),
        {
            "is_mutable_mapping",
            "pop_missing_raises_key_error",
            "iteration_follows_insertion_order",
            "key_equality_follows_python",
            "errors_surface_at_the_failing_call",
        },
        id="diskcache.FanoutCache",
    ),
    pytest.param(
        ThirdPartyMapping(rdict),
        {
            "is_mutable_mapping",
            *BLOCKED_BY_SHAPE["rocksdict"],
            "delete_missing_raises_key_error",
            "iteration_follows_insertion_order",
            "non_str_keys_round_trip",
            "key_equality_follows_python",
            "errors_surface_at_the_failing_call",
        },
        id="rocksdict",
    ),
    pytest.param(
        WithoutThreads(semidbm_store),
        {
            "is_mutable_mapping",
            *BLOCKED_BY_SHAPE["semidbm"],
            "delete_missing_raises_key_error",  # a failed delete garbles the next write
            *TYPE_CASES,
            "errors_surface_at_the_failing_call",
        },
        id="semidbm",
    ),
    pytest.param(
        ThirdPartyMapping(lmdb_store),
        {*TYPE_CASES, "iteration_follows_insertion_order"},
        id="lmdb",
    ),
    pytest.param(
        ThirdPartyMapping(redis_store),
        {*TYPE_CASES, "iteration_follows_insertion_order", "errors_surface_at_the_failing_call"},
        id="fakeredis",
    ),
    pytest.param(
        WithoutThreads(tinydb_store),
        {"non_str_keys_round_trip", "errors_surface_at_the_failing_call"},
        id="tinydb",
    ),
]


class TestMappings:
    """Each store fails exactly the cases whose property it lacks, seen below directly."""

    @pytest.mark.parametrize(("implementation", "expected"), MAPPINGS)
    async def test_fails_exactly_what_it_lacks(
        self, implementation: ThirdPartyMapping, expected: set[str]
    ) -> None:
        """The failed cases are those the direct experiments below show; the rest pass."""
        report = await ck.run_contract(implementation, mapping.suite)
        assert failed(report) == expected, report
        declared = {
            case for case, kind in implementation.coverage.items() if kind != ck.Supported()
        }
        assert passed(report) == ALL_CASES - expected - declared
        for result in report.results:  # a blocked case names a case that failed
            if ": AssertionError: blocked: " in (result.reason or ""):
                owners = set(re.findall(r"\b([a-z_]+) owns\b", result.reason or ""))
                assert owners, result.reason
                assert owners <= expected - {result.case_id}, result.reason

    @pytest.mark.parametrize(
        ("make", "name"),
        [(semidbm_store, "semidbm"), (rdict, "rocksdict")],
        ids=["semidbm", "rocksdict"],
    )
    async def test_a_missing_method_blocks_only_the_cases_that_need_it(
        self, make: Make, name: str
    ) -> None:
        """Each blocked case names is_mutable_mapping; no other case is blocked."""
        report = await ck.run_contract(WithoutThreads(make), mapping.suite)
        blocked = {
            result.case_id
            for result in report.results
            if "AssertionError: blocked: " in (result.reason or "")
        }
        assert blocked == BLOCKED_BY_SHAPE[name]
        for case in blocked:
            assert "is_mutable_mapping owns the methods a MutableMapping has" in (
                report[case].reason or ""
            )


# --------------------------------------------------------------------------- durable


DURABLE_STORES: dict[str, Callable[[str], ReopenedStore]] = {
    "diskcache.FanoutCache": lambda directory: ReopenedStore(
        lambda: diskcache.FanoutCache(directory), close_it, RICH_SAMPLES
    ),
    "rocksdict": lambda directory: ReopenedStore(
        lambda: DeclaredRdict(rocksdict.Rdict(os.path.join(directory, "db"))),
        lambda store: store.store.close(),
        RICH_SAMPLES,
    ),
    "semidbm": lambda directory: ReopenedStore(
        lambda: semidbm.open(os.path.join(directory, "db"), "c"), close_it, BYTES_SAMPLES
    ),
    "lmdb": lambda directory: ReopenedStore(
        lambda: LmdbMapping(lmdb.open(directory, map_size=2**26)),
        lambda store: store.environment.close(),
        BYTES_SAMPLES,
    ),
    "tinydb": lambda directory: ReopenedStore(
        lambda: TinyMapping(tinydb.TinyDB(os.path.join(directory, "db.json"))),
        lambda store: store.database.close(),
        STR_SAMPLES,
    ),
}


class TestDurableStores:
    """The on-disk stores keep what was written across closing and reopening them."""

    @pytest.mark.parametrize("name", sorted(DURABLE_STORES))
    async def test_passes_in_full(self, name: str) -> None:
        """Every case passes."""
        report = await ck.run_contract(
            ThirdPartyDurable(DURABLE_STORES[name]), durable_mapping.suite
        )
        ck.assert_contract(report, require_full=True)


# --------------------------------------------------------------------------- each failure, directly


class TestCachetools:
    """cachetools' TTLCache and LFUCache: dict-backed caches."""

    @pytest.mark.parametrize("make", [ttl_cache, lfu_cache], ids=["TTLCache", "LFUCache"])
    def test_holds_and_returns_the_very_object(self, make: Make) -> None:
        """stored_value_is_a_copy and returned_value_is_a_copy."""
        cache = make(None, "")  # type: ignore[arg-type]
        value = ["original"]
        cache["key"] = value
        value.append("changed")
        assert cache["key"] is value


class TestFanoutCache:
    """diskcache's FanoutCache: caches in SQLite shards, keys spread by hash."""

    def test_is_not_a_mutable_mapping_and_its_getattr_raises(self, tmp_path: Path) -> None:
        """is_mutable_mapping: no keys() and the rest, and looking one up raises AssertionError."""
        with diskcache.FanoutCache(str(tmp_path)) as store:
            assert not isinstance(store, MutableMapping)
            with pytest.raises(AssertionError, match="cannot access keys in cache shard"):
                store.keys  # noqa: B018  # the lookup itself raises

    def test_pop_of_a_missing_key_returns_none(self, tmp_path: Path) -> None:
        """pop_missing_raises_key_error."""
        with diskcache.FanoutCache(str(tmp_path)) as store:
            assert store.pop("missing") is None

    def test_iterates_shard_by_shard(self, tmp_path: Path) -> None:
        """iteration_follows_insertion_order: keys come back in shard order."""
        with diskcache.FanoutCache(str(tmp_path)) as store:
            keys = ["key-3", "key-0", "key-4", "key-1", "key-2"]
            for key in keys:
                store[key] = "value"
            assert sorted(store) == sorted(keys)
            assert list(store) != keys

    def test_one_and_true_are_two_keys(self, tmp_path: Path) -> None:
        """key_equality_follows_python."""
        with diskcache.FanoutCache(str(tmp_path)) as store:
            store[1] = "int"
            store[True] = "bool"
            assert len(store) == 2

    def test_a_nan_key_is_taken_and_cannot_be_read(self, tmp_path: Path) -> None:
        """errors_surface_at_the_failing_call: the write succeeds, the read raises KeyError."""
        with diskcache.FanoutCache(str(tmp_path)) as store:
            store[math.nan] = "value"
            with pytest.raises(KeyError):
                store[math.nan]


class TestRocksdict:
    """rocksdict's Rdict: RocksDB, keys ordered by their encoding."""

    def test_lacks_iteration_length_pop_and_clear(self, tmp_path: Path) -> None:
        """is_mutable_mapping, and the cases blocked by pop(), len() and clear()."""
        store = rocksdict.Rdict(str(tmp_path / "db"))
        try:
            assert not isinstance(store, MutableMapping)
            for name in ("__iter__", "__len__", "pop", "clear"):
                assert not hasattr(store, name)
            with pytest.raises(AttributeError):
                store.conformkit_samples = RICH_SAMPLES  # type: ignore[attr-defined]
        finally:
            store.close()

    def test_deleting_a_missing_key_raises_nothing(self, tmp_path: Path) -> None:
        """delete_missing_raises_key_error."""
        store = rocksdict.Rdict(str(tmp_path / "db"))
        try:
            del store["missing"]
        finally:
            store.close()

    def test_keys_come_back_sorted_and_one_true_and_one_point_oh_are_three(
        self, tmp_path: Path
    ) -> None:
        """iteration_follows_insertion_order and key_equality_follows_python."""
        store = rocksdict.Rdict(str(tmp_path / "db"))
        try:
            for key in ("c", "a", "b"):
                store[key] = "value"
            assert list(store.keys()) == ["a", "b", "c"]
            for number in (1, True, 1.0):
                store[number] = "value"
            assert len([key for key in store.keys() if key == 1]) == 3  # noqa: SIM118  # no __iter__
        finally:
            store.close()

    def test_tuple_keys_are_refused_and_an_unloadable_pickle_is_taken(self, tmp_path: Path) -> None:
        """non_str_keys_round_trip, and errors_surface: the read raises, not the write."""
        store = rocksdict.Rdict(str(tmp_path / "db"))
        try:
            with pytest.raises(Exception, match="Only support"):  # rocksdict raises Exception
                store[("tuple", 1)] = "value"  # type: ignore[index]
            store["key"] = Unloadable(1, "x")
            with pytest.raises(TypeError, match="missing 1 required positional argument"):
                store["key"]
        finally:
            store.close()


class Unloadable(Exception):
    """Pickles, but its pickle cannot be loaded: ``__init__`` wants two arguments."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)


class TestSemidbm:
    """semidbm: a pure-Python dbm of bytes, not a MutableMapping."""

    def test_lacks_len_get_pop_and_clear(self, tmp_path: Path) -> None:
        """is_mutable_mapping, and the cases blocked by get(), pop(), len() and clear()."""
        store = semidbm.open(str(tmp_path / "db"), "c")
        try:
            assert not isinstance(store, MutableMapping)
            for name in ("__len__", "get", "pop", "clear"):
                assert not hasattr(store, name)
            with pytest.raises(TypeError, match="has no len"):
                len(store)
        finally:
            store.close()

    def test_a_failed_delete_garbles_the_next_write(self, tmp_path: Path) -> None:
        """delete_missing_raises_key_error: after del of a missing key, a value reads back wrong."""
        store = semidbm.open(str(tmp_path / "db"), "c")
        try:
            store[b"key-0"] = b"value 0"
            with pytest.raises(KeyError):
                del store[b"key-1"]
            store[b"key-2"] = b"value 0"
            assert store[b"key-2"] != b"value 0"
        finally:
            store.close()

    def test_holds_bytes_only_and_gives_str_back_as_bytes(self, tmp_path: Path) -> None:
        """The type cases, and errors_surface: '' is taken, and comes back as b''."""
        store = semidbm.open(str(tmp_path / "db"), "c")
        try:
            for key, value in ((b"dict", {"a": 1}), (b"none", None), (1, b"int key")):
                with pytest.raises(TypeError):
                    store[key] = value
            store[b"text"] = ""
            assert store[b"text"] == b""
        finally:
            store.close()


class TestLmdb:
    """lmdb: a B-tree of bytes in a memory-mapped file."""

    def test_keys_are_sorted_bytes_and_none_becomes_empty(self, tmp_path: Path) -> None:
        """iteration_follows_insertion_order, the type cases, and none_value_round_trips."""
        environment = lmdb.open(str(tmp_path), map_size=2**20)
        try:
            with environment.begin(write=True) as transaction:
                for key in (b"c", b"a", b"b"):
                    transaction.put(key, b"value")
                refused: tuple[tuple[Any, Any], ...] = ((b"dict", {"a": 1}), (1, b"int key"))
                for key, value in refused:
                    with pytest.raises(TypeError):
                        transaction.put(key, value)
                transaction.put(b"none", None)  # type: ignore[arg-type]
                assert transaction.get(b"none") == b""
                assert list(transaction.cursor().iternext(values=False)) == [
                    b"a", b"b", b"c", b"none",
                ]  # fmt: skip
        finally:
            environment.close()


class TestRedis:
    """Redis, through fakeredis: strings under string keys."""

    def test_keys_are_not_listed_in_insertion_order(self) -> None:
        """iteration_follows_insertion_order."""
        client = redis_client()
        keys = ["key-3", "key-0", "key-4", "key-1", "key-2"]
        for key in keys:
            client.set(key, "value")
        assert sorted(client.scan_iter()) == sorted(keys)
        assert list(client.scan_iter()) != keys
        client.close()

    def test_numbers_become_text_and_none_dicts_and_tuples_are_refused(self) -> None:
        """The type cases, and errors_surface: 0 is taken, and comes back as '0'."""
        client = redis_client()
        for value in (None, {"a": 1}, True):
            with pytest.raises(redis.DataError):
                client.set("key", value)  # type: ignore[arg-type]
        with pytest.raises(redis.DataError):
            client.set(("tuple", 1), "value")  # type: ignore[arg-type]
        client.set("zero", 0)
        assert client.get("zero") == "0"
        client.set(7, "seven")  # type: ignore[arg-type]
        assert client.get("7") == "seven"  # an int key becomes text
        client.close()


class TestTinyDB:
    """TinyDB: JSON documents in one file."""

    def test_bytes_keys_are_refused_and_a_nan_key_cannot_be_found(self, tmp_path: Path) -> None:
        """non_str_keys_round_trip, and errors_surface: a NaN key is taken, then never found."""
        with tinydb.TinyDB(str(tmp_path / "db.json")) as database:
            with pytest.raises(TypeError, match="not JSON serializable"):
                database.insert({"key": b"bytes", "value": "value"})
            database.insert({"key": math.nan, "value": "value"})
            assert database.get(tinydb.Query().key == math.nan) is None
            assert len(database) == 1
