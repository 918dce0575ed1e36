"""The mapping profile (conformkit.profiles.mapping): its mappings pass, broken ones fail."""

from __future__ import annotations

import json
import pickle
import re
import sqlite3
import threading
import typing
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest

import conformkit as ck
from conformkit.profiles import mapping
from conformkit.profiles.mapping import (
    DictMappingImplementation,
    MappingAPI,
    MappingCase,
    ShelveMappingImplementation,
    SqliteMapping,
    SqliteMappingImplementation,
)

ALL_CASES = frozenset(mapping.feature.cases)
COPY_CASES = frozenset({"stored_value_is_a_copy", "returned_value_is_a_copy"})
SHELVE_GAPS = frozenset(
    {
        "non_str_keys_round_trip",
        "key_equality_follows_python",
        "errors_surface_at_the_failing_call",
        "shared_handle_is_thread_safe",
    }
)


def with_status(report: ck.ContractReport, status: ck.CaseStatus) -> set[str]:
    return {result.case_id for result in report.results if result.status is status}


def failed(report: ck.ContractReport) -> set[str]:
    return with_status(report, ck.CaseStatus.FAILED)


# --------------------------------------------------------------------------- broken mappings


class Wrapper(MutableMapping[Any, Any]):
    """A mapping that delegates to another: with no defect, it passes what the other passes."""

    def __init__(self, inner: MutableMapping[Any, Any]) -> None:
        self.inner = inner

    def store_key(self, key: Any) -> Any:
        return key

    def load_key(self, stored: Any) -> Any:
        return stored

    def store_value(self, value: Any) -> Any:
        return value

    def load_value(self, stored: Any) -> Any:
        return stored

    def __getitem__(self, key: Any) -> Any:
        return self.load_value(self.inner[self.store_key(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self.inner[self.store_key(key)] = self.store_value(value)

    def __delitem__(self, key: Any) -> None:
        del self.inner[self.store_key(key)]

    def __iter__(self) -> Iterator[Any]:
        return (self.load_key(stored) for stored in self.inner)

    def __len__(self) -> int:
        return len(self.inner)


class ReadsMissingAsNone(dict[Any, Any]):
    """Reading a missing key gives None instead of raising KeyError."""

    def __missing__(self, key: Any) -> None:
        return None


class DeleteIgnoresMissing(dict[Any, Any]):
    """Deleting a missing key does nothing instead of raising KeyError."""

    def __delitem__(self, key: Any) -> None:
        self.pop(key, None)


class PopDefaultsToNone(dict[Any, Any]):
    """pop() of a missing key returns None instead of raising KeyError."""

    def pop(self, key: Any, default: Any = None) -> Any:
        return super().pop(key, default)


class NotAMutableMapping:
    """Every method of a dict, but not a MutableMapping, nor registered as one."""

    def __init__(self) -> None:
        self.data: dict[Any, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.data, name)

    def __getitem__(self, key: Any) -> Any:
        return self.data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self.data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __eq__(self, other: object) -> bool:
        return self.data == other

    __hash__ = None  # type: ignore[assignment]  # a mapping is unhashable, like a dict


class LengthCountsRecords(Wrapper):
    """A log-structured store whose len() counts records: an overwrite adds one."""

    def __init__(self, inner: MutableMapping[Any, Any]) -> None:
        super().__init__(inner)
        self.records: list[int] = []  # list.append is atomic, unlike += on a counter

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.records.append(1)

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.records.append(-1)

    def __len__(self) -> int:
        return sum(self.records)


class IteratesInKeyOrder(Wrapper):
    """Iterates in key order, as an index scan does, not in insertion order."""

    def __iter__(self) -> Iterator[Any]:
        return iter(sorted(self.inner, key=str))


class MovesKeyOnOverwrite(dict[Any, Any]):
    """An overwrite deletes and inserts again, as SQLite's INSERT OR REPLACE does."""

    def __setitem__(self, key: Any, value: Any) -> None:
        self.pop(key, None)
        super().__setitem__(key, value)


class StringifiesKeys(Wrapper):
    """Keys are stored as text, as JSON objects store them."""

    def store_key(self, key: Any) -> Any:
        return str(key)


class NoneDeletes(Wrapper):
    """Writing None deletes the key, as in stores that cannot hold a null."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if value is None:
            self.inner.pop(key, None)
        else:
            super().__setitem__(key, value)


class ClearEmptiesOnlyACache(dict[Any, Any]):
    """clear() empties a cache in front of the store, not the store."""

    def clear(self) -> None:
        pass


class JsonValues(Wrapper):
    """Values go through JSON: a tuple comes back a list, bytes cannot be written."""

    def store_value(self, value: Any) -> Any:
        return json.dumps(value)

    def load_value(self, stored: Any) -> Any:
        return json.loads(stored)


class UnloadableError(Exception):
    """Pickles, but does not load: unpickling calls ``__init__`` with one argument of two."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class CopiesOnRead(Wrapper):
    """Holds the object written and copies it on each read: a later mutation shows, and an
    unpicklable value goes in, to fail when read."""

    def load_value(self, stored: Any) -> Any:
        return pickle.loads(pickle.dumps(stored))


class UncheckedPickles(Wrapper):
    """Pickles values without checking that they load back, as shelve does."""

    def store_value(self, value: Any) -> Any:
        return pickle.dumps(value)

    def load_value(self, stored: Any) -> Any:
        return pickle.loads(stored)


class CheckedPickles(UncheckedPickles):
    """Correct: a mapping of copies, which refuses a value whose pickle does not load."""

    def store_value(self, value: Any) -> Any:
        stored = super().store_value(value)
        self.load_value(stored)
        return stored


class CachesReads(CheckedPickles):
    """Caches the value it read, and hands the same object to every later read."""

    def __init__(self, inner: MutableMapping[Any, Any]) -> None:
        super().__init__(inner)
        self.cache: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        if key not in self.cache:
            self.cache[key] = super().__getitem__(key)
        return self.cache[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.cache.pop(key, None)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self.cache.pop(key, None)
        super().__delitem__(key)


class KeysByPickle(Wrapper):
    """Looks keys up by their pickle: 1 and True are two keys, and any picklable key goes in."""

    def store_key(self, key: Any) -> Any:
        return pickle.dumps(key)

    def load_key(self, stored: Any) -> Any:
        return pickle.loads(stored)


class ThreadConfined(Wrapper):
    """Refuses calls from any thread but its creator's, as a default sqlite3 connection does."""

    def __init__(self, inner: MutableMapping[Any, Any]) -> None:
        super().__init__(inner)
        self.owner = threading.get_ident()

    def store_key(self, key: Any) -> Any:
        if threading.get_ident() != self.owner:
            raise RuntimeError("used from a thread other than the one that created it")
        return key


class BytesValues(Wrapper):
    """Holds bytes values only, as a store of files does, and declares it."""

    conformkit_samples: mapping.MappingSamples | None = mapping.BYTES_VALUE_SAMPLES

    def store_value(self, value: Any) -> Any:
        if not isinstance(value, bytes):
            raise TypeError(f"a bytes value is required, not {type(value).__name__}")
        return value


class UndeclaredBytesValues(BytesValues):
    """The same store, which does not say that it holds bytes only."""

    conformkit_samples = None


class BytesKeysBack(Wrapper):
    """Takes str or bytes keys and values and gives both back as bytes, as dbm.dumb does."""

    conformkit_samples: mapping.MappingSamples | None = mapping.BYTES_SAMPLES

    @staticmethod
    def as_bytes(item: Any, what: str) -> bytes:
        if isinstance(item, str):
            return item.encode()
        if isinstance(item, bytes):
            return item
        raise TypeError(f"{what} must be bytes or strings")

    def store_key(self, key: Any) -> Any:
        return self.as_bytes(key, "keys")

    def store_value(self, value: Any) -> Any:
        return self.as_bytes(value, "values")


class UndeclaredBytesKeysBack(BytesKeysBack):
    """The same store, which does not say that it gives bytes back."""

    conformkit_samples = None


class FalsyAsEmpty(BytesValues):
    """A bytes store that writes any falsy value as b'', as fsspec's FSMap over memory does."""

    def store_value(self, value: Any) -> Any:
        if not isinstance(value, bytes) and not value:
            return b""
        return super().store_value(value)


class NoViews:
    """
    Reads, writes, deletes, iterates, counts, and has get(), pop() and clear(), as
    diskcache.Cache does; but no keys(), values(), items(), popitem(), setdefault() or
    update(), and it is not a MutableMapping.
    """

    def __init__(self) -> None:
        self.data: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        return self.data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self.data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def get(self, key: Any, default: Any = None) -> Any:
        return self.data.get(key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        return self.data.pop(key, *default)

    def clear(self) -> None:
        self.data.clear()


class NoViewsNorGet(NoViews):
    """The same, without get() either."""

    def __getattribute__(self, name: str) -> Any:
        if name == "get":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'get'")
        return super().__getattribute__(name)


class RefusesUnknownAttributes(NoViews):
    """The same, raising AssertionError for an attribute it lacks, as diskcache's FanoutCache."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"cannot access {name} in cache shard")


class GetRaisesOnLookup(NoViews):
    """The same, whose get() cannot even be looked up: the lookup raises RuntimeError."""

    def __getattribute__(self, name: str) -> Any:
        if name == "get":
            raise RuntimeError("the shard is closed")
        return super().__getattribute__(name)


class WithoutLength:
    """
    Reads, writes, deletes, iterates and has keys() and values(), but no len(), get(),
    pop() or clear(), and it is not a MutableMapping: semidbm's shape.
    """

    def __init__(self) -> None:
        self.data: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        return self.data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self.data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def keys(self) -> list[Any]:
        return list(self.data)

    def values(self) -> list[Any]:
        return list(self.data.values())


class AppendOnly(NoViews):
    """The same, with no ``del``: a log that only grows, and so no pop() either."""

    __delitem__ = None  # type: ignore[assignment]
    pop = None  # type: ignore[assignment]


class RegisteredWithoutLength(WithoutLength):
    """The same, registered as a MutableMapping: isinstance() is true, len() still raises."""


MutableMapping.register(RegisteredWithoutLength)


class BatchLookups(dict[Any, Any]):
    """
    Reads a list of keys at once, as rocksdict does: ``[]`` and ``get()`` of a list give
    a list of answers. A write under a list raises, and leaves no trace.
    """

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, list):
            return [self.get(one) for one in key]
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if isinstance(key, list):
            return [super(BatchLookups, self).get(one, default) for one in key]
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, list):
            raise TypeError("a list of keys is not a key")
        return super().__contains__(key)


class ContainsDeleted(dict[Any, Any]):
    """``in`` is true for a key once deleted: a tombstone counted as present."""

    def __init__(self) -> None:
        super().__init__()
        self.gone: set[Any] = set()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.gone.add(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.gone.discard(key)
        super().__setitem__(key, value)

    def __contains__(self, key: object) -> bool:
        return key in self.gone or super().__contains__(key)


class GetIsStale(dict[Any, Any]):
    """get() reads a cache that a delete does not update."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[Any, Any] = {}

    def __setitem__(self, key: Any, value: Any) -> None:
        self.cache[key] = value
        super().__setitem__(key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        return self.cache.get(key, default)


class PopWithDefaultLeavesKey(dict[Any, Any]):
    """pop(key, default) of a present key returns its value and leaves the key."""

    def pop(self, key: Any, *default: Any) -> Any:
        if default:
            return self[key] if key in self else default[0]
        return super().pop(key)


class DeletesEqualValues(dict[Any, Any]):
    """A delete removes every key that holds the same value: an index by value."""

    def __delitem__(self, key: Any) -> None:
        value = self[key]
        for other in [other for other, held in self.items() if held == value]:
            super().__delitem__(other)


class LengthKeepsDeleted(dict[Any, Any]):
    """len() still counts the keys removed with del: a delete does not lower it."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: set[Any] = set()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.deleted.add(key)

    def __len__(self) -> int:
        return super().__len__() + len(self.deleted - set(self))

    def clear(self) -> None:
        super().clear()
        self.deleted.clear()


class BreaksWritesAfter(dict[Any, Any]):
    """Once ``breaking`` has run, every write raises OSError: the operation corrupted the store."""

    breaking = ""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def __setitem__(self, key: Any, value: Any) -> None:
        if self.broken:
            raise OSError(f"the store is corrupt since {self.breaking}()")
        super().__setitem__(key, value)


class ClearBreaksWrites(BreaksWritesAfter):
    """clear() leaves a store that refuses writes."""

    breaking = "clear"

    def clear(self) -> None:
        super().clear()
        self.broken = True


class PopBreaksWrites(BreaksWritesAfter):
    """pop() leaves a store that refuses writes."""

    breaking = "pop"

    def pop(self, key: Any, *default: Any) -> Any:
        self.broken = True
        return super().pop(key, *default)


class DeleteBreaksWrites(BreaksWritesAfter):
    """A delete leaves a store that refuses writes."""

    breaking = "__delitem__"

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.broken = True


class ClearHidesOnly(dict[Any, Any]):
    """clear() hides the keys from iteration, len() and ``in``; ``[]`` and get() still read them."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden: dict[Any, Any] = {}

    def clear(self) -> None:
        self.hidden.update(self)
        super().clear()

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return super().__getitem__(key)
        if key in self.hidden:
            return self.hidden[key]
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class ValuesFrozen(dict[Any, Any]):
    """values() gives what the mapping held when it was first called."""

    frozen: list[Any] | None = None

    def values(self) -> Any:
        if self.frozen is None:
            self.frozen = list(super().values())
        return self.frozen


class KeepsRefusedWrites(Wrapper):
    """
    Puts each write in a cache, then pickles it to the store; when pickling raises, the cache
    keeps the refused value, which reads back, as shelve(writeback=True) does.
    """

    def __init__(self, inner: MutableMapping[Any, Any]) -> None:
        super().__init__(inner)
        self.cache: dict[Any, Any] = {}

    def __setitem__(self, key: Any, value: Any) -> None:
        self.cache[key] = value
        self.inner[key] = pickle.dumps(value)

    def __getitem__(self, key: Any) -> Any:
        if key in self.cache:
            return self.cache[key]
        return pickle.loads(self.inner[key])

    def __delitem__(self, key: Any) -> None:
        self.cache.pop(key, None)
        del self.inner[key]


class DeletesOnRefusedOverwrite(CheckedPickles):
    """Loses the old value when it refuses an overwrite, as zict.File does."""

    def __setitem__(self, key: Any, value: Any) -> None:
        try:
            super().__setitem__(key, value)
        except Exception:
            self.inner.pop(self.store_key(key), None)
            raise


class OverDict(DictMappingImplementation):
    """The reference's dict, given to a defective mapping."""

    def __init__(self, defect: Callable[[], object]) -> None:
        self.defect = defect

    def create(self, scope: ck.FeatureScope) -> MappingAPI:
        return cast("MappingAPI", self.defect())


class OverDictClaimingCopies(OverDict):
    """The same, claiming the copy cases too."""

    coverage = mapping.feature.coverage()


def over_dict(wrapper: Callable[[MutableMapping[Any, Any]], MappingAPI]) -> Callable[[], object]:
    return lambda: wrapper({})


DEFECTS = [
    pytest.param(OverDict(over_dict(Wrapper)), set(), id="wrapper-without-defect"),
    pytest.param(
        OverDictClaimingCopies(over_dict(CheckedPickles)),
        set(),
        id="checked-pickles-without-defect",
    ),
    pytest.param(
        OverDict(ReadsMissingAsNone), {"missing_key_raises_key_error"}, id="reads-missing-as-none"
    ),
    pytest.param(
        OverDict(DeleteIgnoresMissing),
        {"delete_missing_raises_key_error"},
        id="delete-ignores-missing",
    ),
    pytest.param(
        OverDict(PopDefaultsToNone), {"pop_missing_raises_key_error"}, id="pop-defaults-to-none"
    ),
    pytest.param(OverDict(NotAMutableMapping), {"is_mutable_mapping"}, id="not-a-mutable-mapping"),
    pytest.param(
        OverDict(over_dict(LengthCountsRecords)),
        {"overwrite_keeps_length"},
        id="length-counts-records",
    ),
    pytest.param(
        OverDict(over_dict(IteratesInKeyOrder)),
        {"iteration_follows_insertion_order"},
        id="iterates-in-key-order",
    ),
    pytest.param(
        OverDict(MovesKeyOnOverwrite), {"overwrite_keeps_position"}, id="moves-key-on-overwrite"
    ),
    pytest.param(
        OverDict(over_dict(StringifiesKeys)),
        {"non_str_keys_round_trip", "key_equality_follows_python"},
        id="stringifies-keys",
    ),
    pytest.param(OverDict(over_dict(NoneDeletes)), {"none_value_round_trips"}, id="none-deletes"),
    pytest.param(
        OverDict(ClearEmptiesOnlyACache), {"clear_empties"}, id="clear-empties-only-a-cache"
    ),
    pytest.param(OverDict(over_dict(JsonValues)), {"read_your_writes"}, id="json-values"),
    pytest.param(
        OverDictClaimingCopies(over_dict(CopiesOnRead)),
        {"stored_value_is_a_copy", "errors_surface_at_the_failing_call"},
        id="copies-on-read",
    ),
    pytest.param(
        OverDictClaimingCopies(over_dict(CachesReads)),
        {"returned_value_is_a_copy"},
        id="caches-reads",
    ),
    pytest.param(
        OverDictClaimingCopies(over_dict(UncheckedPickles)),
        {"errors_surface_at_the_failing_call"},
        id="unchecked-pickles",
    ),
    pytest.param(
        OverDict(over_dict(KeysByPickle)),
        {"key_equality_follows_python", "errors_surface_at_the_failing_call"},
        id="keys-by-pickle",
    ),
    pytest.param(
        OverDict(over_dict(ThreadConfined)), {"shared_handle_is_thread_safe"}, id="thread-confined"
    ),
    pytest.param(
        OverDict(ContainsDeleted), {"missing_key_raises_key_error"}, id="contains-deleted"
    ),
    pytest.param(OverDict(GetIsStale), {"missing_key_raises_key_error"}, id="get-is-stale"),
    pytest.param(
        OverDict(PopWithDefaultLeavesKey),
        {"pop_missing_raises_key_error"},
        id="pop-with-default-leaves-key",
    ),
    pytest.param(
        OverDict(DeletesEqualValues),
        # iteration_follows_insertion_order deletes a key: blocked, naming the owner
        {"delete_missing_raises_key_error", "iteration_follows_insertion_order"},
        id="deletes-equal-values",
    ),
    pytest.param(
        OverDict(LengthKeepsDeleted), {"delete_missing_raises_key_error"}, id="length-keeps-deleted"
    ),
    pytest.param(OverDict(ClearBreaksWrites), {"clear_empties"}, id="clear-breaks-writes"),
    pytest.param(OverDict(ClearHidesOnly), {"clear_empties"}, id="clear-hides-only"),
    pytest.param(OverDict(ValuesFrozen), {"is_mutable_mapping"}, id="values-frozen"),
    pytest.param(
        OverDict(PopBreaksWrites), {"pop_missing_raises_key_error"}, id="pop-breaks-writes"
    ),
    pytest.param(
        OverDict(DeleteBreaksWrites),
        # iteration_follows_insertion_order writes after a delete: blocked, naming the owner
        {"delete_missing_raises_key_error", "iteration_follows_insertion_order"},
        id="delete-breaks-writes",
    ),
]


TYPE_CASES = frozenset(
    {
        "stored_value_is_a_copy",
        "returned_value_is_a_copy",
        "non_str_keys_round_trip",
        "key_equality_follows_python",
        "none_value_round_trips",
        "errors_surface_at_the_failing_call",
    }
)

BYTES_ONLY = [
    pytest.param(
        OverDictClaimingCopies(over_dict(BytesValues)),
        {"stored_value_is_a_copy", "returned_value_is_a_copy", "none_value_round_trips"},
        id="bytes-values-declared",
    ),
    pytest.param(
        OverDictClaimingCopies(over_dict(BytesKeysBack)),
        TYPE_CASES,
        id="bytes-keys-and-values-declared",
    ),
    pytest.param(
        OverDictClaimingCopies(over_dict(FalsyAsEmpty)),
        {
            "stored_value_is_a_copy",
            "returned_value_is_a_copy",
            "none_value_round_trips",
            "errors_surface_at_the_failing_call",
        },
        id="falsy-values-as-empty-bytes",
    ),
]

MISSING_METHOD = [
    pytest.param(OverDict(NoViews), {"is_mutable_mapping"}, id="no-views"),
    pytest.param(
        OverDict(NoViewsNorGet),
        {"is_mutable_mapping", "missing_key_raises_key_error", "none_value_round_trips"},
        id="no-views-nor-get",
    ),
    pytest.param(OverDict(RefusesUnknownAttributes), {"is_mutable_mapping"}, id="fanout-cache"),
    pytest.param(
        OverDict(AppendOnly),
        {
            "is_mutable_mapping",
            "missing_key_raises_key_error",  # deletes a key
            "delete_missing_raises_key_error",
            "pop_missing_raises_key_error",
            "iteration_follows_insertion_order",  # deletes a key and writes it again
        },
        id="append-only",
    ),
    pytest.param(
        OverDict(GetRaisesOnLookup),
        {
            "is_mutable_mapping",
            "missing_key_raises_key_error",
            "none_value_round_trips",
            "errors_surface_at_the_failing_call",
        },
        id="get-raises-on-lookup",
    ),
    pytest.param(
        OverDict(WithoutLength),
        {
            "is_mutable_mapping",
            "missing_key_raises_key_error",  # get()
            "pop_missing_raises_key_error",  # pop()
            "overwrite_keeps_length",  # len()
            "none_value_round_trips",  # get()
            "clear_empties",  # clear()
        },
        id="without-length",
    ),
    pytest.param(
        OverDict(RegisteredWithoutLength),
        {
            "is_mutable_mapping",
            "missing_key_raises_key_error",
            "pop_missing_raises_key_error",
            "overwrite_keeps_length",
            "none_value_round_trips",
            "clear_empties",
        },
        id="registered-without-length",
    ),
]

REFUSED_WRITE = [
    pytest.param(
        OverDict(over_dict(KeepsRefusedWrites)),
        {"errors_surface_at_the_failing_call"},
        id="keeps-refused-writes",
    ),
    pytest.param(OverDict(BatchLookups), set(), id="batch-lookups-without-defect"),
    pytest.param(
        OverDictClaimingCopies(over_dict(DeletesOnRefusedOverwrite)),
        {"errors_surface_at_the_failing_call"},
        id="deletes-on-refused-overwrite",
    ),
]


# --------------------------------------------------------------------------- tests


class TestDefinition:
    def test_case_names_match_the_literal(self) -> None:
        """MappingCase lists exactly the feature's cases, in order."""
        assert typing.get_args(MappingCase) == mapping.feature.cases
        assert len(ALL_CASES) == 16

    def test_feature_says_what_it_does_not_establish(self) -> None:
        """The feature has a description and names what passing it does not prove."""
        assert "MutableMapping" in mapping.feature.description
        assert "Durability" in mapping.feature.does_not_establish

    def test_implementations_holds_one_of_each(self) -> None:
        """`implementations` holds one instance of each bundled implementation."""
        assert [type(each) for each in mapping.implementations] == [
            DictMappingImplementation,
            ShelveMappingImplementation,
            SqliteMappingImplementation,
        ]

    def test_create_may_not_return_none(self) -> None:
        """A missing method is the cases' to judge, but None still fails every case at create."""
        report = ck.run_contract_sync(OverDict(lambda: None), mapping.suite)
        assert failed(report) == ALL_CASES - COPY_CASES
        assert (report["clear_empties"].reason or "").startswith(
            "case 'clear_empties' failed in create(): TypeError: create() returned None"
        )


class TestBundledImplementations:
    @pytest.mark.anyio
    async def test_dict_passes_all_but_the_copy_cases(self) -> None:
        """A dict passes every case but the two copy cases, which it declares unsupported."""
        report = await ck.run_contract(DictMappingImplementation(), mapping.suite)
        ck.assert_contract(report)
        assert with_status(report, ck.CaseStatus.UNSUPPORTED) == COPY_CASES
        assert with_status(report, ck.CaseStatus.PASSED) == ALL_CASES - COPY_CASES

    @pytest.mark.anyio
    async def test_shelve_passes_all_but_its_declared_gaps(self) -> None:
        """A shelf passes every case but the four it declares unsupported."""
        report = await ck.run_contract(ShelveMappingImplementation(), mapping.suite)
        ck.assert_contract(report)
        assert with_status(report, ck.CaseStatus.UNSUPPORTED) == SHELVE_GAPS
        assert with_status(report, ck.CaseStatus.PASSED) == ALL_CASES - SHELVE_GAPS

    @pytest.mark.anyio
    async def test_sqlite_passes_everything(self) -> None:
        """A SqliteMapping passes every case."""
        report = await ck.run_contract(SqliteMappingImplementation(), mapping.suite)
        ck.assert_contract(report, require_full=True)

    @pytest.mark.anyio
    async def test_sqlite_with_a_path_uses_a_table_per_case(self, tmp_path: Path) -> None:
        """Given a database file, each case gets a table of its own, dropped afterwards."""
        database = tmp_path / "shared.sqlite3"
        report = await ck.run_contract(SqliteMappingImplementation(database), mapping.suite)
        ck.assert_contract(report, require_full=True)
        with closing(sqlite3.connect(database)) as connection:
            tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            assert [name for (name,) in tables] == ["sqlite_sequence"]

    @pytest.mark.anyio
    async def test_declared_gaps_are_real(self) -> None:
        """Probed, the cases declared unsupported fail: no declaration is stale."""
        for implementation in (DictMappingImplementation(), ShelveMappingImplementation()):
            report = await ck.run_contract(implementation, mapping.suite, probe_unsupported=True)
            stale = {result.case_id for result in report.results if result.stale}
            # Threads corrupt a shelf's values on nearly every run, but not provably every one.
            assert stale <= {"shared_handle_is_thread_safe"}, implementation

    @pytest.mark.anyio
    async def test_no_case_is_vacuous(self) -> None:
        """Through a recording proxy every case calls the mapping; only isinstance() tells."""
        report = await ck.run_contract(
            SqliteMappingImplementation(), mapping.suite, reject_vacuous=True
        )
        # The proxy is not a MutableMapping: the one case that checks the type says so.
        assert failed(report) == {"is_mutable_mapping"}
        assert "got a RecordingSqliteMapping" in (report["is_mutable_mapping"].reason or "")
        assert with_status(report, ck.CaseStatus.PASSED) == ALL_CASES - {"is_mutable_mapping"}


class TestDefects:
    @pytest.mark.anyio
    @pytest.mark.parametrize(("implementation", "expected"), DEFECTS)
    async def test_each_defect_fails_exactly_its_cases(
        self, implementation: ck.FeatureImplementation[MappingAPI, MappingCase], expected: set[str]
    ) -> None:
        """Each broken mapping fails exactly the cases its defect breaks; the rest pass."""
        report = await ck.run_contract(implementation, mapping.suite)
        assert failed(report) == expected, report
        declared = {
            case
            for case, coverage in implementation.coverage.items()
            if isinstance(coverage, ck.Unsupported)
        }
        assert with_status(report, ck.CaseStatus.PASSED) == ALL_CASES - expected - declared

    @pytest.mark.parametrize(
        ("implementation", "expected"), DEFECTS + BYTES_ONLY + MISSING_METHOD + REFUSED_WRITE
    )
    def test_a_blocked_case_names_a_case_that_failed(
        self, implementation: ck.FeatureImplementation[MappingAPI, MappingCase], expected: set[str]
    ) -> None:
        """A case's own failure is not 'blocked'; a blocked case's owner failed in the same run."""
        report = ck.run_contract_sync(implementation, mapping.suite)
        for result in report.results:
            text = result.reason or ""
            if ": AssertionError: blocked: " not in text:
                continue
            owners = set(re.findall(r"\b([a-z_]+) owns\b", text))
            assert owners, text
            assert result.case_id not in owners, text
            assert owners <= failed(report), text

    def test_every_case_catches_some_defect(self) -> None:
        """Each case fails for at least one of the broken mappings above."""
        caught: set[str] = set()
        for param in DEFECTS:
            caught |= cast("set[str]", param.values[1])
        assert caught == ALL_CASES

    def test_a_case_that_deletes_is_blocked_by_a_delete_that_removes_more(self) -> None:
        """A delete that removes other keys blocks iteration order, naming the delete's owner."""
        report = ck.run_contract_sync(OverDict(DeletesEqualValues), mapping.suite)
        text = report["iteration_follows_insertion_order"].reason or ""
        assert "AssertionError: blocked: after deleting and writing 'key-0' again" in text
        assert "delete_missing_raises_key_error owns what a delete removes" in text

    def test_failures_say_what_was_expected_and_what_happened(self) -> None:
        """A failed case's reason names the expectation and the observed behaviour."""
        report = ck.run_contract_sync(OverDict(MovesKeyOnOverwrite), mapping.suite)
        assert (
            "expected the keys to keep their places, ['key-0', 'key-1', 'key-2'], "
            "got ['key-2', 'key-0', 'key-1'] (see docs/profile-mapping.md#failure-modes)"
        ) in (report["overwrite_keeps_position"].reason or "")
        report = ck.run_contract_sync(
            OverDictClaimingCopies(over_dict(UncheckedPickles)), mapping.suite
        )
        reason = report["errors_surface_at_the_failing_call"].reason or ""
        assert "a value that pickles but cannot be unpickled" in reason
        assert "must raise at the write" in reason


class TestSqliteMapping:
    def test_keys_follow_python_equality(self, tmp_path: Path) -> None:
        """Equal keys of different types are one key; the key first written is kept."""
        with SqliteMapping(tmp_path / "db") as store:
            store[1] = "one"
            store[True] = "true"
            store[1.0] = "float"
            store[frozenset({1, 2})] = "set"
            store[frozenset({2, True})] = "same set"
            store[(0.0, "a")] = "tuple"
            store[(-0.0, "a")] = "same tuple"
            assert list(store.items()) == [
                (1, "float"), (frozenset({1, 2}), "same set"), ((0.0, "a"), "same tuple"),
            ]  # fmt: skip
            assert type(next(iter(store))) is int

    def test_unsupported_keys_raise_at_the_write(self, tmp_path: Path) -> None:
        """A key SqliteMapping cannot hold raises at once and leaves nothing behind."""
        with SqliteMapping(tmp_path / "db") as store:
            with pytest.raises(TypeError, match="cannot hold the key .* of type object"):
                store[object()] = "value"
            with pytest.raises(TypeError, match="of type list"):
                store[("tuple", ["list"])] = "value"
            with pytest.raises(ValueError, match="NaN is not equal to itself"):
                store[float("nan")] = "value"
            assert len(store) == 0

    def test_values_that_cannot_load_raise_at_the_write(self, tmp_path: Path) -> None:
        """A value whose pickle does not load raises TypeError at the write, chained."""
        with SqliteMapping(tmp_path / "db") as store:
            with pytest.raises(TypeError, match="it pickles, but loading the pickle raises"):
                store["key"] = UnloadableError(1, "message")
            assert "key" not in store

    def test_iteration_pages_and_tolerates_changes(self, tmp_path: Path) -> None:
        """Iteration reads page by page, in insertion order; a change meanwhile never fails it."""
        with SqliteMapping(tmp_path / "db") as store:
            for number in range(600):
                store[number] = number
            seen = []
            for key in store:
                seen.append(key)
                if key == 0:  # changes to keys on pages not read yet are seen
                    del store[400]
                    store[600] = 600
            assert seen == [*range(400), *range(401, 601)]

    def test_popitem_and_setdefault_are_dict_like(self, tmp_path: Path) -> None:
        """popitem() removes the last key written; setdefault() stores only when absent."""
        with SqliteMapping(tmp_path / "db") as store:
            store["a"] = 1
            assert store.setdefault("b", [2]) == [2]
            assert store.setdefault("a", 9) == 1
            assert store.popitem() == ("b", [2])
            assert store.popitem() == ("a", 1)
            with pytest.raises(KeyError, match="empty"):
                store.popitem()

    def test_tables_are_independent_and_reopen(self, tmp_path: Path) -> None:
        """Two tables of one file hold two mappings; a reopened one reads what was written."""
        with SqliteMapping(tmp_path / "db", table="a") as first:
            first["key"] = "in a"
        with SqliteMapping(tmp_path / "db", table="b") as second:
            assert len(second) == 0
        with SqliteMapping(tmp_path / "db", table="a") as first:
            assert dict(first) == {"key": "in a"}
            assert repr(first) == f"<SqliteMapping {str(tmp_path / 'db')!r} table 'a'>"

    def test_closed_mapping_refuses_operations(self, tmp_path: Path) -> None:
        """After close() (twice is harmless), an operation raises sqlite3.ProgrammingError."""
        store = SqliteMapping(tmp_path / "db")
        store.close()
        store.close()
        with pytest.raises(sqlite3.ProgrammingError):
            store["key"] = "value"

    def test_table_must_be_an_identifier(self, tmp_path: Path) -> None:
        """A table name that is not a plain identifier is refused before anything opens."""
        with pytest.raises(ValueError, match="plain SQL identifier"):
            SqliteMapping(tmp_path / "db", table='x"; DROP TABLE y; --')
        assert not (tmp_path / "db").exists()


def passed(report: ck.ContractReport) -> set[str]:
    return with_status(report, ck.CaseStatus.PASSED)


def reason(report: ck.ContractReport, case_id: str) -> str:
    return report[case_id].reason or ""


class TestSampleDomains:
    """A mapping that holds only some types declares them; cases not about types keep to them."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(("implementation", "expected"), BYTES_ONLY)
    async def test_a_bytes_store_fails_exactly_the_cases_it_lacks(
        self, implementation: ck.FeatureImplementation[MappingAPI, MappingCase], expected: set[str]
    ) -> None:
        """Declared bytes-only, a store fails only the cases about the types it cannot hold."""
        report = await ck.run_contract(implementation, mapping.suite)
        assert failed(report) == expected, report
        assert passed(report) == ALL_CASES - expected

    @pytest.mark.anyio
    async def test_an_undeclared_bytes_store_is_blocked_and_says_where_to_look(self) -> None:
        """Without a declaration, each case that writes a refused sample is blocked."""
        implementation = OverDictClaimingCopies(over_dict(UndeclaredBytesValues))
        report = await ck.run_contract(implementation, mapping.suite)
        assert failed(report) == ALL_CASES
        blocked = {
            case for case in ALL_CASES if ": AssertionError: blocked: " in reason(report, case)
        }
        assert blocked == ALL_CASES - {"read_your_writes"}
        for case in blocked:
            assert "read_your_writes owns whether the mapping holds its samples" in reason(
                report, case
            )
        assert "declares the keys and values it holds as conformkit_samples" in reason(
            report, "read_your_writes"
        )

    def test_messages_compare_like_with_like(self) -> None:
        """A store that gives str back as bytes is blocked; no message claims a change."""
        report = ck.run_contract_sync(OverDict(over_dict(UndeclaredBytesKeysBack)), mapping.suite)
        text = reason(report, "delete_missing_raises_key_error")
        assert text.startswith(
            "case 'delete_missing_raises_key_error' failed: AssertionError: blocked: wrote the "
            "sample value 'a value' under 'key-0', read back b'a value'; read_your_writes owns"
        )
        assert "changed" not in text
        assert (
            "writing the sample value 42 under 'key-1' raised TypeError: values must be bytes or "
            "strings; a mapping holds every value of its sample domain"
        ) in reason(report, "read_your_writes")

    def test_default_and_declared_samples(self) -> None:
        """A dict gets the rich domain; a declared domain is what samples_of() gives."""
        assert mapping.samples_of({}) is mapping.RICH_SAMPLES
        assert mapping.samples_of(BytesValues({})) is mapping.BYTES_VALUE_SAMPLES
        assert mapping.samples_of(BytesKeysBack({})) is mapping.BYTES_SAMPLES
        rich = mapping.RICH_SAMPLES
        assert [type(rich.value(n)) for n in range(7)] == [
            str, int, float, bytes, tuple, dict, str,
        ]  # fmt: skip
        assert [mapping.BYTES_SAMPLES.key(n) for n in range(2)] == [b"key-0", b"key-1"]

    def test_the_declaration_is_read_without_running_the_store(self) -> None:
        """A store's __getattr__ is not run: one that raises there still gets its domain."""
        assert mapping.samples_of(RefusesUnknownAttributes()) is mapping.RICH_SAMPLES
        store = RefusesUnknownAttributes()
        store.conformkit_samples = mapping.BYTES_SAMPLES  # type: ignore[attr-defined]
        assert mapping.samples_of(store) is mapping.BYTES_SAMPLES

        class Slotted:
            __slots__ = ("conformkit_samples",)
            conformkit_samples: mapping.MappingSamples

        slotted = Slotted()
        assert mapping.samples_of(slotted) is mapping.RICH_SAMPLES  # the slot is empty
        slotted.conformkit_samples = mapping.BYTES_VALUE_SAMPLES
        assert mapping.samples_of(slotted) is mapping.BYTES_VALUE_SAMPLES

        class Computed(dict[Any, Any]):
            @property
            def conformkit_samples(self) -> mapping.MappingSamples:
                raise AssertionError("a property is the store's code, never run")

        with pytest.raises(TypeError, match=r"Computed.conformkit_samples must be a MappingSamp"):
            mapping.samples_of(Computed())

    def test_a_declaration_is_checked(self) -> None:
        """Equal samples, unhashable keys and a wrong attribute are refused, saying why."""
        with pytest.raises(ValueError, match=r"key\(0\) and key\(2\) are equal, 'k0'"):
            mapping.MappingSamples(key=lambda n: f"k{n % 2}", value=str, large_value="")

        def unhashable(n: int) -> Any:
            return [n]

        with pytest.raises(TypeError, match="unhashable"):
            mapping.MappingSamples(key=unhashable, value=str, large_value="")

        class Misdeclared(dict[Any, Any]):
            conformkit_samples = "bytes"

        with pytest.raises(TypeError, match="conformkit_samples must be a MappingSamples"):
            mapping.samples_of(Misdeclared())
        report = ck.run_contract_sync(OverDict(Misdeclared), mapping.suite)
        assert failed(report) == ALL_CASES - COPY_CASES
        assert "Misdeclared.conformkit_samples must be a MappingSamples, got 'bytes'" in reason(
            report, "clear_empties"
        )
        assert reason(report, "clear_empties").startswith(
            "case 'clear_empties' failed: AssertionError: blocked: "
        )


class TestCascades:
    """A defect fails the case that owns it; a case that cannot get that far says so."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(("implementation", "expected"), MISSING_METHOD)
    async def test_a_missing_method_fails_where_it_is_owned(
        self, implementation: ck.FeatureImplementation[MappingAPI, MappingCase], expected: set[str]
    ) -> None:
        """Only is_mutable_mapping fails for a shape; a case needing what is missing is blocked."""
        report = await ck.run_contract(implementation, mapping.suite)
        assert failed(report) == expected, report
        name = type(implementation).__name__
        for case in expected - {"is_mutable_mapping"}:
            assert reason(report, case).startswith(
                f"case {case!r} failed: AssertionError: blocked: "
            ), report
            assert "is_mutable_mapping owns" in reason(report, case), name

    def test_a_missing_method_is_named_where_it_blocks(self) -> None:
        """A blocked case names the mapping's type and the method it lacks."""
        report = ck.run_contract_sync(OverDict(NoViewsNorGet), mapping.suite)
        assert "blocked: the mapping, a NoViewsNorGet, has no get() method; " in reason(
            report, "missing_key_raises_key_error"
        )
        report = ck.run_contract_sync(OverDict(WithoutLength), mapping.suite)
        assert "blocked: the mapping, a WithoutLength, has no __len__() method; " in reason(
            report, "overwrite_keeps_length"
        )
        assert "blocked: the mapping, a WithoutLength, has no clear() method; " in reason(
            report, "clear_empties"
        )

    def test_is_mutable_mapping_lists_what_the_class_lacks(self) -> None:
        """One reason lists every method a MutableMapping has that the class does not define."""
        report = ck.run_contract_sync(OverDict(WithoutLength), mapping.suite)
        assert (
            "expected an instance of collections.abc.MutableMapping, got a WithoutLength, whose "
            "class does not define __len__(), clear(), get(), items(), pop(), popitem(), "
            "setdefault() and update()"
        ) in reason(report, "is_mutable_mapping")
        report = ck.run_contract_sync(OverDict(RegisteredWithoutLength), mapping.suite)
        assert (
            "RegisteredWithoutLength is registered as a collections.abc.MutableMapping, but its "
            "class does not define __len__(), clear(), get(), items(), pop(), popitem(), "
            "setdefault() and update()"
        ) in reason(report, "is_mutable_mapping")

    def test_a_lookup_that_raises_is_named(self) -> None:
        """A method whose lookup raises blocks the case, naming the mapping and the attribute."""
        report = ck.run_contract_sync(OverDict(GetRaisesOnLookup), mapping.suite)
        for case in ("missing_key_raises_key_error", "errors_surface_at_the_failing_call"):
            assert (
                "blocked: looking up get on the mapping, a GetRaisesOnLookup, raised "
                "RuntimeError: the shard is closed; is_mutable_mapping owns"
            ) in reason(report, case)

    @pytest.mark.anyio
    @pytest.mark.parametrize(("implementation", "expected"), REFUSED_WRITE)
    async def test_a_refused_write_is_checked_in_full(
        self, implementation: ck.FeatureImplementation[MappingAPI, MappingCase], expected: set[str]
    ) -> None:
        """A write that raises but leaves its value, or loses the old one, is caught."""
        report = await ck.run_contract(implementation, mapping.suite)
        assert failed(report) == expected, report

    def test_a_refused_write_says_what_it_left(self) -> None:
        """The reasons name the trace a refused write left, and the value an overwrite lost."""
        report = ck.run_contract_sync(OverDict(over_dict(KeepsRefusedWrites)), mapping.suite)
        text = reason(report, "errors_surface_at_the_failing_call")
        assert "writing a value that cannot be pickled (a lock) under 'key-10' raised" in text
        assert "left a trace: key in mapping is True" in text
        report = ck.run_contract_sync(
            OverDictClaimingCopies(over_dict(DeletesOnRefusedOverwrite)), mapping.suite
        )
        text = reason(report, "errors_surface_at_the_failing_call")
        assert "overwriting 'key-0', which held 'a value', with a value that cannot" in text
        assert (
            "'key-0' is no longer in the mapping: a refused overwrite keeps the old value" in text
        )

    def test_every_failure_points_at_the_failure_modes(self) -> None:
        """Each failed case's reason names the page section that explains it."""
        report = ck.run_contract_sync(
            OverDictClaimingCopies(over_dict(UndeclaredBytesValues)), mapping.suite
        )
        for result in report.results:
            assert "see docs/profile-mapping.md#failure-modes" in (result.reason or "")
