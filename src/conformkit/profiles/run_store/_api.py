"""The run-store profile's API: the protocols a store implements, its errors and its record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, final

# --------------------------------------------------------------------------- API and errors

FIELDS: Final = ("params", "status", "result", "error", "labels", "history")
"""
The fields a run may have, the parameters of the ``fidelity`` family.

By convention ``params`` is a dict of the run's inputs, ``status`` a str,
``result`` any JSON value, ``error`` a str or ``None``, ``labels`` a dict of str to
str and ``history`` a list; stores need not enforce these types. Every value is
JSON-native: ``None``, ``bool``, ``int``, a finite ``float``, ``str``, ``list``, or
``dict`` with ``str`` keys, nested, of exactly those types.
"""

# What a new run holds in each field but params; a store gives each run its own copy.
INITIAL: Final[Mapping[str, object]] = {
    "status": "pending",
    "result": None,
    "error": None,
    "labels": {},
    "history": [],
}


class RunStoreError(Exception):
    """Base class of the errors a run store raises for a run or a claim."""


class UnknownRun(RunStoreError, LookupError):
    """No run has this ID: it was never created (or was deleted)."""


class StaleVersion(RunStoreError):
    """An update named a version that is not the run's current one; nothing was changed."""


class AlreadyClaimed(RunStoreError):
    """The step of the run is already claimed: somebody else owns it."""


@final
@dataclass(frozen=True, slots=True)
class Run:
    """
    A snapshot of one run, as the store held it when it was read.

    Each snapshot is the caller's own: changing its ``fields`` changes nothing in
    the store, and the store's later changes do not show in it.

    :ivar run_id: the ID that ``create`` returned.
    :ivar version: 1 when the run is created, one more after each successful update.
    :ivar fields: the run's fields by name: every field the store declares in
        ``persisted_fields``, and any other field of :data:`FIELDS` it keeps.
    """

    run_id: str
    version: int
    fields: Mapping[str, object]


class RunStore(Protocol):
    """
    A store of workflow runs: versioned records with optimistic concurrency, and step claims.

    Field values are JSON-native (see :data:`FIELDS`). A value that is not is
    refused with :exc:`TypeError` or :exc:`ValueError`, or kept exactly; it is never
    silently changed.

    A store may also declare ``persisted_fields``, the fields of :data:`FIELDS` it
    promises to keep (a set of names; see :data:`FIELDS`). It is optional: a store
    without it declares no field. A field it does not declare may be refused by
    ``update`` with :exc:`ValueError`, or kept; never taken and then dropped or
    changed.
    """

    async def create(self, params: Mapping[str, object]) -> str:
        """
        Create a run at version 1 and return its new, unique ID.

        The run holds ``params`` (as a dict) and, in its other fields, the initial
        values: ``status`` ``"pending"``, ``result`` and ``error`` ``None``,
        ``labels`` ``{}`` and ``history`` ``[]``.

        :raises TypeError: for params that are not a mapping of JSON values (or
            the store keeps them exactly instead).
        """
        ...

    async def get(self, run_id: str) -> Run:
        """
        Return a snapshot of the run.

        :raises UnknownRun: if no run has this ID.
        """
        ...

    async def update(
        self, run_id: str, changes: Mapping[str, object], *, expected_version: int
    ) -> Run:
        """
        Set the fields in ``changes`` and bump the version, if the run is at ``expected_version``.

        Fields not named keep their values. Checking the version and writing the
        changes happen as one step: of several updates at the same version, one
        succeeds and the others raise :exc:`StaleVersion`.

        :returns: a snapshot of the run after the update.
        :raises UnknownRun: if no run has this ID.
        :raises StaleVersion: if the run is not at ``expected_version``; nothing changed.
        :raises ValueError: if ``changes`` names ``params`` (fixed at creation) or a
            field the store does not persist; nothing changed.
        :raises TypeError: for a value that is not JSON-native (or the store keeps it
            exactly instead); nothing changed.
        """
        ...

    async def claim_step(self, run_id: str, step: str) -> None:
        """
        Claim the step of the run for the caller; a claim without a lease is held for ever.

        :raises UnknownRun: if no run has this ID.
        :raises AlreadyClaimed: if the step of this run is claimed already.
        """
        ...

    async def list(self) -> Sequence[Run]:
        """A snapshot of every run of the store, each once, as ``get`` would return it."""
        ...


class LeasedRunStore(RunStore, Protocol):
    """
    A :class:`RunStore` whose claims can expire: ``claim_step`` takes a lease.

    The ``claim_lease_expires`` case needs it; a store whose claims never expire
    declares that case ``Unsupported``, with the reason.
    """

    async def claim_step(
        self, run_id: str, step: str, *, now: float | None = None, lease: float | None = None
    ) -> None:
        """
        Claim the step of the run for the caller, for ``lease`` seconds or for ever.

        A claim made at ``now`` with a lease is held while the clock reads less than
        ``now + lease``; from then on it has expired, and the next claim of the step
        takes it over (of several at once, exactly one). A claim without a lease is
        held for ever. Checking and taking a claim happen as one step.

        :param now: the caller's clock, in seconds; ``None`` for the store's own
            (:func:`time.time` in the reference stores).
        :param lease: how many seconds the claim is held; ``None`` for ever.
        :raises UnknownRun: if no run has this ID.
        :raises AlreadyClaimed: if the step of this run is claimed, and not expired.
        :raises ValueError: for a lease that is not a positive finite number, or a
            ``now`` that is not finite; nothing is claimed.
        """
        ...
