"""
The mapping profile's case names, feature and suite, the helpers its cases share, and
the cases about a mapping's keys: reads, misses, deletes, length and order.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Hashable, MutableMapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, final, get_args

from ..._explain import error_line
from ..._feature import Feature
from ..._suite import ContractSuite
from ..._util import short_repr
from ...laws import strictly_equal
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

SEE: Final = PointAt("docs/profile-mapping.md#failure-modes")
DEFAULT: Final = object()  # a default no store could hold: get() and pop() must return it


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


def sample_domain(api: MappingAPI) -> MappingSamples:
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


def size_of(api: MappingAPI) -> int:
    """
    ``len(api)``, for a case that counts keys by the way: a mapping without ``__len__``
    (is_mutable_mapping owns that) is counted by iterating it instead.
    """
    return len(list(api)) if _lacks(api, ("__len__",)) else len(api)


def put_value(
    api: MappingAPI, key: object, value: object, *, after: str = "", owner: str = ""
) -> None:
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


def refusal(api: MappingAPI, samples: MappingSamples, message: str) -> AssertionError:
    """
    The failure of a write that a type case is about, once a write of the samples is seen to
    work: if the store refuses its samples too, the case is blocked instead.
    """
    probe = samples.key(99)
    put_value(api, probe, samples.value(0))
    return AssertionError(message)


def get_value(api: MappingAPI, key: object, when: str) -> object:
    """Read a sample written before; a read that raises blocks the case."""
    try:
        return api[key]
    except Exception as exc:
        raise AssertionError(
            f"blocked: reading {short_repr(key)} {when} raised {error_line(exc)}; "
            f"read_your_writes owns whether a sample written reads back"
        ) from exc


def bound_method(api: MappingAPI, name: str) -> Callable[..., Any]:
    """A mixin method of the mapping; one missing, or whose lookup raises, blocks the case."""
    method = optional_method(api, name)
    if method is None:
        raise _lacking(api, name)
    return method


def optional_method(api: MappingAPI, name: str) -> Callable[..., Any] | None:
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
    with SEE:
        samples = sample_domain(api)
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
    with SEE:
        samples = sample_domain(api)
        _require(api, "__delitem__")
        absent, present = samples.key(0), samples.key(1)
        _expect_key_error(lambda: api[absent], f"reading {absent!r}, a key never written")
        put_value(api, present, samples.value(0))
        try:
            del api[present]
        except Exception as exc:
            raise AssertionError(
                f"blocked: deleting {present!r}, just written, raised {error_line(exc)}; "
                f"delete_missing_raises_key_error owns deleting a key"
            ) from exc
        _expect_key_error(lambda: api[present], f"reading {present!r}, a key deleted")
        get = bound_method(api, "get")
        for key, what in ((absent, "a key never written"), (present, "a key deleted")):
            if key in api:
                raise AssertionError(f"{key!r} in mapping is True for {what}")
            got = get(key, DEFAULT)
            if got is not DEFAULT:
                raise AssertionError(
                    f"get({key!r}, default) of {what} returned {short_repr(got)}, not the default"
                )


@suite.case("delete_missing_raises_key_error")
def _delete_missing_raises_key_error(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        _require(api, "__delitem__")
        present, absent, value = samples.key(0), samples.key(1), samples.value(0)
        put_value(api, present, value)
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
        got = get_value(api, present, "after the failed delete")
        if got != value:
            raise AssertionError(
                f"after a failed delete of {absent!r}, {present!r} reads back {short_repr(got)}, "
                f"not the {short_repr(value)} written: a failed delete must change nothing"
            )
        other = samples.key(2)
        api[other] = value  # the same value: a delete removes a key, not a value
        got = get_value(api, other, "right after writing it")
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
                f"{length} to {size_of(api)}; a delete removes that key alone"
            )
        _expect_key_error(lambda: api.__delitem__(present), f"deleting {present!r} a second time")
        put_value(api, present, value, after=f"deleting {present!r}")


@suite.case("pop_missing_raises_key_error")
def _pop_missing_raises_key_error(api: MappingAPI) -> None:
    with SEE:
        samples = sample_domain(api)
        present, absent, value = samples.key(0), samples.key(1), samples.value(0)
        put_value(api, present, value)
        pop = bound_method(api, "pop")
        _expect_key_error(lambda: pop(absent), f"from pop({absent!r}) of a key never written")
        got = pop(absent, DEFAULT)
        if got is not DEFAULT:
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
        got = pop(present, DEFAULT)
        if got is not DEFAULT:
            raise AssertionError(
                f"pop({present!r}, default) after popping it returned {short_repr(got)}, "
                f"not the default"
            )
        other, other_value = samples.key(2), samples.value(1)
        put_value(api, other, other_value, after="pop()")
        got = pop(other, DEFAULT)
        if got != other_value or other in api:
            raise AssertionError(
                f"pop({other!r}, default) of a key holding {short_repr(other_value)} returned "
                f"{short_repr(got)}, and the key is {'still' if other in api else 'no longer'} "
                f"in the mapping: expected the value, and the key removed"
            )


@suite.case("is_mutable_mapping")
def _is_mutable_mapping(api: MappingAPI) -> None:
    with SEE:
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
        samples = sample_domain(api)
        (a, b, c), (one, two, three) = (
            [samples.key(n) for n in range(3)],
            [samples.value(n) for n in range(3)],
        )
        try:
            api.update({a: one})
            api.update([(b, two)])
            made, kept = api.setdefault(c, three), api.setdefault(a, two)
        except Exception as exc:
            raise refusal(
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
    with SEE:
        samples = sample_domain(api)
        key, first, second = samples.key(0), samples.value(0), samples.value(1)
        put_value(api, key, first)
        api[key] = second
        length = _length(api)
        if length != 1:
            raise AssertionError(f"wrote one key, {key!r}, twice; expected len() 1, got {length}")
        got = get_value(api, key, "after overwriting it")
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
    with SEE:
        samples = sample_domain(api)
        _require(api, "__delitem__")
        order = _unsorted([samples.key(n) for n in range(5)])
        for key in order:
            put_value(api, key, samples.value(0))
        got = _iterated(api, order, f"after writing {short_repr(order)}")
        if got != order:
            raise AssertionError(
                f"inserted the keys in the order {short_repr(order)}, iteration gave "
                f"{short_repr(got)}"
            )
        again = order[1]
        del api[again]
        put_value(
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
    with SEE:
        samples = sample_domain(api)
        keys = [samples.key(n) for n in range(3)]
        for key in keys:
            put_value(api, key, samples.value(0))
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
