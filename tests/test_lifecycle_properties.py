"""Property tests of the lifecycle: cleanup order, exactly-once runs and surfaced failures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conformkit as ck

BACKENDS = ["asyncio", "trio"]

# Each example runs a whole event loop; no database, so nothing is written next to the tests.
examples = settings(max_examples=50, deadline=None, database=None)


class CleanupError(Exception):
    """What a failing cleanup raises."""


class SetupError(Exception):
    """What a failing ``create`` raises."""


@dataclass(frozen=True)
class Cleanup:
    """One cleanup to register: sync or async, failing or not."""

    is_async: bool
    fails: bool


class Record:
    """The API the planned implementations create: which cleanups ran and what they raised."""

    def __init__(self) -> None:
        self.ran: list[int] = []
        self.raised: list[BaseException] = []


feature = ck.Feature[Record]("test.lifecycle", cases=("only",))


def cleanup_for(record: Record, index: int, plan: Cleanup) -> Callable[[], object]:
    """The cleanup number ``index``: records that it ran, awaits if async, fails if planned."""

    def fail_if_planned() -> None:
        if plan.fails:
            exc = CleanupError(f"cleanup {index} failed")
            record.raised.append(exc)
            raise exc

    def sync_cleanup() -> None:
        record.ran.append(index)
        fail_if_planned()

    async def async_cleanup() -> None:
        record.ran.append(index)
        await anyio.lowlevel.checkpoint()
        fail_if_planned()

    return async_cleanup if plan.is_async else sync_cleanup


class Planned(ck.FeatureImplementation[Record]):
    """Registers the first ``fail_after`` planned cleanups (all if ``None``), then fails."""

    # ``create`` is left to the two subclasses: one sync, one async.

    feature = feature
    coverage = feature.coverage()

    def __init__(self, plan: list[Cleanup], fail_after: int | None = None) -> None:
        self.plan = plan
        self.fail_after = fail_after
        self.record = Record()
        self.creation_error: SetupError | None = None

    def register(self, scope: ck.FeatureScope, index: int) -> None:
        scope.defer(cleanup_for(self.record, index, self.plan[index]))

    def registered(self) -> range:
        return range(len(self.plan) if self.fail_after is None else self.fail_after)

    def fail_if_planned(self) -> None:
        if self.fail_after is not None:
            self.creation_error = SetupError("create failed")
            raise self.creation_error


class SyncPlanned(Planned):
    """The plan, from a sync ``create``."""

    def create(self, scope: ck.FeatureScope) -> Record:
        for index in self.registered():
            self.register(scope, index)
        self.fail_if_planned()
        return self.record


class AsyncPlanned(Planned):
    """The plan, from an ``async def create`` that awaits between registrations."""

    async def create(self, scope: ck.FeatureScope) -> Record:
        for index in self.registered():
            self.register(scope, index)
            await anyio.lowlevel.checkpoint()
        self.fail_if_planned()
        return self.record


plans = st.lists(st.builds(Cleanup, is_async=st.booleans(), fails=st.booleans()), max_size=8)


def planned(plan: list[Cleanup], fail_after: int | None, async_create: bool) -> Planned:
    if async_create:
        return AsyncPlanned(plan, fail_after)
    return SyncPlanned(plan, fail_after)


async def open_and_exit(implementation: Planned) -> BaseException | None:
    """Open a session and leave it; return what surfaced."""
    try:
        async with ck.open_feature(implementation, timeout=5):
            pass
    except Exception as exc:  # what surfaced is the property under test
        return exc
    return None


async def dispose_then_exit(implementation: Planned) -> BaseException | None:
    """Dispose explicitly, then leave; return what the dispose and the exit surfaced."""
    disposed: BaseException | None = None

    async def dispose(session: ck.Session[Record]) -> None:
        nonlocal disposed
        try:
            await session.dispose()
        except ExceptionGroup as exc:  # compared below with what the exit raises
            disposed = exc

    on_exit: BaseException | None = None
    try:
        async with ck.open_feature(implementation, timeout=5) as session:
            await dispose(session)
    except ExceptionGroup as exc:  # the disposal's outcome, raised again on exit
        on_exit = exc
    if disposed is None or on_exit is None:
        assert disposed is on_exit
    else:
        assert_same_group(disposed, on_exit)
    return on_exit


def assert_same_group(first: BaseException, second: BaseException) -> None:
    """Two groups of the very same exception objects, in the same order."""
    assert isinstance(first, BaseExceptionGroup)
    assert isinstance(second, BaseExceptionGroup)
    assert_group_of(second, list(first.exceptions))


def assert_group_of(raised: BaseException | None, expected: list[BaseException]) -> None:
    """``raised`` is one flat group of exactly these exception objects, in this order."""
    assert isinstance(raised, BaseExceptionGroup), raised
    assert len(raised.exceptions) == len(expected)
    assert all(a is b for a, b in zip(raised.exceptions, expected, strict=True))


class TestDisposal:
    @pytest.mark.parametrize("backend", BACKENDS)
    @examples
    @given(plan=plans, async_create=st.booleans(), explicit=st.booleans())
    def test_every_cleanup_runs_once_in_reverse_and_every_failure_surfaces(
        self, backend: str, plan: list[Cleanup], async_create: bool, explicit: bool
    ) -> None:
        """Disposal runs each cleanup once, last first, and surfaces exactly its failures."""
        implementation = planned(plan, None, async_create)
        dispose: Callable[[Planned], Awaitable[BaseException | None]] = (
            dispose_then_exit if explicit else open_and_exit
        )
        raised = anyio.run(dispose, implementation, backend=backend)

        record = implementation.record
        assert record.ran == list(reversed(range(len(plan))))
        assert len(record.raised) == sum(cleanup.fails for cleanup in plan)
        if record.raised:
            assert_group_of(raised, record.raised)
        else:
            assert raised is None


@st.composite
def rollbacks(draw: st.DrawFn) -> tuple[list[Cleanup], int]:
    """A plan of ``n`` cleanups and the number ``k <= n`` registered before create fails."""
    plan = draw(plans)
    return plan, draw(st.integers(min_value=0, max_value=len(plan)))


class TestRollback:
    @pytest.mark.parametrize("backend", BACKENDS)
    @examples
    @given(rollback=rollbacks(), async_create=st.booleans())
    def test_a_failed_create_rolls_back_what_it_registered(
        self, backend: str, rollback: tuple[list[Cleanup], int], async_create: bool
    ) -> None:
        """create failing after k defers runs those k in reverse; its error leads any group."""
        plan, registered = rollback
        implementation = planned(plan, registered, async_create)
        raised = anyio.run(open_and_exit, implementation, backend=backend)

        record = implementation.record
        assert record.ran == list(reversed(range(registered)))
        assert len(record.raised) == sum(cleanup.fails for cleanup in plan[:registered])
        creation_error = implementation.creation_error
        assert creation_error is not None
        if record.raised:
            assert_group_of(raised, [creation_error, *record.raised])
        else:
            assert raised is creation_error
