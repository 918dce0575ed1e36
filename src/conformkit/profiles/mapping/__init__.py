"""
The mapping profile: a :class:`collections.abc.MutableMapping` that behaves like a ``dict``.

Passing it establishes that the mapping reads back what was written; raises
:exc:`KeyError` for a missing key on read, ``del`` and ``pop`` (and that
``pop(key, default)`` returns the default); is a ``MutableMapping`` whose mixin
methods work and agree with iteration; keeps one entry per key, in insertion
order, an overwritten key keeping its place; holds copies, so that mutating the
object written, or the object read back, changes nothing stored; stores ``int``,
``bytes`` and tuple keys and gives them back equal and of the same type; treats
keys as Python's ``==`` does (``1``, ``1.0`` and ``True`` are one key, ``1`` and
``'1'`` two); stores ``None`` as a value like any other; empties on ``clear()``;
raises at the very call that gives it a key or value it cannot hold, never at a
later, unrelated call, and a write that raises leaves no trace; and survives four
threads writing and reading through one shared handle.

The cases that are not about types write the mapping's **sample domain**: by
default :data:`RICH_SAMPLES` (str keys; str, int, float, bytes, tuple and nested
dict values). A mapping that holds only some types, such as bytes or text, declares
the keys and values it holds as a :class:`MappingSamples` in its attribute
``conformkit_samples`` (:data:`STR_SAMPLES`, :data:`BYTES_VALUE_SAMPLES` and
:data:`BYTES_SAMPLES` are ready), read without running the mapping's code; the cases
about types (``read_your_writes`` for the
samples themselves, the copy cases, ``non_str_keys_round_trip``,
``key_equality_follows_python``, ``none_value_round_trips`` and
``errors_surface_at_the_failing_call``) keep their own keys and values.

What ``create`` returns is not required to have every method of a ``MutableMapping``:
``is_mutable_mapping`` fails for one that lacks some, listing them, and a case that
needs a missing method is blocked, naming it; the other cases run.

It does not establish durability across close and reopen (that is
:mod:`conformkit.profiles.durable_mapping`), behaviour across processes,
atomicity of compound operations (``pop``, ``setdefault``, ``update``) under
concurrent writers, crash safety, speed, or Python's equality for key types
the cases do not use (``Decimal``, ``complex``, ``datetime``, custom classes).

Bundled implementations: :class:`DictMappingImplementation` (a ``dict``, the reference),
:class:`ShelveMappingImplementation` (:mod:`shelve` over :mod:`dbm.dumb`) and
:class:`SqliteMappingImplementation` (a :class:`SqliteMapping` over a SQLite file).
"""

from __future__ import annotations

# The cases about values join the one suite that _cases defines.
from . import _cases_values  # noqa: F401
from ._api import BYTES_SAMPLES as BYTES_SAMPLES
from ._api import BYTES_VALUE_SAMPLES as BYTES_VALUE_SAMPLES
from ._api import RICH_SAMPLES as RICH_SAMPLES
from ._api import SAMPLES_ATTRIBUTE as SAMPLES_ATTRIBUTE
from ._api import STR_SAMPLES as STR_SAMPLES
from ._api import MappingAPI as MappingAPI
from ._api import MappingSamples as MappingSamples
from ._api import samples_of as samples_of
from ._cases import MappingCase as MappingCase
from ._cases import feature as feature
from ._cases import suite as suite
from ._reference import DictMappingImplementation as DictMappingImplementation
from ._reference import ShelveMappingImplementation as ShelveMappingImplementation
from ._reference import SqliteMapping as SqliteMapping
from ._reference import SqliteMappingImplementation as SqliteMappingImplementation
from ._reference import implementations as implementations

__all__ = [
    "BYTES_SAMPLES",
    "BYTES_VALUE_SAMPLES",
    "RICH_SAMPLES",
    "SAMPLES_ATTRIBUTE",
    "STR_SAMPLES",
    "DictMappingImplementation",
    "MappingAPI",
    "MappingCase",
    "MappingSamples",
    "ShelveMappingImplementation",
    "SqliteMapping",
    "SqliteMappingImplementation",
    "feature",
    "implementations",
    "samples_of",
    "suite",
]

# Each class and function shows as conformkit.profiles.mapping.Name, whichever submodule
# defines it: in reprs, tracebacks, reports, and where implementations are collected by module.
for _public in (
    DictMappingImplementation,
    MappingSamples,
    ShelveMappingImplementation,
    SqliteMapping,
    SqliteMappingImplementation,
    samples_of,
):
    _public.__module__ = __name__
del _public
