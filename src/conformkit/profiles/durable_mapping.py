"""
The durable mapping profile: what a mapping store holds survives closing and reopening it.

The API is a :class:`MappingStore`: ``open()`` returns a
:class:`collections.abc.MutableMapping` over one underlying store, and
``close(mapping)`` closes it. Passing the profile establishes that, once a
mapping is closed, a mapping opened later sees every key written, every value
overwritten and every key deleted before the close, the values equal (``==``)
to those written.

The cases write the store's sample domain, as the mapping profile's cases not
about types do: :data:`~conformkit.profiles.mapping.RICH_SAMPLES` unless the store
declares a :class:`~conformkit.profiles.mapping.MappingSamples` in its attribute
``conformkit_samples`` (a store of bytes, say).

It does not establish durability without a close (after a crash or a power
loss), across processes or machines (the cases reopen in the same process),
several mappings open on one store at once, insertion order after reopening,
or anything of the mapping's own behaviour: run :mod:`conformkit.profiles.mapping`
for that.

Bundled implementations: :class:`MemoryMappingStoreImplementation` (the
reference, a :class:`MemoryMappingStore`), :class:`ShelveMappingStoreImplementation`
(:mod:`shelve` over :mod:`dbm.dumb`) and :class:`SqliteMappingStoreImplementation`
(:class:`~conformkit.profiles.mapping.SqliteMapping`), each over a temporary file.
"""

from __future__ import annotations

import functools
import os
import shelve
from collections.abc import Callable, MutableMapping
from typing import Any, Final, Literal, Protocol, TypeAlias, final, get_args

from .._explain import error_line
from .._feature import Feature
from .._implementation import FeatureImplementation
from .._scope import FeatureScope
from .._suite import ContractSuite
from .._util import short_repr
from ._support import PointAt, open_shelf, scope_table, temporary_directory
from .mapping import MappingSamples, SqliteMapping, samples_of

__all__ = [
    "DurableMappingCase",
    "MappingStore",
    "MemoryMappingStore",
    "MemoryMappingStoreImplementation",
    "ShelveMappingStoreImplementation",
    "SqliteMappingStoreImplementation",
    "feature",
    "implementations",
    "suite",
]


# --------------------------------------------------------------------------- API and errors


class MappingStore(Protocol):
    """
    A store that hands out mappings over what it holds, and closes them.

    A store whose mappings hold only some keys and values (bytes, say) declares
    them as a :class:`~conformkit.profiles.mapping.MappingSamples` in its attribute
    ``conformkit_samples``, on its class or on the instance.
    """

    def open(self) -> MutableMapping[Any, Any]:
        """Open the store: a mapping of everything written and not deleted before."""
        ...

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        """Close a mapping that :meth:`open` returned, keeping what was written through it."""
        ...


# --------------------------------------------------------------------------- case names

DurableMappingCase = Literal[
    "durable_across_reopen",
    "overwrite_durable_across_reopen",
    "delete_durable_across_reopen",
]
"""The names of the profile's cases."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[MappingStore, DurableMappingCase](
    "conformkit.profiles.durable_mapping",
    cases=get_args(DurableMappingCase),
    description=(
        "A store of mappings: open() returns a MutableMapping, close(mapping) closes it, and "
        "a mapping opened later sees every write, overwrite and delete made before the close, "
        "over the keys and values the store declares it holds."
    ),
    does_not_establish=(
        "Durability without a close (after a crash or a power loss), across processes or "
        "machines, with several mappings open at once, insertion order after reopening, the "
        "types of the values read back (they are compared with ==), or the mapping's own "
        "behaviour (see conformkit.profiles.mapping)."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

_SEE: Final = PointAt("docs/profile-mapping.md#durable-mapping-failure-modes")


def _samples(api: MappingStore) -> MappingSamples:
    try:
        return samples_of(api)
    except TypeError as exc:
        raise AssertionError(f"blocked: {exc}") from exc


def _write(mapping: MutableMapping[Any, Any], written: dict[Any, Any]) -> None:
    """Write the samples and read them back before any close: else the case is blocked."""
    for key, value in written.items():
        try:
            mapping[key] = value
            got = mapping[key]
        except Exception as exc:
            raise AssertionError(
                f"blocked: writing the sample value {short_repr(value)} under {short_repr(key)} "
                f"and reading it back, before any close, raised {error_line(exc)}; the mapping "
                f"profile's read_your_writes owns that (a store of bytes, say, declares its "
                f"samples as conformkit_samples)"
            ) from exc
        if got != value:
            raise AssertionError(
                f"blocked: wrote the sample value {short_repr(value)} under {short_repr(key)} "
                f"and read back {short_repr(got)} before any close; the mapping profile's "
                f"read_your_writes owns that"
            )


def _check_contents(
    mapping: MutableMapping[Any, Any], expected: dict[Any, Any], story: str
) -> None:
    problems: list[str] = []
    for key, value in expected.items():
        if key not in mapping:
            problems.append(f"{short_repr(key)} is missing")
            continue
        got = mapping[key]
        if got != value:
            problems.append(
                f"{short_repr(key)} reads back {short_repr(got)}, expected {short_repr(value)}"
            )
    problems.extend(
        f"{short_repr(key)} is there, but should not be" for key in mapping if key not in expected
    )
    if problems:
        raise AssertionError(f"after {story}, closing and reopening: {'; '.join(problems)}")


def _reopen_after_writing(
    api: MappingStore, written: dict[Any, Any], story: str, *, owner: str | None = None
) -> MutableMapping[Any, Any]:
    """
    Write the items, close, reopen and check them; return the reopened mapping.

    :param owner: the case that owns this first round trip, when it is not the caller's
        property: its failure then blocks the caller.
    """
    mapping = api.open()
    _write(mapping, written)
    api.close(mapping)
    reopened = api.open()
    try:
        _check_contents(reopened, written, story)
    except AssertionError as exc:
        if owner is None:
            raise
        raise AssertionError(f"blocked: {exc}; {owner} owns that") from exc
    return reopened


@suite.case("durable_across_reopen")
def _durable_across_reopen(api: MappingStore) -> None:
    with _SEE:
        samples = _samples(api)
        written = {samples.key(n): samples.value(n) for n in range(3)}
        keys = ", ".join(short_repr(key) for key in written)
        api.close(_reopen_after_writing(api, written, f"writing {keys}"))


@suite.case("overwrite_durable_across_reopen")
def _overwrite_durable_across_reopen(api: MappingStore) -> None:
    with _SEE:
        samples = _samples(api)
        key, other = samples.key(0), samples.key(1)
        written = {key: samples.value(0), other: samples.value(1)}
        story = f"writing {short_repr(key)} and {short_repr(other)}"
        mapping = _reopen_after_writing(api, written, story, owner="durable_across_reopen")
        mapping[key] = samples.large_value
        api.close(mapping)
        reopened = api.open()
        _check_contents(
            reopened,
            {key: samples.large_value, other: samples.value(1)},
            f"{story}, closing, reopening and overwriting {short_repr(key)} with a larger value",
        )
        api.close(reopened)


@suite.case("delete_durable_across_reopen")
def _delete_durable_across_reopen(api: MappingStore) -> None:
    with _SEE:
        samples = _samples(api)
        gone, kept = samples.key(0), samples.key(1)
        written = {gone: samples.value(0), kept: samples.value(1)}
        story = f"writing {short_repr(gone)} and {short_repr(kept)}"
        mapping = _reopen_after_writing(api, written, story, owner="durable_across_reopen")
        del mapping[gone]
        api.close(mapping)
        reopened = api.open()
        _check_contents(
            reopened,
            {kept: samples.value(1)},
            f"{story}, closing, reopening and deleting {short_repr(gone)}",
        )
        api.close(reopened)


# --------------------------------------------------------------------------- reference stores


class MemoryMappingStore:
    """
    The reference store: it keeps, in memory, what the last :meth:`close` saved.

    :meth:`open` returns a new ``dict`` holding the saved items; :meth:`close`
    saves the mapping's items. Nothing else passes from one mapping to the next.
    """

    def __init__(self) -> None:
        self.saved: dict[Any, Any] = {}

    def open(self) -> MutableMapping[Any, Any]:
        """Return a new ``dict`` of the saved items."""
        return dict(self.saved)

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        """Save the mapping's items, replacing those saved before."""
        self.saved = dict(mapping)


_Closable: TypeAlias = "SqliteMapping | shelve.Shelf[Any]"
"""A mapping over a file, which has a ``close()`` method."""


@final
class _FileStore:
    """Opens mappings over one file, and closes those a failed case left open."""

    def __init__(self, opener: Callable[[], _Closable]) -> None:
        self._opener = opener
        self._open: list[_Closable] = []

    def open(self) -> MutableMapping[Any, Any]:
        mapping = self._opener()
        self._open.append(mapping)
        return mapping

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        for index, candidate in enumerate(self._open):
            if candidate is mapping:  # by identity: mappings compare by their items
                del self._open[index]
                candidate.close()
                return
        raise ValueError(
            f"close() takes a mapping that this store opened and has not closed, got {mapping!r}"
        )

    def close_all(self) -> None:
        while self._open:
            self._open.pop().close()


# --------------------------------------------------------------------------- implementations


class MemoryMappingStoreImplementation(FeatureImplementation[MappingStore, DurableMappingCase]):
    """The reference: a :class:`MemoryMappingStore`."""

    feature = feature
    coverage = feature.coverage()

    def create(self, scope: FeatureScope) -> MappingStore:
        return MemoryMappingStore()


class ShelveMappingStoreImplementation(FeatureImplementation[MappingStore, DurableMappingCase]):
    """:mod:`shelve` over a :mod:`dbm.dumb` database in a temporary directory."""

    feature = feature
    coverage = feature.coverage()

    def create(self, scope: FeatureScope) -> MappingStore:
        directory = temporary_directory(scope, "shelve")
        store = _FileStore(functools.partial(open_shelf, os.path.join(directory, "shelf")))
        scope.defer(store.close_all)
        return store


class SqliteMappingStoreImplementation(FeatureImplementation[MappingStore, DurableMappingCase]):
    """
    :class:`~conformkit.profiles.mapping.SqliteMapping` over one database file.

    Each scope's file, or its table in ``path``, is chosen as
    :class:`~conformkit.profiles.mapping.SqliteMappingImplementation` chooses it.

    :param path: a database file to use instead of temporary ones.
    """

    feature = feature
    coverage = feature.coverage()

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = path

    def create(self, scope: FeatureScope) -> MappingStore:
        database, table = scope_table(scope, self.path, "durable-mapping", "mapping")
        store = _FileStore(functools.partial(SqliteMapping, database, table=table))
        scope.defer(store.close_all)
        return store


implementations: tuple[FeatureImplementation[MappingStore, DurableMappingCase], ...] = (
    MemoryMappingStoreImplementation(),
    ShelveMappingStoreImplementation(),
    SqliteMappingStoreImplementation(),
)
"""One instance of each bundled implementation."""
