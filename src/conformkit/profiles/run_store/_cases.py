"""The run-store profile's case names, its feature and suite, and the cases."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import Final, Literal, cast, get_args

from ..._feature import Feature
from ..._suite import ContractSuite
from ..._util import short_repr
from ...laws import LawViolation, race, round_trip_async, strictly_equal
from .._support import (
    NamedError,
    PointAt,
)
from ._api import (
    FIELDS,
    INITIAL,
    AlreadyClaimed,
    LeasedRunStore,
    Run,
    RunStore,
    StaleVersion,
    UnknownRun,
)

# --------------------------------------------------------------------------- case names

_PlainCase = Literal[
    "create_then_get",
    "unknown_run",
    "update_bumps_version",
    "stale_update_rejected",
    "concurrent_updates_single_winner",
    "invalid_change_rejected",
    "claim_single_owner",
    "claims_are_per_step",
    "claim_lease_expires",
    "list_runs",
]
RunStoreCase = _PlainCase | Literal["fidelity"]
"""The names of the profile's cases, and of its family."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[RunStore, RunStoreCase](
    "conformkit.profiles.run_store",
    cases=get_args(_PlainCase),
    families={"fidelity": FIELDS},
    description=(
        "A workflow run store: runs read back as written, field by field; updates are "
        "compare-and-set on a version; each step of a run is claimed by exactly one caller."
    ),
    does_not_establish=(
        "Cross-host safety: the races run in one process (for SQLite, on separate "
        "connections and threads against one file), which says nothing about several "
        "hosts sharing a database. Nor durability across crashes, claim release, that a "
        "store's own clock is right (leases are checked on the callers' clock), fairness "
        "among contenders, or performance."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

CONTENDERS: Final = 8
"""How many calls each race starts at once."""

_NO_SUCH_RUN: Final = "no-such-run"


_ABSENT: Final = object()


def _declaration(api: RunStore, *, owner: bool = False) -> object:
    """
    The store's ``persisted_fields`` as it is, ``frozenset()`` when it has none:
    looked up without running the store's own ``__getattr__``. Reading it may
    raise: that fails create_then_get (``owner``) and blocks the other cases.
    """
    if inspect.getattr_static(api, "persisted_fields", _ABSENT) is _ABSENT:
        return frozenset()
    try:
        # Not a member of RunStore, for mypy; a property of the store's may run here.
        return cast("object", getattr(api, "persisted_fields"))  # noqa: B009
    except Exception as exc:
        what = f"reading the persisted_fields of {type(api).__qualname__} raised {exc!r}"
        raise AssertionError(
            what if owner else f"blocked: {what}; create_then_get owns that"
        ) from exc


def _declared(api: RunStore) -> frozenset[str]:
    """
    The fields of :data:`FIELDS` the store declares; a declaration that is not a
    collection of names counts as none here, and fails create_then_get.
    """
    declaration = _declaration(api)
    if isinstance(declaration, str | bytes) or not isinstance(declaration, Collection):
        return frozenset()
    return frozenset(name for name in FIELDS if name in declaration)


def _updatable(api: RunStore) -> list[str]:
    """The declared fields an update may change, in :data:`FIELDS` order."""
    declared = _declared(api)
    return [name for name in FIELDS if name != "params" and name in declared]


def _change(name: str, index: int) -> object:
    """A value of field ``name`` that differs for each ``index``."""
    values: dict[str, object] = {
        "status": f"running-{index}",
        "result": {"writer": index},
        "error": f"writer {index} failed",
        "labels": {"writer": str(index)},
        "history": [{"writer": index}],
    }
    return values[name]


def _field(run: Run, name: str) -> object:
    if name not in run.fields:
        raise AssertionError(
            f"expected run {run.run_id!r} to have field {name!r}, but it has only "
            f"{sorted(run.fields)!r}"
        )
    return run.fields[name]


def _check_same(expected: Run, got: Run, what: str) -> None:
    if got.version != expected.version or not strictly_equal(
        dict(expected.fields), dict(got.fields)
    ):
        raise AssertionError(
            f"{what}: expected version {expected.version} with {dict(expected.fields)!r}, "
            f"got version {got.version!r} with {dict(got.fields)!r}"
        )


_SEE: Final = PointAt("docs/profile-run-store.md#failure-modes")

# The errors the cases expect, and the standard exceptions that mean the same. No
# standard exception means "stale" or "claimed": those two are the profile's own.
_UNKNOWN: Final = NamedError(UnknownRun, (LookupError,))
_STALE: Final = NamedError(StaleVersion)
_CLAIMED: Final = NamedError(AlreadyClaimed)
_REFUSED: Final = NamedError(ValueError)


async def _expect(error: NamedError, what: str, call: Awaitable[object]) -> None:
    """Await ``call``; fail unless it raises ``error``."""
    try:
        result = await call
    except Exception as exc:
        if error.matches(exc):
            return
        raise AssertionError(f"expected {what} to raise {error}, but it raised {exc!r}") from exc
    raise AssertionError(f"expected {what} to raise {error}, but it returned {result!r}")


async def _get(api: RunStore, run_id: str) -> Run:
    """Get a run; a result that is not a Run blocks the case: create_then_get owns that."""
    run = await api.get(run_id)
    if not isinstance(run, Run):
        raise AssertionError(
            f"blocked: get({run_id!r}) returned {short_repr(run)}, not a Run; "
            f"create_then_get owns that"
        )
    return run


async def _update(
    api: RunStore, run_id: str, changes: Mapping[str, object], *, expected_version: int
) -> Run:
    """
    Apply a valid change at the current version; one that raises blocks the case:
    update_bumps_version owns that.
    """
    try:
        return await api.update(run_id, changes, expected_version=expected_version)
    except Exception as exc:
        raise AssertionError(
            f"blocked: update({run_id!r}, {dict(changes)!r}, expected_version="
            f"{expected_version!r}) of a valid change raised {exc!r}; update_bumps_version "
            f"owns that"
        ) from exc


@suite.case("create_then_get")
async def _create_then_get(api: RunStore) -> None:
    with _SEE:
        declaration = _declaration(api, owner=True)
        if (
            isinstance(declaration, str | bytes)
            or not isinstance(declaration, Collection)
            or not set(declaration) <= set(FIELDS)
        ):
            raise AssertionError(
                f"expected persisted_fields to be a collection of names among {FIELDS!r}, "
                f"got {declaration!r}"
            )
        persisted = _declared(api)
        params: dict[str, object] = {"input": "s3://bucket/key", "retries": 3}
        first = await api.create(copy.deepcopy(params))
        second = await api.create({"input": "other"})
        if not isinstance(first, str) or not isinstance(second, str):
            raise AssertionError(
                f"expected create to return str run IDs, got {first!r}, {second!r}"
            )
        if first == second:
            raise AssertionError(
                f"expected two creates to return distinct run IDs, got {first!r} twice"
            )
        third = await api.create(copy.deepcopy(params))
        if third == first:
            raise AssertionError(
                f"expected two creates of the same params to return distinct run IDs, got "
                f"{first!r} twice"
            )
        run = await api.get(first)
        if not isinstance(run, Run):
            raise AssertionError(f"expected get({first!r}) to return a Run, got {short_repr(run)}")
        if run.run_id != first:
            raise AssertionError(f"expected get({first!r}) to return that run, got {run.run_id!r}")
        if run.version != 1:
            raise AssertionError(f"expected a new run at version 1, got version {run.version!r}")
        if not persisted <= set(run.fields) <= set(FIELDS):
            raise AssertionError(
                f"expected a run's fields to be among {FIELDS!r} and to include every one "
                f"of the persisted_fields {sorted(persisted)!r}, got {sorted(run.fields)!r}"
            )
        initial = {"params": params, **INITIAL}
        expected = {name: value for name, value in initial.items() if name in run.fields}
        if not strictly_equal(expected, dict(run.fields)):
            raise AssertionError(
                f"expected a new run to hold {expected!r}, got {dict(run.fields)!r}"
            )
        other = await _get(api, second)
        if other.run_id != second or (
            "params" in run.fields
            and not strictly_equal(other.fields.get("params"), {"input": "other"})
        ):
            raise AssertionError(
                f"expected get({second!r}) to return the second run with its own params, got "
                f"{other!r}"
            )


@suite.case("unknown_run")
async def _unknown_run(api: RunStore) -> None:
    with _SEE:
        await _expect(_UNKNOWN, f"get({_NO_SUCH_RUN!r})", api.get(_NO_SUCH_RUN))
        await _expect(
            _UNKNOWN,
            f"update({_NO_SUCH_RUN!r}, {{}}, expected_version=1)",
            api.update(_NO_SUCH_RUN, {}, expected_version=1),
        )
        await _expect(
            _UNKNOWN,
            f"claim_step({_NO_SUCH_RUN!r}, 'extract')",
            api.claim_step(_NO_SUCH_RUN, "extract"),
        )


def _check_applied(expected: Run, got: Run, what: str) -> None:
    """The version, and every field equal (``==``: keeping types exactly is fidelity's)."""
    if got.version != expected.version or dict(got.fields) != dict(expected.fields):
        raise AssertionError(
            f"{what}: expected version {expected.version} with {dict(expected.fields)!r}, "
            f"got version {got.version!r} with {dict(got.fields)!r}"
        )


@suite.case("update_bumps_version")
async def _update_bumps_version(api: RunStore) -> None:
    with _SEE:
        run_id = await api.create({"input": "a"})
        before = await _get(api, run_id)
        updatable = _updatable(api)
        for index in (1, 2):
            # Every field the store declares: a field it declares but drops fails here,
            # whatever fidelity members the implementation claims.
            changes = {name: _change(name, index) for name in updatable}
            try:
                updated = await api.update(
                    run_id, copy.deepcopy(changes), expected_version=before.version
                )
            except Exception as exc:
                raise AssertionError(
                    f"expected update({run_id!r}, {changes!r}, expected_version="
                    f"{before.version!r}), a valid change at the current version, to apply, "
                    f"but it raised {exc!r}"
                ) from exc
            expected = Run(run_id, before.version + 1, {**before.fields, **changes})
            if not isinstance(updated, Run):
                raise AssertionError(
                    f"expected update({run_id!r}, ...) to return the run as updated, a Run, got "
                    f"{short_repr(updated)}"
                )
            if updated.run_id != run_id:
                raise AssertionError(
                    f"expected update({run_id!r}, ...) to return that run, got {updated.run_id!r}"
                )
            _check_applied(
                expected,
                updated,
                f"update({run_id!r}, {changes!r}) at the current version returned",
            )
            _check_applied(
                expected, await _get(api, run_id), f"after update({run_id!r}, {changes!r}) get"
            )
            before = updated
        if updatable:  # the fields an update does not name keep their values
            changes = {updatable[0]: _change(updatable[0], 3)}
            await api.update(run_id, copy.deepcopy(changes), expected_version=before.version)
            expected = Run(run_id, before.version + 1, {**before.fields, **changes})
            _check_applied(
                expected,
                await _get(api, run_id),
                f"after update({run_id!r}, {changes!r}), which names no other field, get",
            )


@suite.case("stale_update_rejected")
async def _stale_update_rejected(api: RunStore) -> None:
    with _SEE:
        run_id = await api.create({"input": "a"})
        start = await _get(api, run_id)
        names = _updatable(api)[:1]
        await _update(
            api, run_id, {name: _change(name, 1) for name in names}, expected_version=start.version
        )
        updated = await _get(api, run_id)
        for stale in (start.version, updated.version + 1):
            changes = {name: _change(name, 2) for name in names}
            await _expect(
                _STALE,
                f"update({run_id!r}, {changes!r}, expected_version={stale}) of a run at version "
                f"{updated.version}",
                api.update(run_id, changes, expected_version=stale),
            )
            _check_same(updated, await _get(api, run_id), "after an update rejected as stale, get")


@suite.case("concurrent_updates_single_winner")
async def _concurrent_updates_single_winner(api: RunStore) -> None:
    with _SEE:
        run_id = await api.create({"input": "a"})
        start = await _get(api, run_id)
        names = _updatable(api)[:1]

        def changes(index: int) -> dict[str, object]:
            return {name: _change(name, index) for name in names}

        outcomes = await race(
            CONTENDERS,
            lambda index: api.update(run_id, changes(index), expected_version=start.version),
        )
        try:
            winner = outcomes.exactly_one_wins(StaleVersion)
        except LawViolation:
            if not any(outcome.succeeded for outcome in outcomes):
                # No call won: whether a lone update at that version applies tells a
                # lost race from an update that never works.
                await _update(api, run_id, changes(0), expected_version=start.version)
            raise
        expected = Run(run_id, start.version + 1, {**start.fields, **changes(winner.index)})
        _check_same(
            expected,
            await _get(api, run_id),
            f"after {CONTENDERS} updates raced at version {start.version} and call "
            f"{winner.index} won, get",
        )


@suite.case("invalid_change_rejected")
async def _invalid_change_rejected(api: RunStore) -> None:
    with _SEE:
        run_id = await api.create({"input": "a"})
        before = await _get(api, run_id)
        declared = _declared(api)
        valid = (_updatable(api) or ["status"])[0]
        attempts: list[dict[str, object]] = [
            {"params": {"changed": True}},
            {"no_such_field": {"changed": True}},
            # A valid change next to an invalid one is not half applied.
            {valid: _change(valid, 1), "no_such_field": True},
        ]
        for changes in attempts:
            await _expect(
                _REFUSED,
                f"update({run_id!r}, {changes!r}) of a store declaring {sorted(declared)!r}",
                api.update(run_id, changes, expected_version=before.version),
            )
            _check_same(
                before, await _get(api, run_id), f"after the refused update {changes!r}, get"
            )
        for name in FIELDS:
            if name == "params" or name in declared:
                continue
            # A field the store does not declare is refused, or kept; never dropped.
            changes = {name: {"changed": True}}
            what = f"update({run_id!r}, {changes!r}) of a field the store does not declare"
            try:
                await api.update(run_id, changes, expected_version=before.version)
            except Exception as exc:
                if not _REFUSED.matches(exc):
                    raise AssertionError(
                        f"expected {what} to raise {_REFUSED} or to keep it, but it raised {exc!r}"
                    ) from exc
                _check_same(before, await _get(api, run_id), f"after the refused {what}, get")
                continue
            after = await _get(api, run_id)
            if after.fields.get(name, _ABSENT) != changes[name]:
                shown = (
                    f"{name} {after.fields[name]!r}"
                    if name in after.fields
                    else f"no {name!r} field"
                )
                raise AssertionError(
                    f"expected {what} to raise {_REFUSED} or to keep it, but it was taken and the "
                    f"run then had {shown}: dropped silently"
                )
            before = after


@suite.case("claim_single_owner")
async def _claim_single_owner(api: RunStore) -> None:
    with _SEE:
        run_id = await api.create({"input": "a"})
        outcomes = await race(CONTENDERS, lambda index: api.claim_step(run_id, "extract"))
        outcomes.exactly_one_wins(AlreadyClaimed)
        await _expect(
            _CLAIMED,
            f"a later claim_step({run_id!r}, 'extract')",
            api.claim_step(run_id, "extract"),
        )


@suite.case("claims_are_per_step")
async def _claims_are_per_step(api: RunStore) -> None:
    with _SEE:
        first = await api.create({"input": "a"})
        second = await api.create({"input": "b"})
        for run_id, step in ((first, "extract"), (first, "load"), (second, "extract")):
            try:
                await api.claim_step(run_id, step)
            except AlreadyClaimed as exc:
                raise AssertionError(
                    f"expected claim_step({run_id!r}, {step!r}) to succeed: only other steps or "
                    f"other runs were claimed before; it raised {exc!r}"
                ) from exc


# A claim's start and lease on the callers' clock: the expiry, 1700000001.75, is
# a fraction of a second, so an expiry kept in whole seconds, rounded either way,
# shows; probes a millisecond either side of it leave room for a store that keeps
# milliseconds, and for either convention at the instant itself (expired at it,
# or only after it).
_START: Final = 1_700_000_000.5
_LEASE: Final = 1.25
_BEFORE: Final = 0.001


@suite.case("claim_lease_expires")
async def _claim_lease_expires(store: RunStore) -> None:
    # A store without leases declares this case unsupported; one that runs it
    # takes the keywords, or fails here with the TypeError that says it does not.
    api = cast("LeasedRunStore", store)
    with _SEE:
        run_id = await api.create({"input": "a"})
        expiry = _START + _LEASE
        await api.claim_step(run_id, "extract", now=_START, lease=_LEASE)
        again = f"claim_step({run_id!r}, 'extract', now={_START!r}, lease={_LEASE!r})"
        try:  # refused at the same instant: a claim, whatever its lease, is exclusive
            result: object = await api.claim_step(run_id, "extract", now=_START, lease=_LEASE)  # type: ignore[func-returns-value]
        except Exception as exc:
            if not _CLAIMED.matches(exc):
                raise
        else:
            raise AssertionError(
                f"blocked: {again} at the instant of the first claim returned {result!r} "
                f"instead of raising {_CLAIMED}; claim_single_owner owns that"
            )
        await _expect(
            _CLAIMED,
            f"claim_step({run_id!r}, 'extract', now={expiry - _BEFORE!r}, lease={_LEASE!r}) "
            f"while the claim made at now={_START!r} for {_LEASE!r} s holds",
            api.claim_step(run_id, "extract", now=expiry - _BEFORE, lease=_LEASE),
        )
        after = expiry + _BEFORE
        outcomes = await race(
            CONTENDERS,
            lambda index: api.claim_step(run_id, "extract", now=after, lease=_LEASE),
        )
        outcomes.exactly_one_wins(AlreadyClaimed)
        # The winner's lease runs from its own claim, not the expired one's.
        later = after + _LEASE - _BEFORE
        await _expect(
            _CLAIMED,
            f"claim_step({run_id!r}, 'extract', now={later!r}) while the claim taken over at "
            f"now={after!r} for {_LEASE!r} s holds",
            api.claim_step(run_id, "extract", now=later, lease=_LEASE),
        )
        await api.claim_step(run_id, "load", now=_START)
        far = _START + 10**9
        await _expect(
            _CLAIMED,
            f"claim_step({run_id!r}, 'load', now={far!r}) of a step claimed without a lease",
            api.claim_step(run_id, "load", now=far, lease=_LEASE),
        )


@suite.case("list_runs")
async def _list_runs(api: RunStore) -> None:
    with _SEE:
        before = {run.run_id for run in await api.list()}
        created = [await api.create({"input": name}) for name in ("a", "b", "c")]
        current = await _get(api, created[1])
        changes = {name: _change(name, 1) for name in _updatable(api)[:1]}
        await _update(api, created[1], changes, expected_version=current.version)
        result: object = await api.list()
        if not isinstance(result, Sequence) or isinstance(result, str):
            raise AssertionError(
                f"expected list() to return a sequence of Run, got {short_repr(result)}"
            )
        runs: list[object] = list(result)
        strays = [run for run in runs if not isinstance(run, Run)]
        if strays:
            raise AssertionError(f"expected list() to give Run objects, got {short_repr(strays)}")
        listed = cast("list[Run]", runs)
        ids = [run.run_id for run in listed]
        repeated = sorted({run_id for run_id in ids if ids.count(run_id) > 1})
        if repeated:
            raise AssertionError(
                f"expected list() to show each run once, but it repeats {repeated!r}"
            )
        new = set(ids) - before
        if new != set(created):
            raise AssertionError(
                f"expected list() to show the runs created, {created!r}, but it "
                f"shows {sorted(new)!r} of the new ones"
            )
        shown = {run.run_id: await _get(api, run.run_id) for run in listed if run.run_id in created}
        for run in listed:
            if run.run_id in shown:
                _check_applied(shown[run.run_id], run, f"list() against get({run.run_id!r})")
        for run in listed:  # each snapshot is the caller's own
            for value in run.fields.values():
                _change_in_place(value)
        for run_id, expected in shown.items():
            _check_applied(
                expected,
                await _get(api, run_id),
                f"after the caller changed the objects list() gave, get({run_id!r})",
            )


# Values of each field that a store must give back exactly: unicode and NUL, int
# against float, big ints, float edges, empty containers, nesting, None after a value.
_TEXT: Final = "naïve café ☃ 𝄞 \x00 tab\t newline\n trailing space "
_SAMPLES: Final[Mapping[str, tuple[object, ...]]] = {
    "params": (
        {
            "input": "s3://bucket/key",
            "retries": 3,
            "ratio": 0.1,
            "threshold": 1.0,
            "big": 2**70,
            "negative_zero": -0.0,
            "tiny": 5e-324,
            "huge": 1.7976931348623157e308,
            "flag": True,
            "off": False,
            "missing": None,
            "text": _TEXT,
            "nested": {"items": [1, "1", 1.0, True, None, [], {}]},
            "": "an empty key",
        },
        {},
    ),
    "status": ("running", _TEXT, "", "pending"),
    "result": (
        {"rows": 12, "mean": 2.5, "items": [1, 2.0, "3", None, False, [[]]]},
        [],
        0,
        1.0,
        -(2**64),
        "done",
        True,
        None,
    ),
    "error": ("ValueError: bad input\n  in step 'load'", _TEXT, "", None),
    "labels": ({"team": "data", "env": "prod", "ünïcødé": "✓", "empty": ""}, {}),
    "history": (
        [
            {"step": "extract", "at": 1700000000.125, "attempt": 1},
            {"step": "load", "at": 1700000001, "attempt": 2, "error": None},
        ],
        [],
    ),
}
# Values JSON cannot hold: a store refuses each, or keeps it exactly.
_FOREIGN: Final = (
    {"point": (1, 2)},
    {"by_number": {1: "one"}},
    {"raw": b"\x00\xff"},
)
_MARK: Final = "conformkit-changed-by-the-caller"


def _change_in_place(value: object) -> None:
    if isinstance(value, dict):
        value[_MARK] = True
    elif isinstance(value, list):
        value.append(_MARK)


async def _reach(api: RunStore, name: str) -> str:
    """
    A run whose field ``name`` takes a plain value, as create_then_get and
    update_bumps_version check; when it does not, the fidelity case is blocked.
    """
    run_id = await api.create({"input": "a"})
    if name == "params":
        got = _field(await _get(api, run_id), name)
        if got != {"input": "a"}:
            raise AssertionError(
                f"blocked: create({{'input': 'a'}}) reads back with params {got!r}; "
                f"create_then_get owns that"
            )
        return run_id
    current = await _get(api, run_id)
    plain = _change(name, 0)
    await _update(api, run_id, {name: copy.deepcopy(plain)}, expected_version=current.version)
    got = _field(await _get(api, run_id), name)
    if got != plain:
        raise AssertionError(
            f"blocked: update({run_id!r}, {{{name!r}: {plain!r}}}) reads back with {name} "
            f"{got!r}; update_bumps_version owns that"
        )
    return run_id


async def _refused_or_kept(api: RunStore, name: str) -> None:
    """
    A field the store does not declare: each value is refused, changing nothing,
    or kept exactly; never mangled. A field that is refused holds nothing to mangle.
    """
    run_id = await api.create({"input": "a"})
    for value in (*_SAMPLES[name], *_FOREIGN):
        written = copy.deepcopy(value)
        before = await _get(api, run_id)
        call = (
            f"create({value!r})"
            if name == "params"
            else f"update({run_id!r}, {{{name!r}: {value!r}}})"
        )
        try:
            if name == "params":
                run_id = await api.create(cast("Mapping[str, object]", written))
            else:
                await api.update(run_id, {name: written}, expected_version=before.version)
        except (TypeError, ValueError):
            if name != "params":
                _check_same(before, await _get(api, run_id), f"after refusing {call}, get")
            continue
        after = await _get(api, run_id)
        if name not in after.fields:
            if name == "params":
                continue  # params it does not show are params it does not keep
            raise AssertionError(
                f"blocked: {call} was taken, and the run has no {name!r} field; "
                f"invalid_change_rejected owns that"
            )
        got = after.fields[name]
        if not strictly_equal(value, got):
            raise AssertionError(
                f"expected {name!r}, which the store does not declare, to be refused or kept "
                f"exactly; {call} was taken and reads back {got!r}"
            )
        _change_in_place(written)
        _change_in_place(got)
        again = _field(await _get(api, run_id), name)
        if not strictly_equal(value, again):
            raise AssertionError(
                f"expected {name!r} to stay {value!r} when the caller changed its own objects, "
                f"but the store now holds {again!r}; a store copies what it is given and what "
                f"it gives"
            )


@suite.family("fidelity")
async def _fidelity(api: RunStore, name: str) -> None:
    with _SEE:
        if name not in _declared(api):
            await _refused_or_kept(api, name)
            return
        run_id = await _reach(api, name)

        async def write(value: object) -> str:
            nonlocal run_id
            if name == "params":
                run_id = await api.create(cast("Mapping[str, object]", value))
            else:
                current = await _get(api, run_id)
                await api.update(run_id, {name: value}, expected_version=current.version)
            return run_id

        async def read(run_id: str) -> object:
            return _field(await _get(api, run_id), name)

        write.__qualname__ = "create" if name == "params" else "update"
        read.__qualname__ = "get"

        for sample in _SAMPLES[name]:
            written = copy.deepcopy(sample)
            got = await round_trip_async(write, read, written)
            _change_in_place(written)
            _change_in_place(got)
            again = await read(run_id)
            if not strictly_equal(sample, again):
                raise AssertionError(
                    f"expected {name!r} to stay {sample!r} when the caller changed its own "
                    f"objects (the value written, the value read back), but the store now holds "
                    f"{again!r}; a store copies what it is given and what it gives"
                )
        for foreign in _FOREIGN:
            before = None if name == "params" else await _get(api, run_id)
            try:
                await write(copy.deepcopy(foreign))
            except (TypeError, ValueError):
                if before is not None:
                    _check_same(
                        before, await _get(api, run_id), f"after refusing {name}={foreign!r}, get"
                    )
                continue
            got = await read(run_id)
            if not strictly_equal(foreign, got):
                raise AssertionError(
                    f"expected {name}={foreign!r}, which JSON cannot hold, to be refused with "
                    f"TypeError or ValueError or kept exactly; the store took it and gave back "
                    f"{got!r}"
                )
