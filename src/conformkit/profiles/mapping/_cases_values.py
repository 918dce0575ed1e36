"""
The mapping profile's cases about values: copies, key and value types, errors that leave
no trace, and threads sharing one handle.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any, Final

from ..._explain import error_line
from ..._util import short_repr
from ...laws import race_in_threads, strictly_equal
from ._api import MappingAPI
from ._cases import (
    DEFAULT,
    SEE,
    bound_method,
    get_value,
    optional_method,
    put_value,
    refusal,
    sample_domain,
    size_of,
    suite,
)

_THREADS: Final = 4
_KEYS_PER_THREAD: Final = 500

_ORIGINAL: Final = {"list": ["original"], "count": 1}


def _copyable() -> dict[str, Any]:
    return {"list": ["original"], "count": 1}


def _change(value: dict[str, Any]) -> None:
    value["list"].append("mutated")
    value["count"] = 2


def _write_mutable(api: MappingAPI, key: object, value: dict[str, Any]) -> None:
    try:
        api[key] = value
    except Exception as exc:
        raise refusal(
            api,
            sample_domain(api),
            f"writing the dict {value!r} under {key!r} raised {error_line(exc)}; this case "
            f"checks that the mapping holds copies of a mutable value (a mapping of immutable "
            f"values, such as bytes, declares it unsupported)",
        ) from exc


def _expect_unchanged(api: MappingAPI, key: object, what: str) -> None:
    got = api[key]
    if got != _ORIGINAL:
        raise AssertionError(f"{what}: expected {_ORIGINAL!r}, got {short_repr(got)}")


@suite.case("stored_value_is_a_copy")
def _stored_value_is_a_copy(api: MappingAPI) -> None:
    with SEE:
        key = sample_domain(api).key(0)
        original = _copyable()
        _write_mutable(api, key, original)
        _change(original)
        _expect_unchanged(api, key, "mutating the object after storing it changed what is read")


@suite.case("returned_value_is_a_copy")
def _returned_value_is_a_copy(api: MappingAPI) -> None:
    with SEE:
        key = sample_domain(api).key(0)
        _write_mutable(api, key, _copyable())
        _change(api[key])
        _expect_unchanged(api, key, "mutating a value read back changed the stored one")


@suite.case("non_str_keys_round_trip")
def _non_str_keys_round_trip(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        keys: list[object] = [7, b"\x00bytes", ("tuple", 1, (2.5, b"nested"))]
        for index, key in enumerate(keys):
            try:
                api[key] = samples.value(index)
            except Exception as exc:
                raise refusal(
                    api,
                    samples,
                    f"writing under the key {key!r}, a {type(key).__qualname__}, raised "
                    f"{error_line(exc)}; expected int, bytes and tuple keys to be held",
                ) from exc
        for index, key in enumerate(keys):
            got = api[key]
            if got != samples.value(index):
                raise AssertionError(
                    f"wrote {short_repr(samples.value(index))} under {key!r}, read "
                    f"{short_repr(got)}"
                )
        iterated = list(api)
        missing = [key for key in keys if not any(strictly_equal(key, got) for got in iterated)]
        if missing or len(iterated) != len(keys):
            raise AssertionError(
                f"wrote the keys {keys!r}; iteration gave {short_repr(iterated)}, expected each "
                f"key back once, equal and of the same type"
            )


@suite.case("key_equality_follows_python")
def _key_equality_follows_python(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        first, second, third = (samples.value(n) for n in range(3))
        for key, value in ((1, first), (True, second)):
            try:
                api[key] = value
            except Exception as exc:
                raise refusal(
                    api,
                    samples,
                    f"writing under the key {key!r} raised {error_line(exc)}; expected int and "
                    f"bool keys to be held",
                ) from exc
        keys = list(api)
        if len(keys) != 1 or keys[0] != 1:
            raise AssertionError(
                f"1 == True, so writing 1 then True writes one key; iteration gave the keys "
                f"{short_repr(keys)}"
            )
        for alias in (1, True, 1.0):
            got = api[alias]
            if got != second:
                raise AssertionError(
                    f"wrote {short_repr(first)} under 1 then {short_repr(second)} under True "
                    f"(one key); reading {alias!r} gave {short_repr(got)}"
                )
        api["1"] = third
        keys = list(api)
        numbers = [key for key in keys if key == 1 and not isinstance(key, str)]
        if len(keys) != 2 or len(numbers) != 1 or "1" not in keys:
            raise AssertionError(
                f"1 != '1', so they are two keys; iteration gave the keys {short_repr(keys)}"
            )
        if api[1] != second or api["1"] != third:
            raise AssertionError(
                f"after writing '1', 1 reads {short_repr(api[1])} (expected "
                f"{short_repr(second)}) and '1' reads {short_repr(api['1'])} (expected "
                f"{short_repr(third)})"
            )


@suite.case("none_value_round_trips")
def _none_value_round_trips(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        key = samples.key(0)
        try:
            api[key] = None
        except Exception as exc:
            raise refusal(
                api,
                samples,
                f"writing None under {key!r} raised {error_line(exc)}; None is a value like "
                f"any other",
            ) from exc
        if key not in api:
            raise AssertionError(f"wrote None under {key!r}; key in mapping is then False")
        got = api[key]
        if got is not None:
            raise AssertionError(f"wrote None under {key!r}, read back {short_repr(got)}")
        got = bound_method(api, "get")(key, DEFAULT)
        if got is not None:
            raise AssertionError(
                f"get({key!r}, default) returned {short_repr(got)}; the stored value is None"
            )
        iterated = list(api)
        if iterated != [key]:
            raise AssertionError(
                f"wrote None under {key!r} only; iteration gave {short_repr(iterated)}"
            )


@suite.case("clear_empties")
def _clear_empties(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        keys = [samples.key(n) for n in range(3)]
        for key in keys:
            put_value(api, key, samples.value(0))
        bound_method(api, "clear")()
        left = list(api)
        if size_of(api) != 0 or left or keys[0] in api:
            raise AssertionError(
                f"after clear(), expected an empty mapping; got len() {size_of(api)} and the keys "
                f"{short_repr(left)}"
            )
        # What a missing key reads as is missing_key_raises_key_error's: here, only that
        # the key no longer holds what it held.
        try:
            got = api[keys[0]]
        except Exception:  # KeyError, or what missing_key_raises_key_error judges
            got = DEFAULT
        if got is not DEFAULT and got == samples.value(0):
            raise AssertionError(
                f"after clear(), {keys[0]!r} still reads back {short_repr(got)}, the value it held"
            )
        key, value = samples.key(3), samples.value(1)
        put_value(api, key, value, after="clear()")
        got = get_value(api, key, "after clear() and a write")
        if got != value or size_of(api) != 1:
            raise AssertionError(
                f"after clear() and one write of {short_repr(value)} under {key!r}, expected "
                f"it to read back and len() 1; read {short_repr(got)}, len() {size_of(api)}"
            )


class _UnloadableError(Exception):
    """A value that pickles, but whose pickle cannot be loaded: ``__init__`` wants two arguments."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)  # pickled as (cls, (message,)): loading calls cls(message)
        self.code = code


def _awkward_keys() -> list[tuple[str, object]]:
    return [
        ("an unhashable key", ["a", "list"]),
        ("a key of a class without value equality", object()),
        ("a NaN key", math.nan),
    ]


def _awkward_values() -> list[tuple[str, object]]:
    falsy: tuple[object, ...] = (0, 0.0, "", [], {}, False)  # None: none_value_round_trips
    return [
        ("a value that cannot be pickled (a lock)", threading.Lock()),
        ("a value that pickles but cannot be unpickled", _UnloadableError(1, "x")),
        *((f"the falsy value {value!r}", value) for value in falsy),
    ]


def _comparable(value: object) -> bool:
    """Whether a value read back can be compared with the one written: locks and errors cannot."""
    return not isinstance(value, type(threading.Lock()) | BaseException)


def _absent(api: MappingAPI, key: object, value: object, *, refused_key: bool) -> str | None:
    """
    Say how a key is present after a write of ``value`` under it raised, or ``None`` if
    ``in``, ``get`` and ``[]`` all find it absent. A key the store refused may also be
    refused by the lookups, with any error, as the write refused it, and a lookup may
    give it a meaning of its own (a list of keys read at once): only the value written
    is a trace of it. A sample key may not.
    """
    refusals: tuple[type[Exception], ...] = (Exception,) if refused_key else ()
    get = optional_method(api, "get")  # outside the try: a lookup that raises blocks the case

    def kept(got: object) -> bool:
        return not refused_key or _is_same(got, value)

    try:
        if key in api:
            return "key in mapping is True"
    except refusals:
        pass
    except Exception as exc:
        return f"key in mapping raises {error_line(exc)}"
    try:
        got = DEFAULT if get is None else get(key, DEFAULT)
    except refusals:
        got = DEFAULT
    except Exception as exc:
        return f"get() raises {error_line(exc)}"
    if got is not DEFAULT and kept(got):
        return f"get() returns {short_repr(got)}"
    try:
        got = api[key]
    except KeyError:
        return None
    except refusals:
        return None
    except Exception as exc:
        return f"mapping[key] raises {error_line(exc)}, not KeyError"
    return f"mapping[key] returns {short_repr(got)}" if kept(got) else None


def _is_same(got: object, value: object) -> bool:
    """Whether ``got`` is ``value`` read back: equal and of the same type, if it can say."""
    try:
        return got is value or strictly_equal(value, got)
    except Exception:  # a comparison that raises says it is not the value
        return False


def _keys_shown(api: MappingAPI) -> list[str]:
    """The keys iteration gives, as sorted reprs: comparable whatever the keys are."""
    return sorted(map(repr, api))


def _written_back(api: MappingAPI, key: object, value: object, doing: str) -> None:
    """After a write that succeeded, the value must read back: the store could hold it."""
    try:
        got = api[key]
    except Exception as exc:
        raise AssertionError(
            f"{doing} succeeded, but reading it back raised {error_line(exc)}: a store that "
            f"cannot hold it must raise at the write"
        ) from exc
    same = strictly_equal(value, got) if _comparable(value) else type(got) is type(value)
    if not same:
        raise AssertionError(
            f"{doing} succeeded, but it reads back as {short_repr(got)}: a store that cannot "
            f"hold it must raise at the write"
        )


def _lost(api: MappingAPI, key: object, value: object) -> str | None:
    """Say how ``key`` no longer holds ``value``, or ``None`` if it does."""
    if key not in api:
        return f"{short_repr(key)} is no longer in the mapping"
    try:
        got = api[key]
    except Exception as exc:
        return f"reading {short_repr(key)} raises {error_line(exc)}"
    if not _comparable(got) or got != value:
        return f"{short_repr(key)} now holds {short_repr(got)}"
    return None


@suite.case("errors_surface_at_the_failing_call")
def _errors_surface_at_the_failing_call(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        kept_key, kept = samples.key(0), samples.value(0)
        put_value(api, kept_key, kept)
        fresh = iter(range(10, 10**6))
        for what, key in _awkward_keys():
            before = _keys_shown(api)
            try:
                api[key] = samples.value(1)
            except Exception:
                trace = _absent(api, key, samples.value(1), refused_key=True)
                after = _keys_shown(api)
                if trace is not None or after != before:
                    change = trace or (
                        f"the keys went from {', '.join(before)} to {', '.join(after)}"
                    )
                    raise AssertionError(
                        f"writing under {what} raised, as it may, but left a trace: {change}; "
                        f"a write that raises must leave the mapping as it was"
                    ) from None
                continue
            doing = f"writing {short_repr(samples.value(1))} under {what} ({short_repr(key)})"
            _written_back(api, key, samples.value(1), doing)
        for what, value in _awkward_values():
            key = samples.key(next(fresh))
            try:
                api[key] = value
            except Exception:
                trace = _absent(api, key, value, refused_key=False)
                if trace is not None:
                    raise AssertionError(
                        f"writing {what} under {short_repr(key)} raised, as it may, but left a "
                        f"trace: {trace}; a write that raises must leave the mapping as it was"
                    ) from None
            else:
                _written_back(api, key, value, f"writing {what} under {short_repr(key)}")
            try:
                api[kept_key] = value
            except Exception:
                lost = _lost(api, kept_key, kept)
                if lost is not None:
                    raise AssertionError(
                        f"overwriting {short_repr(kept_key)}, which held {short_repr(kept)}, with "
                        f"{what} raised, as it may, but {lost}: a refused overwrite keeps the "
                        f"old value"
                    ) from None
            else:
                doing = f"writing {what} over {short_repr(kept)} under {short_repr(kept_key)}"
                _written_back(api, kept_key, value, doing)
                put_value(api, kept_key, kept, after=f"writing {what} over it")
        later_key, later = samples.key(next(fresh)), samples.value(2)
        later_calls: list[tuple[str, Callable[[], object]]] = [
            ("len(mapping)", lambda: size_of(api)),  # is_mutable_mapping owns a missing __len__
            ("list(mapping)", lambda: list(api)),
            ("copying it, {key: mapping[key] for key in mapping},", lambda: _copied(api)),
            (
                f"writing {short_repr(later)} under {short_repr(later_key)}",
                lambda: _set(api, later_key, later),
            ),
            (f"reading {short_repr(later_key)}", lambda: api[later_key]),
        ]
        for call, function in later_calls:
            try:
                function()
            except Exception as exc:
                raise AssertionError(
                    f"{call} raised {error_line(exc)} after the awkward writes: an error must "
                    f"surface at the write that caused it, not at a later, unrelated call"
                ) from exc
        got = api[later_key]
        if got != later:
            raise AssertionError(
                f"after the awkward writes, wrote {short_repr(later)} under "
                f"{short_repr(later_key)}, read back {short_repr(got)}"
            )


def _set(api: MappingAPI, key: object, value: object) -> None:
    api[key] = value


def _copied(api: MappingAPI) -> dict[Any, Any]:
    return {key: api[key] for key in list(api)}


def _held(api: MappingAPI, key: object) -> object:
    """What ``api[key]`` gives, or ``None`` if it raises KeyError."""
    try:
        return api[key]
    except KeyError:
        return None


# Four threads of 500 writes and reads each, then 2,000 reads in the case itself:
# a second on a local file store when idle, several on a loaded machine.
@suite.case("shared_handle_is_thread_safe", timeout=30.0)
async def _shared_handle_is_thread_safe(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        probe = samples.key(0)
        put_value(api, probe, samples.value(0))
        baseline = size_of(api)  # the probe, kept: a delete here would make this case its judge

        def number(thread: int, index: int) -> int:
            return 1000 + thread * _KEYS_PER_THREAD + index

        def write_and_read(thread: int) -> list[object]:
            for index in range(_KEYS_PER_THREAD):
                n = number(thread, index)
                api[samples.key(n)] = samples.value(n)
            return [
                samples.key(number(thread, index))
                for index in range(_KEYS_PER_THREAD)
                if api[samples.key(number(thread, index))] != samples.value(number(thread, index))
            ]

        outcomes = await race_in_threads(_THREADS, write_and_read, timeout=30.0)
        broken = [key for keys in outcomes.all_succeed() for key in keys]
        if broken:
            raise AssertionError(
                f"{_THREADS} threads each wrote {_KEYS_PER_THREAD} distinct keys through one "
                f"shared mapping; {len(broken)} values did not read back intact in their "
                f"thread, such as {short_repr(broken[:3])}"
            )
        numbers = [
            number(thread, index) for thread in range(_THREADS) for index in range(_KEYS_PER_THREAD)
        ]
        held = {n: _held(api, samples.key(n)) for n in numbers}
        wrong = [(samples.key(n), held[n]) for n in numbers if held[n] != samples.value(n)]
        total = len(numbers)
        length = size_of(api) - baseline
        if wrong or length != total:
            raise AssertionError(
                f"{_THREADS} threads each wrote {_KEYS_PER_THREAD} distinct keys through one "
                f"shared mapping; afterwards len() is {length} (expected {total}) and "
                f"{len(wrong)} values are not intact, such as {short_repr(wrong[:2])}"
            )
