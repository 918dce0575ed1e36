"""
ContractCase.run(): a failed case is a failure in every test runner, whatever it raised.

A case, ``create`` or a cleanup can raise what a test runner reads as something
other than a failure: a skip (``unittest.SkipTest``, ``pytest.skip``, a
``CaseUnsupported`` with no reason), an expected failure (``pytest.xfail``), the end
of the session or of the process (``pytest.exit``, ``SystemExit``), a cancellation.
The run fails such a case; ``case.run()`` then raises a ``ContractFailure`` chained
from it, never the error itself. A plain failure is raised as itself.
"""

from __future__ import annotations

import io
import unittest
from collections.abc import Callable
from typing import Any, Literal

import anyio
import pytest

import conformkit as ck
from test_runner import stale_cancellation

Backend = Literal["asyncio", "trio"]


class Store:
    """The API: nothing to it, the cases raise what they are given."""


feature = ck.Feature[Store]("test.case_failures", cases=("hostile", "gap"))


class Unreadable:
    """A reason whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise ValueError("no text")


class Narrower(ck.CaseUnsupported):  # type: ignore[misc]  # the subclass a user might write
    """A subclass of CaseUnsupported: only CaseUnsupported itself says "does not apply"."""


class Custom(BaseException):
    """Neither an Exception nor an interrupt."""


# Each makes the error afresh: an exception raised twice would carry both tracebacks.
MISREAD: dict[str, Callable[[], BaseException]] = {
    "CaseUnsupported('')": lambda: ck.CaseUnsupported(""),
    "CaseUnsupported('   ')": lambda: ck.CaseUnsupported("   "),
    "CaseUnsupported(unreadable)": lambda: ck.CaseUnsupported(Unreadable()),  # type: ignore[arg-type]
    "a subclass of CaseUnsupported": lambda: Narrower("a reason"),
    "unittest.SkipTest": lambda: unittest.SkipTest("not today"),
    "pytest.skip": lambda: pytest.skip.Exception("not today"),
    "pytest.xfail": lambda: pytest.xfail.Exception("expected"),
    "pytest.exit": lambda: pytest.exit.Exception("bye", returncode=0),
    "pytest.fail": lambda: pytest.fail.Exception("failed"),
    "SystemExit(0)": lambda: SystemExit(0),
    "GeneratorExit": GeneratorExit,
    "a BaseException of its own": lambda: Custom("custom"),
}
"""What a case can raise that some test runner would read as other than a failure."""


def rigged(
    *,
    case: BaseException | None = None,
    create: BaseException | None = None,
    cleanup: BaseException | None = None,
) -> tuple[ck.FeatureImplementation[Store], ck.ContractSuite[Store, Any]]:
    """An implementation and a suite whose ``hostile`` case raises what it is given."""

    async def hostile(api: Store) -> None:
        await anyio.lowlevel.checkpoint()
        if case is not None:
            raise case

    async def gap(api: Store) -> None:
        raise AssertionError("declared unsupported: never run")

    class Impl(ck.FeatureImplementation[Store]):
        feature = feature
        coverage = feature.coverage(unsupported={"gap": "no gaps filled here"})

        def create(self, scope: ck.FeatureScope) -> Store:
            if cleanup is not None:

                def fail() -> None:
                    raise cleanup

                scope.defer(fail)
            if create is not None:
                raise create
            return Store()

    return Impl(), ck.ContractSuite(feature, {"hostile": hostile, "gap": gap})


def rig(
    *,
    case: BaseException | None = None,
    create: BaseException | None = None,
    cleanup: BaseException | None = None,
) -> list[ck.ContractCase[Store]]:
    """The cases of :func:`rigged`'s implementation."""
    return ck.contract_cases(*rigged(case=case, create=create, cleanup=cleanup))


async def raised_by(case: ck.ContractCase[Store]) -> BaseException:
    try:
        await case.run()
    except BaseException as error:  # what the case raised is the outcome
        return error
    raise AssertionError(f"{case!r} passed")


def assert_a_plain_failure(raised: BaseException, original: BaseException) -> ck.ContractFailure:
    """``raised`` is a ContractFailure that no runner reads as a skip, chained from ``original``."""
    assert type(raised) is ck.ContractFailure, repr(raised)
    assert raised.__cause__ is original
    assert str(raised).startswith("rigged.<locals>.Impl: case 'hostile' failed")
    assert "\n" not in str(raised)
    assert [result.status for result in raised.report.results] == [ck.CaseStatus.FAILED]
    return raised


pytestmark = pytest.mark.anyio


class TestMisreadErrors:
    """An error a runner would read as other than a failure is raised as a ContractFailure."""

    @pytest.mark.parametrize("name", MISREAD)
    async def test_raised_by_the_case(self, name: str) -> None:
        """The case's failure chained from its own error, its reason in the message."""
        original = MISREAD[name]()
        [case, _] = rig(case=original)
        failure = assert_a_plain_failure(await raised_by(case), original)
        assert failure.report["hostile"].error is original

    @pytest.mark.parametrize("name", MISREAD)
    async def test_raised_by_create(self, name: str) -> None:
        original = MISREAD[name]()
        [case, _] = rig(create=original)
        assert_a_plain_failure(await raised_by(case), original)

    @pytest.mark.parametrize("name", ["CaseUnsupported('')", "unittest.SkipTest", "pytest.exit"])
    async def test_raised_by_create_whose_rollback_fails(self, name: str) -> None:
        """The creation error comes first in a group: no runner misreads a group."""
        original = MISREAD[name]()
        [case, _] = rig(create=original, cleanup=OSError("rollback failed"))
        raised = await raised_by(case)
        assert isinstance(raised, BaseExceptionGroup)
        assert raised.exceptions[0] is original

    @pytest.mark.parametrize("name", ["CaseUnsupported('a reason')", "unittest.SkipTest"])
    async def test_raised_by_a_cleanup_of_a_failed_case(self, name: str) -> None:
        """Two failures make a group, whose first is the case's own error."""
        cleanup = ck.CaseUnsupported("a reason") if "reason" in name else unittest.SkipTest("no")
        original = AssertionError("the case failed")
        [case, _] = rig(case=original, cleanup=cleanup)
        raised = await raised_by(case)
        assert isinstance(raised, BaseExceptionGroup)
        assert list(raised.exceptions) == [original, cleanup]

    async def test_a_stray_cancellation(self) -> None:
        """A cancellation the code under test raised is the case's failure, not the caller's."""
        original = await stale_cancellation()
        [case, _] = rig(case=original)
        assert_a_plain_failure(await raised_by(case), original)


class TestPlainFailures:
    """A plain failure is raised as itself, with the case's frames; a gap is still a skip."""

    @pytest.mark.parametrize(
        "original",
        [AssertionError("expected None"), ValueError("bad key"), ck.LawViolation("a law")],
        ids=type,
    )
    async def test_the_cases_own_error(self, original: Exception) -> None:
        [case, _] = rig(case=original)
        raised = await raised_by(case)
        assert raised is original
        assert raised.__traceback__ is not None

    async def test_a_claimed_case_that_is_unavailable(self) -> None:
        original = ck.FeatureUnavailable("no server")
        [case, _] = rig(create=original)
        assert await raised_by(case) is original

    async def test_a_case_found_unsupported_is_a_skip(self) -> None:
        [case, _] = rig(case=ck.CaseUnsupported("the store keeps no such field"))
        raised = await raised_by(case)
        assert type(raised) is ck.CaseUnsupported
        assert str(raised) == "rigged.<locals>.Impl: the store keeps no such field"

    async def test_a_declared_gap_is_a_skip(self) -> None:
        [_, case] = rig()
        raised = await raised_by(case)
        assert type(raised) is ck.CaseUnsupported
        assert str(raised) == "rigged.<locals>.Impl: no gaps filled here"


class TestInUnittest:
    """contract_test_case(): such a case is a failure, and the TestResult is unsuccessful."""

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    @pytest.mark.parametrize("name", MISREAD)
    def test_reported_as_a_failure(self, backend: Backend, name: str) -> None:
        test_case = ck.contract_test_case(*rigged(case=MISREAD[name]()), backend=backend)
        tests = unittest.defaultTestLoader.loadTestsFromTestCase(test_case)
        result = unittest.TextTestRunner(stream=io.StringIO()).run(tests)
        failed = [test.id().rpartition(".")[2] for test, _ in result.failures]
        assert len(failed) == 1
        assert failed[0].endswith("_Impl_hostile")
        assert (result.errors, len(result.skipped), result.wasSuccessful()) == ([], 1, False)


class TestUnreadableMessages:
    """A report describes an error whose ``__str__`` raises, as a traceback does."""

    async def test_to_dict(self) -> None:
        """The report is written, its message saying so, instead of the writer crashing."""
        unreadable = ck.CaseUnsupported(Unreadable())  # type: ignore[arg-type]
        report = await ck.run_contract(*rigged(case=unreadable))
        error = report.to_dict()["results"][0]["error"]
        assert error["type"] == "conformkit.CaseUnsupported"
        assert error["message"] == "<exception str() failed>"

    def test_a_keyboard_interrupt_from_str_propagates(self) -> None:
        """Ctrl-C while the message is read stops whatever reads it, as it stops a run."""

        class Interrupting(Exception):
            def __str__(self) -> str:
                raise KeyboardInterrupt("reading the message")

        result = ck.CaseResult("hostile", ck.CaseStatus.FAILED, "failed", Interrupting())
        with pytest.raises(KeyboardInterrupt, match="^reading the message$"):
            result.to_dict()
