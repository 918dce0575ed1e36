"""The session event profile's case names, feature, suite and cases."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Awaitable
from typing import Any, Final, Literal, cast, get_args

from ..._explain import error_line
from ..._feature import Feature
from ..._suite import ContractSuite
from ..._util import short_repr
from ...laws import json_portability_sample, race, round_trip_async, strictly_equal
from .._support import NamedError, PointAt
from ._api import (
    JSON,
    DuplicateSession,
    Event,
    NotJSON,
    SequenceConflict,
    SessionEventsAPI,
    SessionRecord,
    UnknownSession,
    clone_json,
)

# --------------------------------------------------------------------------- case names

SessionEventsCase = Literal[
    "missing_session_loads_as_none",
    "load_returns_created_session",
    "duplicate_session_rejected",
    "unknown_session_rejected",
    "append_is_idempotent",
    "concurrent_appends_are_idempotent",
    "sequence_conflict_rejected",
    "replay_orders_by_sequence",
    "metadata_cloned_at_create",
    "metadata_cloned_at_load",
    "payload_cloned_at_append",
    "payload_cloned_at_replay",
    "parent_child_links_preserved",
    "unknown_parent_rejected",
    "sessions_are_isolated",
    "json_round_trips_strictly",
    "non_json_rejected",
]
"""The names of the profile's cases."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[SessionEventsAPI, SessionEventsCase](
    "conformkit.profiles.session_events",
    cases=get_args(SessionEventsCase),
    description=(
        "A session event store: sessions with JSON metadata and parent links, each with "
        "an append-only log of JSON events, idempotent by event ID and replayed in "
        "sequence order, copied at every boundary."
    ),
    does_not_establish=(
        "Durability across processes or crashes; behaviour with several processes sharing "
        "one database; whether an operation cancelled while it ran took effect; retention "
        "or deletion of sessions and events; the order of keys inside metadata and "
        "payloads; performance."
    ),
)


suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases


_SEE: Final = PointAt("docs/profile-session-events.md#failure-modes")

# The errors the cases expect, and the standard exceptions that mean the same. No
# standard exception means "duplicate" or "conflict": those two are the profile's own.
_UNKNOWN: Final = NamedError(UnknownSession, (LookupError,))
_DUPLICATE: Final = NamedError(DuplicateSession)
_CONFLICT: Final = NamedError(SequenceConflict)
_NOT_JSON: Final = NamedError(NotJSON, (TypeError, ValueError))  # what json.dumps() raises


async def _raises(expected: NamedError, call: Awaitable[object], doing: str) -> None:
    """Await ``call``, which must raise ``expected``; fail saying what it did instead."""
    try:
        result = await call
    except Exception as error:
        if expected.matches(error):
            return
        raise AssertionError(f"{doing}: expected {expected}, got {error_line(error)}") from error
    raise AssertionError(f"{doing}: expected {expected}, but it returned {result!r}")


async def _create(
    api: SessionEventsAPI,
    session_id: str,
    metadata: dict[str, JSON],
    parent_id: str | None = None,
) -> None:
    """Create a session the case needs; a create that fails blocks the case."""
    try:
        await api.create_session(session_id, metadata=metadata, parent_id=parent_id)
    except Exception as error:
        owner = (
            "load_returns_created_session"
            if parent_id is None
            else ("parent_child_links_preserved")
        )
        raise AssertionError(
            f"blocked: create_session({session_id!r}, ...) raised "
            f"{error_line(error)}; {owner} owns that"
        ) from error


def _expect(what: str, got: object, expected: object) -> None:
    """Fail unless ``got`` is strictly equal to ``expected`` (types included)."""
    if not strictly_equal(expected, got):
        raise AssertionError(f"{what}: expected {expected!r}, got {got!r}")


def _as_dict(value: JSON, what: str) -> dict[str, JSON]:
    if not isinstance(value, dict):
        raise AssertionError(f"expected {what} to be a dict, got {value!r}")
    return value


def _as_list(value: JSON, what: str) -> list[JSON]:
    if not isinstance(value, list):
        raise AssertionError(f"expected {what} to be a list, got {value!r}")
    return value


# The cases that own the types of what the operations return; the other cases are
# blocked by a wrong type, naming the owner, instead of failing on it.
_RETURNS_OWNER: Final = "load_returns_created_session"
_APPEND_OWNER: Final = "append_is_idempotent"


def _check_appended(what: str, stored: object) -> bool:
    if type(stored) is not bool:
        raise AssertionError(
            f"blocked: {what} returned {short_repr(stored)}, neither True nor False; "
            f"{_APPEND_OWNER} owns that"
        )
    return stored


async def _append(api: SessionEventsAPI, session_id: str, event: Event) -> bool:
    """Append; an outcome that is not a bool blocks the case."""
    stored = await api.append(session_id, event)
    return _check_appended(f"append({session_id!r}, {event.event_id!r})", stored)


async def _replay(api: SessionEventsAPI, session_id: str) -> list[Event]:
    """Replay; a result that is not a list blocks the case."""
    events = await api.replay(session_id)
    if type(events) is not list:
        raise AssertionError(
            f"blocked: replay({session_id!r}) returned {short_repr(events)}, not a list; "
            f"{_RETURNS_OWNER} owns that"
        )
    return events


async def _children(api: SessionEventsAPI, session_id: str) -> list[str]:
    """List the children; a result that is not a list blocks the case."""
    children = await api.children(session_id)
    if type(children) is not list:
        raise AssertionError(
            f"blocked: children({session_id!r}) returned {short_repr(children)}, not a list; "
            f"{_RETURNS_OWNER} owns that"
        )
    return children


async def _loaded(api: SessionEventsAPI, session_id: str) -> SessionRecord | None:
    """Load; a result that is neither a SessionRecord nor None blocks the case."""
    record = await api.load_session(session_id)
    if record is not None and type(record) is not SessionRecord:
        raise AssertionError(
            f"blocked: load_session({session_id!r}) returned {short_repr(record)}, not a "
            f"SessionRecord; {_RETURNS_OWNER} owns that"
        )
    return record


async def _load(api: SessionEventsAPI, session_id: str) -> SessionRecord:
    record = await _loaded(api, session_id)
    if record is None:
        raise AssertionError(f"load_session({session_id!r}) returned None for a created session")
    return record


@suite.case("missing_session_loads_as_none")
async def _missing_session_loads_as_none(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "created", {})
        record = await api.load_session("never-created")
        if record is not None:
            raise AssertionError(
                f"load_session('never-created'): expected None for a session never created, "
                f"got {record!r}"
            )


@suite.case("load_returns_created_session")
async def _load_returns_created_session(api: SessionEventsAPI) -> None:
    with _SEE:
        await api.create_session("s-1", metadata={"title": "first", "tags": ["a", "b"]})
        _expect(
            "load_session('s-1') after creating it",
            await api.load_session("s-1"),
            SessionRecord("s-1", {"title": "first", "tags": ["a", "b"]}, None),
        )
        _expect("replay('s-1') of a new session", await api.replay("s-1"), [])
        _expect("children('s-1') of a new session", await api.children("s-1"), [])


@suite.case("duplicate_session_rejected")
async def _duplicate_session_rejected(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "root", {})
        await _create(api, "s-1", {"version": 1})
        await _raises(
            _DUPLICATE,
            api.create_session("s-1", metadata={"version": 2}),
            "create_session('s-1') a second time",
        )
        await _raises(
            _DUPLICATE,
            api.create_session("s-1", metadata={"version": 3}, parent_id="root"),
            "create_session('s-1', parent_id='root') a third time",
        )
        _expect(
            "load_session('s-1') after the rejected creates",
            await _loaded(api, "s-1"),
            SessionRecord("s-1", {"version": 1}, None),
        )
        _expect(
            "children('root') after a rejected create under it", await _children(api, "root"), []
        )


@suite.case("unknown_session_rejected")
async def _unknown_session_rejected(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "known", {})
        await _raises(
            _UNKNOWN,
            api.append("unknown", Event("e-1", 0, {"n": 1})),
            "append('unknown', ...) to a session never created",
        )
        # replay() still refusing 'unknown' shows that the rejected append created nothing.
        await _raises(_UNKNOWN, api.replay("unknown"), "replay('unknown') after the append")
        await _raises(_UNKNOWN, api.children("unknown"), "children('unknown')")


@suite.case("append_is_idempotent")
async def _append_is_idempotent(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        first = Event("e-1", 1, {"text": "original"})
        _expect("append('s', e-1) the first time", await api.append("s", first), True)
        _expect("append('s', e-1) again, unchanged", await api.append("s", first), False)
        changed = Event("e-1", 7, {"text": "changed"})
        _expect(
            "append('s', e-1) again with another payload and sequence",
            await api.append("s", changed),
            False,
        )
        _expect("replay('s') after duplicate appends", await _replay(api, "s"), [first])
        second = Event("e-2", 2, {"text": "second"})
        _expect("append('s', e-2) after the duplicates", await api.append("s", second), True)
        _expect("replay('s') after e-2", await _replay(api, "s"), [first, second])
        # A duplicate is a duplicate first: the sequence it names being taken is no conflict.
        retried = Event("e-1", 2, {"text": "retried"})
        _expect(
            "append('s', e-1) again with sequence 2, which e-2 has",
            await api.append("s", retried),
            False,
        )
        _expect("replay('s') after that", await _replay(api, "s"), [first, second])


@suite.case("concurrent_appends_are_idempotent")
async def _concurrent_appends_are_idempotent(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        outcomes = await race(5, lambda index: api.append("s", Event("e-1", 1, {"attempt": index})))
        stored = [
            _check_appended(f"append('s', 'e-1') call {index}", value)
            for index, value in enumerate(outcomes.all_succeed())
        ]
        winners = [index for index, value in enumerate(stored) if value is True]
        losers = [index for index, value in enumerate(stored) if value is False]
        if len(winners) != 1 or len(losers) != 4:
            raise AssertionError(
                f"5 concurrent appends of event 'e-1': expected one True and four False, got "
                f"{stored!r}"
            )
        winner = Event("e-1", 1, {"attempt": winners[0]})
        _expect("replay('s') after the concurrent duplicates", await _replay(api, "s"), [winner])
        others = [Event(f"e-{index + 2}", index + 2, {"n": index}) for index in range(4)]
        outcomes = await race(4, lambda index: api.append("s", others[index]))
        appended = [
            _check_appended(f"append('s', {others[index].event_id!r})", value)
            for index, value in enumerate(outcomes.all_succeed())
        ]
        _expect("4 concurrent appends of distinct events", appended, [True] * 4)
        # Sorted here, so that only replay_orders_by_sequence fails a store that misorders.
        replayed = sorted(await _replay(api, "s"), key=lambda event: event.sequence)
        _expect("replay('s') after them, sorted by sequence", replayed, [winner, *others])


@suite.case("sequence_conflict_rejected")
async def _sequence_conflict_rejected(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        first = Event("e-1", 1, {"n": 1})
        await _append(api, "s", first)
        await _raises(
            _CONFLICT,
            api.append("s", Event("e-2", 1, {"n": 2})),
            "append('s', e-2) with sequence 1, which e-1 has",
        )
        _expect("replay('s') after the conflict", await _replay(api, "s"), [first])
        second = Event("e-2", 2, {"n": 2})
        _expect(
            "append('s', e-2) with a free sequence after its conflict",
            await _append(api, "s", second),
            True,
        )
        _expect("replay('s') after that", await _replay(api, "s"), [first, second])


@suite.case("replay_orders_by_sequence")
async def _replay_orders_by_sequence(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        # Neither the append order, nor the event IDs, nor the sequences compared as
        # text give sequence order.
        # The largest sequences need 64 bits, and the last 63 of them.
        appended = [
            Event("x", 30, {"n": "x"}),
            Event("y", 5, {"n": "y"}),
            Event("t", 2**63 - 1, {"n": "t"}),
            Event("z", 100, {"n": "z"}),
            Event("w", 12, {"n": "w"}),
            Event("s", 2**31, {"n": "s"}),
            Event("v", 0, {"n": "v"}),
        ]
        for event in appended:
            await _append(api, "s", event)
        expected = sorted(appended, key=lambda event: event.sequence)
        _expect("replay('s') of events appended out of order", await _replay(api, "s"), expected)
        late = Event("u", 7, {"n": "u"})
        await _append(api, "s", late)
        expected = sorted([*appended, late], key=lambda event: event.sequence)
        _expect("replay('s') after a late event with sequence 7", await _replay(api, "s"), expected)


@suite.case("metadata_cloned_at_create")
async def _metadata_cloned_at_create(api: SessionEventsAPI) -> None:
    with _SEE:
        tags: list[JSON] = ["a"]
        nested: dict[str, JSON] = {"depth": 1}
        metadata: dict[str, JSON] = {"title": "draft", "tags": tags, "nested": nested}
        await api.create_session("s", metadata=metadata)
        metadata["title"] = "changed"
        metadata["added"] = True
        tags.append("b")
        nested["depth"] = 2
        _expect(
            "metadata loaded after the caller changed the dict it passed to create_session",
            (await _load(api, "s")).metadata,
            {"title": "draft", "tags": ["a"], "nested": {"depth": 1}},
        )


@suite.case("metadata_cloned_at_load")
async def _metadata_cloned_at_load(api: SessionEventsAPI) -> None:
    with _SEE:
        await api.create_session(
            "s", metadata={"title": "draft", "tags": ["a"], "nested": {"depth": 1}}
        )
        metadata = (await _load(api, "s")).metadata
        metadata["title"] = "changed"
        metadata["added"] = True
        _as_list(metadata.get("tags"), "metadata['tags']").append("b")
        _as_dict(metadata.get("nested"), "metadata['nested']")["depth"] = 2
        _expect(
            "metadata loaded again after the caller changed what load_session returned",
            (await _load(api, "s")).metadata,
            {"title": "draft", "tags": ["a"], "nested": {"depth": 1}},
        )


@suite.case("payload_cloned_at_append")
async def _payload_cloned_at_append(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        items: list[JSON] = [1, 2]
        inner: dict[str, JSON] = {"key": "value"}
        payload: dict[str, JSON] = {"items": items, "inner": inner, "text": "original"}
        await _append(api, "s", Event("e-1", 1, payload))
        payload["text"] = "changed"
        payload["added"] = None
        items.append(3)
        inner["key"] = "changed"
        _expect(
            "replay after the caller changed the payload it appended",
            await _replay(api, "s"),
            [Event("e-1", 1, {"items": [1, 2], "inner": {"key": "value"}, "text": "original"})],
        )


@suite.case("payload_cloned_at_replay")
async def _payload_cloned_at_replay(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        original = Event("e-1", 1, {"items": [1, 2], "inner": {"key": "value"}})
        await _append(api, "s", Event("e-1", 1, {"items": [1, 2], "inner": {"key": "value"}}))
        events = await _replay(api, "s")
        if len(events) != 1:
            raise AssertionError(f"replay('s') after one append: expected 1 event, got {events!r}")
        payload = _as_dict(events[0].payload, "the replayed payload")
        _as_list(payload.get("items"), "payload['items']").append(3)
        _as_dict(payload.get("inner"), "payload['inner']")["key"] = "changed"
        payload["added"] = True
        events.append(Event("e-intruder", 99, None))
        _expect(
            "replay again after the caller changed what replay returned",
            await _replay(api, "s"),
            [original],
        )


@suite.case("parent_child_links_preserved")
async def _parent_child_links_preserved(api: SessionEventsAPI) -> None:
    with _SEE:
        await api.create_session("root", metadata={})
        await api.create_session("root-2", metadata={})
        # Created out of order: children() sorts them, by code point ("C" before "c").
        for child in ("child-c", "Child-d", "child-a", "child-b"):
            await api.create_session(child, metadata={"name": child}, parent_id="root")
        await api.create_session("grandchild", metadata={}, parent_id="child-a")
        _expect("load_session('root').parent_id", (await _load(api, "root")).parent_id, None)
        _expect(
            "load_session('child-c').parent_id", (await _load(api, "child-c")).parent_id, "root"
        )
        _expect(
            "load_session('grandchild').parent_id",
            (await _load(api, "grandchild")).parent_id,
            "child-a",
        )
        _expect(
            "children('root'), direct children sorted by ID",
            await _children(api, "root"),
            ["Child-d", "child-a", "child-b", "child-c"],
        )
        _expect("children('child-a')", await _children(api, "child-a"), ["grandchild"])
        _expect("children('child-b')", await _children(api, "child-b"), [])
        _expect("children('grandchild')", await _children(api, "grandchild"), [])
        _expect("children('root-2')", await _children(api, "root-2"), [])


@suite.case("unknown_parent_rejected")
async def _unknown_parent_rejected(api: SessionEventsAPI) -> None:
    with _SEE:
        await _raises(
            _UNKNOWN,
            api.create_session("orphan", metadata={}, parent_id="no-such-parent"),
            "create_session('orphan', parent_id='no-such-parent')",
        )
        try:  # a create that succeeds shows that the rejected one created nothing
            await api.create_session("orphan", metadata={"second": "try"})
        except Exception as error:
            raise AssertionError(
                f"a session whose parent is unknown must not be created, but creating 'orphan' "
                f"again, without a parent, raised {error_line(error)}"
            ) from error
        _expect(
            "load_session('orphan') created without a parent after the rejected create",
            await _loaded(api, "orphan"),
            SessionRecord("orphan", {"second": "try"}, None),
        )


@suite.case("sessions_are_isolated")
async def _sessions_are_isolated(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "a", {"name": "a"})
        await _create(api, "b", {"name": "b"})
        await _create(api, "a-child", {}, parent_id="a")
        in_a = [Event("e-1", 1, {"in": "a"}), Event("e-2", 2, {"in": "a"})]
        in_b = Event("e-1", 1, {"in": "b"})  # the same ID and sequence as in session a
        _expect("append('a', e-1)", await _append(api, "a", in_a[0]), True)
        _expect("append('b', e-1): event IDs are per session", await _append(api, "b", in_b), True)
        _expect("append('a', e-2)", await _append(api, "a", in_a[1]), True)
        _expect("replay('a')", await _replay(api, "a"), in_a)
        _expect("replay('b')", await _replay(api, "b"), [in_b])
        _expect("load_session('a').metadata", (await _load(api, "a")).metadata, {"name": "a"})
        _expect("load_session('b').metadata", (await _load(api, "b")).metadata, {"name": "b"})
        _expect("children('b')", await _children(api, "b"), [])


def _json_samples() -> list[JSON]:
    """JSON values whose every detail must survive a store, each a fresh copy."""
    return [
        {"nested": {"list": [1, [2, [3, []]], {}], "deep": {"a": {"b": {"c": None}}}}},
        [None, True, False, 0, 1, -1, 0.5, "", [], {}],
        'héllo wörld, 日本語, 🎉🏳️‍🌈, e\u0301, nul \x00, quote " backslash \\ newline \n tab \t',
        {"ключ": "значение", "🔑": ["🎉"], "": "empty key", "with space": 1, "\x00": "nul key"},
        [0.1, 2.5e-308, 1.7976931348623157e308, 5e-324, 1e16, 123456789.123456789, 1.0, -0.5],
        [2**53 + 1, -(2**63), 2**64, 10**30],
        [True, 1, False, 0, 1.0, 0.0],
        None,
        "",
        0,
        3.14159,
        False,
        *_mistakable(),
    ]


def _mistakable() -> list[JSON]:
    """
    The entries of :func:`conformkit.laws.json_portability_sample` that are JSON already
    but that codecs take for something else: tag-shaped dicts, lone surrogates, deep
    nesting, large integers, ``-0.0``.
    """
    found: list[JSON] = []
    for value in json_portability_sample().values():
        try:
            found.append(clone_json(value, "a sample"))
        except NotJSON:
            continue  # one that JSON cannot hold: non_json_rejected's business
    return found


def _as_text(value: JSON) -> str:
    """JSON text that tells every JSON value from every other, ``-0.0`` from ``0.0`` too."""
    return json.dumps(value, sort_keys=True, allow_nan=False)


@suite.case("json_round_trips_strictly")
async def _json_round_trips_strictly(api: SessionEventsAPI) -> None:
    with _SEE:
        samples = _json_samples()
        sequences = itertools.count()

        async def create_session(metadata: dict[str, JSON]) -> str:
            await api.create_session("s", metadata=metadata)
            return "s"

        async def load_session(session_id: str) -> JSON:
            return (await _load(api, session_id)).metadata

        async def append(payload: JSON) -> str:
            sequence = next(sequences)
            await _append(api, "s", Event(f"e-{sequence}", sequence, payload))
            return f"e-{sequence}"

        async def replay(event_id: str) -> JSON:
            for event in await _replay(api, "s"):
                if event.event_id == event_id:
                    return event.payload
            raise AssertionError(f"replay('s') lacks the appended event {event_id!r}")

        for function in (create_session, load_session, append, replay):
            # The law's message names them: "round trip (encode=append, decode=replay) ...".
            function.__qualname__ = function.__name__

        # What load_session, append and replay return, checked before the law relies on it.
        await _create(api, "shapes", {})
        await _load(api, "shapes")
        await _append(api, "shapes", Event("shape", 0, {}))
        await _replay(api, "shapes")

        metadata = {f"sample-{index}": sample for index, sample in enumerate(samples)}
        got = await round_trip_async(create_session, load_session, metadata)
        _expect_signed_zeros("metadata", metadata, got)
        for sample in samples:
            got = await round_trip_async(append, replay, sample)
            _expect_signed_zeros("a payload", sample, got)


def _expect_signed_zeros(what: str, sent: JSON, got: object) -> None:
    """Strictly equal counts 0.0 and -0.0 equal; a JSON store must keep the sign as well."""
    if _as_text(sent) != _as_text(cast("JSON", got)):
        raise AssertionError(
            f"{what} came back strictly equal but not the same JSON, which only a zero that "
            f"lost or gained its sign can do: sent {short_repr(sent)}, got {short_repr(got)}"
        )


def _not_json() -> list[tuple[str, Any]]:
    """Values JSON cannot hold, which a store must reject rather than coerce."""
    return [
        ("a tuple", (1, 2)),
        ("a tuple in a dict", {"when": (2024, 2, 29)}),
        ("an int key", {"nested": {1: "one"}}),
        ("NaN", {"score": math.nan}),
        ("infinity", [math.inf]),
        ("a set", {"tags": {"a"}}),
        ("bytes", [b"raw"]),
    ]


@suite.case("non_json_rejected")
async def _non_json_rejected(api: SessionEventsAPI) -> None:
    with _SEE:
        await _create(api, "s", {})
        for sequence, (what, value) in enumerate(_not_json()):
            await _raises(
                _NOT_JSON,
                api.append("s", Event(f"e-{sequence}", sequence, value)),
                f"append() of a payload holding {what}, {value!r}",
            )
            if not isinstance(value, dict):
                continue
            await _raises(
                _NOT_JSON,
                api.create_session(f"s-{sequence}", metadata=value),
                f"create_session() with metadata holding {what}, {value!r}",
            )
            try:  # a create that succeeds shows that the rejected one stored nothing
                await api.create_session(f"s-{sequence}", metadata={})
            except Exception as error:
                raise AssertionError(
                    f"create_session() with metadata holding {what} must store nothing, but "
                    f"creating {f's-{sequence}'!r} again with valid metadata raised "
                    f"{error_line(error)}"
                ) from error
        _expect("replay('s') after rejected payloads", await _replay(api, "s"), [])
        _expect(
            "append('s', e-0) after its rejection",
            await _append(api, "s", Event("e-0", 0, {})),
            True,
        )
        # NotJSON comes before the store is consulted: for a duplicate too, and an unknown
        # session. DuplicateSession is a ValueError, but it is not the reason here.
        pair: Any = (1, 2)
        await _raises(
            _NOT_JSON,
            api.append("s", Event("e-0", 0, pair)),
            "append('s', e-0) again, with a tuple for its payload",
        )
        await _raises(
            _NOT_JSON,
            api.append("no-such-session", Event("e-0", 0, pair)),
            "append('no-such-session', ...) with a tuple for its payload",
        )
        try:
            await api.create_session("s", metadata={"when": pair})
        except DuplicateSession as error:
            raise AssertionError(
                f"create_session('s') again, with a tuple in its metadata: expected {_NOT_JSON}, "
                f"got {error_line(error)}"
            ) from error
        except Exception as error:
            if not _NOT_JSON.matches(error):
                raise AssertionError(
                    f"create_session('s') again, with a tuple in its metadata: expected "
                    f"{_NOT_JSON}, got {error_line(error)}"
                ) from error
        else:
            raise AssertionError(
                f"create_session('s') again, with a tuple in its metadata: expected {_NOT_JSON}, "
                f"but it returned"
            )
