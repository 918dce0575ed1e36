"""
The mapping profile: a :class:`collections.abc.MutableMapping` that behaves like a ``dict``.

Passing it establishes that the mapping reads back what was written; raises
:exc:`KeyError` for a missing key on read, ``del`` and ``pop`` (and that
``pop(key, default)`` returns the default); is a ``MutableMapping`` whose mixin
methods work; keeps one entry per key, in insertion order, an overwritten key
keeping its place; holds copies, so that mutating the object written, or the
object read back, changes nothing stored; stores ``int``, ``bytes`` and tuple
keys and gives them back equal and of the same type; treats keys as Python's
``==`` does (``1``, ``1.0`` and ``True`` are one key, ``1`` and ``'1'`` two);
stores ``None`` as a value like any other; empties on ``clear()``; raises at
the very call that gives it a key or value it cannot hold, never at a later,
unrelated call; and survives four threads writing and reading through one
shared handle.

It does not establish durability across close and reopen (that is
:mod:`conformkit.profiles.durable_mapping`), behaviour across processes,
atomicity of compound operations (``pop``, ``setdefault``, ``update``) under
concurrent writers, crash safety, speed, or Python's equality for key types
the cases do not use (``Decimal``, ``complex``, ``datetime``, custom classes).

Bundled implementations: :class:`DictMappingImplementation` (a ``dict``, the reference),
:class:`ShelveMappingImplementation` (:mod:`shelve` over :mod:`dbm.dumb`) and
:class:`SqliteMappingImplementation` (a :class:`SqliteMapping` over a SQLite file).
"""

from __future__ import annotations

import math
import os
import pickle
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Final, Literal, TypeAlias, final, get_args

from .._feature import Feature
from .._implementation import FeatureImplementation
from .._scope import FeatureScope
from .._suite import ContractSuite
from .._util import short_repr
from ..laws import race_in_threads, strictly_equal
from ._support import connect, open_shelf, scope_table, temporary_directory, transaction

__all__ = [
    "DictMappingImplementation",
    "MappingAPI",
    "MappingCase",
    "ShelveMappingImplementation",
    "SqliteMapping",
    "SqliteMappingImplementation",
    "feature",
    "implementations",
    "suite",
]


# --------------------------------------------------------------------------- API and errors

MappingAPI: TypeAlias = MutableMapping[Any, Any]
"""The API of the profile: the mapping itself, any :class:`collections.abc.MutableMapping`."""


# --------------------------------------------------------------------------- case names

MappingCase = Literal[
    "read_your_writes",
    "missing_key_raises_key_error",
    "delete_missing_raises_key_error",
    "pop_missing_raises_key_error",
    "is_mutable_mapping",
    "overwrite_keeps_length",
    "iteration_follows_insertion_order",
    "overwrite_keeps_position",
    "stored_value_is_a_copy",
    "returned_value_is_a_copy",
    "non_str_keys_round_trip",
    "key_equality_follows_python",
    "none_value_round_trips",
    "clear_empties",
    "errors_surface_at_the_failing_call",
    "shared_handle_is_thread_safe",
]
"""The names of the profile's cases."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[MappingAPI, MappingCase](
    "conformkit.profiles.mapping",
    cases=get_args(MappingCase),
    description=(
        "A collections.abc.MutableMapping that behaves like a dict: KeyError for missing keys, "
        "insertion order, Python's key equality, copies of the values it holds, errors at the "
        "failing call, and one handle shared safely between threads."
    ),
    does_not_establish=(
        "Durability across close and reopen (see conformkit.profiles.durable_mapping), "
        "behaviour across processes, atomicity of compound operations (pop, setdefault, "
        "update) under concurrent writers, crash safety, speed, or Python's equality for key "
        "types the cases do not use (Decimal, complex, datetime, custom classes)."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

_THREADS: Final = 4
_KEYS_PER_THREAD: Final = 500


@suite.case("read_your_writes")
def _read_your_writes(api: MappingAPI) -> None:
    written: dict[str, object] = {
        "text": "a value",
        "number": 42,
        "real": 2.5,
        "bytes": b"\x00\xff",
        "tuple": (1, "two"),
        "nested": {"list": [1, 2], "set": {3}},
    }
    for key, value in written.items():
        try:
            api[key] = value
        except Exception as exc:
            raise AssertionError(
                f"writing {value!r} under {key!r} raised {exc!r}; expected a mapping to hold "
                f"str, int, float, bytes, tuple, list, set and dict values"
            ) from exc
    for key, value in written.items():
        got = api[key]
        if not strictly_equal(value, got):
            raise AssertionError(
                f"wrote {value!r} under {key!r}, read back {got!r} "
                f"(expected an equal value of the same types)"
            )
    if len(api) != len(written):
        raise AssertionError(f"wrote {len(written)} distinct keys, len() is {len(api)}")


@suite.case("missing_key_raises_key_error")
def _missing_key_raises_key_error(api: MappingAPI) -> None:
    try:
        got = api["absent"]
    except KeyError:
        pass
    else:
        raise AssertionError(f"expected KeyError reading a key never written, got {got!r}")
    api["present"] = "value"
    del api["present"]
    try:
        got = api["present"]
    except KeyError:
        pass
    else:
        raise AssertionError(f"expected KeyError reading a deleted key, got {got!r}")
    if "absent" in api:
        raise AssertionError("'absent' in mapping is True for a key never written")
    got = api.get("absent", "default")
    if got != "default":
        raise AssertionError(f"get('absent', 'default') returned {got!r}, expected 'default'")


@suite.case("delete_missing_raises_key_error")
def _delete_missing_raises_key_error(api: MappingAPI) -> None:
    api["present"] = "value"
    try:
        del api["absent"]
    except KeyError:
        pass
    else:
        raise AssertionError("expected KeyError deleting a key never written; nothing was raised")
    if list(api) != ["present"]:
        raise AssertionError(f"a failed delete changed the keys to {list(api)!r}")
    del api["present"]
    try:
        del api["present"]
    except KeyError:
        pass
    else:
        raise AssertionError("expected KeyError deleting a key twice; nothing was raised")


@suite.case("pop_missing_raises_key_error")
def _pop_missing_raises_key_error(api: MappingAPI) -> None:
    api["present"] = "value"
    try:
        got = api.pop("absent")
    except KeyError:
        pass
    else:
        raise AssertionError(f"expected KeyError from pop() of a missing key, got {got!r}")
    got = api.pop("absent", "default")
    if got != "default":
        raise AssertionError(f"pop('absent', 'default') returned {got!r}, expected 'default'")
    got = api.pop("present")
    if got != "value":
        raise AssertionError(f"pop('present') returned {got!r}, expected 'value'")
    if "present" in api:
        raise AssertionError("pop('present') returned the value but left the key in the mapping")
    got = api.pop("present", "default")
    if got != "default":
        raise AssertionError(
            f"pop('present', 'default') after popping it returned {got!r}, expected 'default'"
        )


@suite.case("is_mutable_mapping")
def _is_mutable_mapping(api: MappingAPI) -> None:
    if not isinstance(api, MutableMapping):
        raise AssertionError(
            f"expected an instance of collections.abc.MutableMapping, "
            f"got a {type(api).__qualname__}"
        )
    api.update({"a": 1}, b=2)
    if api.setdefault("c", 3) != 3 or api.setdefault("a", 9) != 1:
        raise AssertionError(
            f"setdefault() must return the stored value or store the default; the mapping "
            f"holds {dict(api.items())!r}"
        )
    expected = {"a": 1, "b": 2, "c": 3}
    if api != expected or dict(api.items()) != expected:
        raise AssertionError(f"after update() and setdefault(), expected {expected!r}, got {api!r}")
    if set(api.keys()) != set(expected) or sorted(api.values()) != [1, 2, 3]:
        raise AssertionError(
            f"keys() and values() disagree with the items {dict(api.items())!r}: "
            f"{list(api.keys())!r}, {list(api.values())!r}"
        )
    key, value = api.popitem()
    if expected.get(key) != value or key in api or len(api) != 2:
        raise AssertionError(
            f"popitem() returned {(key, value)!r} and left {dict(api.items())!r}; expected one "
            f"of the items {expected!r}, removed"
        )


@suite.case("overwrite_keeps_length")
def _overwrite_keeps_length(api: MappingAPI) -> None:
    api["key"] = "first"
    api["key"] = "second"
    if len(api) != 1 or list(api) != ["key"]:
        raise AssertionError(
            f"wrote one key twice; expected len() 1 and keys ['key'], "
            f"got len() {len(api)} and keys {list(api)!r}"
        )
    if api["key"] != "second":
        raise AssertionError(f"overwrote 'first' with 'second', read back {api['key']!r}")


@suite.case("iteration_follows_insertion_order")
def _iteration_follows_insertion_order(api: MappingAPI) -> None:
    order = ["pear", "apple", "fig", "banana", "cherry"]
    for index, key in enumerate(order):
        api[key] = index
    views = {
        "list(mapping)": list(api),
        "keys()": list(api.keys()),
        "items()": [key for key, _ in api.items()],
    }
    for view, got in views.items():
        if got != order:
            raise AssertionError(f"inserted keys in the order {order!r}, {view} gave {got!r}")
    if list(api.values()) != list(range(len(order))):
        raise AssertionError(
            f"values() does not follow insertion order: expected {list(range(len(order)))!r}, "
            f"got {list(api.values())!r}"
        )
    del api["apple"]
    api["apple"] = 99
    expected = ["pear", "fig", "banana", "cherry", "apple"]
    if list(api) != expected:
        raise AssertionError(
            f"a key deleted and inserted again goes last, as in a dict: expected {expected!r}, "
            f"got {list(api)!r}"
        )


@suite.case("overwrite_keeps_position")
def _overwrite_keeps_position(api: MappingAPI) -> None:
    for key in ("a", "b", "c"):
        api[key] = "first"
    api["a"] = "second"
    api["b"] = "a much longer value " * 100  # one that no longer fits where the first one was
    if list(api) != ["a", "b", "c"]:
        raise AssertionError(
            f"wrote 'a', 'b', 'c', then overwrote 'a' and 'b'; expected the keys to keep their "
            f"places, ['a', 'b', 'c'], got {list(api)!r}"
        )


def _change(value: dict[str, Any]) -> None:
    value["list"].append("mutated")
    value["count"] = 2


def _expect_unchanged(api: MappingAPI, what: str) -> None:
    got = api["key"]
    if got != {"list": ["original"], "count": 1}:
        raise AssertionError(f"{what}: expected {{'list': ['original'], 'count': 1}}, got {got!r}")


@suite.case("stored_value_is_a_copy")
def _stored_value_is_a_copy(api: MappingAPI) -> None:
    original: dict[str, Any] = {"list": ["original"], "count": 1}
    api["key"] = original
    _change(original)
    _expect_unchanged(api, "mutating the object after storing it changed what is read back")


@suite.case("returned_value_is_a_copy")
def _returned_value_is_a_copy(api: MappingAPI) -> None:
    api["key"] = {"list": ["original"], "count": 1}
    _change(api["key"])
    _expect_unchanged(api, "mutating a value read back changed the stored one")


@suite.case("non_str_keys_round_trip")
def _non_str_keys_round_trip(api: MappingAPI) -> None:
    keys: list[object] = [7, b"\x00bytes", ("tuple", 1, (2.5, b"nested"))]
    for key in keys:
        api[key] = f"value of {key!r}"
    for key in keys:
        got = api[key]
        if got != f"value of {key!r}":
            raise AssertionError(f"wrote {f'value of {key!r}'!r} under {key!r}, read {got!r}")
    iterated = list(api)
    missing = [key for key in keys if not any(strictly_equal(key, got) for got in iterated)]
    if missing or len(iterated) != len(keys):
        raise AssertionError(
            f"wrote the keys {keys!r}; iteration gave {iterated!r}, expected each key back "
            f"equal and of the same type"
        )


@suite.case("key_equality_follows_python")
def _key_equality_follows_python(api: MappingAPI) -> None:
    api[1] = "int"
    api[True] = "bool"
    if len(api) != 1:
        raise AssertionError(
            f"1 == True, so they are one key; after writing both, len() is {len(api)} and the "
            f"keys are {list(api)!r}"
        )
    for key in (1, True, 1.0):
        got = api.get(key)
        if got != "bool":
            raise AssertionError(
                f"wrote 1 then True (one key); reading {key!r} gave {got!r}, expected 'bool'"
            )
    api["1"] = "str"
    if len(api) != 2 or api[1] != "bool" or api["1"] != "str":
        raise AssertionError(
            f"1 != '1', so they are two keys; got len() {len(api)} and the items "
            f"{list(api.items())!r}"
        )
    if list(api) != [1, "1"]:
        raise AssertionError(f"expected the keys [1, '1'], got {list(api)!r}")


@suite.case("none_value_round_trips")
def _none_value_round_trips(api: MappingAPI) -> None:
    api["none"] = None
    if "none" not in api or len(api) != 1:
        raise AssertionError(
            f"wrote None under 'none'; expected the key to be present, got 'none' in mapping "
            f"{'none' in api} and len() {len(api)}"
        )
    got = api["none"]
    if got is not None:
        raise AssertionError(f"wrote None under 'none', read back {got!r}")
    got = api.get("none", "default")
    if got is not None:
        raise AssertionError(f"get('none', 'default') returned {got!r}; the stored value is None")
    if list(api.items()) != [("none", None)]:
        raise AssertionError(f"expected the items [('none', None)], got {list(api.items())!r}")


@suite.case("clear_empties")
def _clear_empties(api: MappingAPI) -> None:
    for key in ("a", "b", "c"):
        api[key] = key
    api.clear()
    if len(api) != 0 or list(api) != [] or "a" in api:
        raise AssertionError(
            f"after clear(), expected an empty mapping; got len() {len(api)} and the keys "
            f"{list(api)!r}"
        )
    api["d"] = "d"
    if list(api.items()) != [("d", "d")]:
        raise AssertionError(
            f"after clear() and one write, expected the items [('d', 'd')], "
            f"got {list(api.items())!r}"
        )


class _UnloadableError(Exception):
    """A value that pickles, but whose pickle cannot be loaded: ``__init__`` wants two arguments."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)  # pickled as (cls, (message,)): loading calls cls(message)
        self.code = code


@suite.case("errors_surface_at_the_failing_call")
def _errors_surface_at_the_failing_call(api: MappingAPI) -> None:
    awkward: list[tuple[str, object, object]] = [
        ("an unhashable key", ["a", "list"], "value"),
        ("a key of a class without value equality", object(), "value"),
        ("a NaN key", math.nan, "value"),
        ("a value that cannot be pickled (a lock)", "lock", threading.Lock()),
        ("a value that pickles but cannot be unpickled", "unloadable", _UnloadableError(1, "x")),
    ]
    for description, key, value in awkward:
        before = list(api)
        try:
            api[key] = value
        except Exception:
            after = list(api)
            if after != before:
                raise AssertionError(
                    f"writing {description} raised, as it may, but changed the keys from "
                    f"{before!r} to {after!r}: a failed write must leave the mapping as it was"
                ) from None
            continue
        try:
            got = api[key]
        except Exception as exc:
            raise AssertionError(
                f"writing {description} ({short_repr(key)}: {short_repr(value)}) succeeded, "
                f"but reading it back raised {exc!r}: a store that cannot hold it must raise at "
                f"the write"
            ) from exc
        if type(got) is not type(value) or (isinstance(value, str) and got != value):
            raise AssertionError(
                f"writing {description} ({short_repr(key)}: {short_repr(value)}) succeeded, "
                f"but it read back as {short_repr(got)}: a store that cannot hold it must raise "
                f"at the write"
            )
    api["after"] = "fine"
    later: list[tuple[str, Callable[[], object]]] = [
        ("mapping['after']", lambda: api["after"]),
        ("len(mapping)", lambda: len(api)),
        ("list(mapping)", lambda: list(api)),
        ("list(mapping.values())", lambda: list(api.values())),
        ("list(mapping.items())", lambda: list(api.items())),
        ("dict(mapping)", lambda: dict(api)),
    ]
    for call, function in later:
        try:
            function()
        except Exception as exc:
            raise AssertionError(
                f"{call} raised {exc!r} after the awkward writes: an error must surface at the "
                f"write that caused it, not at a later, unrelated call"
            ) from exc
    if api["after"] != "fine":
        raise AssertionError(f"wrote 'fine' under 'after', read back {api['after']!r}")


@suite.case("shared_handle_is_thread_safe")
async def _shared_handle_is_thread_safe(api: MappingAPI) -> None:
    def value(thread: int, number: int) -> str:
        return f"value {number} of thread {thread} " + "." * 64

    def write_and_read(thread: int) -> list[str]:
        for number in range(_KEYS_PER_THREAD):
            api[f"thread-{thread}-key-{number}"] = value(thread, number)
        return [
            f"thread-{thread}-key-{number}"
            for number in range(_KEYS_PER_THREAD)
            if api[f"thread-{thread}-key-{number}"] != value(thread, number)
        ]

    outcomes = await race_in_threads(_THREADS, write_and_read, timeout=30.0)
    broken = [key for keys in outcomes.all_succeed() for key in keys]
    if broken:
        raise AssertionError(
            f"{_THREADS} threads each wrote {_KEYS_PER_THREAD} distinct keys through one "
            f"shared mapping; {len(broken)} values did not read back intact in their thread, "
            f"such as {broken[:3]!r}"
        )
    wrong = [
        (f"thread-{thread}-key-{number}", api.get(f"thread-{thread}-key-{number}"))
        for thread in range(_THREADS)
        for number in range(_KEYS_PER_THREAD)
        if api.get(f"thread-{thread}-key-{number}") != value(thread, number)
    ]
    total = _THREADS * _KEYS_PER_THREAD
    if wrong or len(api) != total:
        raise AssertionError(
            f"{_THREADS} threads each wrote {_KEYS_PER_THREAD} distinct keys through one shared "
            f"mapping; afterwards len() is {len(api)} (expected {total}) and {len(wrong)} values "
            f"are not intact, such as {wrong[:2]!r}"
        )


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
