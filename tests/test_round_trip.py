"""The round-trip law: conformkit.laws.round_trip, round_trip_async and assert_json_portable."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import json
import math
import operator
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import override

from conformkit.laws import (
    LawViolation,
    assert_json_portable,
    json_portability_sample,
    round_trip,
    round_trip_async,
    strictly_equal,
)

examples = settings(max_examples=150, deadline=None, database=None)

JSON_NATIVE = (
    "tag_type_data",
    "tag_date",
    "tag_class",
    "tag_py_object",
    "tag_ref",
    "lone_surrogates",
    "deep_nesting",
    "large_integers",
    "negative_zero",
)
"""The entries of the default sample that are JSON already, in order, last."""

UTC_PLUS_2 = datetime.timezone(datetime.timedelta(hours=2))


class TaggedCodec:
    """
    A correct codec to JSON-native data: each value JSON cannot hold becomes ``{"$tag": payload}``.

    Every dict becomes ``{"$dict": [[key, value], ...]}``, so keys of any type
    survive and no user dict is mistaken for a tag. The subclasses below each
    break one conversion, the way real codecs do.
    """

    def encode(self, value: object) -> object:
        """Turn ``value`` into JSON-native data."""
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, bytes):
            return {"$bytes": base64.b64encode(value).decode("ascii")}
        if isinstance(value, datetime.datetime):
            return self.encode_datetime(value)
        if isinstance(value, datetime.date):
            return {"$date": value.isoformat()}
        if isinstance(value, decimal.Decimal):
            return self.encode_decimal(value)
        if isinstance(value, list):
            return [self.encode(item) for item in value]
        if isinstance(value, tuple):
            return {"$tuple": [self.encode(item) for item in value]}
        if isinstance(value, set):
            return {"$set": [self.encode(item) for item in value]}
        if isinstance(value, dict):
            return {"$dict": [[self.encode(key), self.encode(item)] for key, item in value.items()]}
        raise TypeError(f"TaggedCodec cannot encode {value!r}")

    def encode_datetime(self, value: datetime.datetime) -> object:
        """Encode a datetime, its UTC offset included."""
        return {"$datetime": value.isoformat()}

    def encode_decimal(self, value: decimal.Decimal) -> object:
        """Encode a decimal, every digit and the exponent included."""
        return {"$decimal": str(value)}

    def decode(self, data: Any) -> object:
        """Turn JSON-native data back into the value."""
        if isinstance(data, list):
            return [self.decode(item) for item in data]
        if not isinstance(data, dict):
            return data
        ((tag, payload),) = data.items()
        if tag == "$tuple":
            return tuple(self.decode(item) for item in payload)
        if tag == "$set":
            return {self.decode(item) for item in payload}
        if tag == "$dict":
            return {self.decode(key): self.decode(item) for key, item in payload}
        if tag == "$bytes":
            return self.decode_bytes(payload)
        scalars: dict[str, Callable[[Any], object]] = {
            "$float": float,
            "$datetime": datetime.datetime.fromisoformat,
            "$date": datetime.date.fromisoformat,
            "$decimal": decimal.Decimal,
        }
        return scalars[tag](payload)

    def decode_bytes(self, payload: str) -> object:
        """Decode base64 back into bytes."""
        return base64.b64decode(payload)

    def dumps(self, value: object) -> str:
        """Encode all the way to JSON text, as a codec of strings would."""
        return json.dumps(self.encode(value), allow_nan=False)

    def loads(self, text: str) -> object:
        """Decode JSON text made by :meth:`dumps`."""
        return self.decode(json.loads(text))


class DropsTimezones(TaggedCodec):
    """Writes datetimes without their UTC offset: aware ones come back naive."""

    @override
    def encode_datetime(self, value: datetime.datetime) -> object:
        return {"$datetime": value.replace(tzinfo=None).isoformat()}


class ConvertsToUTC(TaggedCodec):
    """Writes datetimes as UTC: the same instant, but the offset is lost."""

    @override
    def encode_datetime(self, value: datetime.datetime) -> object:
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC)
        return {"$datetime": value.isoformat()}


class DecimalsThroughFloats(TaggedCodec):
    """Writes decimals through a float: digits beyond a float's precision are lost."""

    @override
    def encode_decimal(self, value: decimal.Decimal) -> object:
        return {"$decimal": str(float(value))}


class BytesAsText(TaggedCodec):
    """Reads bytes back as Latin-1 text: the characters survive, the type does not."""

    @override
    def decode_bytes(self, payload: str) -> object:
        return base64.b64decode(payload).decode("latin-1")


class Utf8Text(TaggedCodec):
    """Requires a UTF-8 form of each str, as a codec writing UTF-8 does: lone surrogates fail."""

    @override
    def encode(self, value: object) -> object:
        if isinstance(value, str):
            value.encode("utf-8")  # raises UnicodeEncodeError for a lone surrogate
            return value
        return super().encode(value)


class IntsAsDoubles(TaggedCodec):
    """Writes an int past 2**53 as a float, as a codec for JavaScript numbers does."""

    @override
    def encode(self, value: object) -> object:
        if type(value) is int and abs(value) > 2**53:
            return float(value)
        return super().encode(value)


class DepthLimited(TaggedCodec):
    """Refuses data nested deeper than 64 levels, as some parsers do."""

    def __init__(self) -> None:
        self.depth = 0

    @override
    def encode(self, value: object) -> object:
        self.depth += 1
        try:
            if self.depth > 64:
                raise ValueError("nested deeper than 64 levels")
            return super().encode(value)
        finally:
            self.depth -= 1


TYPE_TAG_DECODERS: dict[str, Callable[[Any], object]] = {
    "uuid_hex": uuid.UUID,
    "bytes": base64.b64decode,
    "datetime": datetime.datetime.fromisoformat,
    "date": datetime.date.fromisoformat,
    "decimal": decimal.Decimal,
    "float": float,
}


class TypeTagCodec:
    """
    Tags each value JSON cannot hold as ``{"_type_": name, "_data_": payload}`` and keeps
    dicts with str keys as they are, as some event-sourcing transcoders do. On the way back,
    any dict of that shape is taken for a tag: a plain dict that looks like one is decoded.
    """

    def tag(self, name: str, data: object) -> dict[str, object]:
        """A tagged value."""
        return {"_type_": name, "_data_": data}

    def encode(self, value: object) -> object:
        """Turn ``value`` into JSON-native data."""
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else self.tag("float", repr(value))
        if isinstance(value, bytes):
            return self.tag("bytes", base64.b64encode(value).decode("ascii"))
        if isinstance(value, datetime.datetime):
            return self.tag("datetime", value.isoformat())
        if isinstance(value, datetime.date):
            return self.tag("date", value.isoformat())
        if isinstance(value, decimal.Decimal):
            return self.tag("decimal", str(value))
        if isinstance(value, list):
            return [self.encode(item) for item in value]
        if isinstance(value, tuple | set):
            items = [self.encode(item) for item in value]
            return self.tag(type(value).__name__, items)
        if isinstance(value, dict):
            if all(type(key) is str for key in value):
                return {key: self.encode(item) for key, item in value.items()}
            pairs = [[self.encode(key), self.encode(item)] for key, item in value.items()]
            return self.tag("dict", pairs)
        raise TypeError(f"TypeTagCodec cannot encode {value!r}")

    def decode(self, data: Any) -> object:
        """Turn JSON-native data back into the value, every tag-shaped dict decoded."""
        if isinstance(data, list):
            return [self.decode(item) for item in data]
        if not isinstance(data, dict):
            return data
        if data.keys() != {"_type_", "_data_"}:
            return {key: self.decode(item) for key, item in data.items()}
        name, payload = data["_type_"], data["_data_"]
        if name == "tuple":
            return tuple(self.decode(item) for item in payload)
        if name == "set":
            return {self.decode(item) for item in payload}
        if name == "dict":
            return {self.decode(key): self.decode(item) for key, item in payload}
        return TYPE_TAG_DECODERS[name](payload)


def plain_json_encode(value: object) -> str:
    """The codec that json alone is: tuples become lists, int keys become strings."""
    return json.dumps(value)


def plain_json_decode(text: str) -> object:
    """Parse what :func:`plain_json_encode` wrote."""
    return json.loads(text)


def keep(value: object) -> object:
    """Hand JSON-native data over unchanged: a codec that relies on json for everything."""
    return value


def message_of(error: pytest.ExceptionInfo[LawViolation]) -> str:
    """The message of a caught violation."""
    return str(error.value)


class TestStrictlyEqual:
    """The default equivalence: equal, and of the same types all the way down."""

    def test_a_tuple_is_not_a_list(self) -> None:
        """Equal items in a list and a tuple are not strictly equal, however deep."""
        assert not strictly_equal((1, 2), [1, 2])
        assert not strictly_equal({"a": [(1,)]}, {"a": [[1]]})
        assert strictly_equal({"a": [(1,)]}, {"a": [(1,)]})

    def test_numbers_keep_their_types(self) -> None:
        """1, 1.0 and True are == to each other, and strictly different."""
        assert not strictly_equal(1, 1.0)
        assert not strictly_equal(1, True)
        assert not strictly_equal([0], [False])
        assert strictly_equal(1, 1)

    def test_dict_keys_keep_their_types(self) -> None:
        """An int key that comes back as a string, or as a bool, is a difference."""
        assert not strictly_equal({1: "a"}, {"1": "a"})
        assert not strictly_equal({1: "a"}, {True: "a"})
        assert strictly_equal({1: "a", 2: "b"}, {2: "b", 1: "a"})  # key order is not compared

    def test_nan_equals_nan_in_the_same_place(self) -> None:
        """NaN matches NaN by position, in floats and complex numbers, and nothing else."""
        assert strictly_equal(math.nan, float("nan"))
        assert strictly_equal([1.0, math.nan], [1.0, float("nan")])
        assert strictly_equal(complex(math.nan, 1), complex(math.nan, 1))
        assert not strictly_equal([math.nan, 1.0], [1.0, math.nan])
        assert not strictly_equal(math.nan, 0.0)

    def test_decimals_keep_their_precision(self) -> None:
        """Decimal('1.10') equals Decimal('1.1') in value, but not strictly."""
        assert not strictly_equal(decimal.Decimal("1.10"), decimal.Decimal("1.1"))
        assert strictly_equal(decimal.Decimal("NaN"), decimal.Decimal("NaN"))
        assert strictly_equal(decimal.Decimal("1.10"), decimal.Decimal("1.10"))

    def test_datetimes_keep_their_timezone(self) -> None:
        """An aware datetime is not its naive self, nor the same instant in another zone."""
        aware = datetime.datetime(2024, 1, 1, 12, tzinfo=UTC_PLUS_2)
        assert not strictly_equal(aware, aware.replace(tzinfo=None))
        assert not strictly_equal(aware, aware.astimezone(datetime.UTC))
        assert aware == aware.astimezone(datetime.UTC)  # which == alone would accept
        assert strictly_equal(aware, datetime.datetime.fromisoformat(aware.isoformat()))

    def test_sets_compare_their_members_strictly(self) -> None:
        """A set whose 1 came back as True differs; a set in another order does not."""
        assert not strictly_equal({1, "a"}, {True, "a"})
        assert strictly_equal({"b", "a"}, {"a", "b"})

    def test_dataclasses_and_named_tuples_compare_their_fields(self) -> None:
        """A field whose int came back as a float differs, though == says equal."""

        @dataclasses.dataclass
        class Event:
            when: object

        class Point(NamedTuple):
            x: object

        assert Event(1) == Event(1.0)
        assert not strictly_equal(Event(1), Event(1.0))
        assert not strictly_equal(Point(1), Point(1.0))
        assert not strictly_equal(Point(1), (1,))

    def test_cycles_are_compared_without_recursing_forever(self) -> None:
        """A self-referencing list is strictly equal to a copy with the same shape."""
        sent: list[object] = [1]
        sent.append(sent)
        got: list[object] = [1]
        got.append(got)
        assert strictly_equal(sent, got)


class TestRoundTrip:
    """round_trip(): decode(encode(value)) gives back the value, strictly."""

    def test_returns_what_came_back(self) -> None:
        """A correct codec passes, and the decoded value is returned."""
        codec = TaggedCodec()
        value = {"point": (1, 2), "raw": b"\x00"}
        assert round_trip(codec.dumps, codec.loads, value) == value

    def test_plain_json_turning_tuples_into_lists_is_caught(self) -> None:
        """The bug the law exists for: the message names the path and tuple vs list."""
        value = [1, 2, {"when": (2024, 1, 1)}]
        with pytest.raises(LawViolation) as caught:
            round_trip(plain_json_encode, plain_json_decode, value)
        assert message_of(caught).splitlines() == [
            "round trip (encode=plain_json_encode, decode=plain_json_decode) "
            "did not give back the value sent",
            "  sent:     [1, 2, {'when': (2024, 1, 1)}]",
            "  got back: [1, 2, {'when': [2024, 1, 1]}]",
            "  first difference at [2]['when']: type tuple vs list",
            "    sent:     (2024, 1, 1)",
            "    got back: [2024, 1, 1]",
        ]

    def test_int_keys_that_come_back_as_strings_are_caught(self) -> None:
        """The message names the missing key and the one that came back instead."""
        with pytest.raises(LawViolation, match=r"keys differ: missing 7; unexpected '7'"):
            round_trip(plain_json_encode, plain_json_decode, {"index": {7: "seven"}})

    def test_a_codec_that_drops_timezones_is_caught(self) -> None:
        """An aware datetime that comes back naive fails, naming tzinfo."""
        codec = DropsTimezones()
        aware = datetime.datetime(2024, 1, 1, 12, tzinfo=UTC_PLUS_2)
        with pytest.raises(LawViolation) as caught:
            round_trip(codec.dumps, codec.loads, {"when": aware})
        assert "first difference at ['when']: tzinfo datetime.timezone(" in message_of(caught)
        assert "vs None" in message_of(caught)

    def test_a_codec_that_converts_to_utc_is_caught(self) -> None:
        """The same instant with another offset fails: the offset was data."""
        codec = ConvertsToUTC()
        aware = datetime.datetime(2024, 1, 1, 12, tzinfo=UTC_PLUS_2)
        with pytest.raises(LawViolation, match=r"tzinfo .* vs datetime\.timezone\.utc"):
            round_trip(codec.dumps, codec.loads, aware)

    def test_a_codec_that_loses_decimal_digits_is_caught(self) -> None:
        """A decimal sent through a float loses digits, and the law says where."""
        codec = DecimalsThroughFloats()
        with pytest.raises(LawViolation, match=r"first difference at \[0\]: values differ"):
            round_trip(codec.dumps, codec.loads, [decimal.Decimal("0.1000000000000000055511")])

    def test_a_codec_that_loses_a_trailing_zero_is_caught(self) -> None:
        """Decimal('1.10') coming back as Decimal('1.1') is a loss of precision."""
        codec = DecimalsThroughFloats()
        with pytest.raises(LawViolation, match=r"not in precision: exponent -2 vs -1"):
            round_trip(codec.dumps, codec.loads, decimal.Decimal("1.10"))

    def test_a_codec_that_turns_bytes_into_text_is_caught(self) -> None:
        """Bytes that come back as str fail with the two types named."""
        codec = BytesAsText()
        with pytest.raises(LawViolation, match=r"at \['raw'\]: type bytes vs str"):
            round_trip(codec.dumps, codec.loads, {"raw": b"abc"})

    def test_nan_round_trips_count_as_equal(self) -> None:
        """json writes NaN as NaN and reads back another NaN object: that is a pass."""
        value = [math.nan, {"x": math.inf, "y": -math.inf}]
        got = round_trip(plain_json_encode, plain_json_decode, value)
        assert isinstance(got, list)
        assert got[0] is not value[0]
        assert math.isnan(got[0])

    def test_custom_equivalent_can_relax(self) -> None:
        """equivalent=operator.eq accepts the same instant in another timezone."""
        codec = ConvertsToUTC()
        aware = datetime.datetime(2024, 1, 1, 12, tzinfo=UTC_PLUS_2)
        got = round_trip(codec.dumps, codec.loads, aware, equivalent=operator.eq)
        assert got == aware
        assert isinstance(got, datetime.datetime)
        assert got.tzinfo == datetime.UTC

    def test_custom_equivalent_can_reject(self) -> None:
        """A custom equivalent that says no fails the law, named, even if strictly equal."""

        def same_object(sent: object, got: object) -> bool:
            return sent is got

        with pytest.raises(LawViolation) as caught:
            round_trip(plain_json_encode, plain_json_decode, [1], equivalent=same_object)
        lines = message_of(caught).splitlines()
        assert lines[0].endswith(".<locals>.same_object returned false")
        assert lines[1:] == ["  sent:     [1]", "  got back: [1]"]  # no strict difference

    def test_custom_equivalent_failure_shows_the_strict_difference(self) -> None:
        """When a relaxed comparison still fails, the first strict difference is a hint."""
        with pytest.raises(LawViolation) as caught:
            round_trip(plain_json_encode, plain_json_decode, [(1, 2)], equivalent=operator.eq)
        assert message_of(caught).splitlines()[0].endswith(": equivalent=eq returned false")
        assert "first strict difference at [0]: type tuple vs list" in message_of(caught)

    def test_large_values_are_shortened(self) -> None:
        """Both sides appear, shortened, and the message stays small."""
        value = {
            "rows": [list(range(100)) for _ in range(100)],
            "blob": "x" * 100_000,
            "pair": (1, 2),
        }
        with pytest.raises(LawViolation) as caught:
            round_trip(plain_json_encode, plain_json_decode, value)
        message = message_of(caught)
        assert len(message) < 1500
        assert all(len(line) < 300 for line in message.splitlines())
        assert "\n  sent:     {" in message
        assert "\n  got back: {" in message
        assert "first difference at ['pair']: type tuple vs list" in message

    def test_long_byte_strings_are_shown_by_length(self) -> None:
        """A long byte string is shown by its length and first bytes, not byte by byte."""
        sent = bytes(range(256)) * 4

        with pytest.raises(LawViolation) as caught:
            round_trip(bytes, lambda data: data[:-1], sent)
        lines = message_of(caught).splitlines()
        assert lines[1] == "  sent:     1024 bytes starting " + repr(bytes(range(16)))
        assert lines[2] == "  got back: 1023 bytes starting " + repr(bytes(range(16)))

    def test_a_difference_deep_in_a_long_string_is_located(self) -> None:
        """A long string that differs far in names the index, though the repr is cut."""
        sent = "a" * 50_000 + "b"

        def decode(text: str) -> object:
            return text[:-1] + "c"

        with pytest.raises(LawViolation) as caught:
            round_trip(str, decode, sent)
        assert "first differ at index 50000: 'b' vs 'c'" in message_of(caught)
        assert len(message_of(caught)) < 1000

    def test_an_encode_error_names_the_stage(self) -> None:
        """An exception from encode becomes a violation naming encode, chained to it."""
        with pytest.raises(LawViolation) as caught:
            round_trip(plain_json_encode, plain_json_decode, {"raw": b"\x00"})
        first = message_of(caught).splitlines()[0]
        assert first == (
            "encode failed: plain_json_encode raised "
            "TypeError: Object of type bytes is not JSON serializable"
        )
        assert isinstance(caught.value.__cause__, TypeError)

    def test_a_decode_error_names_the_stage(self) -> None:
        """An exception from decode becomes a violation naming decode, showing both forms."""

        def decode(text: str) -> object:
            raise KeyError(text)

        with pytest.raises(LawViolation) as caught:
            round_trip(plain_json_encode, decode, [1])
        assert message_of(caught).splitlines() == [
            "decode failed: TestRoundTrip.test_a_decode_error_names_the_stage.<locals>.decode "
            "raised KeyError: '[1]'",
            "  sent:    [1]",
            "  encoded: '[1]'",
        ]
        assert isinstance(caught.value.__cause__, KeyError)

    def test_refuses_an_async_codec(self) -> None:
        """An async encode or decode is a TypeError pointing at round_trip_async()."""

        async def decode(text: str) -> object:
            return text

        with pytest.raises(TypeError, match=r"use round_trip_async\(\)"):
            round_trip(plain_json_encode, decode, [1])

    def test_refuses_an_awaitable_result_without_leaking_a_coroutine(self) -> None:
        """A sync callable that returns a coroutine is refused; the coroutine is closed."""

        async def later(text: str) -> object:
            return text

        def decode(text: str) -> object:
            return later(text)

        # A coroutine left unclosed would warn, and warnings are errors here.
        with pytest.raises(TypeError, match=r"returned an awaitable"):
            round_trip(plain_json_encode, decode, [1])


class AsyncStore:
    """A persistence boundary: rows written as JSON text, read back later."""

    def __init__(self) -> None:
        self.rows: dict[int, str] = {}

    async def write(self, value: object) -> int:
        """Store ``value`` as plain JSON and return its row ID."""
        await anyio.lowlevel.checkpoint()
        row = len(self.rows)
        self.rows[row] = json.dumps(value)
        return row

    async def read(self, row: int) -> object:
        """Read a row back."""
        await anyio.lowlevel.checkpoint()
        return json.loads(self.rows[row])


class TestRoundTripAsync:
    """round_trip_async(): the same law through async (or sync) encode and decode."""

    @pytest.mark.anyio
    async def test_passes_through_an_async_store(self) -> None:
        """A value that JSON holds survives a write then a read, and is returned."""
        store = AsyncStore()
        value = {"name": "row", "scores": [1, 2.5, None]}
        assert await round_trip_async(store.write, store.read, value) == value

    @pytest.mark.anyio
    async def test_catches_a_store_that_turns_tuples_into_lists(self) -> None:
        """The store's tuple-to-list conversion fails with the path and the two types."""
        store = AsyncStore()
        with pytest.raises(LawViolation, match=r"at \['scores'\]: type tuple vs list"):
            await round_trip_async(store.write, store.read, {"scores": (1, 2)})

    @pytest.mark.anyio
    async def test_mixes_sync_and_async_callables(self) -> None:
        """A sync encode and an async decode, or the reverse, both work."""
        codec, store = TaggedCodec(), AsyncStore()

        async def decode(row: int) -> object:
            return codec.decode(await store.read(row))

        async def write(data: object) -> int:
            return await store.write(data)

        value = {"when": (1, b"\x01")}
        assert await round_trip_async(lambda v: write(codec.encode(v)), decode, value) == value
        assert await round_trip_async(codec.dumps, codec.loads, value) == value

    @pytest.mark.anyio
    async def test_an_async_decode_error_names_the_stage(self) -> None:
        """An exception raised inside the awaited decode names decode, chained to it."""

        async def read(row: int) -> object:
            await anyio.lowlevel.checkpoint()
            raise LookupError(f"no row {row}")

        with pytest.raises(LawViolation, match=r"^decode failed: .*read raised LookupError") as e:
            await round_trip_async(AsyncStore().write, read, [1])
        assert isinstance(e.value.__cause__, LookupError)

    @pytest.mark.anyio
    async def test_cancellation_propagates_unwrapped(self) -> None:
        """Cancelling a round trip cancels it; it is never reported as a violation."""

        async def slow_write(value: object) -> object:
            await anyio.sleep(5)
            return value

        with anyio.CancelScope() as scope:
            scope.cancel()
            await round_trip_async(slow_write, keep, [1])
        assert scope.cancelled_caught


class TestJsonPortable:
    """assert_json_portable(): encode → json.dumps → json.loads → decode gives the value back."""

    def test_a_tagged_codec_passes_the_default_sample(self) -> None:
        """A codec that tags what JSON cannot hold passes, and the sample comes back."""
        codec = TaggedCodec()
        got = assert_json_portable(codec.encode, codec.decode)
        assert strictly_equal(got, json_portability_sample())

    def test_the_default_sample_holds_what_json_cannot(self) -> None:
        """The sample has each documented kind of value, and each call gives a fresh one."""
        sample = json_portability_sample()
        assert sample is not json_portability_sample()
        kinds = {key: type(value) for key, value in sample.items()}
        assert kinds == {
            "bytes": bytes,
            "aware_datetime": datetime.datetime,
            "naive_datetime": datetime.datetime,
            "date": datetime.date,
            "decimal": decimal.Decimal,
            "tuple": tuple,
            "empty_tuple": tuple,
            "tuples_in_a_list": list,
            "set": set,
            "nan": float,
            "infinity": float,
            "negative_infinity": float,
            "int_keys": dict,
            "tuple_keys": dict,
            "tag_type_data": dict,
            "tag_date": dict,
            "tag_class": dict,
            "tag_py_object": dict,
            "tag_ref": dict,
            "lone_surrogates": str,
            "deep_nesting": list,
            "large_integers": list,
            "negative_zero": float,
        }
        aware = sample["aware_datetime"]
        naive = sample["naive_datetime"]
        assert isinstance(aware, datetime.datetime)
        assert isinstance(naive, datetime.datetime)
        assert aware.utcoffset() == datetime.timedelta(hours=5, minutes=30)
        assert naive.tzinfo is None

    def test_the_entries_codecs_mistake_are_json_already(self) -> None:
        """The tag-shaped, surrogate, deep, large and signed-zero entries go through json as is."""
        sample = json_portability_sample()
        native = {key: value for key, value in sample.items() if key in JSON_NATIVE}
        assert list(sample)[-len(JSON_NATIVE) :] == list(JSON_NATIVE)
        assert strictly_equal(assert_json_portable(keep, keep, native), native)
        depth, nested = 0, sample["deep_nesting"]
        while not isinstance(nested, str):
            nested = nested[0] if isinstance(nested, list) else nested["level"]  # type: ignore[index]
            depth += 1
        assert (depth, nested) == (100, "bottom")
        assert math.copysign(1.0, cast("float", sample["negative_zero"])) == -1.0

    def test_a_codec_that_decodes_tag_shaped_dicts_fails_on_plain_data(self) -> None:
        """A dict shaped like a type tag comes back as an object: the law names the entry."""
        codec = TypeTagCodec()
        with pytest.raises(LawViolation) as caught:
            assert_json_portable(codec.encode, codec.decode)
        lines = message_of(caught).splitlines()
        assert lines[3] == "  first difference at ['tag_type_data']: type dict vs uuid.UUID"
        without_tags = {
            key: value
            for key, value in json_portability_sample().items()
            if not key.startswith("tag_")
        }
        assert_json_portable(codec.encode, codec.decode, without_tags)

    def test_relying_on_json_alone_fails_at_dumps(self) -> None:
        """Handing the sample to json as it is fails at json.dumps, naming the place."""
        with pytest.raises(LawViolation) as caught:
            assert_json_portable(keep, keep)
        lines = message_of(caught).splitlines()
        assert lines[0].startswith(
            "json.dumps(allow_nan=False) failed on the data from encode=keep"
        )
        assert lines[1] == r"  not JSON at ['bytes']: b'\x00\x01conformkit\xfe\xff'"
        assert isinstance(caught.value.__cause__, TypeError)

    def test_nan_left_to_json_fails_at_dumps(self) -> None:
        """NaN is not JSON: the codec must encode it, and the message says where it was."""
        with pytest.raises(LawViolation, match=r"not JSON at \['ratio'\]: nan"):
            assert_json_portable(keep, keep, {"ratio": math.nan})

    def test_data_that_json_changes_is_not_json_native(self) -> None:
        """A tuple in what encode produced is caught before decode can hide it."""

        def decode(data: Any) -> object:
            return {key: tuple(item) for key, item in data.items()}

        with pytest.raises(LawViolation) as caught:
            assert_json_portable(keep, decode, {"pair": (1, 2)})
        assert message_of(caught).splitlines() == [
            "encode=keep produced data that is not JSON-native: "
            "json.loads(json.dumps(data)) is not the data",
            "  encoded:   {'pair': (1, 2)}",
            "  from JSON: {'pair': [1, 2]}",
            "  first difference at ['pair']: type tuple vs list",
            "    encoded:   (1, 2)",
            "    from JSON: [1, 2]",
        ]

    @pytest.mark.parametrize(
        ("codec", "expected"),
        [
            pytest.param(
                DropsTimezones(),
                r"at \['aware_datetime'\]: tzinfo datetime\.timezone\(.* vs None",
                id="DropsTimezones",
            ),
            pytest.param(
                ConvertsToUTC(),
                r"at \['aware_datetime'\]: tzinfo .* vs datetime\.timezone\.utc",
                id="ConvertsToUTC",
            ),
            pytest.param(
                DecimalsThroughFloats(),
                r"at \['decimal'\]: values differ",
                id="DecimalsThroughFloats",
            ),
            pytest.param(BytesAsText(), r"at \['bytes'\]: type bytes vs str", id="BytesAsText"),
            pytest.param(
                TypeTagCodec(),
                r"at \['tag_type_data'\]: type dict vs uuid\.UUID",
                id="TypeTagCodec",
            ),
            pytest.param(
                Utf8Text(),
                r"^encode failed: Utf8Text\.encode raised UnicodeEncodeError: .*surrogates",
                id="Utf8Text",
            ),
            pytest.param(
                IntsAsDoubles(),
                r"at \['large_integers'\]\[0\]: type int vs float",
                id="IntsAsDoubles",
            ),
            pytest.param(
                DepthLimited(),
                r"raised ValueError: nested deeper than 64 levels",
                id="DepthLimited",
            ),
        ],
    )
    def test_each_lossy_codec_fails_on_the_default_sample(
        self, codec: TaggedCodec, expected: str
    ) -> None:
        """Each codec that loses something fails, naming the entry and what was lost."""
        with pytest.raises(LawViolation, match=expected):
            assert_json_portable(codec.encode, codec.decode)

    def test_a_value_of_ones_own(self) -> None:
        """A given value is checked instead of the sample, and returned as decoded."""
        codec = TaggedCodec()
        assert assert_json_portable(codec.encode, codec.decode, [(1,), b""]) == [(1,), b""]

    def test_custom_equivalent_is_honoured(self) -> None:
        """A relaxed equivalent accepts what the strict default rejects."""
        codec = ConvertsToUTC()
        with pytest.raises(LawViolation):
            assert_json_portable(codec.encode, codec.decode)
        assert_json_portable(codec.encode, codec.decode, equivalent=equal_entries)

    def test_a_decode_error_names_the_stage(self) -> None:
        """An exception from decode names decode and shows what json.loads gave it."""

        def decode(data: Any) -> object:
            return data["missing"]

        with pytest.raises(LawViolation) as caught:
            assert_json_portable(keep, decode, {"a": 1})
        assert message_of(caught).splitlines()[0].startswith("decode failed: ")
        assert "  from JSON: {'a': 1}" in message_of(caught).splitlines()


def equal_entries(sent: object, got: object) -> bool:
    """Compare two dicts entry by entry with ==, NaN matching NaN: instants, not offsets."""
    assert isinstance(sent, dict)
    assert isinstance(got, dict)
    return sent.keys() == got.keys() and all(
        sent[key] == got[key] or strictly_equal(sent[key], got[key]) for key in sent
    )


# Values JSON holds in Python, and the three things it changes: tuples, bytes, non-str keys.
_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities too: json writes and reads them by default
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
_keys = st.text(max_size=4) | st.integers(-3, 3) | st.tuples(st.integers(0, 2))
values = st.recursive(
    _leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(_keys, children, max_size=4)
    ),
    max_leaves=12,
)


def json_changes(value: object) -> bool:
    """Whether ``value`` holds a tuple, bytes or a non-str key anywhere."""
    if isinstance(value, tuple | bytes):
        return True
    if isinstance(value, list):
        return any(json_changes(item) for item in value)
    if isinstance(value, dict):
        return any(not isinstance(key, str) or json_changes(item) for key, item in value.items())
    return False


class TestProperties:
    """The law over generated values: it catches exactly what json changes."""

    @examples
    @given(value=values)
    def test_a_tagged_codec_always_passes(self, value: object) -> None:
        """Through a correct codec, every value survives both checks."""
        codec = TaggedCodec()
        assert strictly_equal(round_trip(codec.dumps, codec.loads, value), value)
        assert strictly_equal(assert_json_portable(codec.encode, codec.decode, value), value)

    @examples
    @given(value=values)
    def test_plain_json_fails_exactly_when_json_changes_the_value(self, value: object) -> None:
        """Plain json fails iff the value holds a tuple, bytes or a non-str key."""
        try:
            round_trip(plain_json_encode, plain_json_decode, value)
        except LawViolation:
            failed = True
        else:
            failed = False
        assert failed == json_changes(value)
