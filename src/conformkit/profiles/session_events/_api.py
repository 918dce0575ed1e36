"""The API a session event store implements, its errors and its values."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeAlias, cast, final

from ..._util import short_repr

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


def duplicate_session(session_id: str) -> DuplicateSession:
    return DuplicateSession(f"session {session_id!r} exists already")


def unknown_session(session_id: str, role: str = "session") -> UnknownSession:
    return UnknownSession(f"{role} {session_id!r} was never created")


def sequence_conflict(
    session_id: str, event_id: str, sequence: int, holder: str
) -> SequenceConflict:
    return SequenceConflict(
        f"cannot append event {event_id!r} to session {session_id!r}: sequence {sequence} "
        f"belongs to event {holder!r}"
    )


def clone_json(value: object, what: str) -> JSON:
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
