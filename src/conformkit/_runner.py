"""Runners: run a suite against an implementation, one fresh scope per case."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import sys
import typing
from collections.abc import Awaitable, Iterator
from time import monotonic, perf_counter
from types import CoroutineType, TracebackType
from typing import Any, Final, Generic, Literal, TypeAlias, cast, final

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from ._exceptions import (
    CaseUnsupported,
    ContractDefinitionError,
    FeatureUnavailable,
    LawViolation,
)
from ._feature import API, CaseExpansion, CaseName, Coverage, Unsupported
from ._implementation import FeatureImplementation, declared_feature
from ._recording import CallRecorder, api_operations
from ._report import CaseResult, CaseStatus, ContractReport
from ._scope import DEFAULT_TIMEOUT, FeatureScope
from ._suite import CaseFunction, ContractSuite, FamilyFunction
from ._util import check_timeout, format_error

Backend = Literal["asyncio", "trio"]
_BACKENDS: Final = ("asyncio", "trio")
# The host's own frames, dropped from the front of a case's traceback; the bundled
# profiles' case functions live in the package too, and are kept.
_HOST_FILES: Final = frozenset(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    for name in ("_runner.py", "_scope.py")
)


def _check_definitions(
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
    planned = feature._expand_cases(implementation.claims, name)
    coverage = feature._resolve_coverage(implementation.coverage, planned, name)
    suite._check_complete()
    return planned, coverage


def _bind(function: FamilyFunction[API], param: Any) -> CaseFunction[API]:
    """The case function of one family member: the family's, with its parameter."""

    def member(api: API) -> Awaitable[None] | None:
        return function(api, param)

    return member


@final
class _Worker:
    """
    One lane of a run, with a watchdog that costs nothing until a stage overruns.

    Cases run one after another inside the worker's cancel scope. Arming a stage
    records a deadline; the watchdog task sleeps until it and, only if the same
    stage is still running then, cancels the scope and says which stage it was.
    """

    __slots__ = ("cancel_scope", "deadline", "fired", "stage", "token")

    def __init__(self) -> None:
        self.cancel_scope = anyio.CancelScope()
        self.deadline: float | None = None
        self.token: object = None
        self.stage = ""
        self.fired: object = None

    async def watch(self, timeout: float) -> None:
        while True:
            deadline = self.deadline
            if deadline is None:
                await anyio.sleep(timeout)
                continue
            remaining = deadline - monotonic()
            if remaining > 0:
                await anyio.sleep(remaining)
                continue
            self.fired = self.token
            self.deadline = None
            self.cancel_scope.cancel()


@final
class RunPlan(Generic[API]):
    """A checked pairing of an implementation and a suite, ready to run any of its cases."""

    __slots__ = (
        "case_functions",
        "case_ids",
        "coverage",
        "create",
        "create_is_async",
        "feature_id",
        "name",
        "operations",
        "probe",
        "record",
        "timeout",
    )

    def __init__(
        self,
        implementation: FeatureImplementation[API, Any],
        suite: ContractSuite[API, Any],
        timeout: object,
        *,
        reject_vacuous: bool = False,
        probe_unsupported: bool = False,
    ) -> None:
        planned, self.coverage = _check_definitions(implementation, suite)
        self.record = reject_vacuous
        self.probe = probe_unsupported
        self.operations = (
            api_operations(_api_type(implementation.feature)) if reject_vacuous else None
        )
        self.timeout = check_timeout(timeout)
        self.name = type(implementation).__qualname__
        self.feature_id = implementation.feature.id
        self.create = implementation.create
        self.create_is_async = inspect.iscoroutinefunction(implementation.create)
        self.case_ids = tuple(planned.case_ids)
        functions = suite._cases
        self.case_functions: dict[str, CaseFunction[API]] = {
            name: cast("CaseFunction[API]", functions[name])
            for name in implementation.feature.cases
        }
        for case_id, (family, param) in planned.members.items():
            family_function = cast("FamilyFunction[API]", functions[family])
            self.case_functions[case_id] = _bind(family_function, param)

    async def run(self, case_ids: tuple[str, ...], max_concurrency: int) -> Execution[API]:
        """Run the cases; the execution holds their results and what else was seen."""
        execution = Execution(self, case_ids)
        await execution.run(max_concurrency)
        return execution


def _api_type(feature: object) -> object:
    """The API type a feature was declared with, ``Feature[API](...)``, if it is known."""
    declared = getattr(feature, "__orig_class__", None)
    arguments = typing.get_args(declared)
    return arguments[0] if arguments else None


@final
class Execution(Generic[API]):
    """The state of one run: results so far, the task group, an interrupt to re-raise."""

    __slots__ = ("called", "case_ids", "interrupt", "plan", "results", "spawner", "stragglers")

    def __init__(self, plan: RunPlan[API], case_ids: tuple[str, ...]) -> None:
        self.plan = plan
        self.case_ids = case_ids
        self.results: list[CaseResult | None] = [None] * len(case_ids)
        self.interrupt: BaseException | None = None
        self.called: set[str] = set()  # API operations the cases called, when recording
        # Scopes whose background work outlived its join, with how many failures
        # their case's result already holds: later ones go into the report.
        self.stragglers: list[tuple[FeatureScope, int]] = []

    def late_errors(self) -> list[BaseException]:
        """Failures of background work that ended after its case was judged."""
        return [exc for scope, known in self.stragglers for exc in scope._outcome[known:]]

    def report(self) -> ContractReport:
        """
        The report of a whole run: exactly one result per planned case, or an error.

        :raises RuntimeError: if a planned case has no result, which would be a bug
            in conformkit; a report that silently lacks a case could pass a gate.
        """
        plan = self.plan
        if None in self.results:
            missing = [
                case_id
                for case_id, result in zip(self.case_ids, self.results, strict=True)
                if result is None
            ]
            raise RuntimeError(
                f"conformkit lost the result of case(s) {', '.join(map(repr, missing))} of "
                f"feature {plan.feature_id!r} for {plan.name}; no report is given rather "
                f"than one that lacks them (a bug in conformkit: please report it)"
            )
        unexercised = None
        if plan.operations is not None:
            unexercised = tuple(name for name in plan.operations if name not in self.called)
        return ContractReport(
            plan.feature_id,
            plan.name,
            tuple(self.finished()),
            tuple(self.late_errors()),
            unexercised,
        )

    def finished(self) -> list[CaseResult]:
        return [result for result in self.results if result is not None]

    async def run(self, max_concurrency: int) -> None:
        plan = self.plan
        pending: list[_Pending[API]] = []
        for index, case_id in enumerate(self.case_ids):
            coverage = plan.coverage[case_id]
            function = plan.case_functions[case_id]
            if isinstance(coverage, Unsupported):
                if plan.probe:
                    pending.append((index, case_id, function, coverage.reason))
                else:
                    self.results[index] = CaseResult(
                        case_id, CaseStatus.UNSUPPORTED, coverage.reason
                    )
            else:
                pending.append((index, case_id, function, None))
        if pending:
            # Cases with a sync create and no await would never notice a
            # cancellation that came before the run.
            await anyio.lowlevel.checkpoint_if_cancelled()
            queue = iter(pending)
            workers = [_Worker() for _ in range(min(max_concurrency, len(pending)))]
            async with anyio.create_task_group() as task_group:
                self.spawner = task_group
                if plan.timeout is not None:
                    for worker in workers:
                        task_group.start_soon(worker.watch, plan.timeout)
                if len(workers) == 1:
                    await self._work(workers[0], queue, task_group)
                else:
                    async with anyio.create_task_group() as lanes:
                        for worker in workers:
                            lanes.start_soon(self._work, worker, queue, task_group)
                task_group.cancel_scope.cancel()  # stop the watchdogs
            if self.interrupt is not None:
                raise self.interrupt

    async def _work(
        self,
        worker: _Worker,
        queue: Iterator[_Pending[API]],
        task_group: TaskGroup,
    ) -> None:
        try:
            while True:
                # A fresh cancel scope for each stretch of cases: the watchdog
                # cancels it when a stage overruns, and the next case needs a new one.
                with anyio.CancelScope() as worker.cancel_scope:
                    worker.fired = None
                    for index, case_id, function, declared in queue:
                        await self._execute(index, case_id, function, declared, worker)
                        if worker.cancel_scope.cancel_called:
                            break
                    else:
                        return
                # Left a scope the watchdog cancelled; an outside cancellation
                # may have arrived meanwhile, unseen under that one.
                await anyio.lowlevel.checkpoint_if_cancelled()
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            # KeyboardInterrupt and the like: not a case failure. Stop every lane
            # and let run() re-raise it, unwrapped, once everything is cleaned up.
            if self.interrupt is None:
                self.interrupt = exc
            task_group.cancel_scope.cancel()

    async def _execute(
        self,
        index: int,
        case_id: str,
        function: CaseFunction[API],
        declared: str | None,
        worker: _Worker,
    ) -> None:
        """
        Run one case in a fresh scope and record its result.

        :param declared: the reason the case was declared unsupported, when it is
            run only to probe that declaration.
        """
        plan = self.plan
        timeout = plan.timeout
        scope = FeatureScope(self.spawner, plan.feature_id, case_id, timeout)
        error: BaseException | None = None
        recorder: CallRecorder | None = None
        stage = "create"
        started = perf_counter()
        if timeout is not None:
            worker.token, worker.stage = scope, stage
            worker.deadline = monotonic() + timeout
        try:
            created = plan.create(scope)
            # Telling sync from async by the function, not the value: an
            # isawaitable() check would cost more than the rest of a trivial case.
            if plan.create_is_async or type(created) is CoroutineType:
                created = await cast("Awaitable[API]", created)
            stage = "case"
            if timeout is not None:
                worker.stage = stage
                worker.deadline = monotonic() + timeout
            if plan.record:
                recorder = CallRecorder()
                created = recorder.wrap(created)
            outcome = function(cast("API", created))
            if outcome is not None:
                await outcome
        except BaseException as exc:
            error = exc
        worker.deadline = None
        cleanup_errors = await scope._close()
        duration = perf_counter() - started
        if scope._background is not None and scope._background.outlived:
            self.stragglers.append((scope, len(cleanup_errors)))
        if scope._awaited and worker.fired is not scope:
            # An outside cancellation that arrived while cleanups ran shielded.
            await anyio.lowlevel.checkpoint_if_cancelled()

        if recorder is not None:
            self.called.update(recorder.names())
        if error is None and not cleanup_errors and worker.fired is not scope:
            if recorder is not None and not recorder.calls:
                result = CaseResult(
                    case_id, CaseStatus.FAILED, "vacuous: the case never called the API",
                    duration=duration,
                )  # fmt: skip
            else:
                result = CaseResult(case_id, CaseStatus.PASSED, None, None, (), duration)
            self.results[index] = result if declared is None else _probed(result, declared)
            return
        interrupts = [exc for exc in cleanup_errors if not isinstance(exc, Exception)]
        if interrupts:
            raise BaseExceptionGroup(f"cleanup of case {case_id!r} was interrupted", interrupts)
        cancelled = anyio.get_cancelled_exc_class()
        if worker.fired is scope:
            if error is not None:
                _trim_traceback(error)
            error = TimeoutError(
                f"feature {plan.feature_id!r}, case {case_id!r}: stage {worker.stage!r} "
                f"exceeded the {timeout or 0:g}s deadline"
            ).with_traceback(None)
            result = CaseResult(
                case_id, CaseStatus.FAILED, str(error), error, tuple(cleanup_errors), duration
            )
            self.results[index] = result if declared is None else _probed(result, declared)
            return
        if isinstance(error, cancelled):
            # A real cancellation is delivered again here and ends the run. A
            # cancellation exception the code under test raised on its own (a
            # library bug, or a stale one re-raised) is that case's failure.
            await anyio.lowlevel.checkpoint_if_cancelled()
            if _natively_cancelled():
                raise error
        elif error is not None and not isinstance(error, Exception):
            raise error  # an interrupt: never a case outcome
        result = _failed_result(case_id, stage, error, tuple(cleanup_errors), duration)
        self.results[index] = result if declared is None else _probed(result, declared)


def _natively_cancelled() -> bool:
    """Whether asyncio itself was asked to cancel this task (``Task.cancel()``, not a scope)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not on asyncio
        return False
    return task is not None and task.cancelling() > 0


_Pending: TypeAlias = tuple[int, str, CaseFunction[API], str | None]
"""A case waiting to run: its index, ID, function and, when probed, its declared reason."""


def _probed(result: CaseResult, declared: str) -> CaseResult:
    """A probed case stays unsupported; one that passed is a stale declaration."""
    if result.status is CaseStatus.PASSED:
        return CaseResult(
            result.case_id, CaseStatus.UNSUPPORTED, f"{declared} (declared unsupported but passed)",
            duration=result.duration, stale=True,
        )  # fmt: skip
    return CaseResult(result.case_id, CaseStatus.UNSUPPORTED, declared, duration=result.duration)


def _failed_result(
    case_id: str,
    stage: str,
    error: BaseException | None,
    cleanup_errors: tuple[BaseException, ...],
    duration: float,
) -> CaseResult:
    """The result of a case that ended in an error or a failed cleanup."""
    if error is None:
        first = format_error(cleanup_errors[0])
        more = f" (and {len(cleanup_errors) - 1} more)" if len(cleanup_errors) > 1 else ""
        reason = f"case {case_id!r} failed in cleanup: {first}{more}"
        return CaseResult(case_id, CaseStatus.FAILED, reason, None, cleanup_errors, duration)
    _trim_traceback(error)
    where = " in create()" if stage == "create" else ""
    reason = f"{format_error(error)}{_location(error)}"
    if isinstance(error, anyio.get_cancelled_exc_class()):
        reason = (
            f"{type(error).__name__} raised with no cancellation under way, a stray or "
            f"re-raised cancellation in the code under test{_location(error)}"
        )
    if cleanup_errors:
        reason += f"; {len(cleanup_errors)} cleanup(s) failed too"
    if isinstance(error, FeatureUnavailable):
        if stage == "create":
            return CaseResult(
                case_id,
                CaseStatus.UNAVAILABLE,
                f"case {case_id!r} unavailable: {reason}",
                error,
                cleanup_errors,
                duration,
            )
        reason += " (FeatureUnavailable means 'unavailable' only when create() raises it)"
    return CaseResult(
        case_id,
        CaseStatus.FAILED,
        f"case {case_id!r} failed{where}: {reason}",
        error,
        cleanup_errors,
        duration,
    )


def _trim_traceback(error: BaseException) -> None:
    """Drop conformkit's own frames from the front of ``error``'s traceback."""
    tb: TracebackType | None = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in _HOST_FILES:
        tb = tb.tb_next
    if tb is not None:
        error.__traceback__ = tb


def _location(error: BaseException) -> str:
    """`` (at file:line in function)`` for the first frame of the error's traceback."""
    tb = error.__traceback__
    if tb is None:
        return ""
    code = tb.tb_frame.f_code
    return f" (at {os.path.basename(code.co_filename)}:{tb.tb_lineno} in {code.co_name})"


def _check_concurrency(max_concurrency: object) -> int:
    if (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or (max_concurrency < 1)
    ):
        raise ValueError(f"max_concurrency must be an int of at least 1, got {max_concurrency!r}")
    return max_concurrency


async def run_contract(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_concurrency: int = 1,
    reject_vacuous: bool = False,
    probe_unsupported: bool = False,
) -> ContractReport:
    """
    Run every case of ``suite`` against ``implementation`` and report the outcome.

    Each supported case gets a fresh scope: ``create``, the case, then disposal,
    always. Unsupported cases are reported and never run. Results follow the
    feature's declared case order, whatever the concurrency.

    :param timeout: seconds each stage (create, the case, each async cleanup) may
        take; a stage that overruns fails the case with a reason naming the
        feature, the case and the stage. ``None`` disables the deadlines.
    :param max_concurrency: how many cases may run at once.
    :param reject_vacuous: record the calls each case makes through the API (the
        case gets a recording proxy) and fail a case that passed without calling
        it: ``"vacuous: the case never called the API"``. The report then lists
        the API's operations that no case called, in ``report.unexercised``.
    :param probe_unsupported: run the cases declared unsupported too. They stay
        ``unsupported``; one that passes is marked ``stale`` ("declared
        unsupported but passed"), which ``assert_contract(reject_stale=True)``
        rejects.
    :raises ContractDefinitionError: before anything runs, if the suite and the
        implementation do not belong to the same feature, the suite lacks a case
        or the coverage is incomplete.
    """
    plan = RunPlan(
        implementation,
        suite,
        timeout,
        reject_vacuous=reject_vacuous,
        probe_unsupported=probe_unsupported,
    )
    execution = await plan.run(plan.case_ids, _check_concurrency(max_concurrency))
    return execution.report()


def check_backend(backend: object) -> Backend:
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be 'asyncio' or 'trio', got {backend!r}")
    if backend == "trio" and importlib.util.find_spec("trio") is None:
        raise ModuleNotFoundError(
            "backend 'trio' needs trio installed: pip install 'conformkit[trio]'", name="trio"
        )
    return backend


def run_contract_sync(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    backend: Backend = "asyncio",
    timeout: float | None = DEFAULT_TIMEOUT,
    max_concurrency: int = 1,
    reject_vacuous: bool = False,
    probe_unsupported: bool = False,
) -> ContractReport:
    """
    :func:`run_contract` from synchronous code, on an event loop of its own.

    :param backend: ``"asyncio"`` or ``"trio"`` (which needs the ``trio`` extra).
    """
    backend = check_backend(backend)
    runner = functools.partial(
        run_contract,
        implementation,
        suite,
        timeout=timeout,
        max_concurrency=max_concurrency,
        reject_vacuous=reject_vacuous,
        probe_unsupported=probe_unsupported,
    )
    return anyio.run(runner, backend=backend)


@final
class ContractCase(Generic[API]):
    """
    One case of one implementation, for a test runner's loop.

    ``str(case)`` is the stable case ID, so ``ids=str`` names pytest parameters.

    :ivar id: the stable case ID.
    :ivar feature_id: the feature's ID.
    :ivar implementation: a readable name of the implementation.
    :ivar coverage: ``Supported()``, or ``Unsupported(reason)``.
    """

    __slots__ = ("_plan", "coverage", "feature_id", "id", "implementation")

    def __init__(self, plan: RunPlan[API], case_id: str) -> None:
        self._plan = plan
        self.id = case_id
        self.feature_id = plan.feature_id
        self.implementation = plan.name
        self.coverage: Coverage = plan.coverage[case_id]

    def __repr__(self) -> str:
        return f"<ContractCase {self.id!r} of {self.implementation} ({self.feature_id!r})>"

    def __str__(self) -> str:
        return self.id

    async def run(self) -> None:
        """
        Run the case exactly as :func:`run_contract` would; return if it passed.

        :raises CaseUnsupported: a :class:`unittest.SkipTest` carrying the declared
            reason, when the case is outside the implementation's coverage.
        :raises Exception: the case's own error when it failed or was unavailable;
            an exception group when cleanups failed; :class:`TimeoutError` when a
            stage overran.
        """
        __tracebackhide__ = True  # pytest shows the case's frames, not this one
        if isinstance(self.coverage, Unsupported):
            raise CaseUnsupported(f"{self.implementation}: {self.coverage.reason}")
        execution = await self._plan.run((self.id,), 1)
        report = execution.report()
        [result], late_errors = report.results, report.cleanup_errors
        if result.status is CaseStatus.PASSED and not late_errors:
            return
        errors = [
            *([result.error] if result.error is not None else []),
            *result.cleanup_errors,
            *late_errors,
        ]
        if not errors:
            raise LawViolation(f"case {self.id!r}: {result.reason}")
        if len(errors) == 1 and result.error is not None:
            raise errors[0]
        raise BaseExceptionGroup(result.reason or f"case {self.id!r} failed", errors)

    def run_sync(self, *, backend: Backend = "asyncio") -> None:
        """:meth:`run` from synchronous code, on an event loop of its own."""
        __tracebackhide__ = True
        anyio.run(self.run, backend=check_backend(backend))


def contract_cases(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    reject_vacuous: bool = False,
) -> list[ContractCase[API]]:
    """
    Return one :class:`ContractCase` per declared case, for any test runner's loop.

    The definitions are checked now, so a mistake fails at collection time::

        @pytest.mark.parametrize("case", contract_cases(MemoryText(), suite), ids=str)
        async def test_text(case: ContractCase[TextAPI]) -> None:
            await case.run()

    A family yields one case per member the implementation claims.

    :param reject_vacuous: as for :func:`run_contract`; a vacuous case raises
        :exc:`LawViolation`.
    :raises ContractDefinitionError: as :func:`run_contract` would.
    """
    plan = RunPlan(implementation, suite, timeout, reject_vacuous=reject_vacuous)
    return [ContractCase(plan, case_id) for case_id in plan.case_ids]
