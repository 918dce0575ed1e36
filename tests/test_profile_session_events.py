"""The session event store profile: conformkit.profiles.session_events."""

from __future__ import annotations

import collections
import copy
import dataclasses
import datetime
import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from typing_extensions import override

import conformkit as ck
from conformkit.profiles import session_events
from conformkit.profiles.session_events import (
    JSON,
    DuplicateSession,
    Event,
    MemorySessionEvents,
    MemorySessionEventsImplementation,
    NotJSON,
    SequenceConflict,
    SessionEventsAPI,
    SessionEventsCase,
    SessionRecord,
    SqliteSessionEvents,
    SqliteSessionEventsImplementation,
    UnknownSession,
    feature,
    suite,
)

DOCS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "profile-session-events.md"


def implementation_name(implementation: object) -> str:
    """A test ID: the implementation's class name."""
    return type(implementation).__name__


def failed_cases(report: ck.ContractReport) -> set[str]:
    """The IDs of the report's failed cases."""
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


class TestBundledImplementations:
    """Every bundled implementation passes the whole profile."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "implementation", session_events.implementations, ids=implementation_name
    )
    async def test_passes_with_full_coverage(
        self, implementation: ck.FeatureImplementation[SessionEventsAPI, SessionEventsCase]
    ) -> None:
        """Each bundled implementation passes every case, in the feature's order."""
        report = await ck.run_contract(implementation, suite)
        ck.assert_contract(report, require_full=True)
        assert [result.case_id for result in report.results] == list(feature.cases)

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "implementation", session_events.implementations, ids=implementation_name
    )
    async def test_no_case_is_vacuous(
        self, implementation: ck.FeatureImplementation[SessionEventsAPI, SessionEventsCase]
    ) -> None:
        """Every case calls the API, and together they call every operation."""
        report = await ck.run_contract(implementation, suite, reject_vacuous=True)
        ck.assert_contract(report, require_full=True)
        assert report.unexercised == ()

    def test_bundles_one_memory_and_one_sqlite_implementation(self) -> None:
        """implementations holds one instance of each bundled implementation."""
        assert [type(each) for each in session_events.implementations] == [
            MemorySessionEventsImplementation,
            SqliteSessionEventsImplementation,
        ]

    def test_docs_page_lists_every_case(self) -> None:
        """The profile's page names each case ID in its list of cases."""
        page = DOCS_PAGE.read_text(encoding="utf-8")
        section = page.split("\n## Cases\n", 1)[1].split("\n## ", 1)[0]
        listed = re.findall(r"^- `([a-z_]+)`: ", section, re.MULTILINE)
        assert listed == list(feature.cases)


# --------------------------------------------------------------------------- broken stores


async def check_json(event: Event) -> None:
    """
    Raise NotJSON for an event whose payload JSON cannot hold, as the reference does:
    a broken store below that looks at its events first calls this before, so that
    it breaks one rule only, not also "NotJSON before the store is consulted".
    """
    reference = MemorySessionEvents()
    await reference.create_session("check", metadata={})
    await reference.append("check", event)


class ReportsDuplicatesAsNew(MemorySessionEvents):
    """Stores a duplicate once, but says True every time."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        await super().append(session_id, event)
        return True


class LastWriteWins(MemorySessionEvents):
    """A duplicate replaces the stored event instead of being ignored."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict[tuple[str, str], Event] = {}

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        stored = await super().append(session_id, event)
        if not stored:
            self.latest[session_id, event.event_id] = copy.deepcopy(event)
        return stored

    @override
    async def replay(self, session_id: str) -> list[Event]:
        return [
            copy.deepcopy(self.latest.get((session_id, event.event_id), event))
            for event in await super().replay(session_id)
        ]


class RacyAppend(MemorySessionEvents):
    """Checks for a duplicate, awaits, then writes: racing duplicates all win."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        await check_json(event)
        known = {stored.event_id for stored in await self.replay(session_id)}
        await anyio.lowlevel.checkpoint()  # a round trip to a database
        if event.event_id in known:
            return False
        await super().append(session_id, event)
        return True


class IgnoresSequenceConflicts(MemorySessionEvents):
    """Stores a second event with a sequence that is taken."""

    def __init__(self) -> None:
        super().__init__()
        self.extra: dict[str, list[Event]] = collections.defaultdict(list)

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        try:
            return await super().append(session_id, event)
        except SequenceConflict:  # the defect: stored anyway
            self.extra[session_id].append(copy.deepcopy(event))
            return True

    @override
    async def replay(self, session_id: str) -> list[Event]:
        events = [*await super().replay(session_id), *copy.deepcopy(self.extra[session_id])]
        return sorted(events, key=lambda event: event.sequence)


class ReplaysInAppendOrder(MemorySessionEvents):
    """Replays events in the order they were appended."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple[str, str]] = []

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        stored = await super().append(session_id, event)
        if stored:
            self.order.append((session_id, event.event_id))
        return stored

    @override
    async def replay(self, session_id: str) -> list[Event]:
        events = {event.event_id: event for event in await super().replay(session_id)}
        return [events[event_id] for owner, event_id in self.order if owner == session_id]


class SharesMetadataAtCreate(MemorySessionEvents):
    """Keeps the caller's metadata dict rather than a copy."""

    def __init__(self) -> None:
        super().__init__()
        self.given: dict[str, dict[str, JSON]] = {}

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        await super().create_session(session_id, metadata=metadata, parent_id=parent_id)
        self.given[session_id] = metadata

    @override
    async def load_session(self, session_id: str) -> SessionRecord | None:
        record = await super().load_session(session_id)
        if record is None:
            return None
        return dataclasses.replace(record, metadata=copy.deepcopy(self.given[session_id]))


class SharesMetadataAtLoad(MemorySessionEvents):
    """Returns the same record, and so the same metadata dict, on every load."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: dict[str, SessionRecord] = {}

    @override
    async def load_session(self, session_id: str) -> SessionRecord | None:
        if session_id not in self.loaded:
            record = await super().load_session(session_id)
            if record is None:
                return None
            self.loaded[session_id] = record
        return self.loaded[session_id]


class SharesPayloadAtAppend(MemorySessionEvents):
    """Keeps the caller's event, and so its payload, rather than a copy."""

    def __init__(self) -> None:
        super().__init__()
        self.appended: dict[tuple[str, str], Event] = {}

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        stored = await super().append(session_id, event)
        if stored:
            self.appended[session_id, event.event_id] = event
        return stored

    @override
    async def replay(self, session_id: str) -> list[Event]:
        return [
            copy.deepcopy(self.appended[session_id, event.event_id])
            for event in await super().replay(session_id)
        ]


class SharesPayloadAtReplay(MemorySessionEvents):
    """Returns the same event objects, and so the same payloads, on every replay."""

    def __init__(self) -> None:
        super().__init__()
        self.replayed: dict[tuple[str, str], Event] = {}

    @override
    async def replay(self, session_id: str) -> list[Event]:
        return [
            self.replayed.setdefault((session_id, event.event_id), event)
            for event in await super().replay(session_id)
        ]


class ForgetsParents(MemorySessionEvents):
    """Loads every session as a root."""

    @override
    async def load_session(self, session_id: str) -> SessionRecord | None:
        record = await super().load_session(session_id)
        return None if record is None else dataclasses.replace(record, parent_id=None)


class ChildrenInCreationOrder(MemorySessionEvents):
    """Lists children in the order they were created, not sorted."""

    def __init__(self) -> None:
        super().__init__()
        self.created: list[str] = []

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        await super().create_session(session_id, metadata=metadata, parent_id=parent_id)
        self.created.append(session_id)

    @override
    async def children(self, session_id: str) -> list[str]:
        children = set(await super().children(session_id))
        return [child for child in self.created if child in children]


class AcceptsUnknownParent(MemorySessionEvents):
    """Creates a session whose parent does not exist, as a root."""

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        if parent_id is not None and await self.load_session(parent_id) is None:
            parent_id = None
        await super().create_session(session_id, metadata=metadata, parent_id=parent_id)


class CreatesSessionsOnAppend(MemorySessionEvents):
    """Creates an unknown session when an event is appended to it."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        if await self.load_session(session_id) is None:
            await self.create_session(session_id, metadata={})
        return await super().append(session_id, event)


class LoadsMissingAsEmpty(MemorySessionEvents):
    """Loads a session never created as an empty one instead of None."""

    @override
    async def load_session(self, session_id: str) -> SessionRecord | None:
        record = await super().load_session(session_id)
        return SessionRecord(session_id) if record is None else record


class ReplacesDuplicateSessions(MemorySessionEvents):
    """A second create of a session replaces its metadata instead of failing."""

    def __init__(self) -> None:
        super().__init__()
        self.replaced: dict[str, dict[str, JSON]] = {}

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        try:
            await super().create_session(session_id, metadata=metadata, parent_id=parent_id)
        except DuplicateSession:  # the defect: overwritten instead
            self.replaced[session_id] = copy.deepcopy(metadata)

    @override
    async def load_session(self, session_id: str) -> SessionRecord | None:
        record = await super().load_session(session_id)
        if record is None or session_id not in self.replaced:
            return record
        return dataclasses.replace(record, metadata=copy.deepcopy(self.replaced[session_id]))


class CoercesToJSON(MemorySessionEvents):
    """Passes values through json.dumps and json.loads: tuples become lists, int keys str."""

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        coerced = json.loads(json.dumps(metadata))
        await super().create_session(session_id, metadata=coerced, parent_id=parent_id)

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        coerced = Event(event.event_id, event.sequence, json.loads(json.dumps(event.payload)))
        return await super().append(session_id, coerced)


def seven_digits(value: JSON) -> JSON:
    """The value with every float cut to 7 significant digits, as a REAL(4) column would."""
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, list):
        return [seven_digits(item) for item in value]
    if isinstance(value, dict):
        return {key: seven_digits(item) for key, item in value.items()}
    return value


class LosesFloatPrecision(MemorySessionEvents):
    """Stores payload floats with 7 significant digits."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        cut = Event(event.event_id, event.sequence, seven_digits(event.payload))
        return await super().append(session_id, cut)


class GlobalEventIds(MemorySessionEvents):
    """Treats event IDs as unique across sessions, not per session."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        await check_json(event)
        if event.event_id in self.seen:
            return False
        stored = await super().append(session_id, event)
        if stored:
            self.seen.add(event.event_id)
        return stored


def decoded_tags(data: dict[str, Any]) -> object:
    """Decode a dict of the shape of a tag, as eventsourcing's JSONTranscoder does."""
    if data.keys() == {"_type_", "_data_"}:
        if data["_type_"] == "uuid_hex":
            return uuid.UUID(data["_data_"])
        raise LookupError(f"no transcoding registered for {data['_type_']!r}")
    return data


def extended_json(data: dict[str, Any]) -> object:
    """Decode MongoDB's extended JSON date, {"$date": "..."}."""
    if data.keys() == {"$date"}:
        return datetime.datetime.fromisoformat(data["$date"])
    return data


class Transcodes(MemorySessionEvents):
    """Replays each payload through JSON text, decoded with an object hook."""

    hook: Callable[[dict[str, Any]], object] = staticmethod(decoded_tags)

    def check(self, payload: JSON) -> None:
        """Refuse what the encoding cannot write; the reference refuses what is not JSON."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        self.check(event.payload)
        return await super().append(session_id, event)

    @override
    async def replay(self, session_id: str) -> list[Event]:
        return [
            Event(
                event.event_id,
                event.sequence,
                json.loads(json.dumps(event.payload), object_hook=self.hook),
            )
            for event in await super().replay(session_id)
        ]


class DecodesTypeTags(Transcodes):
    """Decodes every {"_type_", "_data_"} dict it replays, as eventsourcing's transcoder does."""


class DecodesExtendedJson(Transcodes):
    """Decodes every {"$date": ...} dict it replays, as a MongoDB codec does."""

    hook = staticmethod(extended_json)


class WritesUtf8(Transcodes):
    """Writes payloads as UTF-8 text: a lone surrogate has no UTF-8 form, and append raises."""

    hook = staticmethod(lambda data: data)

    @override
    def check(self, payload: JSON) -> None:
        json.dumps(payload, ensure_ascii=False).encode("utf-8")


def unsigned(value: JSON) -> JSON:
    """The value with every -0.0 as 0.0."""
    if isinstance(value, float):
        return abs(value) if value == 0 else value
    if isinstance(value, list):
        return [unsigned(item) for item in value]
    if isinstance(value, dict):
        return {key: unsigned(item) for key, item in value.items()}
    return value


class DropsSignOfZero(MemorySessionEvents):
    """Stores -0.0 as 0.0, as a numeric column may."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        kept = Event(event.event_id, event.sequence, unsigned(event.payload))
        return await super().append(session_id, kept)


class StandardErrors(MemorySessionEvents):
    """Raises KeyError for an unknown session and TypeError or ValueError for what is not JSON,
    as a store that does not import conformkit does."""

    @staticmethod
    def plain(error: Exception) -> Exception:
        if isinstance(error, UnknownSession):
            return KeyError(str(error))
        if isinstance(error, NotJSON):
            return TypeError(str(error))
        return error

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        try:
            await super().create_session(session_id, metadata=metadata, parent_id=parent_id)
        except (UnknownSession, NotJSON) as error:
            raise self.plain(error) from None

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        try:
            return await super().append(session_id, event)
        except (UnknownSession, NotJSON) as error:
            raise self.plain(error) from None

    @override
    async def replay(self, session_id: str) -> list[Event]:
        try:
            return await super().replay(session_id)
        except UnknownSession as error:
            raise self.plain(error) from None

    @override
    async def children(self, session_id: str) -> list[str]:
        try:
            return await super().children(session_id)
        except UnknownSession as error:
            raise self.plain(error) from None


class UnknownSessionAsValueError(StandardErrors):
    """Raises ValueError, which does not mean 'not found', for an unknown session or parent."""

    @override
    @staticmethod
    def plain(error: Exception) -> Exception:
        if isinstance(error, UnknownSession):
            return ValueError(str(error))
        return StandardErrors.plain(error)


class ConflictBeforeDuplicate(MemorySessionEvents):
    """Checks the sequence before the event ID: a retried append whose sequence is taken fails."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        await check_json(event)
        for held in await super().replay(session_id):
            if held.sequence == event.sequence and held.event_id != event.event_id:
                raise SequenceConflict(f"sequence {event.sequence} is taken")
        return await super().append(session_id, event)


class DuplicateBeforeJson(MemorySessionEvents):
    """Answers a duplicate event ID before it looks at the payload: non-JSON returns False."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        try:
            held = await super().replay(session_id)
        except UnknownSession:
            held = []  # the reference says which error comes first
        if any(other.event_id == event.event_id for other in held):
            return False
        return await super().append(session_id, event)


class UnknownSessionBeforeJson(MemorySessionEvents):
    """Looks the session up before it looks at the payload: non-JSON gets UnknownSession."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        await super().replay(session_id)  # raises UnknownSession
        return await super().append(session_id, event)


class DuplicateSessionBeforeJson(MemorySessionEvents):
    """Refuses an existing session ID before it looks at the metadata."""

    @override
    async def create_session(
        self, session_id: str, *, metadata: dict[str, JSON], parent_id: str | None = None
    ) -> None:
        if await self.load_session(session_id) is not None:
            raise DuplicateSession(session_id)
        await super().create_session(session_id, metadata=metadata, parent_id=parent_id)


class ChildrenSortedIgnoringCase(MemorySessionEvents):
    """Sorts children as a person would, ignoring case: not by code point."""

    @override
    async def children(self, session_id: str) -> list[str]:
        return sorted(await super().children(session_id), key=str.casefold)


class SequencesIn32Bits(MemorySessionEvents):
    """Keeps sequences in a 32-bit column: big ones wrap around."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        wrapped = Event(event.event_id, event.sequence % 2**31, event.payload)
        return await super().append(session_id, wrapped)


class SequencesAsFloats(MemorySessionEvents):
    """Keeps sequences in a float column: 2**63 - 1 comes back rounded."""

    @override
    async def replay(self, session_id: str) -> list[Event]:
        return [
            Event(event.event_id, int(float(event.sequence)), event.payload)
            for event in await super().replay(session_id)
        ]


class Broken(ck.FeatureImplementation[SessionEventsAPI, SessionEventsCase]):
    """Runs the profile against a broken store."""

    feature = feature
    coverage = feature.coverage()

    def __init__(self, store: type[MemorySessionEvents]) -> None:
        self.store = store

    def create(self, scope: ck.FeatureScope) -> SessionEventsAPI:
        return self.store()


BROKEN: list[tuple[type[MemorySessionEvents], set[str]]] = [
    (ReportsDuplicatesAsNew, {"append_is_idempotent", "concurrent_appends_are_idempotent"}),
    (LastWriteWins, {"append_is_idempotent", "concurrent_appends_are_idempotent"}),
    (RacyAppend, {"concurrent_appends_are_idempotent"}),
    (IgnoresSequenceConflicts, {"sequence_conflict_rejected"}),
    (ReplaysInAppendOrder, {"replay_orders_by_sequence"}),
    (SharesMetadataAtCreate, {"metadata_cloned_at_create"}),
    (SharesMetadataAtLoad, {"metadata_cloned_at_load"}),
    (SharesPayloadAtAppend, {"payload_cloned_at_append"}),
    (SharesPayloadAtReplay, {"payload_cloned_at_replay"}),
    (ForgetsParents, {"parent_child_links_preserved"}),
    (ChildrenInCreationOrder, {"parent_child_links_preserved"}),
    (AcceptsUnknownParent, {"unknown_parent_rejected"}),
    (CreatesSessionsOnAppend, {"unknown_session_rejected"}),
    (LoadsMissingAsEmpty, {"missing_session_loads_as_none"}),
    (ReplacesDuplicateSessions, {"duplicate_session_rejected"}),
    (CoercesToJSON, {"non_json_rejected"}),
    (LosesFloatPrecision, {"json_round_trips_strictly"}),
    (GlobalEventIds, {"sessions_are_isolated"}),
    (ConflictBeforeDuplicate, {"append_is_idempotent"}),
    (DuplicateBeforeJson, {"non_json_rejected"}),
    (UnknownSessionBeforeJson, {"non_json_rejected"}),
    (DuplicateSessionBeforeJson, {"non_json_rejected"}),
    (ChildrenSortedIgnoringCase, {"parent_child_links_preserved"}),
    (SequencesIn32Bits, {"replay_orders_by_sequence"}),
    (SequencesAsFloats, {"replay_orders_by_sequence"}),
]


TAG_DECODING_JSON: list[tuple[type[MemorySessionEvents], set[str]]] = [
    (DecodesTypeTags, {"json_round_trips_strictly"}),
    (DecodesExtendedJson, {"json_round_trips_strictly"}),
    (WritesUtf8, {"json_round_trips_strictly"}),
    (DropsSignOfZero, {"json_round_trips_strictly"}),
]

STANDARD_EXCEPTIONS: list[tuple[type[MemorySessionEvents], set[str]]] = [
    (StandardErrors, set()),
    (UnknownSessionAsValueError, {"unknown_session_rejected", "unknown_parent_rejected"}),
]


class AppendReturnsNone(MemorySessionEvents):
    """Says None for an event it stored: neither True nor False."""

    @override
    async def append(self, session_id: str, event: Event) -> bool:
        stored = await super().append(session_id, event)
        return None if stored else False  # type: ignore[return-value]


class ReplaysATuple(MemorySessionEvents):
    """Replays a tuple of events, not a list."""

    @override
    async def replay(self, session_id: str) -> list[Event]:
        return tuple(await super().replay(session_id))  # type: ignore[return-value]


class ChildrenATuple(MemorySessionEvents):
    """Lists children in a tuple, not a list."""

    @override
    async def children(self, session_id: str) -> list[str]:
        return tuple(await super().children(session_id))  # type: ignore[return-value]


class LoadsADict(MemorySessionEvents):
    """Loads a session as a dict of its fields, not a SessionRecord."""

    @override
    async def load_session(self, session_id: str) -> SessionRecord | None:
        record = await super().load_session(session_id)
        if record is None:
            return None
        return dataclasses.asdict(record)  # type: ignore[return-value]


# A store that returns the wrong type from one operation: the case that owns the
# operation's return type fails on it, and every other case it fails is blocked,
# naming that owner.
WRONG_TYPES: list[tuple[type[MemorySessionEvents], str]] = [
    (AppendReturnsNone, "append_is_idempotent"),
    (ReplaysATuple, "load_returns_created_session"),
    (ChildrenATuple, "load_returns_created_session"),
    (LoadsADict, "load_returns_created_session"),
]


class TestWrongReturnTypes:
    """A wrong return type fails its owner; the other cases are blocked, naming it."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("store", "owner"), WRONG_TYPES, ids=[s.__name__ for s, _ in WRONG_TYPES]
    )
    async def test_other_cases_are_blocked_naming_the_owner(
        self, store: type[MemorySessionEvents], owner: str
    ) -> None:
        """The owner fails with its own reason; every other failure says blocked: owner."""
        report = await ck.run_contract(Broken(store), suite)
        reasons = {
            result.case_id: result.reason or ""
            for result in report.results
            if result.status is ck.CaseStatus.FAILED
        }
        assert owner in reasons, str(report)
        assert "blocked:" not in reasons.pop(owner)
        misattributed = {
            case_id: reason.splitlines()[0]
            for case_id, reason in reasons.items()
            if "' failed: AssertionError: blocked: " not in reason.splitlines()[0]
            or f"; {owner} owns that" not in reason
        }
        assert misattributed == {}


class TestJsonThatCodecsMistake:
    """A store whose codec takes plain JSON for something else fails the JSON case, alone."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("store", "expected"), TAG_DECODING_JSON, ids=[s.__name__ for s, _ in TAG_DECODING_JSON]
    )
    async def test_fails_only_json_round_trips_strictly(
        self, store: type[MemorySessionEvents], expected: set[str]
    ) -> None:
        """Tag-shaped dicts, lone surrogates and -0.0 must come back as they were sent."""
        report = await ck.run_contract(Broken(store), suite)
        assert failed_cases(report) == expected, str(report)

    def test_reasons_name_what_came_back(self) -> None:
        """The reason shows the tag-shaped dict and the object it came back as."""
        report = ck.run_contract_sync(Broken(DecodesTypeTags), suite)
        reason = report["json_round_trips_strictly"].reason or ""
        assert "type dict vs uuid.UUID" in reason
        report = ck.run_contract_sync(Broken(DropsSignOfZero), suite)
        reason = report["json_round_trips_strictly"].reason or ""
        assert "a zero that lost or gained its sign" in reason
        assert "(see docs/profile-session-events.md#failure-modes)" in reason


class TestStandardExceptions:
    """LookupError for an unknown session and TypeError or ValueError for non-JSON will do."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("store", "expected"),
        STANDARD_EXCEPTIONS,
        ids=[s.__name__ for s, _ in STANDARD_EXCEPTIONS],
    )
    async def test_standard_exceptions_are_accepted(
        self, store: type[MemorySessionEvents], expected: set[str]
    ) -> None:
        """The standard exception that means the same passes; one that means else fails."""
        report = await ck.run_contract(Broken(store), suite)
        assert failed_cases(report) == expected, str(report)
        if expected:
            reason = report["unknown_session_rejected"].reason or ""
            assert "expected UnknownSession (or LookupError), got ValueError" in reason


class TestBrokenImplementations:
    """Each deliberately broken store fails exactly the cases its defect breaks."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(("store", "expected"), BROKEN, ids=[s.__name__ for s, _ in BROKEN])
    async def test_fails_exactly_the_cases_it_breaks(
        self, store: type[MemorySessionEvents], expected: set[str]
    ) -> None:
        """The failed cases are exactly those the defect breaks; every other case passes."""
        report = await ck.run_contract(Broken(store), suite)
        assert failed_cases(report) == expected, str(report)
        assert report.counts()[ck.CaseStatus.PASSED] == len(feature.cases) - len(expected)

    def test_reason_says_what_was_expected_and_what_happened(self) -> None:
        """A failed case's reason names the call, the expected outcome and the actual one."""
        report = ck.run_contract_sync(Broken(ReportsDuplicatesAsNew), suite)
        reason = report["append_is_idempotent"].reason
        assert reason is not None
        assert "append('s', e-1) again, unchanged: expected False, got True" in reason

    def test_round_trip_failure_shows_the_first_difference(self) -> None:
        """A lossy store fails the JSON case with the path to the value that changed."""
        report = ck.run_contract_sync(Broken(LosesFloatPrecision), suite)
        reason = report["json_round_trips_strictly"].reason
        assert reason is not None
        assert reason.startswith(
            "case 'json_round_trips_strictly' failed: conformkit.LawViolation: round trip "
            "(encode=append, decode=replay) did not give back the value sent"
        )
        assert "first difference at [2]: values differ" in reason


# --------------------------------------------------------------------------- the stores


STORES = [
    pytest.param(MemorySessionEventsImplementation(), id="memory"),
    pytest.param(SqliteSessionEventsImplementation(), id="sqlite"),
]


class TestValidation:
    """Both stores reject what is not JSON, with messages that say where it is."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("implementation", STORES)
    async def test_not_json_names_the_value_and_its_path(
        self, implementation: ck.FeatureImplementation[SessionEventsAPI, SessionEventsCase]
    ) -> None:
        """NotJSON says which value JSON cannot hold, and where it is."""
        async with ck.open_feature(implementation) as session:
            store = session.api
            await store.create_session("s", metadata={})
            payload: Any = {"steps": [1, {"at": (2, 3)}]}
            where = r"tuple \(2, 3\) at \['steps'\]\[1\]\['at'\]"
            with pytest.raises(NotJSON, match=rf"^payload of event 'e-1' is not JSON: {where}"):
                await store.append("s", Event("e-1", 0, payload))

    @pytest.mark.anyio
    @pytest.mark.parametrize("implementation", STORES)
    async def test_cycles_and_subclasses_are_not_json(
        self, implementation: ck.FeatureImplementation[SessionEventsAPI, SessionEventsCase]
    ) -> None:
        """A container inside itself, and a dict or str subclass, are rejected too."""
        async with ck.open_feature(implementation) as session:
            store = session.api
            cycle: list[Any] = [1]
            cycle.append(cycle)
            with pytest.raises(NotJSON, match=r"contains itself at \['cycle'\]\[1\]"):
                await store.create_session("s", metadata={"cycle": cycle})
            ordered: Any = collections.OrderedDict(a=1)
            with pytest.raises(NotJSON, match="must be a dict"):
                await store.create_session("s", metadata=ordered)
            await store.create_session("s", metadata={})
            status: Any = ck.CaseStatus.PASSED  # a str subclass
            with pytest.raises(NotJSON, match="CaseStatus"):
                await store.append("s", Event("e-1", 0, [status]))
            assert await store.replay("s") == []

    @pytest.mark.parametrize(
        ("event_id", "sequence", "error"),
        [
            ("", 0, ValueError),
            (1, 0, TypeError),
            ("e", -1, ValueError),
            ("e", 2**63, ValueError),
            ("e", True, TypeError),
            ("e", 1.0, TypeError),
        ],
    )
    def test_event_rejects_malformed_fields(
        self, event_id: Any, sequence: Any, error: type[Exception]
    ) -> None:
        """An Event needs a non-empty str ID and an int sequence from 0 to 2**63 - 1."""
        with pytest.raises(error, match="Event"):
            Event(event_id, sequence)

    def test_largest_sequence_is_accepted(self) -> None:
        """2**63 - 1, the largest SQLite integer, is a valid sequence."""
        assert Event("e", 2**63 - 1).sequence == 2**63 - 1


class TestSqliteSessionEvents:
    """The SQLite store: a real file, JSON text, namespaces, worker threads."""

    @pytest.mark.anyio
    async def test_data_outlives_the_store_object(self, tmp_path: Path) -> None:
        """A second store over the same file sees what the first one wrote."""
        path = tmp_path / "events.sqlite3"
        async with SqliteSessionEvents(path) as first:
            await first.create_session("root", metadata={"user": "ada"})
            await first.create_session("child", metadata={}, parent_id="root")
            await first.append("child", Event("e-1", 3, {"step": "start"}))
        async with SqliteSessionEvents(str(path)) as second:
            assert await second.load_session("child") == SessionRecord("child", {}, "root")
            assert await second.replay("child") == [Event("e-1", 3, {"step": "start"})]
            assert await second.children("root") == ["child"]

    @pytest.mark.anyio
    async def test_metadata_and_payloads_are_json_text(self, tmp_path: Path) -> None:
        """The columns hold JSON text that any SQLite client can read."""
        path = tmp_path / "events.sqlite3"
        async with SqliteSessionEvents(path) as store:
            await store.create_session("s", metadata={"tags": ["ü", 1.5]})
            await store.append("s", Event("e-1", 0, {"ok": True, "none": None}))
        with sqlite3.connect(path) as connection:
            metadata = connection.execute(
                "SELECT typeof(metadata), metadata FROM sessions"
            ).fetchone()
            payload = connection.execute("SELECT typeof(payload), payload FROM events").fetchone()
        connection.close()
        assert metadata[0] == payload[0] == "text"
        assert json.loads(metadata[1]) == {"tags": ["ü", 1.5]}
        assert json.loads(payload[1]) == {"ok": True, "none": None}

    @pytest.mark.anyio
    async def test_namespaces_share_a_file_without_sharing_sessions(self, tmp_path: Path) -> None:
        """Stores in two namespaces of one file each have their own sessions; clear() is local."""
        path = tmp_path / "events.sqlite3"
        async with (
            SqliteSessionEvents(path, namespace="left") as left,
            SqliteSessionEvents(path, namespace="right") as right,
        ):
            await left.create_session("s", metadata={"side": "left"})
            await right.create_session("s", metadata={"side": "right"})
            await left.append("s", Event("e-1", 0, "left"))
            assert await right.replay("s") == []
            await left.clear()
            assert await left.load_session("s") is None
            assert await right.load_session("s") == SessionRecord("s", {"side": "right"})

    @pytest.mark.anyio
    async def test_explicit_path_runs_in_a_namespace_per_case_and_clears_it(
        self, tmp_path: Path
    ) -> None:
        """Given a file, every case runs in a fresh namespace there and leaves no rows."""
        path = tmp_path / "events.sqlite3"
        implementation = SqliteSessionEventsImplementation(path)
        for _ in range(2):  # the second run would find the first one's sessions otherwise
            ck.assert_contract(await ck.run_contract(implementation, suite), require_full=True)
        with sqlite3.connect(path) as connection:
            rows = connection.execute(
                "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM events)"
            ).fetchone()
        connection.close()
        assert rows == (0, 0)

    @pytest.mark.anyio
    async def test_temporary_database_is_removed_with_its_scope(self) -> None:
        """By default each scope gets a database file of its own, removed when it closes."""
        async with ck.open_feature(SqliteSessionEventsImplementation()) as session:
            store = session.api
            assert isinstance(store, SqliteSessionEvents)
            await store.create_session("s", metadata={})
            assert Path(store.path).is_file()  # noqa: ASYNC240 - a quick local check
        assert not Path(store.path).parent.exists()

    @pytest.mark.anyio
    async def test_database_io_runs_in_worker_threads(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every statement runs outside the event loop's thread."""
        threads: list[int] = []

        class RecordingConnection(sqlite3.Connection):
            @override
            def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
                threads.append(threading.get_ident())
                return super().execute(*args, **kwargs)

        connect = sqlite3.connect

        def recording_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection: sqlite3.Connection = connect(*args, factory=RecordingConnection, **kwargs)
            return connection

        monkeypatch.setattr(sqlite3, "connect", recording_connect)
        async with SqliteSessionEvents(tmp_path / "events.sqlite3") as store:
            await store.create_session("s", metadata={})
            await store.append("s", Event("e-1", 0))
            await store.replay("s")
            await store.load_session("s")
            await store.children("s")
            await store.clear()
        assert len(threads) > 6
        assert threading.get_ident() not in threads

    @pytest.mark.anyio
    async def test_aclose_closes_the_connection(self, tmp_path: Path) -> None:
        """After aclose() (or leaving async with) the store refuses work; closing again is fine."""
        async with SqliteSessionEvents(tmp_path / "events.sqlite3") as store:
            await store.create_session("s", metadata={})
        with pytest.raises(RuntimeError, match="is closed"):
            await store.load_session("s")
        await store.aclose()
        never_used = SqliteSessionEvents(tmp_path / "other.sqlite3")
        await never_used.aclose()
        assert not (tmp_path / "other.sqlite3").exists()
