"""
Hostile contracts: every status, and every kind of failure and reason form that
docs/reports.md lists, for tests/test_entry_points.py to run through every entry point.

Three targets name what a run collects: ``HOLDING`` (every report holds, whatever
runs it), ``FAILING`` (a report for each kind of failure) and ``FLAGGED`` (the
reports whose verdict a gate option changes). ``EXPECTED`` says each case's
status under the default options, and ``SLOW`` the cases that pass only when run
again with more time. A case meant to pass needs far less than its deadline (one
under ``SHORT`` declares ``ROOMY`` of its own); a case meant to overrun has a short
one (``SHORT``), and every wait it makes is bounded, so that nothing here can hang a
run whatever interrupts it.
"""

from __future__ import annotations

import sys
import time
import unittest
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import pytest

import conformkit as ck

SHORT = 0.25
"""The deadline of the implementations meant to overrun: a stuck stage is interrupted at 0.5 s."""
BOUND = 3.0
"""Seconds a stuck stage waits at most, should nothing interrupt it."""
ROOMY = 30.0
"""The own deadline of a case meant to pass where its implementation declares ``SHORT``."""

PASSED = ck.CaseStatus.PASSED.value
FAILED = ck.CaseStatus.FAILED.value
UNSUPPORTED = ck.CaseStatus.UNSUPPORTED.value
UNAVAILABLE = ck.CaseStatus.UNAVAILABLE.value

EXPECTED: dict[str, dict[str, str]] = {}
"""Implementation name -> case ID -> status, under the default options."""
SLOW: dict[str, tuple[str, ...]] = {}
"""Implementation name -> the cases that pass slow: only when run again with more time."""


class Store(Protocol):
    async def read(self, key: str) -> str | None: ...
    async def write(self, key: str, value: str) -> None: ...
    def size(self) -> int: ...


class MemoryStore:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def read(self, key: str) -> str | None:
        return self.values.get(key)

    async def write(self, key: str, value: str) -> None:
        self.values[key] = value

    def size(self) -> int:
        return len(self.values)


class Unreadable:
    """A reason whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise ValueError("no text")


class Narrower(ck.CaseUnsupported):  # type: ignore[misc]  # what a user might write
    """Only CaseUnsupported itself says "does not apply"."""


class Custom(BaseException):
    """Neither an Exception nor an interrupt."""


async def stale_cancellation() -> BaseException:
    """A cancellation exception caught in a scope that has ended: raising it cancels nothing."""
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class() as exc:
            caught = exc
            raise
    return caught


# -- the case stage: corpus.cases -------------------------------------------------------

CASES = {
    # what passes
    "passes": PASSED,
    "passes_sync": PASSED,
    # what fails
    "asserts": FAILED,
    "bare_assert": FAILED,
    "raises": FAILED,
    "group": FAILED,
    "unawaited": FAILED,
    "stray_cancellation": FAILED,
    "exits": FAILED,
    "generator_exit": FAILED,
    "custom_base_exception": FAILED,
    "unavailable_in_the_case": FAILED,
    # what skips in a test runner, and fails a case
    "empty_reason": FAILED,
    "blank_reason": FAILED,
    "unreadable_reason": FAILED,
    "unsupported_subclass": FAILED,
    "skip_test": FAILED,
    "pytest_skip": FAILED,
    "pytest_xfail": FAILED,
    "pytest_exit": FAILED,
    "pytest_fail": FAILED,
    # what is a gap
    "found_unsupported": UNSUPPORTED,
    "declared_unsupported": UNSUPPORTED,
}
cases = ck.Feature[Store]("corpus.cases", cases=tuple(CASES))
cases_suite = ck.ContractSuite(cases)


@cases_suite.case
async def passes(api: Store) -> None:
    await api.write("k", "v")
    assert await api.read("k") == "v"


@cases_suite.case
def passes_sync(api: Store) -> None:
    assert api.size() == 0


@cases_suite.case
async def asserts(api: Store) -> None:
    raise AssertionError("expected None, read back 'v'")


@cases_suite.case
async def bare_assert(api: Store) -> None:
    got, expected = await api.read("k"), "v"
    assert got == expected


@cases_suite.case
async def raises(api: Store) -> None:
    raise ValueError("bad key")


@cases_suite.case
async def group(api: Store) -> None:
    async def boom() -> None:
        raise ValueError("bad key")

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(boom)
        task_group.start_soon(boom)


@cases_suite.case
def unawaited(api: Store) -> None:
    api.write("k", "v")  # type: ignore[unused-coroutine]  # the defect under test


@cases_suite.case
async def stray_cancellation(api: Store) -> None:
    raise await stale_cancellation()


@cases_suite.case
async def exits(api: Store) -> None:
    sys.exit(0)


@cases_suite.case
async def generator_exit(api: Store) -> None:
    raise GeneratorExit


@cases_suite.case
async def custom_base_exception(api: Store) -> None:
    raise Custom("a BaseException of its own")


@cases_suite.case
async def unavailable_in_the_case(api: Store) -> None:
    raise ck.FeatureUnavailable("only create() may say so")


@cases_suite.case
async def empty_reason(api: Store) -> None:
    raise ck.CaseUnsupported("")


@cases_suite.case
async def blank_reason(api: Store) -> None:
    raise ck.CaseUnsupported("   ")


@cases_suite.case
async def unreadable_reason(api: Store) -> None:
    raise ck.CaseUnsupported(Unreadable())  # type: ignore[arg-type]  # the defect under test


@cases_suite.case
async def unsupported_subclass(api: Store) -> None:
    raise Narrower("a subclass's reason")


@cases_suite.case
async def skip_test(api: Store) -> None:
    raise unittest.SkipTest("not today")


@cases_suite.case
async def pytest_skip(api: Store) -> None:
    pytest.skip("not today")


@cases_suite.case
async def pytest_xfail(api: Store) -> None:
    pytest.xfail("expected to fail")


@cases_suite.case
async def pytest_exit(api: Store) -> None:
    pytest.exit("bye", returncode=0)


@cases_suite.case
async def pytest_fail(api: Store) -> None:
    pytest.fail("failed")


@cases_suite.case
async def found_unsupported(api: Store) -> None:
    raise ck.CaseUnsupported("the store keeps no such field")


@cases_suite.case
async def declared_unsupported(api: Store) -> None:
    raise AssertionError("declared unsupported: never run")


class Cases(ck.FeatureImplementation[Store]):
    feature = cases
    coverage = cases.coverage(unsupported={"declared_unsupported": "the store cannot"})

    def create(self, scope: ck.FeatureScope) -> Store:
        return MemoryStore()


EXPECTED["Cases"] = CASES


# -- deadlines: corpus.deadlines --------------------------------------------------------

DEADLINES = ("sleeps_past", "blocks_past", "spins", "sleeps_stuck", "deaf", "quick")
deadlines = ck.Feature[Store]("corpus.deadlines", cases=DEADLINES)
deadlines_suite = ck.ContractSuite(deadlines)


@deadlines_suite.case
async def sleeps_past(api: Store) -> None:
    await anyio.sleep(BOUND)  # cancelled at its deadline


@deadlines_suite.case
def blocks_past(api: Store) -> None:
    time.sleep(1.5 * SHORT)  # returns after its deadline, before it is stuck


@deadlines_suite.case
def spins(api: Store) -> None:
    end = time.monotonic() + BOUND
    while time.monotonic() < end:  # sync code that never yields: the watchdog interrupts it
        pass


@deadlines_suite.case
def sleeps_stuck(api: Store) -> None:
    time.sleep(BOUND)  # a blocking call: the watchdog's signal ends it


@deadlines_suite.case
async def deaf(api: Store) -> None:
    end = time.monotonic() + BOUND
    while time.monotonic() < end:  # swallows its cancellation and waits again
        try:
            await anyio.sleep(end - time.monotonic())
        except anyio.get_cancelled_exc_class():
            continue


@deadlines_suite.case(timeout=ROOMY)  # meant to pass, whatever the load: not under SHORT
async def quick(api: Store) -> None:
    await api.write("k", "v")


class Overruns(ck.FeatureImplementation[Store]):
    feature = deadlines
    coverage = deadlines.coverage()
    timeout = SHORT

    def create(self, scope: ck.FeatureScope) -> Store:
        return MemoryStore()


EXPECTED["Overruns"] = {**dict.fromkeys(DEADLINES, FAILED), "quick": PASSED}


# -- the default guard: corpus.guard ---------------------------------------------------

guard = ck.Feature[Store]("corpus.guard", cases=("overruns_once",))
guard_suite = ck.ContractSuite(guard)
ATTEMPTS = {"overruns_once": 0}
"""How many times each case of corpus.guard has started, in this process."""


@guard_suite.case
async def overruns_once(api: Store) -> None:
    ATTEMPTS["overruns_once"] += 1
    if ATTEMPTS["overruns_once"] == 1:  # the process's first attempt only
        await anyio.sleep(2 * ck.DEFAULT_TIMEOUT)  # cancelled at the default guard
    await api.write("k", "v")


class SlowOnce(ck.FeatureImplementation[Store]):
    """No deadline of its own: its case overruns the default guard once, then passes slow."""

    feature = guard
    coverage = guard.coverage()

    def create(self, scope: ck.FeatureScope) -> Store:
        return MemoryStore()


EXPECTED["SlowOnce"] = {"overruns_once": PASSED}
# Slow where its first attempt in a process runs: under pytest, a process runs it on
# both backends (a worker of pytest-xdist, on those it gets), and only the first is slow.
SLOW["SlowOnce"] = ("overruns_once",)


# -- create and cleanup: corpus.stages, an implementation per fault ---------------------

stages = ck.Feature[Store]("corpus.stages", cases=("works", "gap", "vacuous"))
stages_suite = ck.ContractSuite(stages)


@stages_suite.case
async def works(api: Store) -> None:
    await api.write("k", "v")
    assert await api.read("k") == "v"
    assert api.size() == 1


@stages_suite.case
async def gap(api: Store) -> None:
    assert await api.read("absent") is None


@stages_suite.case
async def vacuous(api: Store) -> None:
    pass  # never calls the API: reject_vacuous fails it


GAPS = {"gap": "a declared gap", "vacuous": "another declared gap"}
"""What the implementations of one fault declare unsupported, to run one case each."""


def stage(
    name: str,
    create: Callable[[ck.FeatureScope], Any],
    works: str,
    *,
    unsupported: dict[str, str] = GAPS,
    timeout: float | None = ck.DEFAULT_TIMEOUT,
) -> type[ck.FeatureImplementation[Store]]:
    """An implementation of corpus.stages whose create() is ``create``."""

    class Stage(ck.FeatureImplementation[Store]):
        feature = stages
        coverage = stages.coverage(unsupported=unsupported)

        def create(self, scope: ck.FeatureScope) -> Any:
            return create(scope)

    Stage.timeout = timeout
    Stage.__name__ = Stage.__qualname__ = name
    EXPECTED[name] = {"works": works, **dict.fromkeys(stages.cases, PASSED)}
    EXPECTED[name].update(dict.fromkeys(unsupported, UNSUPPORTED))
    EXPECTED[name]["works"] = UNSUPPORTED if "works" in unsupported else works
    return Stage


def fine(scope: ck.FeatureScope) -> Store:
    return MemoryStore()


SHARED = MemoryStore()


def shared(scope: ck.FeatureScope) -> Store:
    return SHARED  # one object for every scope: check_isolation fails it


def raises_in_create(scope: ck.FeatureScope) -> Store:
    raise ConnectionRefusedError("no server")


def rollback_fails(scope: ck.FeatureScope) -> Store:
    def close() -> None:
        raise OSError("rollback failed")

    scope.defer(close)
    raise ConnectionRefusedError("no server")


def cleanup_fails(scope: ck.FeatureScope) -> Store:
    def close() -> None:
        raise PermissionError("denied")

    scope.defer(close)
    return MemoryStore()


def cleanup_skips(scope: ck.FeatureScope) -> Store:
    def close() -> None:
        raise unittest.SkipTest("a cleanup that skips")

    scope.defer(close)
    return MemoryStore()


def cleanup_overruns(scope: ck.FeatureScope) -> Store:
    async def close() -> None:
        await anyio.sleep(BOUND)  # cancelled at its deadline

    scope.defer(close)
    return MemoryStore()


def unsupported_in_create(scope: ck.FeatureScope) -> Store:
    raise ck.CaseUnsupported("create() has FeatureUnavailable for this")


def unavailable(scope: ck.FeatureScope) -> Store:
    raise ck.FeatureUnavailable("no database server")


def exits_in_create(scope: ck.FeatureScope) -> Store:
    sys.exit(0)


async def create_sleeps_past(scope: ck.FeatureScope) -> Store:
    await anyio.sleep(BOUND)  # cancelled at its deadline
    return MemoryStore()


def create_spins(scope: ck.FeatureScope) -> Store:
    end = time.monotonic() + BOUND
    while time.monotonic() < end:  # the watchdog interrupts it
        pass
    return MemoryStore()


def returns_none(scope: ck.FeatureScope) -> None:
    return None


class Shapeless:
    def read(self, key: str) -> None:  # sync where the API is async; write() and size() missing
        return None


def wrong_shape(scope: ck.FeatureScope) -> Shapeless:
    return Shapeless()


# What holds whatever runs it, with the default options.
Sound = stage("Sound", fine, PASSED, unsupported={})
Gappy = stage("Gappy", fine, PASSED, unsupported={"gap": "a declared gap"})
Shared = stage("Shared", shared, PASSED, unsupported={})
Thorough = stage("Thorough", fine, PASSED, unsupported={"vacuous": "a declared gap"})
Narrow = stage("Narrow", fine, PASSED, unsupported={"works": "a gap", "vacuous": "a gap"})
# What fails.
Void = stage("Void", fine, PASSED, unsupported={case: "nothing here" for case in stages.cases})
CreateRaises = stage("CreateRaises", raises_in_create, FAILED)
RollbackFails = stage("RollbackFails", rollback_fails, FAILED)
CleanupFails = stage("CleanupFails", cleanup_fails, FAILED)
CleanupSkips = stage("CleanupSkips", cleanup_skips, FAILED)
CleanupOverruns = stage("CleanupOverruns", cleanup_overruns, FAILED, timeout=SHORT)
UnsupportedInCreate = stage("UnsupportedInCreate", unsupported_in_create, FAILED)
Unavailable = stage("Unavailable", unavailable, UNAVAILABLE)  # its gaps: unavailable, unclaimed
ExitsInCreate = stage("ExitsInCreate", exits_in_create, FAILED)
CreateSleepsPast = stage("CreateSleepsPast", create_sleeps_past, FAILED, timeout=SHORT)
CreateSpins = stage("CreateSpins", create_spins, FAILED, timeout=SHORT)
ReturnsNone = stage("ReturnsNone", returns_none, FAILED)
WrongShape = stage("WrongShape", wrong_shape, FAILED)

HOLDING = (stages_suite, Sound(), Gappy(), Shared(), Thorough(), Narrow(), guard_suite, SlowOnce())
FAILING = (
    cases_suite,
    Cases(),
    deadlines_suite,
    Overruns(),
    stages_suite,
    Void(),
    CreateRaises(),
    RollbackFails(),
    CleanupFails(),
    CleanupSkips(),
    CleanupOverruns(),
    UnsupportedInCreate(),
    Unavailable(),
    ExitsInCreate(),
    CreateSleepsPast(),
    CreateSpins(),
    ReturnsNone(),
    WrongShape(),
)
FLAGGED = (stages_suite, Sound(), Gappy(), Shared(), Thorough(), Narrow(), Void())
TARGETS = {"HOLDING": HOLDING, "FAILING": FAILING, "FLAGGED": FLAGGED}
