"""The plan of a run: an implementation and a suite, checked against each other, ready to run."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from types import NoneType
from typing import Any, Generic, final

from .. import _implementation
from .._exceptions import ContractDefinitionError
from .._feature import (
    API,
    CaseExpansion,
    Coverage,
    declared_api,
    expand_cases,
    resolve_coverage,
)
from .._implementation import FeatureImplementation, declared_feature, run_deadline
from .._shape import CreateCheck
from .._suite import CaseFunction, ContractSuite, FamilyFunction, case_functions, check_complete


def check_definitions(
    implementation: object, suite: object
) -> tuple[CaseExpansion, dict[str, Coverage]]:
    """
    Check that the suite and implementation can run together, before anything runs;
    return the implementation's cases and the coverage of each.
    """
    if isinstance(implementation, type) and issubclass(implementation, FeatureImplementation):
        raise ContractDefinitionError(
            f"pass an instance of {implementation.__qualname__}, not the class: "
            f"{implementation.__qualname__}()"
        )
    if not isinstance(implementation, FeatureImplementation):
        raise ContractDefinitionError(
            f"expected a FeatureImplementation instance, got {implementation!r}"
        )
    if not isinstance(suite, ContractSuite):
        raise ContractDefinitionError(f"expected a ContractSuite, got {suite!r}")
    name = type(implementation).__qualname__
    feature = declared_feature(implementation)
    if suite.feature is not feature:
        same_id = (
            " (two different Feature objects share that ID)"
            if (suite.feature.id == feature.id)
            else ""
        )
        raise ContractDefinitionError(
            f"the suite is for feature {suite.feature.id!r} but {name} implements "
            f"feature {feature.id!r}{same_id}; a suite runs only against implementations "
            f"of the same Feature object"
        )
    planned = expand_cases(feature, implementation.claims, name)
    coverage = resolve_coverage(feature, implementation.coverage, planned, name)
    check_complete(suite)
    return planned, coverage


def bind_member(function: FamilyFunction[API], param: Any) -> CaseFunction[API]:
    """The case function of one family member: the family's, with its parameter."""

    def member(api: API) -> Awaitable[None] | None:
        return function(api, param)

    member._conformkit_family = function  # type: ignore[attr-defined]  # sync or async?
    return member


@final
class RunPlan(Generic[API]):
    """A checked pairing of an implementation and a suite, ready to run any of its cases."""

    __slots__ = (
        "case_ids",
        "check",
        "coverage",
        "create",
        "create_is_async",
        "feature_id",
        "functions",
        "isolation",
        "members",
        "name",
        "operations",
        "plain",
        "probe",
        "record",
        "release",
        "retry_timeout",
        "shared",
        "source",
        "sync_cases",
        "timeout",
        "timeouts",
    )

    def __init__(
        self,
        implementation: FeatureImplementation[API, Any],
        suite: ContractSuite[API, Any],
        timeout: object,
        *,
        reject_vacuous: bool = False,
        probe_unsupported: bool = False,
        keep_tracebacks: bool = False,
        check_isolation: bool = False,
        shared: bool = False,
    ) -> None:
        """
        :param shared: whether executions of the plan may run at once (the
            cases of :func:`contract_cases`), so that the APIs of all their
            live scopes must be known, each run of one lane included.
        """
        planned, self.coverage = check_definitions(implementation, suite)
        self.record = reject_vacuous
        # Let go of the frames of the exceptions a report keeps, unless asked not to.
        self.release = not keep_tracebacks
        self.probe = probe_unsupported
        self.operations = None
        if reject_vacuous:
            from .._recording import api_operations  # only a run that records needs it

            self.operations = api_operations(declared_api(implementation.feature))
        # What create() returns is checked against the API type, and against the
        # APIs of the run's live scopes; with check_isolation, by a second create().
        self.check = CreateCheck(declared_api(implementation.feature))
        self.isolation = check_isolation
        self.shared = shared
        self.timeout, self.source = run_deadline(timeout, implementation)
        # Under the default guard alone, a case whose create or case stage overran
        # is run again under this longer deadline before it is judged.
        self.retry_timeout: float | None = None
        if self.source == "guard":
            self.timeout, self.retry_timeout = _implementation.GUARD_TIMEOUTS
        self.name = type(implementation).__qualname__
        self.feature_id = implementation.feature.id
        self.create = implementation.create
        self.create_is_async = inspect.iscoroutinefunction(implementation.create)
        # The types that create() returned and that are not awaitable.
        self.plain: set[type] = {NoneType}
        # Whether each case function met so far is sync (not a coroutine function).
        self.sync_cases: dict[object, bool] = {}
        self.case_ids = tuple(planned.case_ids)
        # Looked up case by case as the run reaches them, so that a run builds
        # nothing per case before it starts.
        self.functions: dict[str, Any] = case_functions(suite)
        self.members = planned.members
        # The cases that declare a deadline of their own longer than the run's,
        # unless the run gave its own timeout=: each stage of theirs has it. Never
        # shorter than the run's deadline, which the run's watchdog relies on.
        self.timeouts: dict[str, float] = {}
        if self.timeout is not None and self.source != "run":
            for case_id in self.case_ids:
                own = suite.own_timeout(
                    self.members[case_id][0] if case_id in self.members else case_id
                )
                if own is not None and own > self.timeout:
                    self.timeouts[case_id] = own

    def deadline_words(self, case_id: str, timeout: float) -> str:
        """Which deadline a stage of ``case_id`` overran, and how to allow more time."""
        raise_it = f"set timeout = ... on {self.name} or pass --timeout"
        if self.source == "run":
            return "the run's timeout= (--timeout); pass a larger one to allow more time"
        if case_id in self.timeouts:
            return (
                f"the case's own deadline, @suite.case(..., timeout={timeout:g}); "
                f"raise it there, or pass --timeout, to allow more time"
            )
        if self.source == "implementation":
            return f"{self.name}.timeout; to allow more time, {raise_it}"
        if timeout != self.timeout:
            return (
                f"the longer deadline it was run again under, once it overran the default "
                f"{self.timeout:g}s guard; to allow more time, {raise_it}"
            )
        return f"the default deadline, a guard against hangs; to allow more time, {raise_it}"

    def member_function(self, case_id: str) -> CaseFunction[API]:
        """The function that runs a family member's case: the family's, bound to its parameter."""
        family, param = self.members[case_id]
        return bind_member(self.functions[family], param)
