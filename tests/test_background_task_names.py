"""Background work started from a scope runs in a task named as a task group names it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from functools import partial
from typing import cast

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck

FEATURE = ck.Feature[list[str]]("test.task_names", cases=("names",))


def current_task_name() -> str:
    return anyio.get_current_task().name or ""


async def record_name(names: list[str]) -> None:
    names.append(current_task_name())


def implementation_starting(name: object) -> tuple[ck.FeatureImplementation[list[str]], list[str]]:
    """An implementation whose create() starts ``record_name`` as work named ``name``."""
    names: list[str] = []

    class Starting(ck.FeatureImplementation[list[str]]):
        feature = FEATURE
        coverage = FEATURE.coverage()

        def create(self, scope: ck.FeatureScope) -> list[str]:
            scope.start_soon(record_name, names, name=name)
            return names

    return Starting(), names


async def wait_for_the_work(api: list[str]) -> None:
    while not api:
        await anyio.lowlevel.checkpoint()


SUITE = ck.ContractSuite(FEATURE, {"names": wait_for_the_work})


async def name_in_a_task_group() -> str:
    """The name a task group gives the task of ``record_name``."""
    names: list[str] = []
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(record_name, names)
    [name] = names
    return name


@pytest.mark.anyio
@pytest.mark.parametrize("runner", ["run_contract", "ContractCase.run", "open_feature"])
async def test_unnamed_work_is_named_as_in_a_task_group(runner: str) -> None:
    """
    Unnamed work is named after its function, as a task group names a task: a run
    of one case starts it in a task of its own, a session in its task group.
    """
    implementation, names = implementation_starting(None)
    if runner == "run_contract":
        report = await ck.run_contract(implementation, SUITE, timeout=5)
        assert report["names"].status is ck.CaseStatus.PASSED
    elif runner == "ContractCase.run":
        [case] = ck.contract_cases(implementation, SUITE, timeout=5)
        await case.run()
    else:
        async with ck.open_feature(implementation, timeout=5):
            await wait_for_the_work(names)
    assert await name_in_a_task_group() == "test_background_task_names.record_name"
    assert names == ["test_background_task_names.record_name"]


class Recorder:
    """Background work that is an object, not a function."""

    async def __call__(self, names: list[str]) -> None:
        names.append(current_task_name())


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("work", "expected"),
    [
        (partial(record_name), "test_background_task_names.record_name"),
        (partial(partial(record_name)), "test_background_task_names.record_name"),
        (Recorder(), "test_background_task_names.Recorder"),
        (record_name.__call__, "function.__call__"),  # type: ignore[operator]
    ],
    ids=["partial", "partial of a partial", "object", "method-wrapper"],
)
async def test_unnamed_work_is_named_after_what_it_runs(work: object, expected: str) -> None:
    """
    A partial is named after the function it wraps; an object after its class; a
    callable without ``__module__`` (a method-wrapper) after its qualified name alone.
    """
    names: list[str] = []
    feature = ck.Feature[list[str]]("test.task_names_of", cases=("names",))

    def create(scope: ck.FeatureScope) -> list[str]:
        scope.start_soon(cast(Callable[[list[str]], Awaitable[None]], work), names)
        return names

    implementation = feature.implementation(create, name="Starting")
    suite = ck.ContractSuite(feature, {"names": wait_for_the_work})
    report = await ck.run_contract(implementation, suite, timeout=5)
    assert report["names"].status is ck.CaseStatus.PASSED
    assert names == [expected]


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["the writer", 42])
async def test_named_work_gets_that_name(name: object) -> None:
    """With ``name=``, the task has that name, as text."""
    implementation, names = implementation_starting(name)
    [case] = ck.contract_cases(implementation, SUITE, timeout=5)
    await case.run()
    assert names == [str(name)]


REQUEST: ContextVar[str] = ContextVar("request", default="none")


async def record_request(seen: list[str]) -> None:
    seen.append(REQUEST.get())


@pytest.mark.anyio
@pytest.mark.parametrize("runner", ["ContractCase.run", "open_feature"])
async def test_work_runs_in_the_context_of_the_code_that_started_it(runner: str) -> None:
    """A context variable set in create() before start_soon() is what the work sees."""
    seen: list[str] = []

    class Starting(ck.FeatureImplementation[list[str]]):
        feature = FEATURE
        coverage = FEATURE.coverage()

        def create(self, scope: ck.FeatureScope) -> list[str]:
            REQUEST.set("from create")
            scope.start_soon(record_request, seen)
            return seen

    if runner == "open_feature":
        async with ck.open_feature(Starting(), timeout=5):
            await wait_for_the_work(seen)
    else:
        [case] = ck.contract_cases(Starting(), SUITE, timeout=5)
        await case.run()
    assert seen == ["from create"]
