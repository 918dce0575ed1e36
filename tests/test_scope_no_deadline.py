"""Closing a scope that no deadline times and nothing watches (``timeout=None``)."""

from __future__ import annotations

from functools import partial

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck

pytestmark = pytest.mark.anyio


class CleanupError(Exception):
    """What a failing cleanup raises."""


feature = ck.Feature[list[str]]("test.scope_no_deadline", cases=("only",))


def implementation_with(
    events: list[str], raised: list[BaseException]
) -> ck.FeatureImplementation[list[str]]:
    """Four cleanups, run last first: a sync one, a failing one, an async one, a sync one."""

    class Cleanups(ck.FeatureImplementation[list[str]]):
        feature = globals()["feature"]
        coverage = globals()["feature"].coverage()

        def create(self, scope: ck.FeatureScope) -> list[str]:
            async def slow() -> None:
                await anyio.lowlevel.checkpoint()
                events.append("async")

            def failing() -> None:
                events.append("failing")
                error = CleanupError("failing cleanup")
                raised.append(error)
                raise error

            scope.defer(lambda: events.append("first"))
            scope.defer(slow)
            scope.defer(failing)
            scope.defer(lambda: events.append("last"))
            return []

    return Cleanups()


async def test_every_cleanup_runs_once_last_first_and_failures_are_kept() -> None:
    events: list[str] = []
    raised: list[BaseException] = []
    suite = ck.ContractSuite(feature, {"only": lambda api: None})

    report = await ck.run_contract(implementation_with(events, raised), suite, timeout=None)

    assert events == ["last", "failing", "async", "first"]
    (result,) = report.results
    assert result.status is ck.CaseStatus.FAILED
    assert result.cleanup_errors == tuple(raised)


async def test_open_feature_without_deadline_runs_every_cleanup_once() -> None:
    events: list[str] = []
    raised: list[BaseException] = []
    with pytest.raises(BaseExceptionGroup) as caught:
        async with ck.open_feature(implementation_with(events, raised), timeout=None):
            events.append("body")
    assert events == ["body", "last", "failing", "async", "first"]
    assert list(caught.value.exceptions) == raised


@pytest.mark.parametrize("timeout", [None, 5.0], ids=["no deadline", "a deadline"])
async def test_what_a_sync_cleanup_returns_is_not_awaited(timeout: float | None) -> None:
    """A cleanup that returns a value (``dict.pop``, a count...) has simply ended."""
    store = {"key": "value"}
    scopes: list[ck.FeatureScope] = []
    the_feature = ck.Feature[list[str]]("test.scope_returns", cases=("only",))

    def create(scope: ck.FeatureScope) -> list[str]:
        scopes.append(scope)
        scope.defer(lambda: 42)
        scope.defer(partial(store.pop, "key"))
        return []

    implementation = the_feature.implementation(create, name="Returning")
    suite = ck.ContractSuite(the_feature, {"only": lambda api: None})
    report = await ck.run_contract(implementation, suite, timeout=timeout)

    assert report["only"].status is ck.CaseStatus.PASSED, report["only"].reason
    assert store == {}
    [scope] = scopes
    assert "closed>" in repr(scope)  # and the case's scope is closed, as a run leaves it
