"""Runners: run a suite against an implementation, one fresh scope per case."""

from __future__ import annotations

import _thread
import dataclasses
import functools
import inspect
import itertools
import os
import sys
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator
from types import CoroutineType, FrameType, GeneratorType, NoneType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, cast, final

import anyio

from . import _implementation
from ._exceptions import (
    ContractDefinitionError,
    ContractFailure,
    FeatureUnavailable,
    LawViolation,
)
from ._explain import error_line, release_frames
from ._feature import API, CaseExpansion, CaseName, Coverage, Unsupported, declared_api
from ._implementation import DEFAULT_TIMEOUT, FeatureImplementation, declared_feature, run_deadline
from ._report import CaseResult, CaseStatus, ContractReport, case_result
from ._scope import OWN_TASKS, FeatureScope, OwnTasks
from ._shape import _CLEAN, CreateCheck, open_twin
from ._suite import CaseFunction, ContractSuite, FamilyFunction
from ._watchdog import (
    BLOCKED,
    UNANSWERED,
    StageStuck,
    Watch,
    clock,
    format_frames,
    interrupt_at,
    interruptible,
    raise_in_thread,
    stuck_detail,
)
from ._watchdog import waker as _waker

if TYPE_CHECKING:
    import signal as _signal

    from anyio.abc import TaskGroup

    from ._recording import CallRecorder
    from ._scope import _Background
else:
    # The C module under `signal`: its functions take a tenth of the time of
    # `signal`'s, which wrap every handler and number in an enum, and a run
    # installs its handler each time it starts; importing it costs nothing.
    import _signal

_SIGINT: Final = _signal.SIGINT

# Module-level names for the hot paths: an enum member is slow to look up on its class.
_PASSED: Final = CaseStatus.PASSED
_UNSUPPORTED: Final = CaseStatus.UNSUPPORTED

Backend = Literal["asyncio", "trio"]
_BACKENDS: Final = ("asyncio", "trio")
_RECORDING_FILE: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_recording.py")
# The host's own frames, dropped from the front of a case's traceback; the bundled
# profiles' case functions live in the package too, and are kept.
_HOST_FILES: Final = frozenset(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    for name in ("_runner.py", "_scope.py", "_shape.py")
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

    member._conformkit_family = function  # type: ignore[attr-defined]  # sync or async?
    return member


@final
class _Lane(Watch):
    """
    One lane of a run: its cases run one after another inside its cancel scope,
    each stage (``create``, then the case) under the run's deadline.

    Starting a stage (in :meth:`Execution._stretch`, the hot path) only records
    when it is due: in ``due``, and in ``deadline`` until something acts on it.
    In a run of several cases, the run's one watchdog (:func:`_watch`) cancels
    the lane's scope if that stage is still running then. A run of one case,
    ``ContractCase.run()``, has no watchdog, whose task would cost more than the
    case itself: its lane's cancel scope carries the deadline, given to it only
    when the stage first waits (:func:`interruptible` calls :meth:`wait`). A
    stage that never waits cannot be cancelled, and needs no timer; an overrun
    of its shows when it returns.

    A lane is also a :class:`Watch`: the last-resort watchdog thread sees a stage
    that the event loop could not stop, and interrupts it.
    """

    __slots__ = (
        "cancel_scope",
        "deadline",
        "driver",
        "fired",
        "retry",
        "stopped",
        "timed",
        "waker_made",
        "watched",
    )

    cancel_scope: anyio.CancelScope  # a fresh one for each stretch of cases

    def __init__(self, timeout: float | None, *, watched: bool) -> None:
        Watch.__init__(self, timeout)  # not super(): a lane is made for every run
        self.watched = watched
        # The running stage's deadline: for the run's watchdog to act on, when
        # watched; else until the lane's scope has it. None when not armed.
        self.deadline: float | None = None
        self.fired = False  # the watchdog cancelled the scope
        self.stopped = False  # Ctrl-C cancelled the scope (a run of one case)
        self.timed = False  # the scope has a deadline (a run of one case)
        self.waker_made = False  # see wait()
        # A case to run again under the longer deadline, first in the next stretch.
        self.retry: _Retry | None = None
        # What runs the lane's cases: its task awaits it, which finds the task.
        self.driver: object = None

    def wait(self) -> None:
        """
        A stage of a run of one case waits: give the lane's scope its deadline,
        and the watchdog thread the means to wake the task where no cancellation
        reaches it, made now as a stage that never waits never needs either.
        """
        due = self.deadline
        if due is not None:
            self.deadline = None
            self.timed = True
            self.cancel_scope.deadline = anyio.current_time() + (due - clock())
            if not self.waker_made:
                self.waker_made = True
                self.wake = _waker()

    def stop(self) -> None:
        """Ctrl-C, in a run of one case: cancel the lane's scope, which is no overrun."""
        self.stopped = True
        cancel_scope = getattr(self, "cancel_scope", None)
        if cancel_scope is not None:
            cancel_scope.cancel()

    def disarm(self) -> bool:
        """
        End the stages of a case; return whether one overran, cancelling the lane's scope.

        A lane whose scope carries the deadline keeps it through the case's
        cleanup, which that deadline may cancel the scope during (shielded, so
        harmlessly): the run of one case ends with that case.
        """
        self.stuck_at = None
        if self.pending:
            self.settle()  # an exception raised into the thread as the stage ended
        self.deadline = None
        if self.watched:
            return self.fired
        # Only the deadline given to the scope, or Ctrl-C, cancels it.
        return self.timed and not self.stopped and self.cancel_scope.cancel_called

    def overrun(self, error: BaseException | None, timeout: float, cancelled: bool) -> str:
        """
        Say how the stage that overran ran over, for its reason: `` (ran 3.0s; ...)``.

        :param cancelled: whether its deadline cancelled it.
        """
        if type(error) is _Late:
            # Returned late by itself: it ran sync code that held the event loop,
            # or it waited where its cancellation did not reach.
            how = UNANSWERED if cancelled else BLOCKED
            return f" (ran {error.ran:.1f}s; {how})"
        if type(error) is StageStuck:
            ran = clock() - self.due + timeout
            return f" (ran {ran:.1f}s; {stuck_detail(error)})"
        if self.first_cancel is not None and self.where:
            return f" (cancelled in {self.where})"
        return ""


@final
class _Retry:
    """A case that overran the default guard, to run again: where, and its first reason."""

    __slots__ = ("case_id", "duration", "index", "reason")

    def __init__(self, index: int, case_id: str, reason: str, duration: float) -> None:
        self.index = index
        self.case_id = case_id
        self.reason = reason
        self.duration = duration


class _Late(Exception):
    """A stage returned after its deadline; ``ran`` is how long it took."""

    def __init__(self, ran: float) -> None:
        self.ran = ran  # never shown: the stage's TimeoutError replaces it


_OVERRUNS: Final = (_Late, StageStuck)
_SCOPE_TYPES: Final[dict[type[BaseException], type[anyio.CancelScope]]] = {}
"""The type of anyio's cancel scope on each kind of event loop, by its cancellation exception."""


async def _watch(lanes: list[_Lane], timeout: float) -> None:
    """
    The one watchdog of a run: cancel the scope of each lane whose stage is past its deadline.

    Every stage is armed with the same timeout, so a deadline armed while the
    watchdog sleeps is never earlier than the one it sleeps until: nothing needs
    to wake it. It sleeps until the earliest deadline it saw, or for a whole
    timeout when no stage is armed, and checks every lane again.
    """
    while True:
        now = clock()
        wake = now + timeout
        for lane in lanes:
            deadline = lane.deadline
            if deadline is None:
                continue
            if deadline <= now:
                lane.deadline = None
                lane.fired = True
                lane.cancel_scope.cancel()
            elif deadline < wake:
                wake = deadline
        await anyio.sleep(wake - now)


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
        planned, self.coverage = _check_definitions(implementation, suite)
        self.record = reject_vacuous
        # Let go of the frames of the exceptions a report keeps, unless asked not to.
        self.release = not keep_tracebacks
        self.probe = probe_unsupported
        self.operations = None
        if reject_vacuous:
            from ._recording import api_operations  # only a run that records needs it

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
        self.functions: dict[str, Any] = suite._cases
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
        return _bind(self.functions[family], param)

    async def run(self, case_ids: tuple[str, ...], max_concurrency: int) -> Execution[API]:
        """Run the cases; the execution holds their results and what else was seen."""
        execution = Execution(self, case_ids)
        await execution.run(max_concurrency)
        return execution


@final
class Execution(Generic[API]):
    """The state of one run: results so far, the task group, an interrupt to re-raise."""

    __slots__ = (
        "called",
        "case_ids",
        "interrupt",
        "plan",
        "results",
        "scope_type",
        "shared",
        "spawner",
        "stopper",
        "stragglers",
    )

    spawner: TaskGroup | OwnTasks  # what starts the scopes' background work

    def __init__(self, plan: RunPlan[API], case_ids: tuple[str, ...]) -> None:
        self.plan = plan
        self.case_ids = case_ids
        self.results: list[CaseResult | None] = [None] * len(case_ids)
        self.interrupt: BaseException | None = None
        self.called: set[str] = set()  # API operations the cases called, when recording
        # Scopes whose background work outlived its join: its later failures go
        # into the report.
        self.stragglers: list[_Background] = []
        # The lane that Ctrl-C stops, in a run of one case; else the task group's scope.
        self.stopper: _Lane | None = None
        self.scope_type: type[anyio.CancelScope] | None = None  # see _cancel_scope()
        # Whether another scope may be live beside a case's: then each API is
        # kept as live until its scope closes, and one that another live scope
        # has fails the case. A run of one lane alone never has two.
        self.shared = plan.shared or plan.isolation

    def late_errors(self) -> list[BaseException]:
        """Failures of background work that ended after its case was judged."""
        return [exc for background in self.stragglers for exc in background.late]

    def report(self) -> ContractReport:
        """
        The report of a whole run: exactly one result per planned case, or an error.

        :raises RuntimeError: if a planned case has no result, which would be a bug
            in conformkit; a report that silently lacks a case could pass a gate.
        """
        plan = self.plan
        # Not `None in self.results`, which would call CaseResult.__eq__ once per
        # case; a CaseResult is always true.
        if not all(self.results):
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
            tuple(cast("list[CaseResult]", self.results)),
            tuple(self._released(self.late_errors())),
            unexercised,
        )

    def _released(self, errors: list[BaseException]) -> list[BaseException]:
        if self.plan.release:
            for error in errors:
                release_frames(error)
        return errors

    def finished(self) -> list[CaseResult]:
        return [result for result in self.results if result is not None]

    def stuck_report(self, stuck: Watch) -> ContractReport:
        """
        What a run that is stuck beyond interruption has judged: every result so
        far, and the stuck case failed; the cases not reached are left out.

        Called from the watchdog thread while the run cannot go on, by the command
        line, which then writes it and exits.
        """
        plan = self.plan
        if stuck.task is None:
            what = f"stage {stuck.stage!r} exceeded the {stuck.timeout or 0:g}s deadline"
        else:
            what = (
                f"background task {stuck.task!r} did not finish within "
                f"{stuck.timeout or 0:g}s of being cancelled"
            )
        error = TimeoutError(
            f"feature {plan.feature_id!r}, case {stuck.case_id!r}: {what} and is stuck: "
            f"it could not be interrupted, and the run was stopped"
        )
        if stuck.stack:
            error.add_note(f"where it was stuck:\n{stuck.stack}")
        results = []
        for case_id, result in zip(self.case_ids, list(self.results), strict=True):
            if result is not None:
                results.append(result)
            elif case_id == stuck.case_id:
                results.append(CaseResult(case_id, CaseStatus.FAILED, str(error), error))
        return ContractReport(plan.feature_id, plan.name, tuple(results), tuple(self.late_errors()))

    async def run(self, max_concurrency: int) -> None:
        plan = self.plan
        case_ids = self.case_ids
        coverage = plan.coverage
        if not plan.probe:
            for case_id in case_ids:
                if type(coverage[case_id]) is not Unsupported:
                    break
            else:  # every case unsupported: nothing runs
                for index, case_id in enumerate(case_ids):
                    self._unsupported(index, case_id)
                return
        # Cases with a sync create and no await would never notice a
        # cancellation that came before the run.
        await anyio.lowlevel.checkpoint_if_cancelled()
        # The lanes take the cases in turn from one shared iterator: nothing is
        # built per case before the run starts.
        queue = enumerate(case_ids)
        timeout = plan.timeout
        watched = len(case_ids) > 1
        if watched:
            lanes = [
                _Lane(timeout, watched=True) for _ in range(min(max_concurrency, len(case_ids)))
            ]
            self.shared |= len(lanes) > 1
        else:
            lanes = [_Lane(timeout, watched=False)]
        signals = _Signals.install(self)
        try:
            if timeout is not None:
                # In a run of one case, made when a stage first waits, if it does.
                wake = _waker() if watched else None
                interrupt = None if signals is None else signals.interrupt
                for lane in lanes:
                    lane.feature_id = plan.feature_id
                    lane.__enter__()  # watched by the last-resort thread from now on
                    lane.interrupt = interrupt
                    lane.wake = wake
            if not watched:
                # One case: no task group, whose opening and closing cost several
                # times what a trivial case does; ContractCase.run() runs one case
                # per call. Background work, if any, runs in tasks of its own
                # (OwnTasks), each in its own cancel scope, cancelled and joined
                # when its scope closes, as in a task group.
                lane = lanes[0]
                self.spawner = OWN_TASKS
                self.stopper = lane
                if timeout is None:
                    await self._take_cases(lane, queue, None)
                else:
                    lane.coroutine = coroutine = self._take_cases(lane, queue, None)
                    lane.driver = driver = interruptible(coroutine, lane, waits=True)
                    await driver
                if self.stragglers:
                    await _outlast(self.stragglers)
            else:
                async with anyio.create_task_group() as task_group:
                    self.spawner = task_group
                    if timeout is not None:
                        task_group.start_soon(_watch, lanes, timeout)
                    if len(lanes) == 1:
                        await self._work(lanes[0], queue, task_group)
                    else:
                        async with anyio.create_task_group() as workers:
                            for lane in lanes:
                                workers.start_soon(self._work, lane, queue, task_group)
                    if timeout is not None or self.stragglers:
                        # Stop the watchdog, and background work that outlived its join.
                        # Only then: a cancellation costs more than a case.
                        task_group.cancel_scope.cancel()
        finally:
            if timeout is not None:
                for lane in lanes:
                    lane.__exit__()
            if signals is not None:
                signals.restore()
                if signals.pressed and self.interrupt is None:
                    # Ctrl-C after the run's last wait: the event loop has not run
                    # its stop yet, and would only once the run has returned.
                    self.interrupt = KeyboardInterrupt()
            for lane in lanes:
                # Let go of what refers back to the lane or to the run: cycles
                # that only the garbage collector would break, which it does
                # at a cost that grows with everything else alive.
                lane.interrupt = lane.wake = lane.frame = lane.coroutine = lane.driver = None
            self.stopper = None
        if self.interrupt is not None:
            raise self.interrupt

    def _cancel_scope(self) -> anyio.CancelScope:
        """
        A new cancel scope. ``anyio.CancelScope()`` looks up the running event
        loop's kind each time; a run's lanes need one each, of the same type,
        made directly once the first shows it.
        """
        kind = self.scope_type
        if kind is None:
            # Known from an earlier run on the same kind of event loop, which
            # its cancellation exception tells, at a fraction of the cost of
            # anyio.CancelScope(): a run of one case makes one scope.
            cancelled = anyio.get_cancelled_exc_class()
            kind = _SCOPE_TYPES.get(cancelled)
            if kind is None:
                scope = anyio.CancelScope()
                self.scope_type = _SCOPE_TYPES[cancelled] = type(scope)
                return scope
            self.scope_type = kind
        return kind()

    def stop(self) -> None:
        """Stop the run for Ctrl-C: cancel the cases in flight, then raise KeyboardInterrupt."""
        if self.interrupt is None:
            self.interrupt = KeyboardInterrupt()
        spawner = self.spawner
        if self.stopper is not None:
            self.stopper.stop()
        elif not isinstance(spawner, OwnTasks):  # else the run of one case has ended
            spawner.cancel_scope.cancel()

    def _note(self, case_id: str, errors: Iterable[BaseException | None]) -> None:
        """
        Keep the failures seen while the run stops in the notes of its interrupt:
        not the cancellation that stopped a case, which is the run's own doing.
        """
        interrupt = self.interrupt
        if interrupt is None:
            return
        cancelled = anyio.get_cancelled_exc_class()
        for error in errors:
            if error is not None and error is not interrupt and not isinstance(error, cancelled):
                interrupt.add_note(f"case {case_id!r}: {error_line(error)}")

    def _unsupported(self, index: int, case_id: str) -> None:
        reason = cast("Unsupported", self.plan.coverage[case_id]).reason
        self.results[index] = case_result(case_id, _UNSUPPORTED, reason)

    async def _work(
        self,
        lane: _Lane,
        queue: Iterator[tuple[int, str]],
        task_group: TaskGroup,
    ) -> None:
        if lane.timeout is None:
            await self._take_cases(lane, queue, task_group)
            return
        # Under deadlines, the lane's stages can be interrupted from outside:
        # a stage that ignores its cancellation gets StageStuck thrown in instead.
        lane.coroutine = coroutine = self._take_cases(lane, queue, task_group)
        lane.driver = driver = interruptible(coroutine, lane)
        await driver

    async def _take_cases(
        self,
        lane: _Lane,
        queue: Iterator[tuple[int, str]],
        task_group: TaskGroup | None,
    ) -> None:
        """Run cases from the queue until it is empty; ``task_group`` holds the other lanes."""
        try:
            while True:
                # A fresh cancel scope for each stretch of cases: a deadline cancels
                # it when a stage overruns, and the next case needs a new one.
                with self._cancel_scope() as lane.cancel_scope:
                    lane.fired = lane.timed = False
                    if await self._stretch(lane, queue):
                        return
                # Left a scope a deadline cancelled; an outside cancellation
                # may have arrived meanwhile, unseen under that one.
                await anyio.lowlevel.checkpoint_if_cancelled()
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            # KeyboardInterrupt and the like: not a case failure. Stop every lane
            # and let run() re-raise it, unwrapped, once everything is cleaned up.
            if self.interrupt is None:
                self.interrupt = exc
            if task_group is not None:
                task_group.cancel_scope.cancel()

    async def _stretch(self, lane: _Lane, queue: Iterator[tuple[int, str]]) -> bool:
        """
        Run cases from the queue in the lane's cancel scope, each in a fresh
        scope, and record their results; return ``True`` once the queue is
        empty, ``False`` when a deadline spent the lane's cancel scope.

        This is the runner's hot path: what is the same for every case is looked
        up once, and a passing case takes no call that it does not need.
        """
        plan = self.plan
        results = self.results
        coverage = plan.coverage
        functions = plan.functions
        members = plan.members
        create = plan.create
        create_is_async = plan.create_is_async
        feature_id = plan.feature_id
        default = plan.timeout
        timeouts = plan.timeouts  # the cases' own deadlines, where longer
        retry = lane.retry
        if retry is not None:
            # A case that overran the default guard runs again, first, under the longer deadline.
            lane.retry = None
            queue = itertools.chain(((retry.index, retry.case_id),), queue)
            timeouts = {**timeouts, retry.case_id: cast("float", plan.retry_timeout)}
        probe = plan.probe
        record = plan.record
        spawner = self.spawner
        watch = lane if default is not None else None  # each case's cleanups are stages too
        plain = plan.plain
        sync_cases = plan.sync_cases
        check = plan.check
        fitting = check.verdicts  # by type: _CLEAN when its objects need no check
        shared = self.shared
        isolation = plan.isolation
        grace = lane.grace
        for index, case_id in queue:
            declared: str | None = None
            marker = coverage[case_id]
            if type(marker) is Unsupported:
                if not probe:
                    self._unsupported(index, case_id)
                    continue
                declared = marker.reason
            function = (
                functions[case_id] if case_id not in members else plan.member_function(case_id)
            )
            # Not timeouts.get(): a lookup and a call cost more than a test that fails.
            timeout = default if case_id not in timeouts else timeouts[case_id]  # noqa: SIM401
            scope = FeatureScope(spawner, feature_id, case_id, timeout, watch)
            error: BaseException | None = None
            recorder: CallRecorder | None = None
            admitted: int | None = None
            stage = "create"
            started = clock()
            if timeout is not None:
                # Arm the stage: it must end within the timeout.
                lane.case_id = case_id
                lane.timeout = timeout
                lane.due = lane.deadline = due = started + timeout
                lane.stage = stage
                lane.stuck_at = due + grace
            try:
                created: Any = create(scope)
                # Telling sync from async by the function, not the value: an
                # isawaitable() check would cost more than the rest of a trivial case.
                # Any other awaitable is awaited too, as open_feature does; a type
                # seen not to be one is not checked again.
                if (
                    create_is_async
                    or type(created) is CoroutineType
                    or (type(created) not in plain and _awaitable(created, plain))
                ):
                    created = await created
                if shared:
                    admitted = check.admit(created, scope)  # its shape; no other live scope's
                elif fitting.get(type(created)) is not _CLEAN:
                    problem = check.shape(created)  # its shape alone
                    if problem is not None:
                        raise problem
                if isolation:
                    await open_twin(create, scope, check)
                if timeout is not None:
                    # The next stage, once this one ended, which may still have
                    # overrun its deadline: sync code that blocks the event loop
                    # is never cancelled.
                    now = clock()
                    if now > lane.due:
                        raise _Late(now - lane.due + timeout)
                    lane.due = lane.deadline = due = now + timeout
                    lane.stage = "case"
                    lane.stuck_at = due + grace
                stage = "case"
                if record:
                    from ._recording import CallRecorder

                    recorder = CallRecorder()
                    created = recorder.wrap(created)
                sync = sync_cases.get(function)
                if sync is None:
                    sync = _is_sync(function, sync_cases)
                outcome = _call_sync(function, created) if sync else function(created)
                if outcome is not None:
                    await outcome
                lane.stuck_at = None  # no call before: nothing may interrupt it
            except BaseException as exc:
                lane.stuck_at = None  # first: the watchdog interrupts only the stage
                error = exc
            overran: str | None = None
            ended: float | None = None  # when the case ended, under deadlines
            if timeout is not None:
                ended = clock()
                if error is None and ended > lane.due:
                    # Returned by itself, but after its deadline: sync code that
                    # blocks the event loop is never cancelled.
                    error = _Late(ended - lane.due + timeout)
                cancelled = lane.disarm()
                if cancelled or type(error) in _OVERRUNS:
                    # Read now: the cleanups rearm the lane.
                    overran = lane.overrun(error, timeout, cancelled)
            closing = scope._close_soon(ended)
            cleanup_errors = closing if isinstance(closing, list) else await closing
            # Under deadlines, closing read the clock as its last cleanup ended.
            if admitted is not None:
                check.release(admitted, scope)
            closed = scope._begun
            duration = (closed if ended is not None and closed >= ended else clock()) - started
            spent = overran is not None
            if scope._awaited:
                # Closing awaited: it joined background work or ran async cleanups.
                background = scope._background
                if background is not None and background.outlived:
                    self.stragglers.append(background)
                if overran is None:
                    # The cleanups ran shielded. An outside cancellation that
                    # arrived meanwhile is honoured now, unless the lane's own
                    # deadline passed (only a run of one case keeps it armed then).
                    spent = lane.cancel_scope.cancel_called
                    if not spent:
                        await anyio.lowlevel.checkpoint_if_cancelled()
            if error is None and not cleanup_errors and overran is None and recorder is None:
                result = case_result(case_id, _PASSED, None, None, (), duration)
            else:
                result = await self._conclude(
                    case_id, stage, error, cleanup_errors, duration, overran, recorder, timeout
                )
                if (
                    overran is not None
                    and plan.retry_timeout is not None
                    and case_id not in timeouts
                    and self.interrupt is None
                ):
                    # It overran the default guard, which judges no speed: run it
                    # again, in a fresh scope under the longer deadline, in the
                    # lane's next stretch (this one's cancel scope may be spent).
                    lane.retry = _Retry(index, case_id, cast("str", result.reason), duration)
                    return False
                if plan.release:
                    _release(result)
            if retry is not None and case_id == retry.case_id:
                result = _retried(result, retry, timeout)
            results[index] = result if declared is None else _probed(result, declared)
            if spent:
                return False
        return True

    async def _conclude(
        self,
        case_id: str,
        stage: str,
        error: BaseException | None,
        cleanup_errors: list[BaseException],
        duration: float,
        overran: str | None,
        recorder: CallRecorder | None,
        timeout: float | None,
    ) -> CaseResult:
        """
        The result of a case that did not simply pass, or whose calls were
        recorded; an interrupt or a real cancellation is raised instead.

        :param overran: when a stage overran its deadline, how, for the reason.
        :param timeout: the deadline of the case's stages.
        """
        if recorder is not None:
            self.called.update(recorder.names())
        if error is None and not cleanup_errors and overran is None:
            if recorder is not None and not recorder.calls:
                return CaseResult(
                    case_id, CaseStatus.FAILED, "vacuous: the case never called the API",
                    duration=duration,
                )  # fmt: skip
            return case_result(case_id, CaseStatus.PASSED, None, None, (), duration)
        # KeyboardInterrupt alone stops the run: as itself, once this case's
        # cleanups have run, with the case's other failures in its notes. Any
        # other BaseException (SystemExit, GeneratorExit...) fails the case, as
        # pytest fails a test that raises it.
        interrupt = next(
            (exc for exc in (error, *cleanup_errors) if isinstance(exc, KeyboardInterrupt)), None
        )
        if interrupt is not None:
            if self.interrupt is None:
                self.interrupt = interrupt
            self._note(case_id, (error, *cleanup_errors))
            raise interrupt
        if overran is not None:
            stuck = error if type(error) is StageStuck else None
            if error is not None:
                _trim_traceback(error)
            assert timeout is not None  # only a deadline overruns
            error = TimeoutError(
                f"feature {self.plan.feature_id!r}, case {case_id!r}: stage {stage!r} "
                f"exceeded the {timeout:g}s deadline{overran}: "
                f"{self.plan.deadline_words(case_id, timeout)}"
            ).with_traceback(None)
            if stuck is not None:
                error.add_note(f"where it was stuck:\n{_stack_of(stuck)}")
            return CaseResult(
                case_id, CaseStatus.FAILED, str(error), error, tuple(cleanup_errors), duration
            )
        if isinstance(error, anyio.get_cancelled_exc_class()):
            # A real cancellation is delivered again here and ends the run. A
            # cancellation exception the code under test raised on its own (a
            # library bug, or a stale one re-raised) is that case's failure.
            self._note(case_id, cleanup_errors)
            await anyio.lowlevel.checkpoint_if_cancelled()
            if _natively_cancelled():
                raise error
        if stage == "case" and not cleanup_errors:
            found = _unsupported_reason(error)
            if found is not None:
                # The case found, from what the implementation declares through its
                # API, that its property does not apply: a gap, never a pass.
                return CaseResult(case_id, _UNSUPPORTED, found, duration=duration)
        return _failed_result(case_id, stage, error, tuple(cleanup_errors), duration)


def _retried(result: CaseResult, retry: _Retry, timeout: float | None) -> CaseResult:
    """
    The result of a case run again under the longer deadline: passed, it passed
    only with more time, and says so; else it is judged as it ran the second time.
    Its duration is that of both runs.
    """
    duration = retry.duration + result.duration
    if result.status is _PASSED and result.reason is None:
        reason = (
            f"slow: passed only when run again under a {timeout or 0:g}s deadline; the first "
            f"run: {retry.reason}"
        )
        return CaseResult(result.case_id, _PASSED, reason, duration=duration, slow=True)
    return dataclasses.replace(result, duration=duration)


def _unsupported_reason(error: BaseException | None) -> str | None:
    """
    The reason of a :class:`CaseUnsupported` a case raised; ``None`` for any other
    error, and for one with no reason, or whose reason cannot be read (its
    argument's ``__str__`` raised): that case fails, its reason saying so.
    """
    skip = sys.modules.get("conformkit._skip")  # none can be raised before it is imported
    if skip is None or type(error) is not skip.CaseUnsupported:
        return None
    try:
        reason = str(error)
    except KeyboardInterrupt:
        raise  # it alone stops the run, whoever raised it
    except BaseException:
        return None
    return reason if reason.strip() else None


async def _outlast(stragglers: list[_Background]) -> None:
    """
    Wait, as a task group would, for background work that outlived its join,
    in a run of one case: its scope cancelled it, and interrupted it.
    """
    with anyio.CancelScope(shield=True):
        for background in stragglers:
            if background.done is not None:  # made by the join that gave up on it
                await background.done.wait()


def _stack_of(error: BaseException) -> str:
    """The innermost frames of an exception's traceback, formatted."""
    import traceback  # only where an error is described

    return format_frames(traceback.extract_tb(error.__traceback__))


_main_thread: int | None = None  # its ident, once a run needed it


def _on_main_thread() -> bool:
    global _main_thread
    if _main_thread is None:
        import threading  # imported by the event loop by now, not with conformkit

        _main_thread = threading.main_thread().ident
    return _thread.get_ident() == _main_thread


@final
class _Signals:
    """
    The SIGINT handler of a run on the main thread.

    Through it the watchdog thread interrupts sync code that blocks the event
    loop: a signal ends a blocking call (``time.sleep``, ``Lock.acquire``, a
    read) where an exception raised from another thread waits for it to return.
    Any other SIGINT is Ctrl-C: the first stops the run cleanly, the second at
    once. The handler the run found is put back when it ends.
    """

    __slots__ = ("execution", "handle", "pending", "pressed", "previous")

    def __init__(
        self, previous: Callable[[int, FrameType | None], Any], execution: Execution[Any]
    ) -> None:
        self.previous = previous
        self.execution = execution
        self.pending: tuple[Watch, float] | None = None
        self.pressed = False  # Ctrl-C was pressed once
        # The one bound method installed, to know it again; let go once
        # restored, as it makes a cycle that only the garbage collector breaks.
        self.handle: object = _RESTORED

    @classmethod
    def install(cls, execution: Execution[Any]) -> _Signals | None:
        """Install the handler; ``None`` off the main thread, or over a handler not in Python."""
        if not _on_main_thread():
            return None
        previous = _signal.getsignal(_SIGINT)
        if not callable(previous):
            return None
        signals = cls(previous, execution)
        signals.handle = handle = signals._handle
        _signal.signal(_SIGINT, handle)
        return signals

    def restore(self) -> None:
        if _signal.getsignal(_SIGINT) is self.handle:
            _signal.signal(_SIGINT, self._found())
        self.handle = _RESTORED

    def _found(self) -> Callable[[int, FrameType | None], Any]:
        """
        The handler to put back: the one found, unless it is the handler of a run
        that overlapped this one and has ended (it started first, and ended first),
        which outside its run cannot act on Ctrl-C: then the one that run found.
        """
        previous = self.previous
        run = getattr(previous, "__self__", None)
        while isinstance(run, _Signals) and run.handle is _RESTORED:
            previous = run.previous
            run = getattr(previous, "__self__", None)
        return previous

    def interrupt(self, watch: Watch, stage: float) -> None:
        """Interrupt a stage that blocks the main thread; called from the watchdog thread."""
        self.pending = (watch, stage)
        kill = getattr(_signal, "pthread_kill", None)  # not on Windows
        if kill is not None and _signal.getsignal(_SIGINT) is self.handle:
            kill(cast("int", _main_thread), _SIGINT)
        else:  # the code under test replaced the handler
            self.pending = None
            raise_in_thread(watch, stage)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        pending = self.pending
        if pending is None:
            # Ctrl-C. The first stops the run: the cases in flight are cancelled,
            # their cleanups run, shielded and under their deadlines, and then the
            # run raises KeyboardInterrupt. The second stops at once.
            if _ctrl_c_hook is not None:
                _ctrl_c_hook()
            if self.pressed:
                raise KeyboardInterrupt
            self.pressed = True
            # Not from here: the loop may be mid-step. The handler runs in the
            # event loop's thread, which knows its loop.
            _call_soon_threadsafe()(self.execution.stop)
            return
        self.pending = None
        interrupt_at(*pending, frame)


_RESTORED: Final = object()
"""What a run's SIGINT handler is known by once the run put the previous one back."""

_ctrl_c_hook: Callable[[], None] | None = None


def set_ctrl_c_hook(hook: Callable[[], None] | None) -> None:
    """
    Call ``hook`` at each Ctrl-C a run's SIGINT handler takes, in the main thread,
    before the run acts on it: the command line, which owns its process, bounds
    how long a run may take to stop. ``None`` removes it.
    """
    global _ctrl_c_hook
    _ctrl_c_hook = hook


_CallSoon = Callable[[Callable[[], object]], object]


def _call_soon_threadsafe() -> _CallSoon:
    """How to run a function on the running event loop from a signal handler or a thread."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            return cast("_CallSoon", asyncio.get_running_loop().call_soon_threadsafe)
        except RuntimeError:  # not on asyncio
            pass
    import trio  # on trio, then

    return cast("_CallSoon", trio.lowlevel.current_trio_token().run_sync_soon)


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


def _probed(result: CaseResult, declared: str) -> CaseResult:
    """A probed case stays unsupported; one that passed is a stale declaration."""
    if result.status is CaseStatus.PASSED:
        return CaseResult(
            result.case_id, CaseStatus.UNSUPPORTED, f"{declared} (declared unsupported but passed)",
            duration=result.duration, stale=True,
        )  # fmt: skip
    return CaseResult(result.case_id, CaseStatus.UNSUPPORTED, declared, duration=result.duration)


def _is_sync(function: object, cache: dict[object, bool]) -> bool:
    """Whether a case function is sync; remembered, unless it is a family's member."""
    family = getattr(function, "_conformkit_family", None)
    target = function if family is None else family
    sync = not inspect.iscoroutinefunction(target) and not inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - an object with an async __call__
    )
    if family is None:
        cache[function] = sync
    return sync


def _call_sync(function: CaseFunction[Any], api: object) -> Awaitable[None] | None:
    """
    Call a sync case function, failing it when it created a coroutine and dropped
    it without awaiting it: a sync case written against an async API, whose
    calls would otherwise do nothing and pass.

    A sync call cannot interleave with other tasks, so the warnings recorded
    around it are its own; the others are emitted again, as they came.
    """
    dropped: list[str] = []
    others: list[warnings.WarningMessage] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome = function(api)  # a coroutine it dropped is warned about by now
        finally:
            index = 0
            while index < len(caught):
                warning = caught[index]
                index += 1
                if warning.category is RuntimeWarning and isinstance(warning.source, CoroutineType):
                    coroutine = warning.source
                    if coroutine.cr_code.co_filename != _RECORDING_FILE:
                        dropped.append(_coroutine_call(coroutine, api))
                    # Let it go now: a coroutine it held (a recording proxy's call
                    # holds the API's) warns in turn, and is recorded here too.
                    warning.source = None
                    del coroutine
                else:
                    others.append(warning)
    for warning in others:
        warnings.warn_explicit(
            warning.message, warning.category, warning.filename, warning.lineno,
            source=warning.source,
        )  # fmt: skip
    if dropped:
        raise RuntimeWarning(
            f"coroutine {dropped[0]} was never awaited"
            f"{f' (and {len(dropped) - 1} more)' if len(dropped) > 1 else ''}: a sync case "
            f"calls an async API; make it 'async def' and await each call"
        )
    return outcome


def _coroutine_call(coroutine: CoroutineType[Any, Any, Any], api: object) -> str:
    """``api.write()`` for a coroutine of the API's method ``write``, else ``Owner.name()``."""
    name = coroutine.__qualname__
    target = getattr(api, "_conformkit_target", api)  # the API behind a recording proxy
    owner, _, method = name.rpartition(".")
    if owner and any(owner == klass.__qualname__ for klass in type(target).__mro__):
        return f"api.{method}()"
    return f"{name}()"


def _awaitable(value: object, plain: set[type]) -> bool:
    """Whether ``value`` is awaitable; remember its type when it is not (nor a generator)."""
    if inspect.isawaitable(value):
        return True
    if type(value) is not GeneratorType:  # a generator may or may not be awaitable
        plain.add(type(value))
    return False


def _release(result: CaseResult) -> None:
    """Keep the tracebacks of a result's exceptions as text, letting their frames go."""
    if result.error is not None:
        release_frames(result.error)
    for error in result.cleanup_errors:
        release_frames(error)


def _failed_result(
    case_id: str,
    stage: str,
    error: BaseException | None,
    cleanup_errors: tuple[BaseException, ...],
    duration: float,
) -> CaseResult:
    """The result of a case that ended in an error or a failed cleanup."""
    if error is None:
        first = error_line(cleanup_errors[0])
        more = f" (and {len(cleanup_errors) - 1} more)" if len(cleanup_errors) > 1 else ""
        reason = f"case {case_id!r} failed in cleanup: {first}{more}"
        return CaseResult(case_id, CaseStatus.FAILED, reason, None, cleanup_errors, duration)
    _trim_traceback(error)
    where = " in create()" if stage == "create" else ""
    reason = f"{error_line(error)}{_location(error)}"
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
    # None when conformkit raised it itself: no frame of the code under test.
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
    keep_tracebacks: bool = False,
    check_isolation: bool = False,
) -> ContractReport:
    """
    Run every case of ``suite`` against ``implementation`` and report the outcome.

    Each supported case gets a fresh scope: ``create``, the case, then disposal,
    always. Unsupported cases are reported and never run. Results follow the
    feature's declared case order, whatever the concurrency.

    What ``create`` returned is checked before the case runs, and a mismatch
    fails the case at ``create``: when the feature's API type is a Protocol or
    an ABC, the object must have each member it declares, async where it says
    ``async def``; ``None`` fails unless the API type admits it; and an object
    that is still the API of another live scope of the run fails
    (``isolation broken: ...``).

    :param timeout: seconds each stage (create, the case, each cleanup) may take;
        by default, the implementation's own ``timeout`` (:data:`DEFAULT_TIMEOUT`,
        5 seconds, unless it declares another). A stage that overruns, or returns
        after its deadline, fails the case with a reason naming the feature, the
        case and the stage; a stuck one is interrupted where Python allows.
        ``None`` disables the deadlines.
    :param max_concurrency: how many cases may run at once.
    :param reject_vacuous: record the calls each case makes through the API (the
        case gets a recording proxy) and fail a case that passed without calling
        it: ``"vacuous: the case never called the API"``. The report then lists
        the API's operations that no case called, in ``report.unexercised``.
    :param probe_unsupported: run the cases declared unsupported too. They stay
        ``unsupported``; one that passes is marked ``stale`` ("declared
        unsupported but passed"), which ``assert_contract(reject_stale=True)``
        rejects.
    :param keep_tracebacks: keep the live tracebacks of the exceptions in the
        report, frames and local variables included, for a debugger. By default
        a report keeps each exception with its traceback as text (its
        ``to_dict()``), and lets its frames go: a report of many failures would
        otherwise keep every failing case's local variables alive.
    :param check_isolation: in each case's create stage, once the case's API is
        created, call ``create`` once more on a scope of its own and dispose of
        that second API at once: a ``create`` that returns an object another
        live scope has as its API fails the case (``isolation broken: ...``)
        even at ``max_concurrency=1``, where no two cases' scopes are live
        together. Each case then costs two ``create`` calls.
    :raises ContractDefinitionError: before anything runs, if the suite and the
        implementation do not belong to the same feature, the suite lacks a case
        or the coverage is incomplete.
    :raises KeyboardInterrupt: as itself, once every cleanup ran, on Ctrl-C or
        when the code under test raises it; the failures seen on the way out are
        in its ``__notes__``. Any other ``BaseException`` fails its case.
    """
    plan = RunPlan(
        implementation,
        suite,
        timeout,
        reject_vacuous=reject_vacuous,
        probe_unsupported=probe_unsupported,
        keep_tracebacks=keep_tracebacks,
        check_isolation=check_isolation,
    )
    execution = await plan.run(plan.case_ids, _check_concurrency(max_concurrency))
    return execution.report()


def check_backend(backend: object) -> Backend:
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be 'asyncio' or 'trio', got {backend!r}")
    if backend == "trio" and not _installed("trio"):
        raise ModuleNotFoundError(
            "backend 'trio' needs trio installed: pip install 'conformkit[trio]'", name="trio"
        )
    return backend


def _installed(name: str) -> bool:
    import importlib.util  # imported on the rare path that needs it, not with conformkit

    return importlib.util.find_spec(name) is not None


def run_contract_sync(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    backend: Backend = "asyncio",
    timeout: float | None = DEFAULT_TIMEOUT,
    max_concurrency: int = 1,
    reject_vacuous: bool = False,
    probe_unsupported: bool = False,
    keep_tracebacks: bool = False,
    check_isolation: bool = False,
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
        keep_tracebacks=keep_tracebacks,
        check_isolation=check_isolation,
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
            reason, when the case is outside the implementation's coverage, or the
            case's own reason, when it raised :class:`CaseUnsupported` itself.
        :raises Exception: the case's own error when it failed or was unavailable;
            an exception group when cleanups failed; :class:`TimeoutError` when a
            stage overran.
        :raises ContractFailure: when the case failed with an error that a test
            runner would read as something else than a failure (a skip, an
            expected failure, an exit, a cancellation, any ``BaseException`` that
            is not an ``Exception``), chained from that error, its message the
            case's reason.
        """
        __tracebackhide__ = True  # pytest shows the case's frames, not this one
        if isinstance(self.coverage, Unsupported):
            from ._skip import CaseUnsupported  # imports unittest: only when needed

            raise CaseUnsupported(f"{self.implementation}: {self.coverage.reason}")
        execution = Execution(self._plan, (self.id,))
        await execution.run(1)
        result = execution.results[0]
        if result is None:
            execution.report()  # raises, saying the result was lost
            raise AssertionError("unreachable")
        if result.status is _PASSED and not execution.stragglers:
            return
        if result.status is _UNSUPPORTED and not execution.stragglers:
            from ._skip import CaseUnsupported  # it was raised: already imported

            raise CaseUnsupported(f"{self.implementation}: {result.reason}")
        late_errors = execution._released(execution.late_errors())
        errors = [
            *([result.error] if result.error is not None else []),
            *result.cleanup_errors,
            *late_errors,
        ]
        if not errors:
            raise LawViolation(f"case {self.id!r}: {result.reason}")
        if len(errors) == 1 and result.error is not None:
            if _misread(result.error):
                raise ContractFailure(
                    f"{self.implementation}: {result.reason}", execution.report()
                ) from result.error
            raise errors[0]
        raise BaseExceptionGroup(result.reason or f"case {self.id!r} failed", errors)

    def run_sync(self, *, backend: Backend = "asyncio") -> None:
        """:meth:`run` from synchronous code, on an event loop of its own."""
        __tracebackhide__ = True
        anyio.run(self.run, backend=check_backend(backend))


def _misread(error: BaseException) -> bool:
    """
    Whether a test runner or a program would read ``error``, raised from a test,
    as something else than its failure: a skip (``unittest.SkipTest``, which
    ``CaseUnsupported`` with no reason or a subclass of it is; pytest's
    ``skip``), an expected failure (pytest's ``xfail``), the end of the session
    or of the process (pytest's ``exit``, ``SystemExit(0)``), the caller's own
    cancellation, or any other ``BaseException`` that is not an ``Exception``.
    The test modules are not imported for this: an error of theirs can only
    exist once they are.
    """
    if not isinstance(error, Exception):
        return True  # KeyboardInterrupt never gets here: it stops the run
    unittest = sys.modules.get("unittest")
    if unittest is not None and isinstance(error, unittest.SkipTest):
        return True
    outcomes = sys.modules.get("_pytest.outcomes")
    return outcomes is not None and isinstance(error, outcomes.Exit)


def contract_cases(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    reject_vacuous: bool = False,
    check_isolation: bool = False,
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
    :param check_isolation: as for :func:`run_contract`. The cases of one call
        share a run: one whose ``create`` returns the API of another case still
        running (``asyncio.gather`` of two ``case.run()``) fails too.
    :raises ContractDefinitionError: as :func:`run_contract` would.
    """
    # Each case's error is raised at once, to a test runner or a debugger that
    # wants its frames: its traceback stays live.
    plan = RunPlan(
        implementation,
        suite,
        timeout,
        reject_vacuous=reject_vacuous,
        keep_tracebacks=True,
        check_isolation=check_isolation,
        shared=True,
    )
    return [ContractCase(plan, case_id) for case_id in plan.case_ids]


# Shown as conformkit.Name, like every export, whichever way it was first imported.
for _export in (ContractCase, contract_cases, run_contract, run_contract_sync):
    _export.__module__ = "conformkit"
del _export
