"""The round-trip law: a value survives encode then decode, strictly, through a codec or JSON."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from typing import Any, Final, TypeVar, final, overload

from .._exceptions import LawViolation
from .._explain import error_line
from .._util import callable_name, cut, short_repr

_T = TypeVar("_T")
_E = TypeVar("_E")

_NAMED: Final = 80
"""The most characters of a codec's or comparison's name that a message shows."""


def _type_name(value: object) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


# --------------------------------------------------------------------------- strict equality


@final
@dataclasses.dataclass(frozen=True, slots=True)
class _Difference:
    """Where two values first differ, the two values there, and how they differ."""

    path: str
    sent: object
    got: object
    detail: str

    @property
    def where(self) -> str:
        return self.path or "the top level"


def strictly_equal(sent: object, got: object) -> bool:
    """
    Tell whether two values are equal and of the same types, all the way down.

    The default equivalence of :func:`round_trip` and :func:`assert_json_portable`:

    - each value has exactly the type of its counterpart, recursively: a tuple is
      not a list, ``1`` is not ``1.0`` nor ``True``, a ``dict`` is not an
      ``OrderedDict``;
    - mappings have strictly equal keys (``{1: ...}`` is not ``{"1": ...}``) and
      strictly equal values under each key; the order of keys is not compared;
    - sequences (lists, tuples, named tuples) have equal lengths and strictly
      equal items in order; sets have strictly equal members;
    - dataclass instances have strictly equal fields (those with ``compare=True``);
    - floats compare with ``==``, except that NaN equals NaN in the same place;
      complex numbers likewise, part by part;
    - decimals have the same sign, digits and exponent: ``Decimal("1.10")`` is not
      ``Decimal("1.1")``;
    - datetimes and times are equal, with equal ``tzinfo`` and UTC offset: an
      aware datetime is not its naive or UTC-converted self;
    - everything else compares with ``==``.

    Wrap it to relax one rule and keep the others, for instance
    ``lambda sent, got: strictly_equal(normalise(sent), got)``.

    :param sent: the value before the round trip.
    :param got: the value after it.
    :returns: ``True`` if the values are strictly equal.
    """
    return _first_difference(sent, got) is None


def _first_difference(sent: object, got: object) -> _Difference | None:
    return _Comparison().difference(sent, got, "")


class _Comparison:
    __slots__ = ("_active",)

    def __init__(self) -> None:
        # Pairs of containers being compared: meeting one again is a cycle, whose
        # comparison is decided where it started.
        self._active: set[tuple[int, int]] = set()

    def difference(self, sent: object, got: object, path: str) -> _Difference | None:
        if sent is got:
            return None
        if type(sent) is not type(got):
            return _Difference(path, sent, got, f"type {_type_name(sent)} vs {_type_name(got)}")
        if isinstance(sent, float | complex | decimal.Decimal | datetime.datetime | datetime.time):
            return _scalar_difference(sent, got, path)
        if isinstance(sent, str | bytes | bytearray):
            return _text_difference(sent, got, path)
        pair = (id(sent), id(got))
        if pair in self._active:
            return None
        self._active.add(pair)
        try:
            return self._container_difference(sent, got, path)
        finally:
            self._active.discard(pair)

    def _container_difference(self, sent: object, got: Any, path: str) -> _Difference | None:
        if isinstance(sent, Mapping):
            return self._mapping_difference(sent, got, path)
        fields = getattr(type(sent), "_fields", None)
        if isinstance(sent, tuple) and isinstance(fields, tuple):  # a named tuple
            return self._sequence_difference(sent, got, path, fields=fields)
        if isinstance(sent, Sequence):
            return self._sequence_difference(sent, got, path)
        if isinstance(sent, Set):
            return self._set_difference(sent, got, path)
        if dataclasses.is_dataclass(sent) and not isinstance(sent, type):
            for field in dataclasses.fields(sent):
                if field.compare:
                    found = self.difference(
                        getattr(sent, field.name), getattr(got, field.name), f"{path}.{field.name}"
                    )
                    if found is not None:
                        return found
            return None
        if sent == got:
            return None
        return _Difference(path, sent, got, "values differ")

    def _mapping_difference(
        self, sent: Mapping[Any, Any], got: Mapping[Any, Any], path: str
    ) -> _Difference | None:
        # The key object of `got` that is == to each key sent: 1 finds True, so the
        # keys themselves are compared strictly as well.
        got_keys = {key: key for key in got}
        missing: list[object] = []
        unexpected: list[object] = []
        matched: list[tuple[object, object]] = []
        for key in sent:
            other = got_keys.pop(key, _ABSENT)
            if other is _ABSENT:
                missing.append(key)
            elif self.difference(key, other, "") is not None:
                missing.append(key)
                unexpected.append(other)
            else:
                matched.append((key, other))
        unexpected.extend(got_keys)
        if missing or unexpected:
            return _Difference(path, sent, got, _describe_members("keys", missing, unexpected))
        for key, other in matched:
            found = self.difference(sent[key], got[other], f"{path}[{short_repr(key, 60)}]")
            if found is not None:
                return found
        return None

    def _sequence_difference(
        self,
        sent: Sequence[object],
        got: Sequence[object],
        path: str,
        fields: Sequence[str] = (),
    ) -> _Difference | None:
        for index, (item, other) in enumerate(zip(sent, got, strict=False)):
            where = f".{fields[index]}" if index < len(fields) else f"[{index}]"
            found = self.difference(item, other, path + where)
            if found is not None:
                return found
        if len(sent) != len(got):
            return _Difference(
                path, sent, got, f"length {len(sent)} vs {len(got)}, equal as far as both go"
            )
        return None

    def _set_difference(self, sent: Set[object], got: Set[object], path: str) -> _Difference | None:
        got_members = {member: member for member in got}
        missing: list[object] = []
        unexpected: list[object] = []
        for member in sent:
            other = got_members.pop(member, _ABSENT)
            if other is _ABSENT:
                missing.append(member)
            elif self.difference(member, other, "") is not None:
                missing.append(member)
                unexpected.append(other)
        unexpected.extend(got_members)
        if missing or unexpected:
            return _Difference(path, sent, got, _describe_members("members", missing, unexpected))
        return None


@final
class _Absent(enum.Enum):
    ABSENT = enum.auto()


_ABSENT: Final = _Absent.ABSENT


def _describe_members(kind: str, missing: list[object], unexpected: list[object]) -> str:
    parts = []
    for label, members in (("missing", missing), ("unexpected", unexpected)):
        if members:
            shown = ", ".join(short_repr(member, 60) for member in members[:3])
            more = f" and {len(members) - 3} more" if len(members) > 3 else ""
            parts.append(f"{label} {shown}{more}")
    return f"{kind} differ: {'; '.join(parts)}"


def _same_float(sent: float, got: float) -> bool:
    return sent == got or (math.isnan(sent) and math.isnan(got))


def _scalar_difference(
    sent: float | complex | decimal.Decimal | datetime.datetime | datetime.time,
    got: Any,
    path: str,
) -> _Difference | None:
    if isinstance(sent, float):
        same = _same_float(sent, got)
    elif isinstance(sent, complex):
        same = _same_float(sent.real, got.real) and _same_float(sent.imag, got.imag)
    elif isinstance(sent, decimal.Decimal):
        if sent.as_tuple() == got.as_tuple():
            return None
        if not sent.is_nan() and not got.is_nan() and sent == got:
            sent_exponent, got_exponent = sent.as_tuple().exponent, got.as_tuple().exponent
            return _Difference(
                path,
                sent,
                got,
                f"equal in value but not in precision: exponent {sent_exponent} vs {got_exponent}",
            )
        same = False
    else:
        if sent.tzinfo != got.tzinfo:
            return _Difference(path, sent, got, f"tzinfo {sent.tzinfo!r} vs {got.tzinfo!r}")
        if sent != got:
            same = False
        elif sent.utcoffset() != got.utcoffset():
            return _Difference(
                path, sent, got, f"UTC offset {sent.utcoffset()!r} vs {got.utcoffset()!r}"
            )
        else:
            same = True
    return None if same else _Difference(path, sent, got, "values differ")


def _text_difference(sent: str | bytes | bytearray, got: Any, path: str) -> _Difference | None:
    if sent == got:
        return None
    for index, (char, other) in enumerate(zip(sent, got, strict=False)):
        if char != other:
            return _Difference(
                path,
                sent,
                got,
                f"first differ at index {index}: "
                f"{sent[index : index + 1]!r} vs {got[index : index + 1]!r}",
            )
    return _Difference(path, sent, got, f"length {len(sent)} vs {len(got)}, equal up to there")


# --------------------------------------------------------------------------- messages


def _lines(shown: Sequence[tuple[str, object]], indent: str = "  ") -> list[str]:
    width = max(len(label) for label, _ in shown) + 1
    return [f"{indent}{label + ':':<{width}} {short_repr(value)}" for label, value in shown]


def _mismatch(
    headline: str,
    sent: object,
    got: object,
    difference: _Difference | None,
    *,
    labels: tuple[str, str] = ("sent", "got back"),
    strict_note: str = "",
) -> LawViolation:
    lines = [headline, *_lines(((labels[0], sent), (labels[1], got)))]
    if difference is not None:
        lines.append(f"  first{strict_note} difference at {difference.where}: {difference.detail}")
        if difference.path:
            shown = ((labels[0], difference.sent), (labels[1], difference.got))
            lines.extend(_lines(shown, indent="    "))
    return LawViolation("\n".join(lines))


def _stage_failed(
    prefix: str, error: Exception, shown: Sequence[tuple[str, object]], note: str = ""
) -> LawViolation:
    reason = cut(error_line(error))
    notes = [f"  {note}"] if note else []
    return LawViolation("\n".join([f"{prefix} {reason}", *notes, *_lines(shown)]))


def _raised(stage: str, function: object) -> str:
    return f"{stage} failed: {callable_name(function, _NAMED)} raised"


def _json_obstacle(data: object, path: str, active: set[int]) -> str | None:
    """
    Name the first value in ``data`` that ``json.dumps(allow_nan=False)`` rejects, and where.

    That is a value of no JSON type, a float that is not finite, a key of a type
    that JSON cannot turn into a string, or a container met again inside itself.
    """
    if data is None or isinstance(data, str | int):  # bool is an int
        return None
    where = path or "the top level"
    if isinstance(data, float):
        return None if math.isfinite(data) else f"{where}: {data!r}"
    if not isinstance(data, dict | list | tuple) or id(data) in active:
        return f"{where}: {short_repr(data, 60)}"
    active.add(id(data))
    try:
        if isinstance(data, dict):
            for key, item in data.items():
                if not (key is None or isinstance(key, str | int | float)):
                    return f"{where}: key {short_repr(key, 60)}"
                found = _json_obstacle(item, f"{path}[{short_repr(key, 60)}]", active)
                if found is not None:
                    return found
        else:
            for index, item in enumerate(data):
                found = _json_obstacle(item, f"{path}[{index}]", active)
                if found is not None:
                    return found
        return None
    finally:
        active.discard(id(data))


def _codec_names(encode: object, decode: object) -> str:
    return f"encode={callable_name(encode, _NAMED)}, decode={callable_name(decode, _NAMED)}"


def _check_came_back(
    sent: object,
    got: object,
    equivalent: Callable[[object, object], bool] | None,
    what: str,
) -> None:
    if equivalent is None:
        difference = _first_difference(sent, got)
        if difference is not None:
            raise _mismatch(f"{what} did not give back the value sent", sent, got, difference)
    elif not equivalent(sent, got):
        headline = (
            f"{what} did not give back the value sent: "
            f"equivalent={callable_name(equivalent, _NAMED)} returned false"
        )
        # The strict difference, if any, is a hint at what the custom comparison saw.
        raise _mismatch(headline, sent, got, _first_difference(sent, got), strict_note=" strict")


def _async_hint(law: str) -> str:
    if law == "round_trip":
        return "use round_trip_async() for async codecs"
    return "pass a sync codec"


def _refuse_async_function(function: object, role: str, law: str) -> None:
    if inspect.iscoroutinefunction(function):
        raise TypeError(
            f"{role}={callable_name(function, _NAMED)} is async: {law}() calls it synchronously; "
            + _async_hint(law)
        )


def _refuse_awaitable(result: object, function: object, role: str, law: str) -> None:
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # never awaited, on purpose: no warning about it
        raise TypeError(
            f"{role}={callable_name(function, _NAMED)} returned an awaitable, "
            f"{short_repr(result, 80)}: {law}() does not await; {_async_hint(law)}"
        )


# --------------------------------------------------------------------------- the laws


def round_trip(
    encode: Callable[[_T], _E],
    decode: Callable[[_E], object],
    value: _T,
    *,
    equivalent: Callable[[object, object], bool] | None = None,
) -> object:
    """
    Check that ``decode(encode(value))`` gives back ``value``, and return what it gave.

    For codecs, serialisers and persistence boundaries: anything that must give
    back what it was given. The default comparison is :func:`strictly_equal`, which
    also requires the same types all the way down, so a codec that turns tuples
    into lists, ints into floats or int keys into strings is caught.

    :param encode: turns the value into its encoded form.
    :param decode: turns the encoded form back into a value.
    :param value: the value sent through the round trip.
    :param equivalent: ``equivalent(sent, got_back)`` is true when the value came
        back intact; defaults to :func:`strictly_equal`.
    :returns: the value ``decode`` gave back.
    :raises LawViolation: if the value did not come back, with both sides shown
        (shortened) and the path to the first difference; or if ``encode`` or
        ``decode`` raised, naming the stage and chained to the error.
    :raises TypeError: if ``encode`` or ``decode`` is async; use
        :func:`round_trip_async`.
    """
    _refuse_async_function(encode, "encode", "round_trip")
    _refuse_async_function(decode, "decode", "round_trip")
    try:
        encoded = encode(value)
    except Exception as exc:
        raise _stage_failed(_raised("encode", encode), exc, [("sent", value)]) from exc
    _refuse_awaitable(encoded, encode, "encode", "round_trip")
    try:
        decoded = decode(encoded)
    except Exception as exc:
        shown = [("sent", value), ("encoded", encoded)]
        raise _stage_failed(_raised("decode", decode), exc, shown) from exc
    _refuse_awaitable(decoded, decode, "decode", "round_trip")
    _check_came_back(value, decoded, equivalent, f"round trip ({_codec_names(encode, decode)})")
    return decoded


async def round_trip_async(
    encode: Callable[[_T], Awaitable[_E]] | Callable[[_T], _E],
    decode: Callable[[_E], Awaitable[object]] | Callable[[_E], object],
    value: _T,
    *,
    equivalent: Callable[[object, object], bool] | None = None,
) -> object:
    """
    Check that the value survives an async (or sync) encode then decode; return what came back.

    The same law as :func:`round_trip`, for boundaries that are async: a store
    written then read, a message published then consumed. Each of ``encode`` and
    ``decode`` may be a coroutine function or a plain one; whatever either returns
    that is awaitable is awaited. Cancellation is never wrapped: it propagates.

    :param encode: turns the value into its encoded form, possibly awaitably.
    :param decode: turns the encoded form back into a value, possibly awaitably.
    :param value: the value sent through the round trip.
    :param equivalent: ``equivalent(sent, got_back)`` is true when the value came
        back intact; defaults to :func:`strictly_equal`.
    :returns: the value ``decode`` gave back.
    :raises LawViolation: as :func:`round_trip` does.
    """
    try:
        encoded: Any = encode(value)
        if inspect.isawaitable(encoded):
            encoded = await encoded
    except Exception as exc:
        raise _stage_failed(_raised("encode", encode), exc, [("sent", value)]) from exc
    try:
        decoded: object = decode(encoded)
        if inspect.isawaitable(decoded):
            decoded = await decoded
    except Exception as exc:
        shown = [("sent", value), ("encoded", encoded)]
        raise _stage_failed(_raised("decode", decode), exc, shown) from exc
    _check_came_back(value, decoded, equivalent, f"round trip ({_codec_names(encode, decode)})")
    return decoded


_NESTING: Final = 100
"""How deep the ``"deep_nesting"`` entry of :func:`json_portability_sample` goes."""


def _deeply_nested(depth: int) -> object:
    """Lists and dicts inside each other, ``depth`` levels down to the str ``"bottom"``."""
    value: object = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"level": value}
    return value


def json_portability_sample() -> dict[str, object]:
    """
    Return a fresh copy of the value that :func:`assert_json_portable` checks by default.

    A dict with str keys (so that a failure's path names the entry) holding one
    of each value that JSON cannot hold natively:

    ========================  ==========================================================
    key                       value
    ========================  ==========================================================
    ``"bytes"``               ``b"\\x00\\x01conformkit\\xfe\\xff"`` (not valid UTF-8)
    ``"aware_datetime"``      ``datetime(2024, 2, 29, 23, 59, 59, 999999)`` at UTC+05:30
    ``"naive_datetime"``      ``datetime(2024, 2, 29, 12, 30)``, no tzinfo
    ``"date"``                ``date(2024, 2, 29)``
    ``"decimal"``             ``Decimal("12345678901234567890.1230")``: more digits
                              than a float holds, and a trailing zero
    ``"tuple"``               ``(1, "two", 3.0)``
    ``"empty_tuple"``         ``()``
    ``"tuples_in_a_list"``    ``[(1, 2), ("nested", (3, 4))]``
    ``"set"``                 ``{1, 2, 3}``
    ``"nan"``                 ``float("nan")``
    ``"infinity"``            ``float("inf")``
    ``"negative_infinity"``   ``float("-inf")``
    ``"int_keys"``            ``{1: "one", 2: "two"}``
    ``"tuple_keys"``          ``{(0, 0): "origin", (1, -1): "corner"}``
    ========================  ==========================================================

    and, after them, JSON values that codecs commonly mistake for something else,
    which must come back as the plain data they are:

    ========================  ==========================================================
    key                       value
    ========================  ==========================================================
    ``"tag_type_data"``       ``{"_type_": "uuid_hex", "_data_": "00…0"}`` (32 zeros):
                              the shape of a tagged object in some transcoders
    ``"tag_date"``            ``{"$date": "2024-02-29T12:30:00Z"}``, extended JSON's date
    ``"tag_class"``           ``{"__class__": "datetime.date", "value": "2024-02-29"}``
    ``"tag_py_object"``       ``{"py/object": "builtins.object"}``, jsonpickle's shape
    ``"tag_ref"``             ``{"$ref": "#/tag_type_data"}``, a JSON reference
    ``"lone_surrogates"``     ``"high \\ud800, low \\udfff"``: a str, but not valid UTF-16
                              or UTF-8
    ``"deep_nesting"``        dicts and lists nested 100 levels deep
    ``"large_integers"``      ``[2**53 + 1, 2**64, -(2**63) - 1, 10**30]``: past a
                              float's precision and past 64 bits
    ``"negative_zero"``       ``-0.0``
    ========================  ==========================================================

    Those entries are JSON already: a codec passes them through, and decodes
    them to the same plain dicts, lists, str, int and float.

    :returns: a new dict each call, so changing it changes no later check.
    """
    return {
        "bytes": b"\x00\x01conformkit\xfe\xff",
        "aware_datetime": datetime.datetime(
            2024,
            2,
            29,
            23,
            59,
            59,
            999999,
            tzinfo=datetime.timezone(datetime.timedelta(hours=5, minutes=30)),
        ),
        "naive_datetime": datetime.datetime(2024, 2, 29, 12, 30),
        "date": datetime.date(2024, 2, 29),
        "decimal": decimal.Decimal("12345678901234567890.1230"),
        "tuple": (1, "two", 3.0),
        "empty_tuple": (),
        "tuples_in_a_list": [(1, 2), ("nested", (3, 4))],
        "set": {1, 2, 3},
        "nan": math.nan,
        "infinity": math.inf,
        "negative_infinity": -math.inf,
        "int_keys": {1: "one", 2: "two"},
        "tuple_keys": {(0, 0): "origin", (1, -1): "corner"},
        "tag_type_data": {"_type_": "uuid_hex", "_data_": "0" * 32},
        "tag_date": {"$date": "2024-02-29T12:30:00Z"},
        "tag_class": {"__class__": "datetime.date", "value": "2024-02-29"},
        "tag_py_object": {"py/object": "builtins.object"},
        "tag_ref": {"$ref": "#/tag_type_data"},
        "lone_surrogates": "high \ud800, low \udfff",
        "deep_nesting": _deeply_nested(_NESTING),
        "large_integers": [2**53 + 1, 2**64, -(2**63) - 1, 10**30],
        "negative_zero": -0.0,
    }


@final
class _Omitted(enum.Enum):
    SAMPLE = enum.auto()


@overload
def assert_json_portable(
    encode: Callable[[dict[str, object]], object],
    decode: Callable[[Any], object],
    *,
    equivalent: Callable[[object, object], bool] | None = None,
) -> object: ...
@overload
def assert_json_portable(
    encode: Callable[[_T], object],
    decode: Callable[[Any], object],
    value: _T,
    *,
    equivalent: Callable[[object, object], bool] | None = None,
) -> object: ...
def assert_json_portable(
    encode: Callable[[Any], object],
    decode: Callable[[Any], object],
    value: object = _Omitted.SAMPLE,
    *,
    equivalent: Callable[[object, object], bool] | None = None,
) -> object:
    """
    Check that a value survives ``encode`` → ``json.dumps`` → ``json.loads`` → ``decode``.

    ``encode`` turns a value into JSON-native data (dicts with str keys, lists,
    str, int, finite float, bool, None) and ``decode`` turns that data back. Three
    things must hold, checked in order:

    1. ``json.dumps(data, allow_nan=False)`` accepts what ``encode`` produced: NaN
       and the infinities are not JSON, so the codec must encode them itself;
    2. the data is JSON-native: ``json.loads`` gives back exactly the data, by
       :func:`strictly_equal` (no tuple that becomes a list, no int key that
       becomes a str, whatever ``decode`` makes of it afterwards);
    3. ``decode`` gives back the value, by ``equivalent`` (strict by default).

    Pass the functions that convert to and from data, not ones that produce JSON
    text: a str is JSON-native, so a codec to text passes the second check
    trivially. Check such a codec with :func:`round_trip`.

    :param encode: turns the value into JSON-native data.
    :param decode: turns the data that ``json.loads`` produced back into a value.
    :param value: the value to send; when omitted,
        :func:`json_portability_sample` (bytes, aware and naive datetimes, a date,
        a decimal, tuples, a set, NaN and infinities, non-str dict keys; and
        JSON that codecs mistake for something else: tag-shaped dicts, lone
        surrogates, deep nesting, large integers, ``-0.0``).
    :param equivalent: ``equivalent(sent, got_back)`` is true when the value came
        back intact; defaults to :func:`strictly_equal`.
    :returns: the value ``decode`` gave back.
    :raises LawViolation: if any of the three does not hold, or ``encode`` or
        ``decode`` raised; the message names the stage and shows both sides.
    :raises TypeError: if ``encode`` or ``decode`` is async.
    """
    if value is _Omitted.SAMPLE:
        value = json_portability_sample()
    _refuse_async_function(encode, "encode", "assert_json_portable")
    _refuse_async_function(decode, "decode", "assert_json_portable")
    names = _codec_names(encode, decode)
    try:
        data = encode(value)
    except Exception as exc:
        raise _stage_failed(_raised("encode", encode), exc, [("sent", value)]) from exc
    _refuse_awaitable(data, encode, "encode", "assert_json_portable")
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:  # not serialisable, NaN or infinity, a cycle
        obstacle = _json_obstacle(data, "", set())
        raise _stage_failed(
            "json.dumps(allow_nan=False) failed on the data from "
            f"encode={callable_name(encode, _NAMED)}:",
            exc,
            [("sent", value), ("encoded", data)],
            note=f"not JSON at {obstacle}" if obstacle else "",
        ) from exc
    loaded = json.loads(text)
    difference = _first_difference(data, loaded)
    if difference is not None:
        raise _mismatch(
            f"encode={callable_name(encode, _NAMED)} produced data that is not "
            "JSON-native: json.loads(json.dumps(data)) is not the data",
            data,
            loaded,
            difference,
            labels=("encoded", "from JSON"),
        )
    try:
        decoded = decode(loaded)
    except Exception as exc:
        shown = [("sent", value), ("from JSON", loaded)]
        raise _stage_failed(_raised("decode", decode), exc, shown) from exc
    _refuse_awaitable(decoded, decode, "decode", "assert_json_portable")
    _check_came_back(value, decoded, equivalent, f"round trip through JSON ({names})")
    return decoded
