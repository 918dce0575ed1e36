"""The mapping profile's cases: their names, the feature, the suite and the cases."""

from __future__ import annotations

import inspect
import math
import threading
from collections import Counter
from collections.abc import Callable, Hashable, MutableMapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, final, get_args

from ..._explain import error_line
from ..._feature import Feature
from ..._suite import ContractSuite
from ..._util import short_repr
from ...laws import race_in_threads, strictly_equal
from .._support import PointAt
from ._api import RICH_VALUES, SAMPLES_ATTRIBUTE, MappingAPI, MappingSamples, samples_of

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

if TYPE_CHECKING:
    _Created: TypeAlias = MappingAPI
else:

    @final
    class _Created:
        """
        What the runner checks create()'s object against: a plain class, so that None is
        refused and no member is required. The object's shape is the case
        is_mutable_mapping's to judge, and a case that needs a method the object lacks is
        blocked, naming it; required at create, one missing method would fail every case.
        """


feature = Feature[_Created, MappingCase](
    "conformkit.profiles.mapping",
    cases=get_args(MappingCase),
    description=(
        "A collections.abc.MutableMapping that behaves like a dict over the keys and values "
        "it declares it holds (str keys and values of many types unless it declares "
        "conformkit_samples): KeyError for missing keys, insertion order, Python's key "
        "equality, copies of the values it holds, errors at the failing call, and one handle "
        "shared safely between threads."
    ),
    does_not_establish=(
        "Durability across close and reopen (see conformkit.profiles.durable_mapping), "
        "behaviour across processes, atomicity of compound operations (pop, setdefault, "
        "update) under concurrent writers, crash safety, speed, Python's equality for key "
        "types the cases do not use (Decimal, complex, datetime, custom classes), or, for a "
        "mapping that declares a narrower sample domain, any key or value outside it."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

_THREADS: Final = 4
_KEYS_PER_THREAD: Final = 500
_SEE: Final = PointAt("docs/profile-mapping.md#failure-modes")
_DEFAULT: Final = object()  # a default no store could hold: get() and pop() must return it


# What every case but is_mutable_mapping needs of the mapping's class; a case that
# deletes also needs __delitem__ (_require).
_ESSENTIAL: Final = ("__getitem__", "__setitem__", "__iter__")
# What a MutableMapping has, abstract and mixin, as is_mutable_mapping lists what is missing.
_MUTABLE_MAPPING_METHODS: Final = (
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__iter__",
    "__len__",
    "__contains__",
    "clear",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
)


def _lacks(api: object, names: tuple[str, ...]) -> list[str]:
    """The methods of ``names`` that the object's class does not define, looked up statically."""
    return [
        name
        for name in names
        if inspect.getattr_static(type(api), name, None) is None  # __hash__ = None, say
    ]


def _lacking(api: object, name: str) -> AssertionError:
    return AssertionError(
        f"blocked: the mapping, a {type(api).__qualname__}, has no {name}() method; "
        f"is_mutable_mapping owns the methods a MutableMapping has"
    )


def _require(api: MappingAPI, *names: str) -> None:
    """Block the case if the mapping's class lacks one of the special methods ``names``."""
    missing = _lacks(api, names)
    if missing:
        raise _lacking(api, missing[0])


def _samples(api: MappingAPI) -> MappingSamples:
    """The mapping's samples; a case that cannot read, write and iterate is blocked."""
    _require(api, *_ESSENTIAL)
    try:
        return samples_of(api)
    except TypeError as exc:
        raise AssertionError(f"blocked: {exc}") from exc


def _length(api: MappingAPI) -> int:
    """``len(api)``; a mapping without ``__len__`` blocks the case."""
    _require(api, "__len__")
    return len(api)


def _size(api: MappingAPI) -> int:
    """
    ``len(api)``, for a case that counts keys by the way: a mapping without ``__len__``
    (is_mutable_mapping owns that) is counted by iterating it instead.
    """
    return len(list(api)) if _lacks(api, ("__len__",)) else len(api)


def _put(api: MappingAPI, key: object, value: object, *, after: str = "", owner: str = "") -> None:
    """
    Write a sample and read it back, equal: a store that refuses it, or gives back something
    else, blocks the case, and read_your_writes owns that.

    :param after: the operation that came before, when the write checks that the mapping
        still takes writes after it: then a write that fails is ``owner``'s (the case
        that owns the operation, which blocks this one), or, without ``owner``, this
        case's own failure. read_your_writes owns neither.
    """
    written = f"the sample value {short_repr(value)} under {short_repr(key)}"
    try:
        api[key] = value
    except Exception as exc:
        if after:
            raise _after(after, owner, f"writing {written} raised {error_line(exc)}") from exc
        raise AssertionError(
            f"blocked: writing {written} raised {error_line(exc)}; read_your_writes owns "
            f"whether the mapping holds its samples (a mapping of bytes, say, declares them "
            f"as {SAMPLES_ATTRIBUTE})"
        ) from exc
    try:
        got = api[key]
    except Exception as exc:
        if after:
            what = f"wrote {written}; reading it raised {error_line(exc)}"
            raise _after(after, owner, what) from exc
        raise AssertionError(
            f"blocked: reading {short_repr(key)} right after writing it raised "
            f"{error_line(exc)}; read_your_writes owns whether a sample written reads back"
        ) from exc
    if got != value:
        if after:
            raise _after(after, owner, f"wrote {written}, read back {short_repr(got)}")
        raise AssertionError(
            f"blocked: wrote {written}, read back {short_repr(got)}; read_your_writes owns "
            f"whether a sample reads back as written"
        )


def _after(after: str, owner: str, what: str) -> AssertionError:
    """The failure of a write after ``after``: ``owner``'s, blocking the case, or the case's."""
    if owner:
        return AssertionError(
            f"blocked: after {after}, {what}; {owner} owns whether the mapping still takes "
            f"writes after {after}"
        )
    return AssertionError(f"after {after}, {what}: the mapping must still take writes")


def _refused(api: MappingAPI, samples: MappingSamples, message: str) -> AssertionError:
    """
    The failure of a write that a type case is about, once a write of the samples is seen to
    work: if the store refuses its samples too, the case is blocked instead.
    """
    probe = samples.key(99)
    _put(api, probe, samples.value(0))
    return AssertionError(message)


def _get(api: MappingAPI, key: object, when: str) -> object:
    """Read a sample written before; a read that raises blocks the case."""
    try:
        return api[key]
    except Exception as exc:
        raise AssertionError(
            f"blocked: reading {short_repr(key)} {when} raised {error_line(exc)}; "
            f"read_your_writes owns whether a sample written reads back"
        ) from exc


def _method(api: MappingAPI, name: str) -> Callable[..., Any]:
    """A mixin method of the mapping; one missing, or whose lookup raises, blocks the case."""
    method = _optional_method(api, name)
    if method is None:
        raise _lacking(api, name)
    return method


def _optional_method(api: MappingAPI, name: str) -> Callable[..., Any] | None:
    """A mixin method of the mapping, or ``None``; a lookup that raises blocks the case."""
    try:
        method: Callable[..., Any] = getattr(api, name)
    except AttributeError:
        return None
    except Exception as exc:
        raise AssertionError(
            f"blocked: looking up {name} on the mapping, a {type(api).__qualname__}, raised "
            f"{error_line(exc)}; is_mutable_mapping owns the methods a MutableMapping has"
        ) from exc
    return method


def _expect_key_error(call: Callable[[], object], doing: str) -> None:
    """Call, and fail unless it raises KeyError."""
    try:
        got = call()
    except KeyError:
        return
    except Exception as exc:
        raise AssertionError(f"expected KeyError {doing}, it raised {error_line(exc)}") from exc
    raise AssertionError(f"expected KeyError {doing}, it returned {short_repr(got)}")


def _iterated(
    api: MappingAPI,
    written: list[object],
    when: str,
    owner: str = "read_your_writes owns which keys iteration gives",
) -> list[object]:
    """The keys iteration gives, which must be the keys written, once each, in some order."""
    got = list(api)
    if Counter(got) != Counter(written):
        raise AssertionError(
            f"blocked: {when}, iteration gave {short_repr(got)}, not the keys written "
            f"{short_repr(written)} in some order; {owner}"
        )
    return got


@suite.case("read_your_writes")
def _read_your_writes(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        written = [(samples.key(n), samples.value(n)) for n in range(len(RICH_VALUES))]
        written.append((samples.key(len(written)), samples.large_value))
        for key, value in written:
            try:
                api[key] = value
            except Exception as exc:
                raise AssertionError(
                    f"writing the sample value {short_repr(value)} under {short_repr(key)} "
                    f"raised {error_line(exc)}; a mapping holds every value of its sample "
                    f"domain, and one that holds only some types (bytes, say) declares the "
                    f"keys and values it holds as {SAMPLES_ATTRIBUTE}"
                ) from exc
        for key, value in written:
            try:
                got = api[key]
            except Exception as exc:
                raise AssertionError(
                    f"wrote {short_repr(value)} under {short_repr(key)}; reading it back "
                    f"raised {error_line(exc)}"
                ) from exc
            if not strictly_equal(value, got):
                raise AssertionError(
                    f"wrote {short_repr(value)} under {short_repr(key)}, read back "
                    f"{short_repr(got)} (expected an equal value of the same type, "
                    f"{type(value).__qualname__})"
                )
            if key not in api:
                raise AssertionError(f"wrote {short_repr(key)}, but key in mapping is False")
        keys = [key for key, _ in written]
        got_keys = list(api)
        if Counter(got_keys) != Counter(keys):
            raise AssertionError(
                f"wrote the keys {short_repr(keys)}; iteration gave {short_repr(got_keys)} "
                f"(expected each key once, in any order)"
            )


@suite.case("missing_key_raises_key_error")
def _missing_key_raises_key_error(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        _require(api, "__delitem__")
        absent, present = samples.key(0), samples.key(1)
        _expect_key_error(lambda: api[absent], f"reading {absent!r}, a key never written")
        _put(api, present, samples.value(0))
        try:
            del api[present]
        except Exception as exc:
            raise AssertionError(
                f"blocked: deleting {present!r}, just written, raised {error_line(exc)}; "
                f"delete_missing_raises_key_error owns deleting a key"
            ) from exc
        _expect_key_error(lambda: api[present], f"reading {present!r}, a key deleted")
        get = _method(api, "get")
        for key, what in ((absent, "a key never written"), (present, "a key deleted")):
            if key in api:
                raise AssertionError(f"{key!r} in mapping is True for {what}")
            got = get(key, _DEFAULT)
            if got is not _DEFAULT:
                raise AssertionError(
                    f"get({key!r}, default) of {what} returned {short_repr(got)}, not the default"
                )


@suite.case("delete_missing_raises_key_error")
def _delete_missing_raises_key_error(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        _require(api, "__delitem__")
        present, absent, value = samples.key(0), samples.key(1), samples.value(0)
        _put(api, present, value)
        try:
            del api[absent]
        except KeyError:
            pass
        except Exception as exc:
            raise AssertionError(
                f"expected KeyError deleting {absent!r}, a key never written; it raised "
                f"{error_line(exc)}"
            ) from exc
        else:
            raise AssertionError(
                f"expected KeyError deleting {absent!r}, a key never written; nothing was raised"
            )
        if present not in api:
            raise AssertionError(
                f"after a failed delete of {absent!r}, {present!r}, written before it, is no "
                f"longer in the mapping: a failed delete must change nothing"
            )
        got = _get(api, present, "after the failed delete")
        if got != value:
            raise AssertionError(
                f"after a failed delete of {absent!r}, {present!r} reads back {short_repr(got)}, "
                f"not the {short_repr(value)} written: a failed delete must change nothing"
            )
        other = samples.key(2)
        api[other] = value  # the same value: a delete removes a key, not a value
        got = _get(api, other, "right after writing it")
        if got != value:
            raise AssertionError(
                f"after a failed delete of {absent!r}, wrote {short_repr(value)} under "
                f"{other!r} and read back {short_repr(got)}: a failed delete must change nothing"
            )
        length = None if _lacks(api, ("__len__",)) else len(api)
        del api[present]
        if other not in api or (length is not None and len(api) != length - 1):
            raise AssertionError(
                f"wrote {present!r} and {other!r}, both holding {short_repr(value)}, and deleted "
                f"{present!r}: {other!r} in mapping is {other in api}, len() went from "
                f"{length} to {_size(api)}; a delete removes that key alone"
            )
        _expect_key_error(lambda: api.__delitem__(present), f"deleting {present!r} a second time")
        _put(api, present, value, after=f"deleting {present!r}")


@suite.case("pop_missing_raises_key_error")
def _pop_missing_raises_key_error(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        present, absent, value = samples.key(0), samples.key(1), samples.value(0)
        _put(api, present, value)
        pop = _method(api, "pop")
        _expect_key_error(lambda: pop(absent), f"from pop({absent!r}) of a key never written")
        got = pop(absent, _DEFAULT)
        if got is not _DEFAULT:
            raise AssertionError(
                f"pop({absent!r}, default) of a key never written returned {short_repr(got)}, "
                f"not the default"
            )
        got = pop(present)
        if got != value:
            raise AssertionError(
                f"pop({present!r}) returned {short_repr(got)}, expected the value written, "
                f"{short_repr(value)}"
            )
        if present in api:
            raise AssertionError(
                f"pop({present!r}) returned the value but left the key in the mapping"
            )
        got = pop(present, _DEFAULT)
        if got is not _DEFAULT:
            raise AssertionError(
                f"pop({present!r}, default) after popping it returned {short_repr(got)}, "
                f"not the default"
            )
        other, other_value = samples.key(2), samples.value(1)
        _put(api, other, other_value, after="pop()")
        got = pop(other, _DEFAULT)
        if got != other_value or other in api:
            raise AssertionError(
                f"pop({other!r}, default) of a key holding {short_repr(other_value)} returned "
                f"{short_repr(got)}, and the key is {'still' if other in api else 'no longer'} "
                f"in the mapping: expected the value, and the key removed"
            )


@suite.case("is_mutable_mapping")
def _is_mutable_mapping(api: MappingAPI) -> None:
    with _SEE:
        lacks = _lacks(api, _MUTABLE_MAPPING_METHODS)
        listed = ", ".join(f"{name}()" for name in lacks[:-1])
        listed = f"{listed} and {lacks[-1]}()" if listed else f"{lacks[-1]}()" if lacks else ""
        name = type(api).__qualname__
        if not isinstance(api, MutableMapping):
            raise AssertionError(
                f"expected an instance of collections.abc.MutableMapping, got a {name}"
                + (f", whose class does not define {listed}" if lacks else "")
            )
        if lacks:
            raise AssertionError(
                f"{name} is registered as a collections.abc.MutableMapping, but its class does "
                f"not define {listed}"
            )
        samples = _samples(api)
        (a, b, c), (one, two, three) = (
            [samples.key(n) for n in range(3)],
            [samples.value(n) for n in range(3)],
        )
        try:
            api.update({a: one})
            api.update([(b, two)])
            made, kept = api.setdefault(c, three), api.setdefault(a, two)
        except Exception as exc:
            raise _refused(
                api,
                samples,
                f"update() or setdefault() with the samples {short_repr([one, two, three])} "
                f"raised {error_line(exc)}",
            ) from exc
        if made != three or kept != one:
            raise AssertionError(
                f"setdefault() must return the stored value, or store the default and return "
                f"it; the mapping holds {short_repr(dict(api.items()))}"
            )
        expected = {a: one, b: two, c: three}
        if api != expected or dict(api.items()) != expected:
            raise AssertionError(
                f"after update() and setdefault(), expected {short_repr(expected)}, got "
                f"{short_repr(dict(api.items()))}"
            )
        order = list(api)
        views = {
            "keys()": list(api.keys()),
            "the keys of items()": [key for key, _ in api.items()],
        }
        for view, got in views.items():
            if got != order:
                raise AssertionError(
                    f"{view} gave {short_repr(got)}, iteration {short_repr(order)}: the views "
                    f"must follow iteration"
                )
        values = list(api.values())
        by_key = [api[key] for key in order]
        if values != by_key:
            raise AssertionError(
                f"values() gave {short_repr(values)}; reading the keys in iteration order gave "
                f"{short_repr(by_key)}"
            )
        key, value = api.popitem()
        if key not in expected or expected[key] != value or key in api or len(api) != 2:
            raise AssertionError(
                f"popitem() returned {short_repr((key, value))} and left "
                f"{short_repr(dict(api.items()))}; expected one of the items "
                f"{short_repr(expected)}, removed"
            )
        values, by_key = list(api.values()), [api[key] for key in api]
        if values != by_key:
            raise AssertionError(
                f"after popitem(), values() gave {short_repr(values)}; reading the keys in "
                f"iteration order gave {short_repr(by_key)}: the views must follow the mapping"
            )


@suite.case("overwrite_keeps_length")
def _overwrite_keeps_length(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        key, first, second = samples.key(0), samples.value(0), samples.value(1)
        _put(api, key, first)
        api[key] = second
        length = _length(api)
        if length != 1:
            raise AssertionError(f"wrote one key, {key!r}, twice; expected len() 1, got {length}")
        got = _get(api, key, "after overwriting it")
        if got != second:
            raise AssertionError(
                f"overwrote {short_repr(first)} with {short_repr(second)} under {key!r}, read "
                f"back {short_repr(got)}"
            )


def _unsorted(keys: list[Hashable]) -> list[Hashable]:
    """The keys in an order that is neither their sorted order nor its reverse."""
    try:
        ranked = sorted(keys)  # type: ignore[type-var]  # any keys that sort
    except TypeError:
        ranked = sorted(keys, key=repr)
    return [ranked[index] for index in (3, 0, 4, 1, 2)]


@suite.case("iteration_follows_insertion_order")
def _iteration_follows_insertion_order(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        _require(api, "__delitem__")
        order = _unsorted([samples.key(n) for n in range(5)])
        for key in order:
            _put(api, key, samples.value(0))
        got = _iterated(api, order, f"after writing {short_repr(order)}")
        if got != order:
            raise AssertionError(
                f"inserted the keys in the order {short_repr(order)}, iteration gave "
                f"{short_repr(got)}"
            )
        again = order[1]
        del api[again]
        _put(
            api, again, samples.value(1), after="a delete", owner="delete_missing_raises_key_error"
        )
        expected = [key for key in order if key != again] + [again]
        got = _iterated(
            api,
            expected,
            f"after deleting and writing {again!r} again",
            "delete_missing_raises_key_error owns what a delete removes",
        )
        if got != expected:
            raise AssertionError(
                f"a key deleted and written again goes last, as in a dict: expected "
                f"{short_repr(expected)}, got {short_repr(got)}"
            )


@suite.case("overwrite_keeps_position")
def _overwrite_keeps_position(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        keys = [samples.key(n) for n in range(3)]
        for key in keys:
            _put(api, key, samples.value(0))
        before = _iterated(api, keys, f"after writing {short_repr(keys)}")
        api[keys[0]] = samples.value(1)
        api[keys[1]] = samples.large_value  # one that no longer fits where the first one was
        after = _iterated(api, keys, "after the overwrites")
        if after != before:
            raise AssertionError(
                f"overwrote {keys[0]!r} and {keys[1]!r} (the second with a much larger value); "
                f"expected the keys to keep their places, {short_repr(before)}, got "
                f"{short_repr(after)}"
            )


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
        raise _refused(
            api,
            _samples(api),
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
    with _SEE:
        key = _samples(api).key(0)
        original = _copyable()
        _write_mutable(api, key, original)
        _change(original)
        _expect_unchanged(api, key, "mutating the object after storing it changed what is read")


@suite.case("returned_value_is_a_copy")
def _returned_value_is_a_copy(api: MappingAPI) -> None:
    with _SEE:
        key = _samples(api).key(0)
        _write_mutable(api, key, _copyable())
        _change(api[key])
        _expect_unchanged(api, key, "mutating a value read back changed the stored one")


@suite.case("non_str_keys_round_trip")
def _non_str_keys_round_trip(api: MappingAPI) -> None:
    with _SEE:
        samples = _samples(api)
        keys: list[object] = [7, b"\x00bytes", ("tuple", 1, (2.5, b"nested"))]
        for index, key in enumerate(keys):
            try:
                api[key] = samples.value(index)
            except Exception as exc:
                raise _refused(
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
    with _SEE:
        samples = _samples(api)
        first, second, third = (samples.value(n) for n in range(3))
        for key, value in ((1, first), (True, second)):
            try:
                api[key] = value
            except Exception as exc:
                raise _refused(
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
    with _SEE:
        samples = _samples(api)
        key = samples.key(0)
        try:
            api[key] = None
        except Exception as exc:
            raise _refused(
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
        got = _method(api, "get")(key, _DEFAULT)
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
    with _SEE:
        samples = _samples(api)
        keys = [samples.key(n) for n in range(3)]
        for key in keys:
            _put(api, key, samples.value(0))
        _method(api, "clear")()
        left = list(api)
        if _size(api) != 0 or left or keys[0] in api:
            raise AssertionError(
                f"after clear(), expected an empty mapping; got len() {_size(api)} and the keys "
                f"{short_repr(left)}"
            )
        # What a missing key reads as is missing_key_raises_key_error's: here, only that
        # the key no longer holds what it held.
        try:
            got = api[keys[0]]
        except Exception:  # KeyError, or what missing_key_raises_key_error judges
            got = _DEFAULT
        if got is not _DEFAULT and got == samples.value(0):
            raise AssertionError(
                f"after clear(), {keys[0]!r} still reads back {short_repr(got)}, the value it held"
            )
        key, value = samples.key(3), samples.value(1)
        _put(api, key, value, after="clear()")
        got = _get(api, key, "after clear() and a write")
        if got != value or _size(api) != 1:
            raise AssertionError(
                f"after clear() and one write of {short_repr(value)} under {key!r}, expected "
                f"it to read back and len() 1; read {short_repr(got)}, len() {_size(api)}"
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
    get = _optional_method(api, "get")  # outside the try: a lookup that raises blocks the case

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
        got = _DEFAULT if get is None else get(key, _DEFAULT)
    except refusals:
        got = _DEFAULT
    except Exception as exc:
        return f"get() raises {error_line(exc)}"
    if got is not _DEFAULT and kept(got):
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
    with _SEE:
        samples = _samples(api)
        kept_key, kept = samples.key(0), samples.value(0)
        _put(api, kept_key, kept)
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
                _put(api, kept_key, kept, after=f"writing {what} over it")
        later_key, later = samples.key(next(fresh)), samples.value(2)
        later_calls: list[tuple[str, Callable[[], object]]] = [
            ("len(mapping)", lambda: _size(api)),  # is_mutable_mapping owns a missing __len__
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
    with _SEE:
        samples = _samples(api)
        probe = samples.key(0)
        _put(api, probe, samples.value(0))
        baseline = _size(api)  # the probe, kept: a delete here would make this case its judge

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
        length = _size(api) - baseline
        if wrong or length != total:
            raise AssertionError(
                f"{_THREADS} threads each wrote {_KEYS_PER_THREAD} distinct keys through one "
                f"shared mapping; afterwards len() is {length} (expected {total}) and "
                f"{len(wrong)} values are not intact, such as {short_repr(wrong[:2])}"
            )
