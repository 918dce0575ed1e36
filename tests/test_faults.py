"""
Fault injection: hostile code in every stage, on asyncio and trio.

Each scenario plays one fault (a stage that blocks the event loop, swallows its
cancellation, raises a stray BaseException, presses Ctrl-C...) in a subprocess with
a hard timeout, so that a hang fails its test instead of hanging the suite. The
scenarios are grouped, a few subprocesses per backend, all started together. For
each scenario the test checks that every cleanup ran exactly once, in reverse
order of registration; the verdict; what propagated; and that nothing hung.

Run as a script, this file plays scenarios and prints one JSON line as each
starts and as each ends: ``python tests/test_faults.py BACKEND NAME...``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck
from conformkit._watchdog import Watch, set_stuck_hook
from test_runner import deaf_until, stale_cancellation

TINY = 0.2
"""The stage deadline of most scenarios: a stuck stage is interrupted 0.2 s after it."""
HARD_TIMEOUT = 30.0 if os.environ.get("CONFORMKIT_MUTATION") else 90.0
"""
Seconds a group of scenarios may take in its subprocess before it counts as hung:
less under tools/mutation.py, where the unmutated code has passed just before and
a mutant that hangs a scenario is judged the sooner.
"""
TRAMPOLINES = re.compile(r"\w+ at trampoline\.py:\d+ ← ")
"""
The frames of mutmut's trampolines in a reason's "where": under tools/mutation.py
every function of the mutated module runs through one, so they join the stack.
"""
GROUPS = 3
"""Subprocesses per backend."""

Backend: TypeAlias = str
Outcome: TypeAlias = dict[str, Any]


# -- what a scenario plays with ---------------------------------------------------------


class Trace:
    """What happened: each cleanup registered (``defer X``) and each that ran (``ran X``)."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def add(self, event: str) -> None:
        self.events.append(event)

    def view(self) -> Trace:
        """Another API object over the same events: each scope needs an API of its own."""
        view = Trace()
        view.events = self.events
        return view

    def defer(
        self,
        scope: ck.FeatureScope,
        label: str,
        action: Callable[[], object] | None = None,
        *,
        is_async: bool = False,
    ) -> None:
        """Register a cleanup that records that it ran, then does ``action`` (maybe awaiting it)."""
        self.add(f"defer {label}")
        if is_async:

            async def async_cleanup() -> None:
                self.add(f"ran {label}")
                if action is not None:
                    result = action()
                    if isinstance(result, Awaitable):
                        await result

            scope.defer(async_cleanup)
        else:

            def sync_cleanup() -> None:
                self.add(f"ran {label}")
                if action is not None:
                    action()

            scope.defer(sync_cleanup)


Case: TypeAlias = Callable[[Trace], Awaitable[None] | None]
Create: TypeAlias = Callable[[ck.FeatureScope, Trace, str], Awaitable[None] | None]


async def passes(api: Trace) -> None:
    await anyio.lowlevel.checkpoint()


def contract(
    trace: Trace,
    cases: dict[str, Case],
    *,
    create: Create | None = None,
    cleanups: int = 2,
    declared: float | None = ck.DEFAULT_TIMEOUT,
) -> tuple[ck.FeatureImplementation[Trace], ck.ContractSuite[Trace]]:
    """
    A feature of these cases and an implementation whose ``create`` registers
    ``cleanups`` plain cleanups per case (``<case>.0``, ``<case>.1``...) and then
    plays ``create(scope, trace, case_id)``.
    """
    the_feature = ck.Feature[Trace]("faults", cases=tuple(cases))

    class Faulty(ck.FeatureImplementation[Trace]):
        feature = the_feature
        coverage = the_feature.coverage()
        timeout = declared

        async def create(self, scope: ck.FeatureScope) -> Trace:
            case_id = scope._case_id or "session"
            for index in range(cleanups):
                trace.defer(scope, f"{case_id}.{index}")
            if create is not None:
                result = create(scope, trace, case_id)
                if result is not None:
                    await result
            return trace.view()

    return Faulty(), ck.ContractSuite(the_feature, dict(cases))


def summary_of(report: ck.ContractReport) -> Outcome:
    return {
        "verdict": [result.status.value for result in report.results],
        "reasons": [result.reason or "" for result in report.results],
        "late": [str(error) for error in report.cleanup_errors],
    }


def run(
    backend: Backend,
    implementation: ck.FeatureImplementation[Trace],
    suite: ck.ContractSuite[Trace],
    **options: Any,
) -> Outcome:
    options.setdefault("timeout", TINY)
    return summary_of(ck.run_contract_sync(implementation, suite, backend=backend, **options))  # type: ignore[arg-type]


# -- the scenarios ------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """
    One scenario: ``play(trace, backend)`` returns what the run reported; whatever
    it raises is what propagated.

    :ivar verdict: the statuses of the report, in order; ``None`` when the run
        propagates instead of reporting.
    :ivar propagates: the type name of what must propagate, if anything.
    :ivar says: text that must be in the first reason that is not a pass, or in
        the message (and notes) of what propagated.
    :ivar on: the backends it runs on.
    """

    name: str
    play: Callable[[Trace, Backend], Outcome | None]
    verdict: tuple[str, ...] | None = None
    propagates: str | None = None
    says: tuple[str, ...] = ()
    on: tuple[Backend, ...] = ("asyncio", "trio")
    extra: Callable[[Outcome], None] | None = field(default=None, compare=False)


FAULTS: dict[str, Fault] = {}
Play: TypeAlias = Callable[[Trace, Backend], Outcome | None]


def fault(
    verdict: Sequence[str] | None = None,
    *,
    propagates: str | None = None,
    says: Sequence[str] = (),
    on: Sequence[Backend] = ("asyncio", "trio"),
    extra: Callable[[Outcome], None] | None = None,
) -> Callable[[Play], Play]:
    """Register the decorated function as the scenario named after it."""

    def register(play: Play) -> Play:
        name = play.__name__.replace("_", " ")
        FAULTS[name] = Fault(
            name,
            play,
            None if verdict is None else tuple(verdict),
            propagates,
            tuple(says),
            tuple(on),
            extra,
        )
        return play

    return register


def blocking(seconds: float) -> Callable[[], None]:
    """Sync code that holds the event loop: no deadline can cancel it."""
    return lambda: time.sleep(seconds)


def spin() -> None:
    """Sync code that never returns, in Python bytecode."""
    while True:
        pass


async def swallow_cancellation() -> None:
    """Async code that catches every cancellation and goes on waiting, forever."""
    while True:
        try:
            await anyio.sleep(1)
        except anyio.get_cancelled_exc_class():
            pass  # the defect under test: the cancellation is swallowed


FAILED_THEN_PASSED = ("failed", "passed")
BLOCKED = "sync code blocked the event loop"


# Sync overruns: a stage that returns after its deadline fails.


@fault(FAILED_THEN_PASSED, says=["stage 'create' exceeded the 0.2s deadline", BLOCKED])
def sync_create_blocks_past_its_deadline(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            time.sleep(3 * TINY)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["stage 'case' exceeded the 0.2s deadline", BLOCKED])
def sync_case_blocks_past_its_deadline(trace: Trace, backend: Backend) -> Outcome:
    def held(api: Trace) -> None:
        time.sleep(3 * TINY)

    return run(backend, *contract(trace, {"first": held, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["exceeded the 0.2s deadline (stage 'cleanup'", BLOCKED])
def async_cleanup_blocks_without_a_checkpoint(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":

            async def hold() -> None:
                time.sleep(3 * TINY)  # noqa: ASYNC251 - the fault under test

            trace.defer(scope, "first.held", hold, is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(("passed", "passed"))
def sync_cleanups_that_block_within_their_deadline_pass(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.held", blocking(TINY / 20))
            trace.defer(scope, "first.held again", blocking(TINY / 20))

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["exceeded the 0.2s deadline (stage 'cleanup'", BLOCKED])
def sync_cleanup_blocks_past_its_deadline(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.held", blocking(3 * TINY))

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(("passed", "failed", "passed"), says=[BLOCKED])
def a_blocking_case_among_concurrent_ones(trace: Trace, backend: Backend) -> Outcome:
    async def held(api: Trace) -> None:
        # The other cases end first, cleanups and all: not a fixed sleep, which a
        # loaded machine may not wake from before the deadline.
        while not {"ran one.0", "ran two.0"} <= set(api.events):
            await anyio.lowlevel.checkpoint()
        time.sleep(3 * TINY)  # noqa: ASYNC251 - the fault under test

    cases: dict[str, Case] = {"one": passes, "held": held, "two": passes}
    return run(backend, *contract(trace, cases), max_concurrency=3)


# The deadline: the implementation's own unless the run says otherwise.


async def naps(api: Trace) -> None:
    await anyio.sleep(3 * TINY)


@fault(("failed",), says=["stage 'case' exceeded the 0.2s deadline"])
def the_implementation_declares_its_deadline(trace: Trace, backend: Backend) -> Outcome:
    implementation, suite = contract(trace, {"naps": naps}, declared=TINY)
    return summary_of(ck.run_contract_sync(implementation, suite, backend=backend))  # type: ignore[arg-type]


@fault(("passed",))
def the_run_overrides_the_declared_deadline(trace: Trace, backend: Backend) -> Outcome:
    implementation, suite = contract(trace, {"naps": naps}, declared=TINY)
    return run(backend, implementation, suite, timeout=None)


# The default guard: a stage stuck under it is run again, and interrupted again.


SECOND_RUN = 2.0
"""
The short guard's second deadline: a case that must pass and overran TINY on a loaded
machine passes when run again under it, as it does under the real guard's 30 s.
"""


@contextlib.contextmanager
def short_guard() -> Iterator[None]:
    """The default guard's deadlines made TINY, then SECOND_RUN for the run again."""
    from conformkit import _implementation

    before = _implementation.GUARD_TIMEOUTS
    _implementation.GUARD_TIMEOUTS = (TINY, SECOND_RUN)
    try:
        yield
    finally:
        _implementation.GUARD_TIMEOUTS = before  # the other scenarios share the process


RUN_AGAIN = "the longer deadline it was run again under, once it overran the default 0.2s guard"


@fault(FAILED_THEN_PASSED, says=[f"stage 'case' exceeded the {SECOND_RUN:g}s deadline", RUN_AGAIN])
def sync_code_stuck_under_the_default_guard_is_interrupted_twice(
    trace: Trace, backend: Backend
) -> Outcome:
    def held(api: Trace) -> None:
        trace.add("spins")
        spin()

    with short_guard():
        outcome = run(
            backend, *contract(trace, {"first": held, "second": passes}), timeout=ck.DEFAULT_TIMEOUT
        )
    assert trace.events.count("spins") == 2, trace.events  # run again once, no more
    return outcome


@fault(FAILED_THEN_PASSED, says=[f"stage 'case' exceeded the {SECOND_RUN:g}s deadline", RUN_AGAIN])
def a_swallowed_cancellation_under_the_default_guard_is_interrupted_twice(
    trace: Trace, backend: Backend
) -> Outcome:
    async def swallows(api: Trace) -> None:
        trace.add("swallows")
        await swallow_cancellation()

    with short_guard():
        outcome = run(
            backend,
            *contract(trace, {"first": swallows, "second": passes}),
            timeout=ck.DEFAULT_TIMEOUT,
        )
    assert trace.events.count("swallows") == 2, trace.events
    return outcome


# Stuck stages: interrupted where Python allows, the run goes on.

INTERRUPTED = "interrupted in"


@fault(FAILED_THEN_PASSED, says=[BLOCKED, f"{INTERRUPTED} spin at test_faults.py"])
def a_case_spins_forever(trace: Trace, backend: Backend) -> Outcome:
    def spinning(api: Trace) -> None:
        spin()

    return run(backend, *contract(trace, {"first": spinning, "second": passes}))


@fault(FAILED_THEN_PASSED, says=[BLOCKED, INTERRUPTED])
def a_sync_create_spins_forever(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            spin()

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=[BLOCKED, f"{INTERRUPTED} deadlocked at test_faults.py"])
def a_case_deadlocks_on_a_lock(trace: Trace, backend: Backend) -> Outcome:
    def deadlocked(api: Trace) -> None:
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()  # never returns: the lock is held by this very thread

    return run(backend, *contract(trace, {"first": deadlocked, "second": passes}))


@fault(FAILED_THEN_PASSED, says=[BLOCKED, INTERRUPTED])
def a_case_sleeps_far_past_its_deadline(trace: Trace, backend: Backend) -> Outcome:
    def sleeps(api: Trace) -> None:
        time.sleep(60)

    return run(backend, *contract(trace, {"first": sleeps, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["it ignored its cancellation", INTERRUPTED])
def a_case_swallows_its_cancellation_in_a_loop(trace: Trace, backend: Backend) -> Outcome:
    async def swallowing(api: Trace) -> None:
        await swallow_cancellation()

    return run(backend, *contract(trace, {"first": swallowing, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["stage 'create'", "it ignored its cancellation"])
def an_async_create_swallows_its_cancellation(trace: Trace, backend: Backend) -> Outcome:
    async def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            await swallow_cancellation()

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(("failed", "passed", "passed"), says=["it ignored its cancellation"])
def a_swallowing_case_among_concurrent_ones(trace: Trace, backend: Backend) -> Outcome:
    async def swallowing(api: Trace) -> None:
        await swallow_cancellation()

    async def brief(api: Trace) -> None:
        await anyio.sleep(TINY / 2)

    cases: dict[str, Case] = {"first": swallowing, "two": brief, "three": passes}
    return run(backend, *contract(trace, cases), max_concurrency=3, timeout=5 * TINY)


@fault(FAILED_THEN_PASSED, says=["did not finish within 0.2s", "it ignored its cancellation"])
def background_work_swallows_its_cancellation(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":

            async def work() -> None:
                trace.add("work started")
                await swallow_cancellation()

            scope.start_soon(work)

    async def first(api: Trace) -> None:
        while "work started" not in api.events:
            await anyio.lowlevel.checkpoint()

    cases: dict[str, Case] = {"first": first, "second": passes}
    return run(backend, *contract(trace, cases, create=create))


@fault(FAILED_THEN_PASSED, says=["(stage 'cleanup'", "it ignored its cancellation"])
def an_async_cleanup_swallows_its_cancellation(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.deaf", swallow_cancellation, is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["(stage 'cleanup'", BLOCKED, INTERRUPTED])
def a_sync_cleanup_spins_forever(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.spins", spin)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


async def deaf_then_spins() -> None:
    """Async code that catches its cancellation, then runs sync code that never returns."""
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        spin()  # the defect under test: the cancellation is swallowed


@fault(
    FAILED_THEN_PASSED, says=["(stage 'cleanup'", "; it ignored its cancellation; interrupted in"]
)
def an_async_cleanup_swallows_its_cancellation_then_spins(
    trace: Trace, backend: Backend
) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.deaf", deaf_then_spins, is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["sync_cleanup exceeded", BLOCKED, INTERRUPTED])
def a_sync_cleanup_spins_after_an_async_one_ended(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.spins", spin)
            trace.defer(scope, "first.ends", is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


async def times_out_its_own_wait_then_spins() -> None:
    """Async code that cancels a wait of its own, well before its deadline, then spins."""
    with anyio.move_on_after(TINY / 20):
        await anyio.sleep(60)
    spin()


@fault(FAILED_THEN_PASSED, says=["async_cleanup exceeded", BLOCKED, INTERRUPTED])
def an_async_cleanup_spins_after_cancelling_a_wait_of_its_own(
    trace: Trace, backend: Backend
) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.spins", times_out_its_own_wait_then_spins, is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


async def fails_late() -> None:
    raise ValueError("cleanup failed")


@fault(("passed", "failed", "failed", "failed"), says=["cleanup failed"])
def a_case_spins_after_other_lanes_ended_on_failed_or_async_cleanups(
    trace: Trace, backend: Backend
) -> Outcome:
    """The watch of a lane that is done is left alone, however its last cleanup ended."""

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "ends":
            trace.defer(scope, "ends.async", is_async=True)
        elif case_id == "fails":
            trace.defer(scope, "fails.async", fails_late, is_async=True)
        elif case_id == "raises":
            trace.defer(scope, "raises.sync", lambda: int("not a number"))

    async def spins_later(api: Trace) -> None:
        await anyio.sleep(TINY / 2)  # the other lanes end meanwhile
        spin()

    cases: dict[str, Case] = {
        "ends": passes,
        "fails": passes,
        "raises": passes,
        "spins": spins_later,
    }
    # The cleanup is each case's last: no other one after it arms the lane again.
    implementation, suite = contract(trace, cases, create=create, cleanups=0)
    return run(backend, implementation, suite, max_concurrency=4)


@fault(("failed", "passed", "passed", "passed", "failed"), says=["it ignored its cancellation"])
def a_case_spins_after_another_lane_ended_on_an_interrupted_cleanup(
    trace: Trace, backend: Backend
) -> Outcome:
    """The watch of a lane whose last cleanup was interrupted is left alone too."""

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "deaf":
            trace.defer(scope, "deaf.async", swallow_cancellation, is_async=True)

    async def naps(api: Trace) -> None:
        await anyio.sleep(TINY / 2)

    async def spins_later(api: Trace) -> None:
        await anyio.sleep(0.8 * TINY)  # if this overruns, the case fails all the same
        spin()

    # One lane runs "deaf", whose cleanup is interrupted 2 * TINY in; the other
    # lane takes the rest meanwhile, and spins after that.
    cases: dict[str, Case] = {"deaf": passes, **{f"nap{n}": naps for n in range(3)}}
    cases["spins"] = spins_later
    implementation, suite = contract(trace, cases, create=create, cleanups=0)
    return run(backend, implementation, suite, max_concurrency=2)


def the_hook_names_the_cleanup_stage(outcome: Outcome) -> None:
    assert outcome["stuck"] == ["feature 'faults', case 'first' (stage 'cleanup')"]


@fault(
    FAILED_THEN_PASSED, says=["(stage 'cleanup'", BLOCKED], extra=the_hook_names_the_cleanup_stage
)
def a_sync_cleanup_blocks_its_interruption(trace: Trace, backend: Backend) -> Outcome:
    """The stuck hook gets a cleanup that no signal reaches, named as such."""
    seen = threading.Event()
    stuck: list[str] = []

    def hook(watch: Watch) -> None:
        stuck.append(watch.label())
        seen.set()

    def deaf() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        try:
            seen.wait(60)  # the watchdog's signal stays pending meanwhile
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.deaf", deaf)

    set_stuck_hook(hook)
    try:
        outcome = run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))
    finally:
        set_stuck_hook(None)
    return {**outcome, "stuck": stuck}


def the_spinning_cleanup_blocked(outcome: Outcome) -> None:
    [spins] = outcome["cleanup errors"]
    assert "sync_cleanup exceeded" in spins
    assert BLOCKED in spins
    assert "it ignored its cancellation" not in spins


@fault(FAILED_THEN_PASSED, says=["stage 'case' exceeded"], extra=the_spinning_cleanup_blocked)
def a_sync_cleanup_spins_after_its_case_swallowed_its_cancellation(
    trace: Trace, backend: Backend
) -> Outcome:
    async def swallows_once(api: Trace) -> None:
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            return  # the defect under test: the cancellation is swallowed

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.spins", spin)

    cases: dict[str, Case] = {"first": swallows_once, "second": passes}
    implementation, suite = contract(trace, cases, create=create, cleanups=0)
    report = ck.run_contract_sync(implementation, suite, backend=backend, timeout=TINY)  # type: ignore[arg-type]
    return {
        **summary_of(report),
        "cleanup errors": [str(error) for error in report.results[0].cleanup_errors],
    }


def each_cleanup_says_how_it_overran(outcome: Outcome) -> None:
    deaf, spins = outcome["cleanup errors"]
    assert "async_cleanup exceeded" in deaf
    assert "it ignored its cancellation" in deaf
    assert "sync_cleanup exceeded" in spins
    assert BLOCKED in spins
    assert "it ignored its cancellation" not in spins


@fault(FAILED_THEN_PASSED, extra=each_cleanup_says_how_it_overran)
def a_sync_cleanup_spins_after_an_async_one_swallowed_its_cancellation(
    trace: Trace, backend: Backend
) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.spins", spin)
            trace.defer(scope, "first.deaf", deaf_then_spins, is_async=True)

    implementation, suite = contract(trace, {"first": passes, "second": passes}, create=create)
    report = ck.run_contract_sync(implementation, suite, backend=backend, timeout=TINY)  # type: ignore[arg-type]
    return {
        **summary_of(report),
        "cleanup errors": [str(error) for error in report.results[0].cleanup_errors],
    }


@fault(FAILED_THEN_PASSED, says=["it waited where no cancellation reached it"], on=["asyncio"])
def a_case_waits_shielded_forever(trace: Trace, backend: Backend) -> Outcome:
    async def shielded(api: Trace) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(60)

    return run(backend, *contract(trace, {"first": shielded, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["it did not answer its cancellation"], on=["trio"])
def a_case_waits_shielded_past_its_deadline(trace: Trace, backend: Backend) -> Outcome:
    async def shielded(api: Trace) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(6 * TINY)  # trio cannot wake it: it returns late

    return run(backend, *contract(trace, {"first": shielded, "second": passes}))


@fault(FAILED_THEN_PASSED, says=[BLOCKED, INTERRUPTED])
def a_run_off_the_main_thread_spins(trace: Trace, backend: Backend) -> Outcome:
    def spinning(api: Trace) -> None:
        spin()

    outcome: list[Outcome] = []
    implementation, suite = contract(trace, {"first": spinning, "second": passes})
    worker = threading.Thread(target=lambda: outcome.append(run(backend, implementation, suite)))
    worker.start()
    worker.join()
    return outcome[0]


@fault(("failed",), says=["stage 'case' exceeded the 0.2s deadline (cancelled in hangs at"])
def a_timeout_says_where_the_case_was(trace: Trace, backend: Backend) -> Outcome:
    async def hangs(api: Trace) -> None:
        await anyio.sleep(60)

    return run(backend, *contract(trace, {"first": hangs}))


@fault(propagates="TimeoutError", says=[BLOCKED, INTERRUPTED, "where it was stuck"])
def contract_case_run_of_a_spinning_case(trace: Trace, backend: Backend) -> None:
    def spinning(api: Trace) -> None:
        spin()

    implementation, suite = contract(trace, {"first": spinning})
    [case] = ck.contract_cases(implementation, suite, timeout=TINY)
    case.run_sync(backend=backend)  # type: ignore[arg-type]


@fault(
    propagates="TimeoutError", says=["it waited where no cancellation reached it"], on=["asyncio"]
)
def contract_case_run_of_a_case_waiting_shielded_forever(trace: Trace, backend: Backend) -> None:
    async def shielded(api: Trace) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(60)

    implementation, suite = contract(trace, {"first": shielded})
    [case] = ck.contract_cases(implementation, suite, timeout=TINY)
    case.run_sync(backend=backend)  # type: ignore[arg-type]


@fault(
    propagates="TimeoutError", says=["it waited where no cancellation reached it"], on=["asyncio"]
)
def contract_case_run_awaited_through_a_generator_of_a_case_waiting_shielded_forever(
    trace: Trace, backend: Backend
) -> None:
    """The task is found through a generator-based coroutine that awaits run()."""

    async def shielded(api: Trace) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(60)

    implementation, suite = contract(trace, {"first": shielded})
    [case] = ck.contract_cases(implementation, suite, timeout=TINY)

    @types.coroutine
    def through_a_generator(awaitable: Any) -> Generator[Any, Any, None]:
        yield from awaitable

    async def test() -> None:
        await through_a_generator(case.run())

    anyio.run(test, backend=backend)


# Reasons that say what happened.


@fault(("failed",), says=["AssertionError: assert got == expected (got='a', expected='b')"])
def a_bare_assert_fails_with_its_statement_and_values(trace: Trace, backend: Backend) -> Outcome:
    def asserts(api: Trace) -> None:
        got, expected = "a", "b"
        assert got == expected  # a bare assert, not rewritten here: the fault under test

    return run(backend, *contract(trace, {"asserts": asserts}))


@fault(("failed",), says=["ValueError: leaf (×2); KeyError: 'other'"])
def a_task_group_failure_gives_its_leaves(trace: Trace, backend: Backend) -> Outcome:
    async def raises(error: BaseException) -> None:
        raise error

    async def grouped(api: Trace) -> None:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(raises, ValueError("leaf"))
            task_group.start_soon(raises, ValueError("leaf"))
            task_group.start_soon(raises, KeyError("other"))

    outcome = run(backend, *contract(trace, {"grouped": grouped}))
    reasons: list[str] = outcome["reasons"]
    # The event loop chooses the order the leaves failed in: put it back.
    outcome["reasons"] = [
        reason.replace(
            "KeyError: 'other'; ValueError: leaf (×2)", "ValueError: leaf (×2); KeyError: 'other'"
        )
        for reason in reasons
    ]
    return outcome


@fault(("failed", "failed"), says=["create() returned None (a forgotten return?)"])
def create_forgets_to_return_the_api(trace: Trace, backend: Backend) -> Outcome:
    implementation, _ = contract(trace, {"one": passes, "two": passes})

    class Forgetful(type(implementation)):  # type: ignore[misc]
        async def create(self, scope: ck.FeatureScope) -> Trace:
            await super().create(scope)
            return None  # type: ignore[return-value]

    async def uses(api: Trace) -> None:
        api.add("never")

    suite = ck.ContractSuite(implementation.feature, {"one": uses, "two": uses})
    return run(backend, Forgetful(), suite)


# BaseExceptions: KeyboardInterrupt alone stops a run; the others fail their case.


class Custom(BaseException):
    """A BaseException of the code under test's own."""


def raising(error: BaseException) -> Callable[[], None]:
    def raises() -> None:
        raise error

    return raises


def in_create(error: BaseException) -> Create:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            raise error

    return create


def in_cleanup(error: BaseException, *, also: Exception | None = None) -> Create:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            if also is not None:
                trace.defer(scope, "first.also", raising(also))
            trace.defer(scope, "first.raises", raising(error))

    return create


@fault(propagates="KeyboardInterrupt")
def a_case_raises_keyboard_interrupt(trace: Trace, backend: Backend) -> Outcome:
    async def interrupts(api: Trace) -> None:
        raise KeyboardInterrupt

    return run(backend, *contract(trace, {"first": interrupts, "second": passes}))


@fault(propagates="KeyboardInterrupt")
def create_raises_keyboard_interrupt(trace: Trace, backend: Backend) -> Outcome:
    cases: dict[str, Case] = {"first": passes, "second": passes}
    return run(backend, *contract(trace, cases, create=in_create(KeyboardInterrupt())))


@fault(propagates="KeyboardInterrupt", says=["case 'first': ValueError: also failed"])
def a_cleanup_raises_keyboard_interrupt_as_another_fails(trace: Trace, backend: Backend) -> Outcome:
    create = in_cleanup(KeyboardInterrupt(), also=ValueError("also failed"))
    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["SystemExit: 0"])
def a_case_calls_sys_exit_0(trace: Trace, backend: Backend) -> Outcome:
    def exits(api: Trace) -> None:
        sys.exit(0)

    return run(backend, *contract(trace, {"first": exits, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["SystemExit: 3"])
def create_calls_sys_exit(trace: Trace, backend: Backend) -> Outcome:
    cases: dict[str, Case] = {"first": passes, "second": passes}
    return run(backend, *contract(trace, cases, create=in_create(SystemExit(3))))


@fault(FAILED_THEN_PASSED, says=["failed in cleanup: SystemExit: 0"])
def a_cleanup_calls_sys_exit_0(trace: Trace, backend: Backend) -> Outcome:
    create = in_cleanup(SystemExit(0))
    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["GeneratorExit"])
def a_case_raises_generator_exit(trace: Trace, backend: Backend) -> Outcome:
    async def closes(api: Trace) -> None:
        raise GeneratorExit

    return run(backend, *contract(trace, {"first": closes, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["failed in create(): Custom: mine"])
def create_raises_a_custom_base_exception(trace: Trace, backend: Backend) -> Outcome:
    cases: dict[str, Case] = {"first": passes, "second": passes}
    return run(backend, *contract(trace, cases, create=in_create(Custom("mine"))))


@fault(FAILED_THEN_PASSED, says=["failed in cleanup: Custom: mine"])
def a_cleanup_raises_a_custom_base_exception(trace: Trace, backend: Backend) -> Outcome:
    create = in_cleanup(Custom("mine"), also=ValueError("also"))
    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


# Not SystemExit(0), which would end a script's loop over the cases with status 0.
@fault(propagates="ContractFailure", says=["case 'first' failed: SystemExit: 0"])
def contract_case_run_of_a_case_calling_sys_exit(trace: Trace, backend: Backend) -> None:
    def exits(api: Trace) -> None:
        sys.exit(0)

    [case] = ck.contract_cases(*contract(trace, {"first": exits}))
    case.run_sync(backend=backend)  # type: ignore[arg-type]


# Ctrl-C: the cleanups run, shielded and bounded, then KeyboardInterrupt propagates.


def press_ctrl_c() -> None:
    signal.raise_signal(signal.SIGINT)


def finished_slowly(trace: Trace, label: str) -> Callable[[], Awaitable[None]]:
    """An async cleanup's action: a wait that Ctrl-C must not cut short, then a record."""

    async def slowly() -> None:
        await anyio.sleep(TINY / 2)
        trace.add(f"finished {label}")

    return slowly


def finished(*labels: str, never_started: Sequence[str] = ()) -> Callable[[Outcome], None]:
    """Each labelled cleanup's action finished; the cases ``never_started`` were never created."""

    def check(outcome: Outcome) -> None:
        for label in labels:
            assert f"finished {label}" in outcome["events"]
        for case_id in never_started:
            assert not [event for event in outcome["events"] if f" {case_id}." in event]

    return check


@fault(propagates="KeyboardInterrupt", extra=finished("first.slow", never_started=["second"]))
def ctrl_c_during_a_case(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(
            scope, f"{case_id}.slow", finished_slowly(trace, f"{case_id}.slow"), is_async=True
        )

    async def pressed(api: Trace) -> None:
        press_ctrl_c()
        await anyio.sleep_forever()

    cases: dict[str, Case] = {"first": pressed, "second": passes}
    # A deadline far beyond the scenario's limit: only Ctrl-C ends the case.
    return run(backend, *contract(trace, cases, create=create), timeout=600)


@fault(propagates="KeyboardInterrupt", extra=finished("first.slow"))
def contract_case_run_ctrl_c_during_the_case(trace: Trace, backend: Backend) -> None:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(
            scope, f"{case_id}.slow", finished_slowly(trace, f"{case_id}.slow"), is_async=True
        )

    async def pressed(api: Trace) -> None:
        press_ctrl_c()
        await anyio.sleep_forever()

    # A deadline far beyond the scenario's limit: only Ctrl-C ends the case.
    [case] = ck.contract_cases(*contract(trace, {"first": pressed}, create=create), timeout=600)
    case.run_sync(backend=backend)  # type: ignore[arg-type]


@fault(propagates="KeyboardInterrupt", extra=finished("first.pressed"))
def ctrl_c_during_an_async_cleanup(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        async def pressed() -> None:
            press_ctrl_c()
            await finished_slowly(trace, f"{case_id}.pressed")()

        trace.defer(scope, f"{case_id}.pressed", pressed, is_async=True)

    cases: dict[str, Case] = {"first": passes, "second": passes}
    return run(backend, *contract(trace, cases, create=create), timeout=5)


@fault(
    propagates="KeyboardInterrupt",
    extra=finished("one.slow", "two.slow", "three.slow", never_started=["four"]),
)
def ctrl_c_with_cases_in_flight(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(
            scope, f"{case_id}.slow", finished_slowly(trace, f"{case_id}.slow"), is_async=True
        )

    async def waits(api: Trace) -> None:
        await anyio.sleep(60)

    async def pressed(api: Trace) -> None:
        await anyio.sleep(TINY / 2)  # the others are in flight
        press_ctrl_c()
        await anyio.sleep(60)

    cases: dict[str, Case] = {"one": waits, "two": pressed, "three": waits, "four": passes}
    return run(backend, *contract(trace, cases, create=create), max_concurrency=3, timeout=5)


@fault(propagates="KeyboardInterrupt")
def a_second_ctrl_c_stops_at_once(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        async def stubborn() -> None:
            press_ctrl_c()
            await anyio.sleep(TINY / 2)
            press_ctrl_c()  # the second: this wait is cut short
            await anyio.sleep(60)

        trace.defer(scope, f"{case_id}.stubborn", stubborn, is_async=True)

    return run(backend, *contract(trace, {"first": passes}, create=create), timeout=None)


# open_feature: a BaseException propagates as itself, after every cleanup, the rest in notes.


def session(trace: Trace, backend: Backend, body: Callable[[], None], create: Create) -> None:
    implementation, _ = contract(trace, {"session": passes}, create=create)

    async def use() -> None:
        async with ck.open_feature(implementation):
            body()

    anyio.run(use, backend=backend)


def calm() -> None:
    pass


@fault(propagates="SystemExit", says=["ValueError: cleanup failed"])
def sys_exit_in_an_open_feature_body(trace: Trace, backend: Backend) -> None:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(scope, "session.fails", raising(ValueError("cleanup failed")))

    session(trace, backend, raising(SystemExit(0)), create)


@fault(propagates="Custom", says=["ValueError: also"])
def a_custom_base_exception_in_an_open_feature_cleanup(trace: Trace, backend: Backend) -> None:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(scope, "session.also", raising(ValueError("also")))
        trace.defer(scope, "session.raises", raising(Custom("mine")))

    session(trace, backend, calm, create)


@fault(propagates="KeyboardInterrupt", says=["ValueError: also"])
def keyboard_interrupt_in_an_open_feature_cleanup(trace: Trace, backend: Backend) -> None:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(scope, "session.also", raising(ValueError("also")))
        trace.defer(scope, "session.raises", raising(KeyboardInterrupt()))

    session(trace, backend, calm, create)


def stopped_before_the_cleanups(outcome: Outcome) -> None:
    """The work stopped before any cleanup ran, and a second dispose() waiting was let go."""
    events = outcome["events"]
    assert "finished work" in events
    assert "finished second dispose" in events
    ran = [index for index, event in enumerate(events) if event.startswith("ran ")]
    assert ran
    assert events.index("finished work") < min(ran), events


@fault(propagates="KeyboardInterrupt", extra=stopped_before_the_cleanups)
def ctrl_c_while_a_session_waits_for_its_background_work(trace: Trace, backend: Backend) -> None:
    """
    Ctrl-C reaches the task that waits for a session's background work (on
    asyncio, as the runner's cancellation; on trio, as KeyboardInterrupt): the
    work still stops before the cleanups run, and then Ctrl-C propagates.
    """
    joining: list[anyio.Event] = []
    pressed: list[anyio.Event] = []

    async def winds_down() -> None:
        try:
            await anyio.sleep_forever()
        finally:  # cancelled: it takes a moment to stop, shielded
            joining[0].set()
            with anyio.CancelScope(shield=True):
                # Until Ctrl-C was pressed, and a moment more for the loop to deliver
                # it: not a fixed time, which a loaded machine may outlast.
                await pressed[0].wait()
                await anyio.sleep(TINY)
            trace.add("finished work")

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        joining.append(anyio.Event())
        pressed.append(anyio.Event())
        scope.start_soon(winds_down)

    implementation, _ = contract(trace, {"session": passes}, create=create)

    async def use() -> None:
        async with ck.open_feature(implementation) as session:

            async def second() -> None:
                await joining[0].wait()
                try:
                    await session.dispose()
                finally:
                    trace.add("finished second dispose")

            async def press() -> None:
                await joining[0].wait()
                await anyio.wait_all_tasks_blocked()  # the second dispose waits on the first

                # Ctrl-C from within the event loop, as when it arrives while every
                # task waits: each loop delivers it to its main task, the one joining.
                def ctrl_c() -> None:
                    try:
                        signal.raise_signal(signal.SIGINT)
                    finally:
                        pressed[0].set()

                if backend == "trio":
                    import trio

                    trio.lowlevel.current_trio_token().run_sync_soon(ctrl_c)
                else:
                    import asyncio

                    asyncio.get_running_loop().call_soon(ctrl_c)

            async with anyio.create_task_group() as task_group:
                task_group.start_soon(second)
                task_group.start_soon(press)
                await session.dispose()

    anyio.run(use, backend=backend)


# Background work always starts, as in a task group, and sees the cancellation at once.


def owning_work(trace: Trace, label: str) -> Callable[[], Awaitable[None]]:
    """Work that owns a resource and releases it in its finally."""

    async def owns() -> None:
        trace.add(f"started {label}")
        try:
            await anyio.sleep(60)
        finally:
            trace.add(f"finished {label}")

    return owns


class Unnameable:
    """A task name that cannot be made text."""

    def __str__(self) -> str:
        raise ValueError("no name")

    __repr__ = __str__


def starts_unnameable_work(trace: Trace, backend: Backend, lanes: int) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            scope.start_soon(passes, trace, name=Unnameable())

    cases: dict[str, Case] = {"first": passes, "second": passes}
    return run(backend, *contract(trace, cases, create=create), timeout=None, max_concurrency=lanes)


UNNAMEABLE = ["failed in create(): ValueError: no name"]


@fault(FAILED_THEN_PASSED, says=UNNAMEABLE)
def work_named_by_what_cannot_be_text_fails_its_create(trace: Trace, backend: Backend) -> Outcome:
    return starts_unnameable_work(trace, backend, lanes=1)


@fault(FAILED_THEN_PASSED, says=UNNAMEABLE)
def work_named_by_what_cannot_be_text_fails_its_create_in_a_lane(
    trace: Trace, backend: Backend
) -> Outcome:
    return starts_unnameable_work(trace, backend, lanes=2)


@fault(("passed", "passed"), extra=finished("first.work"))
def work_the_case_ends_before_it_runs_still_starts(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            scope.start_soon(owning_work(trace, "first.work"))

    def quick(api: Trace) -> None:
        pass  # never yields: the work is not yet running when the case ends

    cases: dict[str, Case] = {"first": quick, "second": passes}
    return run(backend, *contract(trace, cases, create=create))


@fault(extra=finished("session.work"))
def work_a_session_closes_before_it_runs_still_starts(trace: Trace, backend: Backend) -> None:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        scope.start_soon(owning_work(trace, "session.work"))

    session(trace, backend, calm, create)


# Hangs: a session disposed from inside itself, a cancellation during the join.

WAITS_FOR_ITSELF = "it would wait for itself"


def self_disposing(trace: Trace, backend: Backend, where: str, timeout: float | None) -> None:
    """A session whose own cleanup, or background work, awaits its dispose()."""
    holder: dict[str, ck.Session[Trace]] = {}

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        async def disposes() -> None:
            await holder["session"].dispose()

        if where == "cleanup":
            trace.defer(scope, "session.disposes", disposes, is_async=True)
        else:

            async def later() -> None:
                await anyio.lowlevel.checkpoint()  # the body has the session by now
                await disposes()

            scope.start_soon(later)

    implementation, _ = contract(trace, {"session": passes}, create=create)

    async def use() -> None:
        async with ck.open_feature(implementation, timeout=timeout) as session:
            holder["session"] = session
            await anyio.sleep(TINY / 2)

    anyio.run(use, backend=backend)


@fault(propagates="ExceptionGroup", says=["own cleanup", WAITS_FOR_ITSELF])
def a_cleanup_disposes_of_its_own_session(trace: Trace, backend: Backend) -> None:
    self_disposing(trace, backend, "cleanup", None)


@fault(propagates="ExceptionGroup", says=["own background work", WAITS_FOR_ITSELF])
def background_work_disposes_of_its_own_session(trace: Trace, backend: Backend) -> None:
    self_disposing(trace, backend, "work", TINY)


@fault(propagates="ExceptionGroup", says=["own background work", WAITS_FOR_ITSELF])
def background_work_disposes_of_its_own_session_without_deadlines(
    trace: Trace, backend: Backend
) -> None:
    self_disposing(trace, backend, "work", None)


def cancelled_during_the_join(
    trace: Trace, backend: Backend, work: Callable[[], Awaitable[None]]
) -> Outcome:
    """Run four cases, two at a time, and cancel the run from outside as a join begins."""
    events: dict[str, anyio.Event] = {}

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        async def watched() -> None:
            try:
                await work()
            finally:
                events["joining"].set()

        scope.start_soon(watched)

    async def brief(api: Trace) -> None:
        await anyio.sleep(TINY / 10)

    cases: dict[str, Case] = {f"case{index}": brief for index in range(4)}
    implementation, suite = contract(trace, cases, create=create)

    async def main() -> Outcome:
        events["joining"] = anyio.Event()
        async with anyio.create_task_group() as task_group:
            with anyio.CancelScope() as outer:

                async def cancel_as_a_join_begins() -> None:
                    await events["joining"].wait()
                    outer.cancel()

                task_group.start_soon(cancel_as_a_join_begins)
                await ck.run_contract(implementation, suite, max_concurrency=2, timeout=TINY)
            task_group.cancel_scope.cancel()
        return {"cancelled": outer.cancelled_caught}

    return anyio.run(main, backend=backend)


def was_cancelled(outcome: Outcome) -> None:
    assert outcome["cancelled"] is True


@fault(extra=was_cancelled)
def an_outside_cancellation_during_the_join_of_deaf_work(trace: Trace, backend: Backend) -> Outcome:
    return cancelled_during_the_join(trace, backend, swallow_cancellation)


@fault(extra=was_cancelled)
def an_outside_cancellation_during_the_join_of_slow_work(trace: Trace, backend: Backend) -> Outcome:
    async def winds_down() -> None:
        try:
            await anyio.sleep(60)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(TINY / 2)

    return cancelled_during_the_join(trace, backend, winds_down)


# Two views of one outcome agree.


class Deferred:
    """An awaitable that is not a coroutine."""

    def __init__(self, value: Trace) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Trace]:
        yield from anyio.lowlevel.checkpoint().__await__()
        return self.value


def deferring(trace: Trace) -> ck.FeatureImplementation[Trace]:
    implementation, _ = contract(trace, {"one": passes})

    class DeferredCreate(type(implementation)):  # type: ignore[misc]
        def create(self, scope: ck.FeatureScope) -> Deferred:
            trace.defer(scope, f"{scope._case_id or 'session'}.0")
            return Deferred(trace)

    return DeferredCreate()


@fault(("passed", "passed"))
def create_returns_an_awaitable_that_is_not_a_coroutine(trace: Trace, backend: Backend) -> Outcome:
    async def uses(api: Trace) -> None:
        api.add("used")

    implementation = deferring(trace)
    suite = ck.ContractSuite(implementation.feature, {"one": uses})
    outcome = run(backend, implementation, suite)

    async def use() -> None:
        async with ck.open_feature(implementation) as session:
            await uses(session.api)  # the API, awaited, as the run gets it

    anyio.run(use, backend=backend)
    outcome["verdict"].append("passed")
    outcome["reasons"].append("")
    return outcome


def agreeing(outcome: Outcome) -> None:
    assert outcome["early"] == outcome["on exit"]
    assert "the work failed later: ValueError: late" in outcome["notes"]


@fault(extra=agreeing)
def dispose_early_and_leaving_agree_when_work_fails_late(trace: Trace, backend: Backend) -> Outcome:
    events: dict[str, anyio.Event] = {}

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        async def stubborn() -> None:
            await deaf_until(events["release"])
            raise ValueError("late")

        scope.start_soon(stubborn)

    implementation, _ = contract(trace, {"session": passes}, create=create)
    seen: Outcome = {}

    async def use() -> None:
        events["release"] = anyio.Event()
        try:
            async with ck.open_feature(implementation, timeout=TINY) as session:
                try:
                    await session.dispose()
                except ExceptionGroup as group:  # the early outcome
                    seen["early"] = [str(error) for error in group.exceptions]
                events["release"].set()
        except ExceptionGroup as group:  # the outcome on leaving the block
            seen["on exit"] = [str(error) for error in group.exceptions]
            seen["notes"] = [
                note for error in group.exceptions for note in getattr(error, "__notes__", ())
            ]

    anyio.run(use, backend=backend)
    return seen


# Un-awaited coroutines: a sync case written against an async API fails.


class AsyncTrace(Trace):
    """The trace with an async method, as an async API has."""

    async def write(self, event: str) -> None:
        self.add(event)


def async_api(trace: Trace, case: Callable[[AsyncTrace], None]) -> Outcome:
    implementation, _ = contract(trace, {"first": passes})
    api = AsyncTrace()
    api.events = trace.events

    class AsyncCreate(type(implementation)):  # type: ignore[misc]
        async def create(self, scope: ck.FeatureScope) -> AsyncTrace:
            await super().create(scope)
            return api

    suite = ck.ContractSuite(implementation.feature, {"first": cast("Case", case)})
    return {"run": suite, "implementation": AsyncCreate()}


@fault(("failed",), says=["RuntimeWarning: coroutine api.write() was never awaited"])
def a_sync_case_drops_a_coroutine_of_the_api(trace: Trace, backend: Backend) -> Outcome:
    def forgets(api: AsyncTrace) -> None:
        api.write("never")  # type: ignore[unused-coroutine]  # the fault under test

    parts = async_api(trace, forgets)
    return run(backend, parts["implementation"], parts["run"])


@fault(("failed",), says=["RuntimeWarning: coroutine api.write() was never awaited"])
def a_sync_case_drops_a_coroutine_while_calls_are_recorded(
    trace: Trace, backend: Backend
) -> Outcome:
    def forgets(api: AsyncTrace) -> None:
        api.write("never")  # type: ignore[unused-coroutine]  # the fault under test

    parts = async_api(trace, forgets)
    return run(backend, parts["implementation"], parts["run"], reject_vacuous=True)


# The lifecycle's own rules, under the same checks.


@fault(("passed", "failed", "passed"), says=["raised with no cancellation under way"])
def a_case_raises_a_stray_cancellation_among_concurrent_ones(
    trace: Trace, backend: Backend
) -> Outcome:
    async def stray(api: Trace) -> None:
        raise await stale_cancellation()

    cases: dict[str, Case] = {"one": passes, "stray": stray, "two": passes}
    # No deadline is at stake: the passing cases get ample time on a loaded machine.
    return run(backend, *contract(trace, cases), max_concurrency=3, timeout=5)


@fault(("unavailable", "passed"), says=["unavailable: conformkit.FeatureUnavailable: no server"])
def create_finds_a_facility_missing(trace: Trace, backend: Backend) -> Outcome:
    cases: dict[str, Case] = {"first": passes, "second": passes}
    create = in_create(ck.FeatureUnavailable("no server"))
    return run(backend, *contract(trace, cases, create=create))


@fault(FAILED_THEN_PASSED, says=["only when create() raises it"])
def a_case_raises_feature_unavailable(trace: Trace, backend: Backend) -> Outcome:
    async def unavailable(api: Trace) -> None:
        raise ck.FeatureUnavailable("too late to say so")

    return run(backend, *contract(trace, {"first": unavailable, "second": passes}))


@fault(FAILED_THEN_PASSED, says=["failed in cleanup: ValueError: third (and 1 more)"])
def every_cleanup_runs_when_several_fail(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.first", raising(ValueError("first")))
            trace.defer(scope, "first.second")
            trace.defer(scope, "first.third", raising(ValueError("third")), is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["failed in create(): ValueError: setup broke"])
def create_fails_after_registering_cleanups(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.late", is_async=True)
            raise ValueError("setup broke")

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(
    FAILED_THEN_PASSED, says=["failed in create(): ValueError: setup broke", "cleanup(s) failed"]
)
def create_fails_and_so_does_a_rollback_cleanup(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.rollback", raising(OSError("rollback broke")))
            raise ValueError("setup broke")

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["stage 'create' exceeded the 0.2s deadline (cancelled in"])
def an_async_create_hangs(trace: Trace, backend: Backend) -> Outcome:
    async def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            await anyio.sleep(60)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["exceeded the 0.2s deadline (stage 'cleanup'; cancelled in"])
def an_async_cleanup_hangs(trace: Trace, backend: Backend) -> Outcome:
    async def hangs() -> None:
        await anyio.sleep(60)

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            trace.defer(scope, "first.hangs", hangs, is_async=True)

    return run(backend, *contract(trace, {"first": passes, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["failed in cleanup: ValueError: worker broke"])
def background_work_fails(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":

            async def breaks() -> None:
                raise ValueError("worker broke")

            scope.start_soon(breaks)

    async def waits(api: Trace) -> None:
        await anyio.sleep(TINY / 4)

    return run(backend, *contract(trace, {"first": waits, "second": passes}, create=create))


def reports_the_late_failure(outcome: Outcome) -> None:
    assert outcome["late"] == ["failed after its case was judged"]


@fault(
    FAILED_THEN_PASSED,
    says=["background work did not finish within 0.2s"],
    extra=reports_the_late_failure,
)
def background_work_outlives_its_join_and_fails_later(trace: Trace, backend: Backend) -> Outcome:
    events: dict[str, anyio.Event] = {}

    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":
            events["release"] = anyio.Event()

            async def deaf() -> None:
                await deaf_until(events["release"])  # no cancellation reaches it
                raise ValueError("failed after its case was judged")

            scope.start_soon(deaf)

    async def started(api: Trace) -> None:
        await anyio.lowlevel.checkpoint()

    async def releases(api: Trace) -> None:
        events["release"].set()
        await anyio.sleep(TINY / 4)

    cases: dict[str, Case] = {"first": started, "second": releases}
    return run(backend, *contract(trace, cases, create=create))


@fault(propagates="KeyboardInterrupt")
def background_work_raises_keyboard_interrupt(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":

            async def interrupts() -> None:
                raise KeyboardInterrupt

            scope.start_soon(interrupts)

    async def waits(api: Trace) -> None:
        await anyio.sleep(TINY / 4)

    return run(backend, *contract(trace, {"first": waits, "second": passes}, create=create))


@fault(FAILED_THEN_PASSED, says=["failed in cleanup: SystemExit: 0"])
def background_work_calls_sys_exit(trace: Trace, backend: Backend) -> Outcome:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        if case_id == "first":

            async def exits() -> None:
                sys.exit(0)

            scope.start_soon(exits)

    async def waits(api: Trace) -> None:
        await anyio.sleep(TINY / 4)

    return run(backend, *contract(trace, {"first": waits, "second": passes}, create=create))


@fault(extra=was_cancelled)
def an_outside_cancellation_during_a_case(trace: Trace, backend: Backend) -> Outcome:
    async def hangs(api: Trace) -> None:
        await anyio.sleep(60)

    implementation, suite = contract(trace, {"first": hangs, "second": passes})

    async def main() -> Outcome:
        with anyio.move_on_after(TINY) as outer:
            await ck.run_contract(implementation, suite, timeout=None)
        return {"cancelled": outer.cancelled_caught}

    return anyio.run(main, backend=backend)


@fault(propagates="ValueError", says=["the case's own"])
def contract_case_run_raises_the_case_error(trace: Trace, backend: Backend) -> None:
    async def fails(api: Trace) -> None:
        raise ValueError("the case's own")

    [case] = ck.contract_cases(*contract(trace, {"first": fails}))
    case.run_sync(backend=backend)  # type: ignore[arg-type]


@fault(propagates="ExceptionGroup", says=["body broke", "cleanup broke"])
def an_open_feature_body_and_a_cleanup_fail(trace: Trace, backend: Backend) -> None:
    def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
        trace.defer(scope, "session.fails", raising(OSError("cleanup broke")))

    session(trace, backend, raising(ValueError("body broke")), create)


# Background work stuck where no cancellation ends it: the watchdog wakes it where it
# can (on asyncio, a wait it is shielded in or a thread it awaits), and says where it
# is, once, through the stuck hook, where it cannot. A run cannot abandon a task, so
# each scenario's hook lets the work go once it has reported it.

STUCK_DEADLINE = 3.0
"""
The stage and join deadline in these scenarios: the case waits within it for its work to
start, and work woken at it has a second more to end before the watchdog would report it
stuck, ample on a loaded machine.
"""
STUCK_KINDS = {
    "a shielded sleep": ("trio",),
    "a shielded event wait": ("trio",),
    "a loop that catches base exceptions": ("asyncio", "trio"),
    "a thread that never returns": ("trio",),
}
"""Each way background work gets stuck, and the backends where nothing can interrupt it."""


class StuckWork:
    """Background work stuck in one way, and the stuck hook that records it and lets it go."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.started = anyio.Event()
        self.released = threading.Event()
        self.reports: list[str] = []
        # Run in the event loop's thread by the hook, to let the work go there.
        self.let_go: Callable[[], object] = lambda: None
        self.call_soon: Callable[[Callable[[], object]], object] | None = None

    async def work(self) -> None:
        if anyio.get_cancelled_exc_class().__module__.startswith("trio"):
            import trio

            self.call_soon = trio.lowlevel.current_trio_token().run_sync_soon
        else:
            import asyncio

            self.call_soon = asyncio.get_running_loop().call_soon_threadsafe
        if self.kind == "a shielded sleep":
            with anyio.CancelScope(shield=True) as shield:
                self.let_go = shield.cancel
                self.started.set()
                await anyio.sleep(600)
        elif self.kind == "a shielded event wait":
            event = anyio.Event()
            self.let_go = event.set
            with anyio.CancelScope(shield=True):
                self.started.set()
                await event.wait()
        elif self.kind == "a loop that catches base exceptions":
            self.started.set()
            while not self.released.is_set():
                try:  # noqa: SIM105  # the defect under test, spelt out
                    await anyio.sleep(600)
                except BaseException:
                    pass  # every cancellation and interruption, swallowed
        else:

            def blocks() -> None:
                anyio.from_thread.run_sync(self.started.set)
                self.released.wait()

            await anyio.to_thread.run_sync(blocks)

    def hook(self, watch: Watch) -> None:
        """Called from the watchdog's thread: record the report, then let the work go."""
        self.reports.append(f"{watch.label()}\n{watch.stack}")
        self.released.set()
        if self.call_soon is not None:
            self.call_soon(self.let_go)

    def play(self, backend: Backend, run: Callable[[], Outcome | None]) -> Outcome:
        set_stuck_hook(self.hook)
        outcome: Outcome = {"backend": backend, "kind": self.kind}
        try:
            try:
                outcome.update(run() or {})
            except BaseException as exc:
                outcome["propagated"] = type(exc).__name__
                leaves = list(exc.exceptions) if isinstance(exc, BaseExceptionGroup) else []
                outcome["message"] = " | ".join([str(exc), *map(str, leaves)])
        finally:
            set_stuck_hook(None)
            self.released.set()  # a thread left waiting would hold the process at exit
        outcome["reports"] = self.reports
        return outcome


def reported_once_where_nothing_interrupts(session: bool) -> Callable[[Outcome], None]:
    def check(outcome: Outcome) -> None:
        where = "the session" if session else "case 'first'"
        if outcome["backend"] in STUCK_KINDS[outcome["kind"]]:
            [report] = outcome["reports"]
            label, _, stack = report.partition("\n")
            assert label == f"feature 'faults', {where} (background task 'stuck work')"
            assert ", in work\n" in stack, stack
        else:  # woken, it stopped: nothing to report
            assert outcome["reports"] == []

    return check


def stuck_in_a_run(kind: str) -> Play:
    def play(trace: Trace, backend: Backend) -> Outcome:
        stuck = StuckWork(kind)

        def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
            if case_id == "first":
                scope.start_soon(stuck.work, name="stuck work")

        async def first(api: Trace) -> None:
            await stuck.started.wait()

        cases: dict[str, Case] = {"first": first, "second": passes}
        implementation, suite = contract(trace, cases, create=create)
        return stuck.play(
            backend, lambda: run(backend, implementation, suite, timeout=STUCK_DEADLINE)
        )

    return play


def stuck_in_a_session(kind: str) -> Play:
    def play(trace: Trace, backend: Backend) -> Outcome:
        stuck = StuckWork(kind)

        def create(scope: ck.FeatureScope, trace: Trace, case_id: str) -> None:
            scope.start_soon(stuck.work, name="stuck work")

        implementation, _ = contract(trace, {"session": passes}, create=create)

        async def use() -> None:
            async with ck.open_feature(implementation, timeout=STUCK_DEADLINE):
                await stuck.started.wait()

        return stuck.play(backend, lambda: anyio.run(use, backend=backend))

    return play


for _kind in STUCK_KINDS:
    FAULTS[f"background work stuck in {_kind} in a run"] = Fault(
        f"background work stuck in {_kind} in a run",
        stuck_in_a_run(_kind),
        FAILED_THEN_PASSED,
        says=(f"background work did not finish within {STUCK_DEADLINE:g}s", "task 'stuck work'"),
        extra=reported_once_where_nothing_interrupts(session=False),
    )
    FAULTS[f"background work stuck in {_kind} in a session"] = Fault(
        f"background work stuck in {_kind} in a session",
        stuck_in_a_session(_kind),
        # The play keeps what the session raised, with the reports.
        propagates="ExceptionGroup",
        says=(f"background work did not finish within {STUCK_DEADLINE:g}s", "task 'stuck work'"),
        extra=reported_once_where_nothing_interrupts(session=True),
    )


# The command line ends whatever background work does: where nothing can interrupt
# the work, with what it judged written, one line naming the stuck task, status 2.

STUCK_CONTRACT = """
import os
import threading

import anyio

import conformkit as ck

KIND = os.environ["KIND"]
stuck_feature = ck.Feature[anyio.Event]("tests.stuck", cases=("first", "second"))
suite = ck.ContractSuite(stuck_feature)


async def work(started: anyio.Event) -> None:
    if KIND == "a shielded sleep":
        with anyio.CancelScope(shield=True):
            started.set()
            await anyio.sleep(600)
    elif KIND == "a shielded event wait":
        with anyio.CancelScope(shield=True):
            started.set()
            await anyio.Event().wait()
    elif KIND == "a loop that catches base exceptions":
        started.set()
        while True:
            try:
                await anyio.sleep(600)
            except BaseException:
                pass
    else:

        def blocks() -> None:
            anyio.from_thread.run_sync(started.set)
            threading.Event().wait()

        await anyio.to_thread.run_sync(blocks)


@suite.case
async def first(started: anyio.Event) -> None:
    await started.wait()


@suite.case
async def second(started: anyio.Event) -> None:
    pass


class Stuck(ck.FeatureImplementation[anyio.Event]):
    feature = stuck_feature
    coverage = stuck_feature.coverage()
    created = 0

    def create(self, scope: ck.FeatureScope) -> anyio.Event:
        started = anyio.Event()
        if Stuck.created == 0:  # the first case's
            scope.start_soon(work, started, name="stuck work")
        Stuck.created += 1
        return started
"""


def run_in_its_own_group(
    args: Sequence[str], cwd: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run a command in a process group of its own, killed whole if it outlives HARD_TIMEOUT."""
    process = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=HARD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"the command line hung:\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("kind", list(STUCK_KINDS))
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_command_line_ends_whatever_background_work_does(
    tmp_path: Any, backend: Backend, kind: str
) -> None:
    """
    Work nothing can interrupt ends the run: status 2, the report written, one line
    naming feature, case and task; work the watchdog wakes (on asyncio) fails its case.
    """
    (tmp_path / "stuck.py").write_text(STUCK_CONTRACT, encoding="utf-8")
    env = {**os.environ, "KIND": kind, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    done = run_in_its_own_group(
        [sys.executable, "-m", "conformkit", "run", "stuck.py", "--backend", backend,
         "--timeout", f"{STUCK_DEADLINE:g}", "--format", "json", "-o", "report.json",
         "--format", "junit", "-o", "report.xml", "-q"],
        str(tmp_path),
        env,
    )  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    [entry] = report["reports"]
    statuses = {result["case_id"]: result["status"] for result in entry["results"]}
    assert statuses == {"first": "failed", "second": "passed"}, done.stderr
    [first, _] = entry["results"]
    assert f"background work did not finish within {STUCK_DEADLINE:g}s" in first["reason"]
    assert "task 'stuck work'" in first["reason"]
    assert report["verdict"] == "fails"
    junit = (tmp_path / "report.xml").read_text(encoding="utf-8")  # every format asked for
    assert 'tests="2"' in junit
    assert 'failures="1"' in junit
    assert '<testcase name="second"' in junit
    lines = [line for line in done.stderr.splitlines() if line.startswith("conformkit:")]
    if backend in STUCK_KINDS[kind]:
        assert done.returncode == 2, done.stderr
        assert lines == [
            "conformkit: error: case 'first' of tests.stuck × Stuck: background task "
            f"'stuck work' did not stop within {STUCK_DEADLINE:g}s of being cancelled and could "
            "not be "
            "interrupted; the run was stopped"
        ]
    else:  # woken: its case failed, and the run went on to its end
        assert done.returncode == 1, done.stderr
        if kind == "a thread that never returns":  # which would hold the process at exit
            assert lines == [
                "conformkit: 1 thread(s) the code under test started never returned "
                "('AnyIO worker thread'); the process ends without them"
            ]
        else:
            assert lines == []


@pytest.mark.parametrize(
    ("backend", "kind"),
    [("asyncio", "a loop that catches base exceptions"), ("trio", "a shielded event wait")],
)
def test_pytest_ends_a_session_stuck_in_background_work(
    tmp_path: Any, backend: Backend, kind: str
) -> None:
    """``pytest --conformkit`` shows where the work is stuck, past its capture; status 2."""
    (tmp_path / "stuck.py").write_text(STUCK_CONTRACT, encoding="utf-8")
    env = {**os.environ, "KIND": kind, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    done = run_in_its_own_group(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--conformkit", "stuck.py", "--conformkit-backend", backend],
        str(tmp_path),
        env,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    what = "feature 'tests.stuck', case 'first' (background task 'stuck work')"
    lines = done.stderr.splitlines()
    assert f"conformkit: {what} did not stop within 5s of being cancelled" in lines[0]
    assert any(line.endswith(", in work") for line in lines), done.stderr
    assert lines[-1] == (
        f"conformkit: error: tests.stuck::Stuck::first[{backend}]: {what} could not be "
        f"interrupted; the pytest session was stopped"
    )


def test_pytest_ends_without_a_thread_that_background_work_left_running(tmp_path: Any) -> None:
    """Work woken out of a thread that never returns fails its item; pytest still ends."""
    (tmp_path / "stuck.py").write_text(STUCK_CONTRACT, encoding="utf-8")
    env = {**os.environ, "KIND": "a thread that never returns", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    done = run_in_its_own_group(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--conformkit", "stuck.py", "--conformkit-backend", "asyncio"],
        str(tmp_path),
        env,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert done.stderr.splitlines()[-1] == (
        "conformkit: 1 thread(s) the code under test started never returned "
        "('AnyIO worker thread'); the process ends without them"
    )


# -- playing the scenarios (in the subprocess) -------------------------------------------


def play(name: str, backend: Backend) -> Outcome:
    """Play one scenario and say what happened."""
    trace = Trace()
    outcome: Outcome = {"name": name}
    try:
        outcome.update(FAULTS[name].play(trace, backend) or {})
    except BaseException as exc:  # what propagated is the scenario's outcome
        outcome["propagated"] = type(exc).__name__
        leaves = list(exc.exceptions) if isinstance(exc, BaseExceptionGroup) else []
        outcome["message"] = " | ".join(
            [str(exc), *map(str, leaves), *getattr(exc, "__notes__", ())]
        )
    outcome["events"] = trace.events
    return outcome


def main(backend: Backend, names: Sequence[str]) -> None:
    for name in names:
        print(json.dumps({"started": name}), flush=True)
        print(json.dumps(play(name, backend)), flush=True)


# -- checking them (in pytest) ------------------------------------------------------------


def groups(backend: Backend) -> list[list[str]]:
    names = [name for name, fault in FAULTS.items() if backend in fault.on]
    return [names[index::GROUPS] for index in range(GROUPS)]


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[Backend, str], Outcome]:
    """Every scenario's outcome: its groups run in subprocesses, all at once."""
    processes = [
        (
            backend,
            group,
            subprocess.Popen(
                [sys.executable, __file__, backend, *group],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            ),
        )
        for backend in ("asyncio", "trio")
        for group in groups(backend)
        if group
    ]
    results: dict[tuple[Backend, str], Outcome] = {}
    deadline = time.monotonic() + HARD_TIMEOUT
    for backend, _group, process in processes:
        try:
            stdout, stderr = process.communicate(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        started = None
        for line in stdout.splitlines():
            record = json.loads(line)
            if "started" in record:
                started = record["started"]
            else:
                results[backend, record["name"]] = record
                started = None
        if started is not None:
            results[backend, started] = {"hung": True, "stderr": stderr[-3000:]}
    return results


def params() -> Iterator[Any]:
    for backend in ("asyncio", "trio"):
        for name, fault in FAULTS.items():
            if backend in fault.on:
                yield pytest.param(backend, name, id=f"{backend}-{name}")


def assert_cleanups_ran_once_in_reverse(events: list[str]) -> None:
    """Every registered cleanup ran exactly once, the last registered of each case first."""
    registered: dict[str, list[str]] = {}
    ran: dict[str, list[str]] = {}
    for event in events:
        kind, _, label = event.partition(" ")
        if kind in ("defer", "ran"):
            owner = label.split(".")[0]
            (registered if kind == "defer" else ran).setdefault(owner, []).append(label)
    assert {owner: labels[::-1] for owner, labels in registered.items()} == ran


@pytest.mark.parametrize(("backend", "name"), list(params()))
def test_fault(outcomes: dict[tuple[Backend, str], Outcome], backend: Backend, name: str) -> None:
    """The scenario's cleanups ran once each, last first; its verdict and what propagated hold."""
    fault = FAULTS[name]
    outcome = outcomes.get((backend, name))
    assert outcome is not None, "the scenario never started: an earlier one hung"
    assert not outcome.get("hung"), f"the scenario hung:\n{outcome.get('stderr')}"
    assert_cleanups_ran_once_in_reverse(outcome["events"])
    assert outcome.get("propagated") == fault.propagates, outcome.get("message")
    if fault.propagates is None:
        expected = None if fault.verdict is None else list(fault.verdict)
        assert outcome.get("verdict") == expected, outcome.get("reasons")
        failing = [
            reason
            for reason, status in zip(
                outcome.get("reasons", ()), outcome.get("verdict", ()), strict=True
            )
            if status != "passed"
        ]
        said = failing[0] if failing else ""
    else:
        said = outcome["message"]
    if os.environ.get("CONFORMKIT_MUTATION"):
        said = TRAMPOLINES.sub("", said)
    for text in fault.says:
        assert text in said
    if fault.extra is not None:
        fault.extra(outcome)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main(sys.argv[1], sys.argv[2:])
