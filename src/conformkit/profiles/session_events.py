"""
A session event store: sessions with JSON metadata and parent links, each with
an append-only log of JSON events.

Passing this profile establishes, for one store:

- a session is created once (a second create raises :exc:`DuplicateSession`),
  loads back as created, and a session never created loads as ``None``;
  appending to, replaying or listing the children of an unknown session raises
  :exc:`UnknownSession` and creates nothing;
- :meth:`~SessionEventsAPI.append` is idempotent by ``event_id`` within a
  session: a second append of an ID returns ``False`` and changes nothing,
  whatever its payload or sequence, even when the appends race;
- no two events of a session share a ``sequence`` (:exc:`SequenceConflict`),
  and :meth:`~SessionEventsAPI.replay` returns the events ordered by sequence,
  whatever the order they were appended in;
- metadata and payloads are copied at every boundary: changing what was passed
  to ``create_session`` or ``append``, or what ``load_session`` or ``replay``
  returned, changes nothing stored;
- they are JSON values that come back strictly equal, types included (nested
  lists and dicts, unicode, ``None``, big ints, floats to the last bit), and a
  value JSON cannot hold (a tuple, a set, bytes, NaN, a non-str key) is rejected
  with :exc:`NotJSON` rather than coerced;
- a child keeps its parent's ID, a parent must exist before its children, and
  :meth:`~SessionEventsAPI.children` lists the direct children sorted by ID;
- sessions are isolated: event IDs and sequences are per session.

It does not establish durability across processes or crashes, behaviour with
several processes sharing one database, whether an operation cancelled while
it ran took effect, retention or deletion of sessions and events, the order of
keys inside metadata and payloads, or performance.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sqlite3
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeAlias, cast, final, get_args

import anyio
import anyio.lowlevel

from .._explain import error_line
from .._feature import Feature
from .._implementation import FeatureImplementation
from .._scope import FeatureScope
from .._suite import ContractSuite
from .._util import short_repr
from ..laws import json_portability_sample, race, round_trip_async, strictly_equal
from ._support import (
    AsyncSqliteStore,
    NamedError,
    PathAndNamespace,
    PointAt,
    connect,
    scope_database,
    transaction,
)

__all__ = [
    "JSON",
    "DuplicateSession",
    "Event",
    "MemorySessionEvents",
    "MemorySessionEventsImplementation",
    "NotJSON",
    "SequenceConflict",
    "SessionEventsAPI",
    "SessionEventsCase",
    "SessionEventsError",
    "SessionRecord",
    "SqliteSessionEvents",
    "SqliteSessionEventsImplementation",
    "UnknownSession",
    "feature",
    "implementations",
    "suite",
]


# --------------------------------------------------------------------------- API and errors

JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
"""A JSON value: dicts with str keys, lists, str, int, finite float, bool and ``None``."""

_MAX_SEQUENCE: Final = 2**63 - 1  # the largest integer SQLite stores


@final
@dataclass(frozen=True, slots=True)
class Event:
    """
    One event of a session.

    The event is frozen, but its payload is an ordinary dict or list: stores copy
    it when it is appended and when it is replayed.

    :ivar event_id: identifies the event within its session; appending an ID
        again is a no-op.
    :ivar sequence: the event's position in its session, from 0 to ``2**63 - 1``;
        replay is ordered by it. Gaps are allowed; two events of a session may
        not share one.
    :ivar payload: a JSON value.
    :raises TypeError: if ``event_id`` is not a str or ``sequence`` not an int.
    :raises ValueError: if ``event_id`` is empty or ``sequence`` out of range.
    """

    event_id: str
    sequence: int
    payload: JSON = None

    def __post_init__(self) -> None:
        if not isinstance(self.event_id, str):
            raise TypeError(f"Event.event_id must be a str, got {self.event_id!r}")
        if not self.event_id:
            raise ValueError("Event.event_id must not be empty")
        if isinstance(self.sequence, bool) or not isinstance(self.sequence, int):
            raise TypeError(f"Event.sequence must be an int, got {self.sequence!r}")
        if not 0 <= self.sequence <= _MAX_SEQUENCE:
            raise ValueError(
                f"Event.sequence must be between 0 and 2**63 - 1, got {self.sequence!r}"
            )


@final
@dataclass(frozen=True, slots=True)
class SessionRecord:
    """
    A session as :meth:`SessionEventsAPI.load_session` returns it.

    :ivar session_id: the session's ID.
    :ivar metadata: a copy of the metadata it was created with.
    :ivar parent_id: the ID of its parent session, or ``None`` for a root.
    """

    session_id: str
    metadata: dict[str, JSON] = field(default_factory=dict)
    parent_id: str | None = None


class SessionEventsError(Exception):
    """Base class of the errors a session event store raises."""


class UnknownSession(SessionEventsError, LookupError):
    """The session (or the parent named at creation) was never created."""


class DuplicateSession(SessionEventsError, ValueError):
    """A session with that ID exists already; it is left unchanged."""


class SequenceConflict(SessionEventsError, ValueError):
    """Another event of the session already has that sequence; nothing was stored."""


class NotJSON(SessionEventsError, ValueError):
    """
    Metadata or a payload holds a value JSON cannot hold; nothing was stored.

    Raised before the store is consulted, so also for a duplicate event or an
    unknown session.
    """


class SessionEventsAPI(Protocol):
    """What the consumers of a session event store rely on."""

    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        """
        Create a session with a copy of ``metadata``, as a child of ``parent_id`` if given.

        :raises NotJSON: if ``metadata`` is not a JSON object.
        :raises DuplicateSession: if the session exists; the stored one is unchanged.
        :raises UnknownSession: if ``parent_id`` names no session.
        """
        ...

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """Return a copy of the session, or ``None`` if it was never created."""
        ...

    async def append(self, session_id: str, event: Event) -> bool:
        """
        Store a copy of the event; return ``True`` if it was stored, ``False`` if the
        session already has an event with its ID (whatever that one's payload or
        sequence), in which case nothing changes.

        :raises NotJSON: if the payload is not JSON.
        :raises UnknownSession: if the session was never created.
        :raises SequenceConflict: if another event of the session has the sequence.
        """
        ...

    async def replay(self, session_id: str) -> list[Event]:
        """
        Return copies of the session's events, ordered by sequence.

        :raises UnknownSession: if the session was never created.
        """
        ...

    async def children(self, session_id: str) -> list[str]:
        """
        Return the IDs of the session's direct children, sorted.

        :raises UnknownSession: if the session was never created.
        """
        ...


def _duplicate_session(session_id: str) -> DuplicateSession:
    return DuplicateSession(f"session {session_id!r} exists already")


def _unknown_session(session_id: str, role: str = "session") -> UnknownSession:
    return UnknownSession(f"{role} {session_id!r} was never created")


def _sequence_conflict(
    session_id: str, event_id: str, sequence: int, holder: str
) -> SequenceConflict:
    return SequenceConflict(
        f"cannot append event {event_id!r} to session {session_id!r}: sequence {sequence} "
        f"belongs to event {holder!r}"
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
            found.append(_clone_json(value, "a sample"))
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


# --------------------------------------------------------------------------- reference stores


def _clone_json(value: object, what: str) -> JSON:
    """
    Return a deep copy of ``value``, which must be JSON, exactly: no subclasses.

    :raises NotJSON: naming ``what`` and the path to the first value JSON cannot hold.
    """
    return _clone(value, what, "", set())


def _clone(value: object, what: str, path: str, active: set[int]) -> JSON:
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return cast("JSON", value)
    where = path or "the top level"
    if isinstance(value, float) and kind is float:
        if math.isfinite(value):
            return value
        raise NotJSON(f"{what} is not JSON: {value!r} at {where}; JSON has no NaN or infinity")
    if isinstance(value, list | dict) and kind in (list, dict):
        if id(value) in active:
            raise NotJSON(f"{what} is not JSON: it contains itself at {where}")
        active.add(id(value))
        try:
            if isinstance(value, list):
                return [
                    _clone(item, what, f"{path}[{index}]", active)
                    for index, item in enumerate(value)
                ]
            copy: dict[str, JSON] = {}
            for key, item in value.items():
                if type(key) is not str:
                    raise NotJSON(
                        f"{what} is not JSON: key {key!r} at {where}; JSON object keys are strings"
                    )
                copy[key] = _clone(item, what, f"{path}[{key!r}]", active)
            return copy
        finally:
            active.discard(id(value))
    raise NotJSON(
        f"{what} is not JSON: {kind.__qualname__} {short_repr(value, 60)} at {where}; JSON "
        f"holds only dicts with str keys, lists, str, int, finite float, bool and None"
    )


def _clone_metadata(session_id: str, metadata: object) -> dict[str, JSON]:
    what = f"metadata of session {session_id!r}"
    if type(metadata) is not dict:
        raise NotJSON(f"{what} must be a dict (a JSON object), got {metadata!r}")
    return cast("dict[str, JSON]", _clone_json(metadata, what))


def _clone_payload(event: Event) -> JSON:
    return _clone_json(event.payload, f"payload of event {event.event_id!r}")


@dataclass(slots=True)
class _StoredSession:
    metadata: dict[str, JSON]
    parent_id: str | None
    events: dict[str, Event] = field(default_factory=dict)  # by event ID
    sequences: dict[int, str] = field(default_factory=dict)  # event ID by sequence
    children: set[str] = field(default_factory=set)


class MemorySessionEvents:
    """
    The in-memory reference store: dicts, with every value copied in and out.

    Each operation checks for cancellation, then runs without awaiting, so
    concurrent calls never interleave. Not final: subclass it to inject a
    fault, as the profile's own tests do.
    """

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, _StoredSession] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} of {len(self._sessions)} session(s)>"

    def _session(self, session_id: str) -> _StoredSession:
        stored = self._sessions.get(session_id)
        if stored is None:
            raise _unknown_session(session_id)
        return stored

    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        """See :meth:`SessionEventsAPI.create_session`."""
        await anyio.lowlevel.checkpoint()
        copy = _clone_metadata(session_id, metadata)
        if session_id in self._sessions:
            raise _duplicate_session(session_id)
        if parent_id is not None:
            parent = self._sessions.get(parent_id)
            if parent is None:
                raise _unknown_session(parent_id, "parent session")
            parent.children.add(session_id)
        self._sessions[session_id] = _StoredSession(copy, parent_id)

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionEventsAPI.load_session`."""
        await anyio.lowlevel.checkpoint()
        stored = self._sessions.get(session_id)
        if stored is None:
            return None
        return SessionRecord(
            session_id, _clone_metadata(session_id, stored.metadata), stored.parent_id
        )

    async def append(self, session_id: str, event: Event) -> bool:
        """See :meth:`SessionEventsAPI.append`."""
        await anyio.lowlevel.checkpoint()
        payload = _clone_payload(event)
        stored = self._session(session_id)
        if event.event_id in stored.events:
            return False
        holder = stored.sequences.get(event.sequence)
        if holder is not None:
            raise _sequence_conflict(session_id, event.event_id, event.sequence, holder)
        stored.events[event.event_id] = Event(event.event_id, event.sequence, payload)
        stored.sequences[event.sequence] = event.event_id
        return True

    async def replay(self, session_id: str) -> list[Event]:
        """See :meth:`SessionEventsAPI.replay`."""
        await anyio.lowlevel.checkpoint()
        stored = self._session(session_id)
        return [
            Event(event.event_id, event.sequence, _clone_payload(event))
            for event in sorted(stored.events.values(), key=lambda event: event.sequence)
        ]

    async def children(self, session_id: str) -> list[str]:
        """See :meth:`SessionEventsAPI.children`."""
        await anyio.lowlevel.checkpoint()
        return sorted(self._session(session_id).children)


_SCHEMA: Final = """
PRAGMA journal_mode = WAL;
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS sessions (
    namespace TEXT NOT NULL,
    session_id TEXT NOT NULL,
    parent_id TEXT,
    metadata TEXT NOT NULL,
    PRIMARY KEY (namespace, session_id),
    FOREIGN KEY (namespace, parent_id) REFERENCES sessions (namespace, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (namespace, parent_id, session_id);
CREATE TABLE IF NOT EXISTS events (
    namespace TEXT NOT NULL,
    session_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (namespace, session_id, event_id),
    UNIQUE (namespace, session_id, sequence),
    FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, session_id)
);
COMMIT;
"""

_BUSY_TIMEOUT: Final = 10.0
"""Seconds a connection waits for another process's write lock before giving up."""


def _create_schema(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA foreign_keys = ON")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.executescript(_SCHEMA)


def _dump(value: JSON) -> str:
    # ASCII escapes keep any str, lone surrogates included, storable as SQLite text.
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


@final
class SqliteSessionEvents(AsyncSqliteStore, PathAndNamespace):
    """
    A store in a SQLite database file: metadata and payloads are kept as JSON text.

    The store opens one connection, on first use, and creates the tables if they
    are absent; :meth:`aclose` (or leaving ``async with``) closes it. Every
    operation runs in a worker thread, one at a time, in a transaction of its own
    (writes take the write lock as they begin, so other processes that share the
    file are serialised too); the event loop never blocks on the database. The
    file is switched to WAL journal mode, with ``synchronous = NORMAL``: a
    committed transaction survives the process dying, not the machine.

    Rows belong to a **namespace**, so that several stores can share one file
    without seeing each other's sessions.

    ::

        async with SqliteSessionEvents("sessions.sqlite3") as store:
            await store.create_session("run-1", metadata={"user": "ada"})
            await store.append("run-1", Event("e-1", 0, {"step": "start"}))

    :param path: the database file; created if absent.
    :param namespace: the namespace of this store's rows.
    """

    __slots__ = ("_namespace",)

    _closed_error = RuntimeError

    def __init__(self, path: str | os.PathLike[str], *, namespace: str = "") -> None:
        super().__init__(path)
        self._namespace = namespace

    def __repr__(self) -> str:
        return f"SqliteSessionEvents({self._path!r}, namespace={self._namespace!r})"

    def _open(self) -> sqlite3.Connection:
        return connect(self._path, timeout=_BUSY_TIMEOUT, prepare=_create_schema)

    def _check_known(self, connection: sqlite3.Connection, session_id: str, role: str) -> None:
        """Raise :exc:`UnknownSession` unless the session exists."""
        if not self._exists(connection, session_id):
            raise _unknown_session(session_id, role)

    def _exists(self, connection: sqlite3.Connection, session_id: str) -> bool:
        row = connection.execute(
            "SELECT 1 FROM sessions WHERE namespace = ? AND session_id = ?",
            (self._namespace, session_id),
        ).fetchone()
        return row is not None

    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        """See :meth:`SessionEventsAPI.create_session`."""
        text = _dump(_clone_metadata(session_id, metadata))  # copied before any await
        await self._run(self._create_session, session_id, text, parent_id)

    def _create_session(
        self, connection: sqlite3.Connection, session_id: str, text: str, parent_id: str | None
    ) -> None:
        with transaction(connection):
            if self._exists(connection, session_id):
                raise _duplicate_session(session_id)
            if parent_id is not None:
                self._check_known(connection, parent_id, "parent session")
            connection.execute(
                "INSERT INTO sessions (namespace, session_id, parent_id, metadata) "
                "VALUES (?, ?, ?, ?)",
                (self._namespace, session_id, parent_id, text),
            )

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionEventsAPI.load_session`."""
        return await self._run(self._load_session, session_id)

    def _load_session(
        self, connection: sqlite3.Connection, session_id: str
    ) -> SessionRecord | None:
        with transaction(connection, "DEFERRED"):
            row = connection.execute(
                "SELECT metadata, parent_id FROM sessions WHERE namespace = ? AND session_id = ?",
                (self._namespace, session_id),
            ).fetchone()
        if row is None:
            return None
        return SessionRecord(session_id, json.loads(row[0]), row[1])

    async def append(self, session_id: str, event: Event) -> bool:
        """See :meth:`SessionEventsAPI.append`."""
        text = _dump(_clone_payload(event))  # copied before any await
        return await self._run(self._append, session_id, event.event_id, event.sequence, text)

    def _append(
        self,
        connection: sqlite3.Connection,
        session_id: str,
        event_id: str,
        sequence: int,
        text: str,
    ) -> bool:
        with transaction(connection):
            self._check_known(connection, session_id, "session")
            key = (self._namespace, session_id)
            duplicate = connection.execute(
                "SELECT 1 FROM events WHERE namespace = ? AND session_id = ? AND event_id = ?",
                (*key, event_id),
            ).fetchone()
            if duplicate is not None:
                return False
            holder = connection.execute(
                "SELECT event_id FROM events WHERE namespace = ? AND session_id = ? "
                "AND sequence = ?",
                (*key, sequence),
            ).fetchone()
            if holder is not None:
                raise _sequence_conflict(session_id, event_id, sequence, holder[0])
            connection.execute(
                "INSERT INTO events (namespace, session_id, event_id, sequence, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                (*key, event_id, sequence, text),
            )
            return True

    async def replay(self, session_id: str) -> list[Event]:
        """See :meth:`SessionEventsAPI.replay`."""
        rows = await self._run(
            self._select_in_session,
            "SELECT event_id, sequence, payload FROM events "
            "WHERE namespace = ? AND session_id = ? ORDER BY sequence",
            session_id,
        )
        return [Event(event_id, sequence, json.loads(text)) for event_id, sequence, text in rows]

    async def children(self, session_id: str) -> list[str]:
        """See :meth:`SessionEventsAPI.children`."""
        # SQLite's BINARY collation orders UTF-8 bytes, which is code point order: sorted().
        rows = await self._run(
            self._select_in_session,
            "SELECT session_id FROM sessions WHERE namespace = ? AND parent_id = ? "
            "ORDER BY session_id",
            session_id,
        )
        return [row[0] for row in rows]

    def _select_in_session(
        self, connection: sqlite3.Connection, query: str, session_id: str
    ) -> list[Any]:
        """The rows of ``query`` for a session, which must exist; read in one transaction."""
        with transaction(connection, "DEFERRED"):
            self._check_known(connection, session_id, "session")
            return connection.execute(query, (self._namespace, session_id)).fetchall()

    async def clear(self) -> None:
        """Delete every session and event of this store's namespace, and nothing else."""
        await self._run(self._clear)

    def _clear(self, connection: sqlite3.Connection) -> None:
        with transaction(connection):
            connection.execute("DELETE FROM events WHERE namespace = ?", (self._namespace,))
            connection.execute("DELETE FROM sessions WHERE namespace = ?", (self._namespace,))


# --------------------------------------------------------------------------- implementations


@final
class MemorySessionEventsImplementation(FeatureImplementation[SessionEventsAPI, SessionEventsCase]):
    """The in-memory reference implementation: a fresh :class:`MemorySessionEvents` per scope."""

    feature = feature
    coverage = feature.coverage()

    def create(self, scope: FeatureScope) -> SessionEventsAPI:
        return MemorySessionEvents()


@final
class SqliteSessionEventsImplementation(FeatureImplementation[SessionEventsAPI, SessionEventsCase]):
    """
    The SQLite implementation: a :class:`SqliteSessionEvents` over a real database file.

    By default each scope gets a database file in a temporary directory of its
    own, removed when the scope closes. Given a ``path``, every scope uses that
    file, in a namespace of its own that is cleared when the scope closes; the
    tables stay.

    :param path: a database file to run in, instead of a temporary one.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else os.fspath(path)

    def __repr__(self) -> str:
        where = "temporary files" if self.path is None else repr(self.path)
        return f"<SqliteSessionEventsImplementation on {where}>"

    def create(self, scope: FeatureScope) -> SessionEventsAPI:
        database, namespace = scope_database(scope, self.path, "session-events")
        store = SqliteSessionEvents(database, namespace=namespace or "")
        scope.defer(store.aclose)
        if namespace is not None:
            scope.defer(store.clear)  # runs first: cleanups run in reverse order
        return store


implementations: tuple[FeatureImplementation[SessionEventsAPI, SessionEventsCase], ...] = (
    MemorySessionEventsImplementation(),
    SqliteSessionEventsImplementation(),
)
"""One instance of each bundled implementation."""
