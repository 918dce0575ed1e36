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

from ._api import JSON as JSON
from ._api import DuplicateSession as DuplicateSession
from ._api import Event as Event
from ._api import NotJSON as NotJSON
from ._api import SequenceConflict as SequenceConflict
from ._api import SessionEventsAPI as SessionEventsAPI
from ._api import SessionEventsError as SessionEventsError
from ._api import SessionRecord as SessionRecord
from ._api import UnknownSession as UnknownSession
from ._cases import SessionEventsCase as SessionEventsCase
from ._cases import feature as feature
from ._cases import suite as suite
from ._reference import MemorySessionEvents as MemorySessionEvents
from ._reference import MemorySessionEventsImplementation as MemorySessionEventsImplementation
from ._reference import SqliteSessionEvents as SqliteSessionEvents
from ._reference import SqliteSessionEventsImplementation as SqliteSessionEventsImplementation
from ._reference import implementations as implementations

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

# Each class shows as conformkit.profiles.session_events.Name, whichever submodule defines
# it: in reprs, tracebacks, reports, and where implementations are collected by module.
for _public in (
    DuplicateSession,
    Event,
    MemorySessionEvents,
    MemorySessionEventsImplementation,
    NotJSON,
    SequenceConflict,
    SessionEventsAPI,
    SessionEventsError,
    SessionRecord,
    SqliteSessionEvents,
    SqliteSessionEventsImplementation,
    UnknownSession,
):
    _public.__module__ = __name__
del _public
