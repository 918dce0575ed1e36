"""The host-owned lifecycle (SPEC §3): FeatureScope, Session and open_feature."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck
from test_runner import deaf_until

TIMEOUT = 0.3
"""The cleanup deadline of every session here: small, so that a hang times out fast."""

FOREVER = 5.0
"""How long "forever" lasts here: a lifecycle bug then fails a test instead of hanging it."""


class SetupError(Exception):
    """What a failing ``create`` raises."""


class CleanupError(Exception):
    """What a failing cleanup raises."""


class BodyError(Exception):
    """What a failing session body raises."""


class WorkerError(Exception):
    """What failing background work raises."""


class Log:
    """The API the test implementations create: a record of lifecycle events and errors."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.errors: dict[str, BaseException] = {}

    def add(self, event: str) -> None:
        self.events.append(event)

    def error(self, name: str, kind: type[BaseException]) -> BaseException:
        """Make (and remember, for identity checks) the exception that ``name`` raises."""
        exc = kind(f"{name} failed")
        self.errors[name] = exc
        return exc


feature = ck.Feature[Log]("test.scope", cases=("only",))

Setup = Callable[[ck.FeatureScope, Log], None]
AsyncSetup = Callable[[ck.FeatureScope, Log], Awaitable[None]]


def no_setup(scope: ck.FeatureScope, log: Log) -> None:
    """Register nothing."""


class SyncImplementation(ck.FeatureImplementation[Log]):
    """A sync ``create`` that logs, runs the test's setup and returns the log."""

    feature = feature
    coverage = feature.coverage()

    def __init__(self, setup: Setup) -> None:
        self.log = Log()
        self.scope: ck.FeatureScope | None = None
        self._setup = setup

    def create(self, scope: ck.FeatureScope) -> Log:
        self.scope = scope
        self.log.add("create")
        self._setup(scope, self.log)
        return self.log


class AsyncImplementation(ck.FeatureImplementation[Log]):
    """An async ``create`` that logs, awaits the test's setup and returns the log."""

    feature = feature
    coverage = feature.coverage()

    def __init__(self, setup: AsyncSetup) -> None:
        self.log = Log()
        self.scope: ck.FeatureScope | None = None
        self._setup = setup

    async def create(self, scope: ck.FeatureScope) -> Log:
        self.scope = scope
        self.log.add("create")
        await self._setup(scope, self.log)
        return self.log


def sync_cleanup(log: Log, name: str, *, fails: bool = False) -> Callable[[], None]:
    """A sync cleanup that logs ``name`` and, if told to, raises a ``CleanupError``."""

    def cleanup() -> None:
        log.add(name)
        if fails:
            raise log.error(name, CleanupError)

    cleanup.__qualname__ = f"cleanup_{name}"
    return cleanup


def async_cleanup(
    log: Log, name: str, *, fails: bool = False, hangs: bool = False
) -> Callable[[], Awaitable[None]]:
    """
    An async cleanup: logs ``name``, awaits (forever if it ``hangs``), logs ``name done``.

    A cleanup cancelled while it awaits logs ``name cancelled``.
    """

    async def cleanup() -> None:
        log.add(name)
        try:
            if hangs:
                await anyio.sleep(FOREVER)
            await anyio.lowlevel.checkpoint()
        except anyio.get_cancelled_exc_class():
            log.add(f"{name} cancelled")
            raise
        log.add(f"{name} done")
        if fails:
            raise log.error(name, CleanupError)

    cleanup.__qualname__ = f"cleanup_{name}"
    return cleanup


class Gate:
    """A point where the code under test waits: the test learns it got there and lets it go."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.released = anyio.Event()

    async def hold(self) -> None:
        self.reached.set()
        await self.released.wait()


async def cancel_at(gate: Gate, cancel_scope: anyio.CancelScope) -> None:
    """From another task: cancel ``cancel_scope`` once ``gate`` is reached, then release it."""
    await gate.reached.wait()
    cancel_scope.cancel()
    gate.released.set()


@dataclass(frozen=True)
class TimedOut:
    """Expect a TimeoutError for the cleanup ``name`` in the surfaced exceptions."""

    name: str


Expected = str | TimedOut
"""A surfaced exception: the one ``log.errors[name]`` holds, or a cleanup's timeout."""


def assert_timeout(exc: BaseException, what: str) -> None:
    """``exc`` is the TimeoutError of the stage 'cleanup' of this feature, naming ``what``."""
    assert type(exc) is TimeoutError
    message = str(exc)
    assert "feature 'test.scope'" in message
    assert "(stage 'cleanup'" in message
    assert what in message


def assert_members(raised: BaseException | None, expected: Sequence[Expected], log: Log) -> None:
    """``raised`` is one flat exception group holding exactly ``expected``, in order."""
    assert isinstance(raised, BaseExceptionGroup), f"expected a group, got {raised!r}"
    members = raised.exceptions
    assert len(members) == len(expected), members
    for member, want in zip(members, expected, strict=True):
        if isinstance(want, TimedOut):
            assert_timeout(member, f"cleanup_{want.name}")
        else:
            assert member is log.errors[want], (member, want)


def assert_same_members(first: BaseException, second: BaseException) -> None:
    """Two surfaced groups hold the very same exception objects, in the same order."""
    assert isinstance(first, BaseExceptionGroup)
    assert isinstance(second, BaseExceptionGroup)
    assert len(first.exceptions) == len(second.exceptions)
    assert all(a is b for a, b in zip(first.exceptions, second.exceptions, strict=True))


# -- The fault-injection table ------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One cleanup that ``create`` registers."""

    name: str
    is_async: bool = False
    fails: bool = False
    hangs: bool = False


@dataclass(frozen=True)
class Scenario:
    """
    A session and its faults, with the events and exceptions it must produce.

    ``create`` registers ``cleanups[:create_fails_after]`` (all of them if ``None``),
    awaiting between registrations when async, then fails if told to.
    ``surfaced`` lists what must come out of ``open_feature``: one bare exception
    when ``grouped`` is false, else the members of one flat group, in order.
    """

    cleanups: tuple[Step, ...]
    events: tuple[str, ...]
    surfaced: tuple[Expected, ...] = ()
    grouped: bool = True
    create_fails_after: int | None = None
    async_create: bool = False
    body_fails: bool = False


A, B, C = Step("a"), Step("b"), Step("c")
A_FAILS, C_FAILS = Step("a", fails=True), Step("c", fails=True)
A_ASYNC, B_ASYNC, C_ASYNC = Step("a", True), Step("b", True), Step("c", True)
A_ASYNC_FAILS, B_ASYNC_FAILS = Step("a", True, fails=True), Step("b", True, fails=True)
C_ASYNC_FAILS = Step("c", True, fails=True)
A_HANGS, B_HANGS = Step("a", True, hangs=True), Step("b", True, hangs=True)

SCENARIOS: dict[str, Scenario] = {
    # create fails: what was registered so far is rolled back, the error re-raised bare.
    "sync create fails before any defer": Scenario(
        (A, B), ("create",), ("create",), grouped=False, create_fails_after=0
    ),
    "sync create fails after every defer": Scenario(
        (A, B), ("create", "b", "a"), ("create",), grouped=False, create_fails_after=2
    ),
    "sync create fails among defers": Scenario(
        (A, B, C), ("create", "b", "a"), ("create",), grouped=False, create_fails_after=2
    ),
    "async create fails before any defer": Scenario(
        (A_ASYNC,),
        ("create",),
        ("create",),
        grouped=False,
        create_fails_after=0,
        async_create=True,
    ),
    "async create fails after every defer": Scenario(
        (A, B_ASYNC),
        ("create", "b", "b done", "a"),
        ("create",),
        grouped=False,
        create_fails_after=2,
        async_create=True,
    ),
    "async create fails among defers": Scenario(
        (A_ASYNC, B, C_ASYNC),
        ("create", "b", "a", "a done"),
        ("create",),
        grouped=False,
        create_fails_after=2,
        async_create=True,
    ),
    # Rollback fails too: one group, the creation error first, then every cleanup error.
    "rollback: sync cleanups fail": Scenario(
        (A_FAILS, B, C_FAILS),
        ("create", "c", "b", "a"),
        ("create", "c", "a"),
        create_fails_after=3,
    ),
    "rollback: async cleanups fail": Scenario(
        (A_ASYNC_FAILS, B_ASYNC_FAILS),
        ("create", "b", "b done", "a", "a done"),
        ("create", "b", "a"),
        create_fails_after=2,
        async_create=True,
    ),
    "rollback: a cleanup hangs past the timeout": Scenario(
        (A, B_HANGS),
        ("create", "b", "b cancelled", "a"),
        ("create", TimedOut("b")),
        create_fails_after=2,
        async_create=True,
    ),
    # Disposal: every cleanup runs, in reverse order, and every failure surfaces.
    "dispose: cleanups succeed": Scenario(
        (A, B_ASYNC), ("create", "body", "b", "b done", "a"), (), grouped=False
    ),
    "dispose: sync cleanups fail": Scenario(
        (A_FAILS, B, C_FAILS), ("create", "body", "c", "b", "a"), ("c", "a")
    ),
    "dispose: async cleanups fail": Scenario(
        (A_ASYNC_FAILS, B_ASYNC, C_ASYNC_FAILS),
        ("create", "body", "c", "c done", "b", "b done", "a", "a done"),
        ("c", "a"),
    ),
    "dispose: sync and async cleanups fail": Scenario(
        (A_ASYNC_FAILS, Step("b", fails=True)),
        ("create", "body", "b", "a", "a done"),
        ("b", "a"),
    ),
    "dispose: a cleanup hangs past the timeout": Scenario(
        (A, B_HANGS, C),
        ("create", "body", "c", "b", "b cancelled", "a"),
        (TimedOut("b"),),
    ),
    "dispose: one cleanup hangs, another fails": Scenario(
        (A_FAILS, B_HANGS),
        ("create", "body", "b", "b cancelled", "a"),
        (TimedOut("b"), "a"),
    ),
    # The body raises: bare when cleanup is clean, else grouped with the body's error first.
    "body raises, cleanups succeed": Scenario(
        (A, B_ASYNC),
        ("create", "body", "b", "b done", "a"),
        ("body",),
        grouped=False,
        body_fails=True,
    ),
    "body raises, a cleanup fails": Scenario(
        (A_FAILS, B_ASYNC), ("create", "body", "b", "b done", "a"), ("body", "a"), body_fails=True
    ),
    "body raises, a cleanup hangs": Scenario(
        (A_HANGS, C),
        ("create", "body", "c", "a", "a cancelled"),
        ("body", TimedOut("a")),
        body_fails=True,
    ),
}


def implementation_for(scenario: Scenario) -> SyncImplementation | AsyncImplementation:
    """The implementation whose ``create`` plays ``scenario``."""

    def cleanup_for(log: Log, step: Step) -> Callable[[], object]:
        if step.is_async:
            return async_cleanup(log, step.name, fails=step.fails, hangs=step.hangs)
        return sync_cleanup(log, step.name, fails=step.fails)

    registered = scenario.cleanups[: scenario.create_fails_after]

    def setup(scope: ck.FeatureScope, log: Log) -> None:
        for step in registered:
            scope.defer(cleanup_for(log, step))
        if scenario.create_fails_after is not None:
            raise log.error("create", SetupError)

    async def setup_async(scope: ck.FeatureScope, log: Log) -> None:
        for step in registered:
            scope.defer(cleanup_for(log, step))
            await anyio.lowlevel.checkpoint()  # setup that awaits between registrations
        if scenario.create_fails_after is not None:
            raise log.error("create", SetupError)

    if scenario.async_create:
        return AsyncImplementation(setup_async)
    return SyncImplementation(setup)


class TestFaultInjection:
    @pytest.mark.anyio
    @pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
    async def test_scenario(self, scenario: Scenario) -> None:
        """Each fault runs the right cleanups once, last first, and surfaces just its errors."""
        implementation = implementation_for(scenario)
        log = implementation.log
        raised: Exception | None = None
        try:
            async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
                assert session.api is log
                log.add("body")
                if scenario.body_fails:
                    raise log.error("body", BodyError)
        except Exception as exc:  # whatever surfaces is checked below
            raised = exc

        assert log.events == list(scenario.events)
        if not scenario.surfaced:
            assert raised is None
        elif scenario.grouped:
            assert_members(raised, scenario.surfaced, log)
        else:
            (name,) = scenario.surfaced
            assert isinstance(name, str)
            assert raised is log.errors[name]


# -- Outside cancellation -----------------------------------------------------------------


class TestOutsideCancellation:
    @pytest.mark.anyio
    async def test_during_async_create(self) -> None:
        """Cancelling an async create rolls back what it registered, then propagates."""
        gate = Gate()

        async def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(async_cleanup(log, "b"))
            gate.reached.set()
            await anyio.sleep(FOREVER)

        implementation = AsyncImplementation(setup)
        entered = after = False
        async with anyio.create_task_group() as task_group:
            with anyio.CancelScope() as cancel_scope:
                task_group.start_soon(cancel_at, gate, cancel_scope)
                async with ck.open_feature(implementation, timeout=TIMEOUT):
                    entered = True
                after = True

        assert cancel_scope.cancelled_caught
        assert not entered
        assert not after
        # "b done": the async rollback cleanup ran to completion, shielded.
        assert implementation.log.events == ["create", "b", "b done", "a"]

    @pytest.mark.anyio
    async def test_during_the_body(self) -> None:
        """Cancelling the body runs every cleanup to completion, then propagates."""
        gate = Gate()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(async_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        after = False
        async with anyio.create_task_group() as task_group:
            with anyio.CancelScope() as cancel_scope:
                task_group.start_soon(cancel_at, gate, cancel_scope)
                async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
                    session.api.add("body")
                    gate.reached.set()
                    await anyio.sleep(FOREVER)
                after = True

        assert cancel_scope.cancelled_caught
        assert not after
        assert implementation.log.events == ["create", "body", "b", "b done", "a"]

    @pytest.mark.anyio
    async def test_a_deadline_expiring_in_the_body(self) -> None:
        """A move_on_after deadline in the body runs every cleanup, then is caught by its scope."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(async_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        with anyio.move_on_after(FOREVER) as deadline:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                # Set here, not before: a loaded machine may take longer to get here.
                deadline.deadline = anyio.current_time() + 0.01
                await anyio.sleep(FOREVER)

        assert deadline.cancelled_caught
        assert implementation.log.events == ["create", "b", "b done", "a"]

    @pytest.mark.anyio
    async def test_during_an_async_cleanup(self) -> None:
        """A cleanup cancelled from outside completes, later ones run, then it propagates."""
        gate = Gate()
        cancel_scope = anyio.CancelScope()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def held() -> None:
                log.add("b")
                await gate.hold()
                log.add(f"b done, cancel pending: {cancel_scope.cancel_called}")

            scope.defer(sync_cleanup(log, "a"))
            scope.defer(held)
            scope.defer(async_cleanup(log, "c"))

        implementation = SyncImplementation(setup)
        after = False
        async with anyio.create_task_group() as task_group:
            with cancel_scope:
                task_group.start_soon(cancel_at, gate, cancel_scope)
                async with ck.open_feature(implementation, timeout=5) as session:
                    session.api.add("body")
                after = True

        assert implementation.log.events == [
            "create",
            "body",
            "c",
            "c done",
            "b",
            "b done, cancel pending: True",
            "a",
        ]
        # The cancellation arrived while disposal ran shielded: it must still propagate
        # out of open_feature, not leave the caller running as if nothing happened.
        assert cancel_scope.cancelled_caught
        assert not after

    @pytest.mark.anyio
    async def test_during_an_explicit_dispose(self) -> None:
        """A cancellation that arrives while dispose() runs shielded propagates out of it."""
        gate = Gate()
        cancel_scope = anyio.CancelScope()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def held() -> None:
                await gate.hold()
                log.add("held done")

            scope.defer(held)

        implementation = SyncImplementation(setup)
        after = False
        async with anyio.create_task_group() as task_group:
            with cancel_scope:
                task_group.start_soon(cancel_at, gate, cancel_scope)
                async with ck.open_feature(implementation, timeout=5) as session:
                    await session.dispose()
                    after = True
        assert implementation.log.events == ["create", "held done"]
        assert cancel_scope.cancelled_caught
        assert not after

    @pytest.mark.anyio
    async def test_before_entering(self) -> None:
        """Entering in an already cancelled scope runs no sync create and no body."""
        implementation = SyncImplementation(no_setup)
        entered = False
        with anyio.CancelScope() as cancel_scope:
            cancel_scope.cancel()
            async with ck.open_feature(implementation):
                entered = True
        assert cancel_scope.cancelled_caught
        assert not entered
        assert implementation.log.events == []


# -- Shutdown: closing, background work, and the scope once it closes ---------------------


async def worker(scope: ck.FeatureScope, log: Log, name: str) -> None:
    """Background work that runs until cancelled, then takes a moment to wind down."""
    log.add(f"{name} started")
    try:
        await anyio.sleep(FOREVER)
    except anyio.get_cancelled_exc_class():
        log.add(f"{name} cancelled, closing set: {scope.closing.is_set()}")
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.01)
        log.add(f"{name} finished")
        raise


class TestShutdown:
    @pytest.mark.anyio
    async def test_closing_is_unset_while_open(self) -> None:
        """``closing`` is clear during create and the body."""
        seen: list[bool] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            seen.append(scope.closing.is_set())

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            assert implementation.scope is not None
            seen.append(implementation.scope.closing.is_set())
        assert seen == [False, False]
        assert implementation.scope.closing.is_set()

    @pytest.mark.anyio
    async def test_closing_set_and_work_joined_before_any_cleanup(self) -> None:
        """Shutdown sets closing, cancels the background work and waits for it before cleanups."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            def first() -> None:
                log.add(f"a, closing set: {scope.closing.is_set()}")

            scope.defer(first)
            scope.start_soon(worker, scope, log, "w1")
            scope.start_soon(worker, scope, log, "w2")
            scope.defer(async_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
            await anyio.wait_all_tasks_blocked()  # both workers are running
            session.api.add("body")

        events = implementation.log.events
        assert events[0] == "create"
        cleanups = events.index("b")
        assert sorted(events[1:cleanups]) == [
            "body",
            "w1 cancelled, closing set: True",
            "w1 finished",
            "w1 started",
            "w2 cancelled, closing set: True",
            "w2 finished",
            "w2 started",
        ]
        assert events.index("body") < events.index("w1 cancelled, closing set: True")
        assert events.index("body") < events.index("w2 cancelled, closing set: True")
        assert events[cleanups:] == ["b", "b done", "a, closing set: True"]

    @pytest.mark.anyio
    async def test_work_started_after_earlier_work_finished_is_still_joined(self) -> None:
        """Work started after earlier work already finished is still joined before cleanups."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def quick() -> None:
                log.add("quick done")

            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(quick)

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
            await anyio.wait_all_tasks_blocked()  # quick has finished
            scope = implementation.scope
            assert scope is not None
            scope.start_soon(worker, scope, session.api, "w")
            await anyio.wait_all_tasks_blocked()
        assert implementation.log.events == [
            "create",
            "quick done",
            "w started",
            "w cancelled, closing set: True",
            "w finished",
            "a",
        ]

    @pytest.mark.anyio
    async def test_work_not_yet_running_when_closing_starts_still_starts(self) -> None:
        """As in a task group: work not yet scheduled starts, and sees the cancellation at once."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(worker, scope, log, "w")

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            pass  # no checkpoint: the worker has had no chance to start
        assert implementation.log.events == [
            "create",
            "w started",
            "w cancelled, closing set: True",
            "w finished",
            "a",
        ]

    @pytest.mark.anyio
    async def test_work_that_owns_a_resource_releases_it_though_it_never_ran(self) -> None:
        """A worker's try/finally always runs: what it owns is never leaked."""
        released: list[str] = []

        async def owner() -> None:
            try:
                await anyio.sleep(FOREVER)
            finally:
                released.append("released")

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.start_soon(owner)

        async with ck.open_feature(SyncImplementation(setup), timeout=TIMEOUT):
            pass
        assert released == ["released"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("when", ["before closing", "while being cancelled"])
    async def test_failing_work_surfaces_with_the_cleanup_failures(self, when: str) -> None:
        """An exception from background work surfaces in the group, before the cleanup failures."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def failing() -> None:
                if when == "before closing":
                    await anyio.lowlevel.checkpoint()
                    raise log.error("w", WorkerError)
                try:
                    await anyio.sleep(FOREVER)
                except anyio.get_cancelled_exc_class():
                    raise log.error("w", WorkerError) from None

            scope.defer(sync_cleanup(log, "a", fails=True))
            scope.start_soon(failing)
            scope.defer(sync_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                await anyio.wait_all_tasks_blocked()
        assert_members(raised.value, ["w", "a"], implementation.log)
        assert implementation.log.events == ["create", "b", "a"]

    @pytest.mark.anyio
    async def test_work_ignoring_cancellation_times_out(self) -> None:
        """Work still running at the deadline surfaces a TimeoutError, and every cleanup runs."""
        release = anyio.Event()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def stubborn() -> None:
                log.add("w started")
                await deaf_until(release)  # deaf to cancellation until cleanup "a" runs
                log.add("w finished")

            def release_worker() -> None:
                log.add("a")
                release.set()

            scope.defer(release_worker)
            scope.start_soon(stubborn)
            scope.defer(sync_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                await anyio.wait_all_tasks_blocked()
        (timeout,) = raised.value.exceptions
        assert str(timeout) == (
            "feature 'test.scope': background work did not finish within 0.3s of being "
            "cancelled (stage 'cleanup'; task 'test_scope.TestShutdown."
            "test_work_ignoring_cancellation_times_out.<locals>.setup.<locals>.stubborn')"
        )
        assert implementation.log.events == ["create", "w started", "b", "a", "w finished"]

    @pytest.mark.anyio
    async def test_an_error_from_work_that_outlived_the_deadline_is_not_swallowed(self) -> None:
        """Work that fails after its join timed out: its error is told in the timeout's notes."""
        release = anyio.Event()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def stubborn() -> None:
                await deaf_until(release)  # deaf to cancellation until the cleanup runs
                raise log.error("w", WorkerError)

            scope.defer(release.set)
            scope.start_soon(stubborn)

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                await anyio.wait_all_tasks_blocked()
        [timeout] = raised.value.exceptions
        assert_timeout(timeout, "background work")
        assert timeout.__notes__ == ["the work failed later: test_scope.WorkerError: w failed"]

    @pytest.mark.anyio
    async def test_disposing_early_and_leaving_give_the_same_outcome_as_work_fails_late(
        self,
    ) -> None:
        """dispose() before the work fails late, then the block's exit: one same outcome."""
        release = anyio.Event()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def stubborn() -> None:
                await deaf_until(release)  # deaf to cancellation until released
                raise log.error("w", WorkerError)

            scope.start_soon(stubborn)

        implementation = SyncImplementation(setup)
        early: list[BaseExceptionGroup[BaseException]] = []

        async def dispose_early() -> None:
            async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
                await anyio.wait_all_tasks_blocked()
                try:
                    await session.dispose()
                except ExceptionGroup as group:  # the early outcome, compared below
                    early.append(group)
                release.set()  # the work now fails, after its join gave up

        with pytest.raises(ExceptionGroup) as on_exit:
            await dispose_early()
        [group] = early
        assert list(on_exit.value.exceptions) == list(group.exceptions)
        [timeout] = group.exceptions
        assert timeout.__notes__ == ["the work failed later: test_scope.WorkerError: w failed"]

    @pytest.mark.anyio
    async def test_a_failed_create_stops_its_work_before_rolling_back(self) -> None:
        """When create fails, its background work is cancelled and joined before the rollback."""

        async def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(worker, scope, log, "w")
            await anyio.wait_all_tasks_blocked()
            raise log.error("create", SetupError)

        implementation = AsyncImplementation(setup)
        with pytest.raises(SetupError) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pytest.fail("the body ran although create failed")
        assert raised.value is implementation.log.errors["create"]
        assert implementation.log.events == [
            "create",
            "w started",
            "w cancelled, closing set: True",
            "w finished",
            "a",
        ]

    @pytest.mark.anyio
    async def test_defer_and_start_soon_raise_once_closing_started(self) -> None:
        """defer() and start_soon() raise RuntimeError during and after closing."""
        refused: list[str] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            def late_registrations() -> None:
                with pytest.raises(RuntimeError, match="defer\\(\\).*after it started closing"):
                    scope.defer(sync_cleanup(log, "never"))
                with pytest.raises(
                    RuntimeError, match="start_soon\\(\\).*after it started closing"
                ):
                    scope.start_soon(worker, scope, log, "never")
                refused.append("during")

            scope.defer(late_registrations)

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            pass
        scope = implementation.scope
        assert scope is not None
        with pytest.raises(RuntimeError, match="feature 'test.scope' after it started closing"):
            scope.defer(sync_cleanup(implementation.log, "never"))
        with pytest.raises(RuntimeError, match="after it started closing"):
            scope.start_soon(worker, scope, implementation.log, "never")
        assert refused == ["during"]
        assert implementation.log.events == ["create"]

    @pytest.mark.anyio
    async def test_closing_first_read_once_closed_is_set(self) -> None:
        """``closing`` read for the first time during or after closing is already set."""
        during: list[bool] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(lambda: during.append(scope.closing.is_set()))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            pass
        assert during == [True]
        other = SyncImplementation(no_setup)
        async with ck.open_feature(other, timeout=TIMEOUT):
            pass
        assert other.scope is not None
        assert other.scope.closing.is_set()
        await other.scope.closing.wait()  # returns at once


# -- Session ------------------------------------------------------------------------------


class TestSession:
    @pytest.mark.anyio
    async def test_holds_the_api_and_the_implementation(self) -> None:
        """The session's api is what create returned, with the implementation beside it."""
        implementation = SyncImplementation(no_setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
            assert session.api is implementation.log
            assert session.implementation is implementation

    @pytest.mark.anyio
    async def test_closed_reports_whether_disposal_finished(self) -> None:
        """``closed`` is false while open and while cleanups run, true once disposal finished."""
        sessions: list[ck.Session[Log]] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(lambda: log.add(f"closed during cleanup: {sessions[0].closed}"))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
            sessions.append(session)
            assert not session.closed
            await session.dispose()
            assert session.closed
        assert session.closed
        assert implementation.log.events == ["create", "closed during cleanup: False"]

    @pytest.mark.anyio
    async def test_the_scope_repr_names_its_state(self) -> None:
        """The scope's repr says open, closing (during cleanup) or closed, with its feature."""
        reprs: list[str] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(lambda: reprs.append(repr(scope)))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
            reprs.append(repr(implementation.scope))
            await session.dispose()
            reprs.append(repr(implementation.scope))
        assert reprs == [
            "<FeatureScope feature 'test.scope' open>",
            "<FeatureScope feature 'test.scope' closing>",
            "<FeatureScope feature 'test.scope' closed>",
        ]

    @pytest.mark.anyio
    async def test_disposing_twice_runs_cleanups_once(self) -> None:
        """A second dispose (and the exit after it) runs nothing and returns cleanly."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(async_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
            await session.dispose()
            await session.dispose()
        assert implementation.log.events == ["create", "b", "b done", "a"]

    @pytest.mark.anyio
    async def test_disposing_twice_gives_the_same_failures(self) -> None:
        """Every later dispose, and the exit, raise a group of the very same cleanup errors."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a", fails=True))
            scope.defer(async_cleanup(log, "b", fails=True))

        implementation = SyncImplementation(setup)
        log = implementation.log
        outcomes: list[BaseException] = []

        async def dispose_twice(session: ck.Session[Log]) -> None:
            for _ in range(2):
                with pytest.raises(ExceptionGroup) as raised:
                    await session.dispose()
                outcomes.append(raised.value)

        with pytest.raises(ExceptionGroup) as on_exit:
            async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
                await dispose_twice(session)
        first, second = outcomes
        assert_members(first, ["b", "a"], log)
        assert_same_members(first, second)
        assert_same_members(first, on_exit.value)
        assert log.events == ["create", "b", "b done", "a"]

    @pytest.mark.anyio
    async def test_concurrent_dispose_runs_cleanups_once(self) -> None:
        """Two tasks dispose at once: cleanups run once; both wait for and get the same outcome."""
        gate = Gate()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def held() -> None:
                log.add("b")
                await gate.hold()
                log.add("b done")
                raise log.error("b", CleanupError)

            scope.defer(sync_cleanup(log, "a", fails=True))
            scope.defer(held)

        implementation = SyncImplementation(setup)
        log = implementation.log
        outcomes: dict[str, BaseException | None] = {}

        async def dispose(session: ck.Session[Log], caller: str) -> None:
            log.add(f"{caller} disposes")
            try:
                await session.dispose()
            except ExceptionGroup as exc:  # the outcome under test
                outcomes[caller] = exc
            else:
                outcomes[caller] = None
            log.add(f"{caller} returns")

        async def dispose_concurrently(session: ck.Session[Log]) -> None:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(dispose, session, "first")
                await gate.reached.wait()
                task_group.start_soon(dispose, session, "second")
                await anyio.wait_all_tasks_blocked()  # second is waiting on the first
                gate.released.set()

        with pytest.raises(ExceptionGroup) as on_exit:
            async with ck.open_feature(implementation, timeout=5) as session:
                await dispose_concurrently(session)

        assert log.events[:-2] == [
            "create",
            "first disposes",
            "b",
            "second disposes",
            "b done",
            "a",
        ]
        assert sorted(log.events[-2:]) == ["first returns", "second returns"]
        first, second = outcomes["first"], outcomes["second"]
        assert first is not None
        assert second is not None
        assert_members(first, ["b", "a"], log)
        assert_same_members(first, second)
        assert_same_members(first, on_exit.value)


# -- create, defer and open_feature's arguments -------------------------------------------


class TestCreate:
    @pytest.mark.anyio
    @pytest.mark.parametrize("is_async", [False, True], ids=["sync create", "async create"])
    async def test_feature_unavailable_propagates_as_is(self, is_async: bool) -> None:
        """FeatureUnavailable from create is rolled back and re-raised bare, the same object."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            raise log.error("create", ck.FeatureUnavailable)

        async def setup_async(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(async_cleanup(log, "a"))
            await anyio.lowlevel.checkpoint()
            raise log.error("create", ck.FeatureUnavailable)

        implementation = AsyncImplementation(setup_async) if is_async else SyncImplementation(setup)
        with pytest.raises(ck.FeatureUnavailable) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pytest.fail("the body ran although create failed")
        assert raised.value is implementation.log.errors["create"]
        expected = ["create", "a", "a done"] if is_async else ["create", "a"]
        assert implementation.log.events == expected

    @pytest.mark.anyio
    @pytest.mark.parametrize("failing", [False, True], ids=["cleanups pass", "a cleanup fails"])
    async def test_a_refused_api_is_rolled_back(self, failing: bool) -> None:
        """
        What create registered runs, in reverse, when its API is refused (None, for
        an API type that does not admit it); then the refusal propagates, with a
        failed cleanup beside it in one group.
        """

        class ReturnsNone(ck.FeatureImplementation[Log]):
            feature = feature
            coverage = feature.coverage()
            log = Log()

            def create(self, scope: ck.FeatureScope) -> Log:
                scope.defer(async_cleanup(self.log, "a"))
                scope.defer(sync_cleanup(self.log, "b", fails=failing))
                return None  # type: ignore[return-value]  # refused: a forgotten return

        implementation = ReturnsNone()
        refusal = r"^create\(\) returned None \(a forgotten return\?\)$"
        if failing:
            with pytest.raises(ExceptionGroup) as grouped:
                async with ck.open_feature(implementation, timeout=TIMEOUT):
                    pytest.fail("the body ran although the API was refused")
            refused, cleanup_error = grouped.value.exceptions
            assert cleanup_error is implementation.log.errors["b"]
            assert re.match(refusal, str(refused))
        else:
            with pytest.raises(TypeError, match=refusal):
                async with ck.open_feature(implementation, timeout=TIMEOUT):
                    pytest.fail("the body ran although the API was refused")
        assert implementation.log.events == ["b", "a", "a done"]

    @pytest.mark.anyio
    async def test_each_session_gets_a_fresh_scope(self) -> None:
        """Every open_feature call hands create a new, open scope."""
        implementation = SyncImplementation(no_setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            first = implementation.scope
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            second = implementation.scope
            assert second is not None
            assert not second.closing.is_set()
        assert first is not second


class TestDefer:
    @pytest.mark.anyio
    async def test_returns_its_argument_and_works_as_a_decorator(self) -> None:
        """defer() returns the cleanup unchanged, so @scope.defer decorates sync and async ones."""
        returned: list[bool] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            @scope.defer
            def first() -> None:
                log.add("first")

            @scope.defer
            async def second() -> None:
                log.add("second")

            third = sync_cleanup(log, "third")
            returned.append(scope.defer(third) is third)
            returned.append(callable(first) and callable(second))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            pass
        assert returned == [True, True]
        assert implementation.log.events == ["create", "third", "second", "first"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("value", [42, None, "cleanup"])
    async def test_rejects_non_callables(self, value: object) -> None:
        """defer() of a non-callable raises TypeError naming it, and registers nothing."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            with pytest.raises(TypeError, match=f"needs a callable.*got {value!r}"):
                scope.defer(value)  # type: ignore[type-var]
            scope.defer(sync_cleanup(log, "a"))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            pass
        assert implementation.log.events == ["create", "a"]


class TestOpenFeatureArguments:
    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [-1, 0, -0.5, math.nan, math.inf, 10**400, "x", True])
    async def test_rejects_a_bad_timeout(self, timeout: object) -> None:
        """A timeout that is not a positive, finite number or None is rejected before create."""
        implementation = SyncImplementation(no_setup)
        with pytest.raises(
            ck.ContractDefinitionError, match="^timeout must be a positive, finite number.*got"
        ) as caught:
            async with ck.open_feature(implementation, timeout=timeout):  # type: ignore[arg-type]
                pytest.fail("the body ran with a bad timeout")
        assert "\n" not in str(caught.value)
        assert implementation.log.events == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [None, 1, 0.5])
    async def test_accepts_a_positive_timeout_or_none(self, timeout: float | None) -> None:
        """None (no deadline) and positive numbers are accepted; cleanups run under them."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(async_cleanup(log, "a"))

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=timeout):
            pass
        assert implementation.log.events == ["create", "a", "a done"]


class TestKeyboardInterrupt:
    @pytest.mark.anyio
    async def test_in_the_body_runs_cleanups_and_propagates(self) -> None:
        """KeyboardInterrupt in the body runs every cleanup and propagates bare."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(async_cleanup(log, "b"))

        implementation = SyncImplementation(setup)
        interrupt = KeyboardInterrupt()
        with pytest.raises(KeyboardInterrupt) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                raise interrupt
        assert raised.value is interrupt
        assert implementation.log.events == ["create", "b", "b done", "a"]

    @pytest.mark.anyio
    async def test_in_the_body_with_a_failing_cleanup_propagates_bare_with_a_note(self) -> None:
        """KeyboardInterrupt propagates as itself; the cleanup failure is in its notes."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a", fails=True))

        implementation = SyncImplementation(setup)
        interrupt = KeyboardInterrupt()
        with pytest.raises(KeyboardInterrupt) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                raise interrupt
        assert raised.value is interrupt
        assert raised.value.__notes__ == [
            "1 cleanup(s) of feature 'test.scope' failed: test_scope.CleanupError: a failed"
        ]
        assert implementation.log.events == ["create", "a"]


class Custom(BaseException):
    """A BaseException of the code under test's own."""


class TestBaseExceptions:
    """A BaseException other than cancellation propagates as itself, after every cleanup."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", [SystemExit, GeneratorExit, Custom, KeyboardInterrupt])
    async def test_from_a_cleanup_it_propagates_bare_with_the_others_in_notes(
        self, kind: type[BaseException]
    ) -> None:
        """Every later cleanup still runs; the other failures are notes, not dropped."""
        raised_by_b = kind("b stops")

        def stops() -> None:
            raise raised_by_b

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a", fails=True))
            scope.defer(stops)
            scope.defer(async_cleanup(log, "c", fails=True))

        implementation = SyncImplementation(setup)
        with pytest.raises(kind) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        assert raised.value is raised_by_b
        assert implementation.log.events == ["create", "c", "c done", "a"]
        notes = raised.value.__notes__
        assert [note.rsplit(": ", 1)[-1] for note in notes] == ["c failed", "a failed"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", [SystemExit, GeneratorExit, Custom])
    async def test_from_the_body_it_propagates_after_every_cleanup(
        self, kind: type[BaseException]
    ) -> None:
        """sys.exit() in the body: every cleanup runs, then it propagates as itself."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(async_cleanup(log, "b", fails=True))

        implementation = SyncImplementation(setup)
        stop = kind(0)
        with pytest.raises(kind) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                raise stop
        assert raised.value is stop
        assert implementation.log.events == ["create", "b", "b done", "a"]
        assert len(raised.value.__notes__) == 1

    @pytest.mark.anyio
    async def test_from_a_rollback_it_propagates_bare(self) -> None:
        """create() fails and a rollback cleanup raises SystemExit: it wins, the rest in notes."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))

            def exits() -> None:
                raise SystemExit(3)

            scope.defer(exits)
            raise log.error("create", SetupError)

        implementation = SyncImplementation(setup)
        with pytest.raises(SystemExit) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        assert raised.value.code == 3
        assert implementation.log.events == ["create", "a"]
        assert "SetupError: create failed" in raised.value.__notes__[0]

    @pytest.mark.anyio
    async def test_dispose_raises_it_bare_too(self) -> None:
        """An early dispose() gives the same: the BaseException, bare, with notes."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a", fails=True))

            def exits() -> None:
                raise SystemExit(0)

            scope.defer(exits)

        implementation = SyncImplementation(setup)
        early: list[BaseException] = []

        async def dispose_early() -> None:
            async with ck.open_feature(implementation, timeout=TIMEOUT) as session:
                try:
                    await session.dispose()
                except SystemExit as exc:  # the early outcome, compared below
                    early.append(exc)

        with pytest.raises(SystemExit) as on_exit:
            await dispose_early()
        # Leaving the block gives the same outcome, noted once.
        assert early == [on_exit.value]
        assert len(on_exit.value.__notes__) == 1

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", [SystemExit, Custom, KeyboardInterrupt])
    async def test_from_an_async_cleanup_every_later_cleanup_still_runs(
        self, kind: type[BaseException]
    ) -> None:
        """An async cleanup raising a BaseException: the ones registered before it run too."""
        raised_by_b = kind("b stops")

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def stops() -> None:
                log.add("b")
                await anyio.lowlevel.checkpoint()
                raise raised_by_b

            scope.defer(sync_cleanup(log, "a", fails=True))
            scope.defer(stops)
            scope.defer(sync_cleanup(log, "c"))

        implementation = SyncImplementation(setup)
        with pytest.raises(kind) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        assert raised.value is raised_by_b
        assert implementation.log.events == ["create", "c", "b", "a"]
        notes = raised.value.__notes__
        assert [note.rsplit(": ", 1)[-1] for note in notes] == ["a failed"]


class TestBackgroundJoinUnderCancellation:
    """An outside cancellation during disposal neither cuts the join short nor skips cleanups."""

    @pytest.mark.anyio
    async def test_cleanups_run_only_after_the_work_wound_down(self) -> None:
        gate = Gate()
        cancel_scope = anyio.CancelScope()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def winding_down() -> None:
                try:
                    await anyio.sleep(FOREVER)
                finally:
                    with anyio.CancelScope(shield=True):
                        await gate.hold()  # the outside cancellation arrives here
                        log.add("w finished")

            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(winding_down)

        implementation = SyncImplementation(setup)
        after = False
        async with anyio.create_task_group() as task_group:
            with cancel_scope:
                task_group.start_soon(cancel_at, gate, cancel_scope)
                async with ck.open_feature(implementation, timeout=5) as session:
                    await anyio.wait_all_tasks_blocked()
                    session.api.add("body")
                after = True

        assert implementation.log.events == ["create", "body", "w finished", "a"]
        assert cancel_scope.cancelled_caught
        assert not after


def cancellation_leaker(stray: list[BaseException]) -> Callable[[], Awaitable[None]]:
    """Async code that catches a cancellation of its own scope, keeps it, and raises it."""

    async def leaks_a_cancellation() -> None:
        with anyio.CancelScope() as own:
            own.cancel()
            try:
                await anyio.lowlevel.checkpoint()
            except anyio.get_cancelled_exc_class() as exc:
                stray.append(exc)
        raise stray[0]

    return leaks_a_cancellation


class TestStrayCancellation:
    @pytest.mark.anyio
    async def test_a_cleanup_raising_a_cancellation_it_caught_fails_in_a_group(self) -> None:
        """A cleanup re-raising a cancellation outside its scope: a failure, not a cancellation."""
        stray: list[BaseException] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(cancellation_leaker(stray))

        implementation = SyncImplementation(setup)
        with pytest.raises(BaseExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        assert list(raised.value.exceptions) == stray
        assert implementation.log.events == ["create", "a"]


class TestRollbackMessage:
    @pytest.mark.anyio
    @pytest.mark.parametrize("is_async", [False, True])
    async def test_a_failed_create_and_rollback_are_named_in_the_group(
        self, is_async: bool
    ) -> None:
        """The group says create() failed, of which implementation, and how many rollbacks did."""

        def register(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a", fails=True))
            scope.defer(sync_cleanup(log, "b", fails=True))
            raise log.error("create", SetupError)

        async def register_async(scope: ck.FeatureScope, log: Log) -> None:
            register(scope, log)

        implementation: SyncImplementation | AsyncImplementation = (
            AsyncImplementation(register_async) if is_async else SyncImplementation(register)
        )
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        name = type(implementation).__qualname__
        assert raised.value.message == f"create() of {name} failed and so did 2 rollback cleanup(s)"
        assert_members(raised.value, ["create", "b", "a"], implementation.log)


class TestDisposeFromItsOwnWork:
    @pytest.mark.anyio
    async def test_background_work_disposing_its_own_session_is_refused(self) -> None:
        """Closing would wait for the work that asked for it: a RuntimeError says so, at once."""
        refused: list[str] = []
        sessions: list[ck.Session[Log]] = []

        async def disposes_its_session() -> None:
            while not sessions:
                await anyio.lowlevel.checkpoint()
            try:
                await sessions[0].dispose()
            except RuntimeError as exc:
                refused.append(str(exc))

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.start_soon(disposes_its_session)

        async with ck.open_feature(SyncImplementation(setup), timeout=TIMEOUT) as session:
            sessions.append(session)
            with anyio.move_on_after(FOREVER):  # a dispose waiting for itself never returns
                while not refused:
                    await anyio.lowlevel.checkpoint()
        assert refused == [
            "dispose() of feature 'test.scope' was called from its own background work, "
            "which closing waits for: it would wait for itself"
        ]


class TestWorkSwallowingItsCancellation:
    @pytest.mark.anyio
    async def test_it_is_interrupted_and_the_timeout_says_where(self) -> None:
        """Work that swallows every cancellation is interrupted past the deadline, and ends."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def swallowing() -> None:
                end = anyio.current_time() + FOREVER  # bounded: a regression fails, not hangs
                try:
                    while anyio.current_time() < end:
                        try:
                            await anyio.sleep(end - anyio.current_time())
                        except anyio.get_cancelled_exc_class():
                            pass  # swallowed
                finally:
                    log.add("w ended")

            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(swallowing)

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                await anyio.wait_all_tasks_blocked()
        [timeout] = raised.value.exceptions
        assert_timeout(timeout, "background work did not finish within 0.3s of being cancelled")
        assert "interrupted in " in str(timeout)
        assert "swallowing" in str(timeout)
        assert implementation.log.events == ["create", "w ended", "a"]

    @pytest.mark.anyio
    async def test_work_raising_a_cancellation_it_caught_fails_with_it(self) -> None:
        """A cancellation the work raises itself, not the join's, is a failure of the scope."""
        stray: list[BaseException] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(cancellation_leaker(stray))

        implementation = SyncImplementation(setup)
        with pytest.raises(BaseExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                await anyio.wait_all_tasks_blocked()
        assert list(raised.value.exceptions) == stray
        assert implementation.log.events == ["create", "a"]

    @pytest.mark.anyio
    async def test_work_blocking_the_loop_as_it_winds_down_makes_the_join_late(self) -> None:
        """Work that ends by itself, but blocked the loop past the deadline: the join overran."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def blocks_as_it_ends() -> None:
                try:
                    await anyio.sleep(FOREVER)
                finally:
                    time.sleep(2 * TIMEOUT)  # noqa: ASYNC251 - sync code, which nothing cancels
                    log.add("w ended")

            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(blocks_as_it_ends)

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                await anyio.wait_all_tasks_blocked()
        [late] = raised.value.exceptions
        assert_timeout(late, "the join of background work exceeded the 0.3s deadline")
        assert "sync code blocked the event loop" in str(late)
        assert implementation.log.events == ["create", "w ended", "a"]

    @pytest.mark.anyio
    async def test_cleanups_wait_for_the_last_piece_of_work_to_end(self) -> None:
        """With work that ends at once and work slow to wind down, cleanups wait for both."""

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def quick() -> None:
                try:
                    await anyio.sleep(FOREVER)
                finally:
                    log.add("quick ended")

            async def slow() -> None:
                try:
                    await anyio.sleep(FOREVER)
                finally:
                    with anyio.CancelScope(shield=True):
                        for _ in range(5):
                            await anyio.lowlevel.checkpoint()
                    log.add("slow ended")

            scope.defer(sync_cleanup(log, "a"))
            scope.start_soon(quick)
            scope.start_soon(slow)

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            await anyio.wait_all_tasks_blocked()
        events = implementation.log.events
        assert sorted(events[1:3]) == ["quick ended", "slow ended"]
        assert events[3:] == ["a"]


class TestOverrunMessages:
    @pytest.mark.anyio
    async def test_each_overrun_says_how_the_cleanup_overran(self) -> None:
        """
        Sync code that blocked says how long it ran; a cancelled await says where it
        was; an await its cancellation did not reach, that it did not answer it.
        """

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def shielded() -> None:
                with anyio.CancelScope(shield=True):  # the deadline's cancellation waits
                    await anyio.sleep(2 * TIMEOUT)

            def blocks() -> None:
                time.sleep(2 * TIMEOUT)  # sync code, which nothing cancels

            scope.defer(shielded)
            scope.defer(blocks)
            scope.defer(async_cleanup(log, "b", hangs=True))

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        hung, blocked, unanswered = (str(exc) for exc in raised.value.exceptions)
        assert re.fullmatch(
            r"feature 'test\.scope': cleanup .*\.shielded exceeded the 0\.3s deadline "
            r"\(stage 'cleanup'; ran \d+\.\ds; it did not answer its cancellation\)",
            unanswered,
        ), unanswered
        assert re.fullmatch(
            r"feature 'test\.scope': cleanup cleanup_b exceeded the 0\.3s deadline "
            r"\(stage 'cleanup'; cancelled in cleanup at test_scope\.py:\d+\)",
            hung,
        ), hung
        assert re.fullmatch(
            r"feature 'test\.scope': cleanup .*\.blocks exceeded the 0\.3s deadline "
            r"\(stage 'cleanup'; ran \d+\.\ds; sync code blocked the event loop\)",
            blocked,
        ), blocked


class TestRefusalMessages:
    @pytest.mark.anyio
    async def test_a_closed_scope_names_the_refused_call_and_its_feature(self) -> None:
        """The whole message: the call refused, and the scope's feature."""
        implementation = SyncImplementation(no_setup)
        async with ck.open_feature(implementation, timeout=TIMEOUT):
            pass
        scope = implementation.scope
        assert scope is not None
        with pytest.raises(RuntimeError) as deferred:
            scope.defer(sync_cleanup(implementation.log, "never"))
        with pytest.raises(RuntimeError) as started:
            scope.start_soon(worker, scope, implementation.log, "never")
        closed = "on the scope of feature 'test.scope' after it started closing"
        assert str(deferred.value) == f"defer() {closed}"
        assert str(started.value) == f"start_soon() {closed}"


class TestOverrunWithoutAPlace:
    @pytest.mark.anyio
    async def test_a_cleanup_cancelled_in_library_code_only_names_its_stage(self) -> None:
        """Cancelled where no frame is its own (an event's wait): the reason names no place."""
        never = anyio.Event()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(never.wait)

        implementation = SyncImplementation(setup)
        with pytest.raises(ExceptionGroup) as raised:
            async with ck.open_feature(implementation, timeout=TIMEOUT):
                pass
        [timed_out] = raised.value.exceptions
        assert type(timed_out) is TimeoutError
        assert re.fullmatch(
            r"feature 'test\.scope': cleanup \S+ exceeded the 0\.3s deadline \(stage 'cleanup'\)",
            str(timed_out),
        ), str(timed_out)


class TestCancelledWhileAnotherDisposes:
    @pytest.mark.anyio
    async def test_a_cancelled_second_caller_returns_only_once_disposal_finished(self) -> None:
        """A dispose() waiting for another's, then cancelled, still waits for the cleanups."""
        gate = Gate()

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def held() -> None:
                log.add("b")
                await gate.hold()
                log.add("b done")

            scope.defer(held)

        implementation = SyncImplementation(setup)
        log = implementation.log

        async def second(session: ck.Session[Log], cancel_scope: anyio.CancelScope) -> None:
            with cancel_scope:
                await session.dispose()
            log.add(f"second returns, closed: {session.closed}")

        async def dispose_and_cancel_the_second(session: ck.Session[Log]) -> None:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(session.dispose)
                await gate.reached.wait()
                cancel_scope = anyio.CancelScope()
                task_group.start_soon(second, session, cancel_scope)
                await anyio.wait_all_tasks_blocked()  # second waits on the first
                cancel_scope.cancel()
                await anyio.wait_all_tasks_blocked()
                log.add("released")
                gate.released.set()

        async with ck.open_feature(implementation, timeout=None) as session:
            await dispose_and_cancel_the_second(session)
        assert log.events == ["create", "b", "released", "b done", "second returns, closed: True"]


class TestScopeReprInARun:
    @pytest.mark.anyio
    @pytest.mark.parametrize("with_async", [False, True], ids=["sync", "sync and async"])
    async def test_a_case_scope_says_closing_to_its_cleanups(self, with_async: bool) -> None:
        """In a run, the cleanups see their scope, named with its case, as closing; then closed."""
        reprs: list[str] = []
        scopes: list[ck.FeatureScope] = []

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            async def async_one() -> None:
                reprs.append(repr(scope))

            scopes.append(scope)
            scope.defer(lambda: reprs.append(repr(scope)))
            if with_async:
                scope.defer(async_one)

        async def only(log: Log) -> None:
            await anyio.lowlevel.checkpoint()

        suite = ck.ContractSuite(feature, {"only": only})
        report = await ck.run_contract(SyncImplementation(setup), suite, timeout=TIMEOUT)
        assert [result.status for result in report.results] == ["passed"]
        closing = "<FeatureScope feature 'test.scope', case 'only' closing>"
        assert reprs == [closing] * (2 if with_async else 1)
        assert [repr(scope) for scope in scopes] == [
            "<FeatureScope feature 'test.scope', case 'only' closed>"
        ]


class TestCleanupResults:
    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [TIMEOUT, None])
    async def test_a_sync_cleanup_returning_a_value_is_not_awaited(
        self, timeout: float | None
    ) -> None:
        """What a sync cleanup returns, unless awaitable, is ignored: ``defer(items.pop)`` works."""
        items = ["a", "b"]

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            def returns_a_value() -> str:
                log.add("c")
                return "c"

            scope.defer(items.pop)
            scope.defer(returns_a_value)

        implementation = SyncImplementation(setup)
        async with ck.open_feature(implementation, timeout=timeout):
            pass
        assert implementation.log.events == ["create", "c"]
        assert items == ["a"]


class HostileCleanup:
    """A cleanup whose attribute lookups raise, and which overruns its deadline."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def __getattr__(self, name: str) -> object:
        raise ValueError(f"no attribute {name!r} here")

    def __call__(self) -> None:
        self.log.append("hostile")
        time.sleep(0.15)  # past the 0.05 s deadline, sync: nothing can cancel it


class TestHostileCleanupNames:
    @pytest.mark.anyio
    async def test_a_cleanup_that_cannot_be_named_still_fails_alone(self) -> None:
        """Naming an overrun cleanup whose lookups raise stops nothing: the others still run."""
        log: list[str] = []
        feature = ck.Feature[list[str]]("scope.hostile", cases=("uses",))
        suite = ck.ContractSuite(feature)

        @suite.case
        async def uses(api: list[str]) -> None:
            api.append("case")

        def create(scope: ck.FeatureScope) -> list[str]:
            scope.defer(lambda: log.append("first registered"))
            scope.defer(HostileCleanup(log))
            return log

        implementation = feature.implementation(create, name="Hostile")
        report = await ck.run_contract(implementation, suite, timeout=0.05)
        result = report["uses"]
        assert result.status is ck.CaseStatus.FAILED
        assert log == ["case", "hostile", "first registered"]
        assert result.reason is not None
        assert "cleanup <HostileCleanup object>" in result.reason
        assert "0.05s deadline" in result.reason


class InterruptedWhileNamed:
    """
    A sync cleanup that overruns its deadline, and whose name raises ``interrupt``:
    an interrupt (Ctrl-C, ``sys.exit()``) that arrives while its overrun is named.
    """

    def __init__(self, log: Log, interrupt: BaseException) -> None:
        self.log = log
        self.interrupt = interrupt

    def __getattr__(self, name: str) -> object:  # __qualname__, asked of the instance
        raise self.interrupt

    def __call__(self) -> None:
        self.log.add("overruns")
        time.sleep(0.1)  # past the 0.05 s deadline, sync: nothing can cancel it


INTERRUPTED_OR_NOT = r"(; interrupted in __call__ at test_scope\.py:\d+)?\)"
"""
The end of the reason of InterruptedWhileNamed's overrun: its 0.1 s sleep ends as the
watchdog may interrupt it (0.05 s of deadline, then as much grace), so a loaded machine
sees either.
"""


class TestInterruptWhileNamingAnOverrun:
    """A BaseException raised while an overrun cleanup is named is kept as the cleanup's own."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, Custom])
    @pytest.mark.parametrize("with_work", [False, True], ids=["cleanups", "cleanups and work"])
    async def test_every_later_cleanup_runs_then_it_propagates(
        self, kind: type[BaseException], with_work: bool
    ) -> None:
        """It propagates as itself after every cleanup, the overrun in its notes; all is closed."""
        interrupt = kind("while named")

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(InterruptedWhileNamed(log, interrupt))
            if with_work:
                scope.start_soon(anyio.sleep_forever)

        implementation = SyncImplementation(setup)
        sessions: list[ck.Session[Log]] = []
        with pytest.raises(kind) as raised:
            async with ck.open_feature(implementation, timeout=0.05) as session:
                sessions.append(session)
        assert raised.value is interrupt
        assert implementation.log.events == ["create", "overruns", "a"]
        [note] = raised.value.__notes__
        assert re.fullmatch(
            r"2 cleanup\(s\) of feature 'test\.scope' failed: TimeoutError: feature 'test\.scope': "
            r"cleanup <InterruptedWhileNamed object> exceeded the 0\.05s deadline "
            r"\(stage 'cleanup'; ran \d+\.\ds; sync code blocked the event loop"
            + INTERRUPTED_OR_NOT,
            note,
        ), note
        [session] = sessions
        assert session.closed

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, Custom])
    async def test_in_a_run_it_is_judged_as_the_cleanups_own(
        self, kind: type[BaseException]
    ) -> None:
        """In a run, as a cleanup's own: the case fails, or Ctrl-C stops the run; all clean up."""
        interrupt = kind("while named")

        def setup(scope: ck.FeatureScope, log: Log) -> None:
            scope.defer(sync_cleanup(log, "a"))
            scope.defer(InterruptedWhileNamed(log, interrupt))

        implementation = SyncImplementation(setup)

        async def only(log: Log) -> None:
            log.add("case")

        suite = ck.ContractSuite(feature, {"only": only})
        overrun = (
            r"TimeoutError: feature 'test\.scope', case 'only': cleanup <InterruptedWhileNamed "
            r"object> exceeded the 0\.05s deadline \(stage 'cleanup'; ran \d+\.\ds; sync code "
            r"blocked the event loop" + INTERRUPTED_OR_NOT
        )
        if kind is KeyboardInterrupt:
            with pytest.raises(KeyboardInterrupt) as raised:
                await ck.run_contract(implementation, suite, timeout=0.05)
            assert raised.value is interrupt
            [note] = raised.value.__notes__
            assert re.fullmatch(f"case 'only': {overrun}", note), note
        else:
            report = await ck.run_contract(implementation, suite, timeout=0.05)
            result = report["only"]
            assert result.status is ck.CaseStatus.FAILED
            name = "SystemExit" if kind is SystemExit else "test_scope.Custom"
            reason = f"case 'only' failed in cleanup: {name}: while named (and 1 more)"
            assert result.reason == reason
        assert implementation.log.events == ["create", "case", "overruns", "a"]


def block_the_loop(log: list[str], name: str) -> None:
    """Sync code that blocks the event loop until the watchdog interrupts it, or for 3 s."""
    end = time.monotonic() + 3.0
    try:
        while time.monotonic() < end:
            time.sleep(0.005)
    except BaseException:  # the watchdog's interruption
        log.append(f"{name} interrupted")
        raise
    log.append(f"{name} returned")


@dataclass
class Lanes:
    """The API of the two-lane run below: a log, the case's scope, and b's start."""

    log: list[str]
    scope: ck.FeatureScope
    b_started: anyio.Event


class TestWatchdogAfterAFailedLastCleanup:
    @pytest.mark.anyio
    @pytest.mark.parametrize("how", ["interrupted", "raised"])
    async def test_it_still_interrupts_the_other_lanes(self, how: str) -> None:
        """
        A lane whose last case's sync cleanup was interrupted, or raised, is done; the
        watchdog still interrupts a later stage of another lane that blocks the event loop.
        """
        lanes = ck.Feature[Lanes]("test.two_lanes", cases=("a", "b"))
        log: list[str] = []
        b_started = anyio.Event()

        def raises() -> None:
            log.append("a's cleanup raised")
            raise CleanupError("a's cleanup failed")

        async def a(api: Lanes) -> None:
            if how == "raised":
                api.scope.defer(raises)
            else:
                api.scope.defer(lambda: block_the_loop(log, "a's cleanup"))
            await b_started.wait()

        async def b(api: Lanes) -> None:
            async def then_blocks() -> None:
                await anyio.sleep(0.3)  # the watchdog looks at both lanes meanwhile
                block_the_loop(log, "b's cleanup")

            api.scope.defer(then_blocks)
            b_started.set()
            await anyio.sleep_forever()  # till its deadline

        suite = ck.ContractSuite(lanes, {"a": a, "b": b})
        implementation = lanes.implementation(
            lambda scope: Lanes(log, scope, b_started), name="TwoLanes"
        )
        report = await ck.run_contract(implementation, suite, timeout=0.5, max_concurrency=2)
        assert log == [f"a's cleanup {how}", "b's cleanup interrupted"]
        assert [result.status for result in report.results] == ["failed", "failed"]
