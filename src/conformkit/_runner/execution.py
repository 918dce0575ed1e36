"""The execution of a plan: its lanes run the cases, each in a fresh scope, and judge them."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final, Generic, cast, final

import anyio

from .._explain import error_line, release_frames
from .._feature import API, Unsupported
from .._report import CaseResult, CaseStatus, ContractReport, case_result
from .._scope import OWN_TASKS, FeatureScope, OwnTasks, close_soon
from .._shape import CLEAN
from .._watchdog import StageStuck, Watch, clock, interruptible, waker
from .interrupts import Signals, natively_cancelled
from .isolation import open_twin
from .lanes import OVERRUNS, Lane, Late, Retry, watch_lanes
from .results import (
    failed_result,
    probed,
    release_result,
    retried,
    stack_of,
    trim_traceback,
    unsupported_reason,
)
from .sync_cases import awaitable, call_sync, is_sync

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .._recording import CallRecorder
    from .._scope import Background
    from .plan import RunPlan

# Module-level names for the hot paths: an enum member is slow to look up on its class.
_PASSED: Final = CaseStatus.PASSED
_UNSUPPORTED: Final = CaseStatus.UNSUPPORTED


_SCOPE_TYPES: Final[dict[type[BaseException], type[anyio.CancelScope]]] = {}
"""The type of anyio's cancel scope on each kind of event loop, by its cancellation exception."""


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
        self.stragglers: list[Background] = []
        # The lane that Ctrl-C stops, in a run of one case; else the task group's scope.
        self.stopper: Lane | None = None
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
            tuple(self.released(self.late_errors())),
            unexercised,
        )

    def released(self, errors: list[BaseException]) -> list[BaseException]:
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
                Lane(timeout, watched=True) for _ in range(min(max_concurrency, len(case_ids)))
            ]
            self.shared |= len(lanes) > 1
        else:
            lanes = [Lane(timeout, watched=False)]
        signals = Signals.install(self.stop)
        try:
            if timeout is not None:
                # In a run of one case, made when a stage first waits, if it does.
                wake = waker() if watched else None
                interrupt = None if signals is None else signals.interrupt
                for lane in lanes:
                    lane.connect(plan.feature_id, interrupt, wake)
                    lane.__enter__()  # watched by the last-resort thread from now on
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
                    coroutine = self._take_cases(lane, queue, None)
                    driver = interruptible(coroutine, lane, waits=True)
                    lane.follow(coroutine, driver)
                    await driver
                if self.stragglers:
                    await _outlast(self.stragglers)
            else:
                async with anyio.create_task_group() as task_group:
                    self.spawner = task_group
                    if timeout is not None:
                        task_group.start_soon(watch_lanes, lanes, timeout)
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
                lane.release()
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
            self.stopper.halt()
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
        lane: Lane,
        queue: Iterator[tuple[int, str]],
        task_group: TaskGroup,
    ) -> None:
        if lane.timeout is None:
            await self._take_cases(lane, queue, task_group)
            return
        # Under deadlines, the lane's stages can be interrupted from outside:
        # a stage that ignores its cancellation gets StageStuck thrown in instead.
        coroutine = self._take_cases(lane, queue, task_group)
        driver = interruptible(coroutine, lane)
        lane.follow(coroutine, driver)
        await driver

    async def _take_cases(
        self,
        lane: Lane,
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

    async def _stretch(self, lane: Lane, queue: Iterator[tuple[int, str]]) -> bool:
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
        fitting = check.verdicts  # by type: CLEAN when its objects need no check
        shared = self.shared
        isolation = plan.isolation
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
                lane.deadline = due = started + timeout
                lane.start_case(case_id, timeout, due)
            try:
                created: Any = create(scope)
                # Telling sync from async by the function, not the value: an
                # isawaitable() check would cost more than the rest of a trivial case.
                # Any other awaitable is awaited too, as open_feature does; a type
                # seen not to be one is not checked again.
                if (
                    create_is_async
                    or type(created) is CoroutineType
                    or (type(created) not in plain and awaitable(created, plain))
                ):
                    created = await created
                if shared:
                    admitted = check.admit(created, scope)  # its shape; no other live scope's
                elif fitting.get(type(created)) is not CLEAN:
                    problem = check.shape(created)  # its shape alone
                    if problem is not None:
                        raise problem
                if isolation:
                    await open_twin(create, scope, case_id, check)
                if timeout is not None:
                    # The next stage, once this one ended, which may still have
                    # overrun its deadline: sync code that blocks the event loop
                    # is never cancelled.
                    now = clock()
                    if now > lane.due:
                        raise Late(now - lane.due + timeout)
                    lane.deadline = due = now + timeout
                    lane.start("case", due)
                stage = "case"
                if record:
                    from .._recording import CallRecorder

                    recorder = CallRecorder()
                    created = recorder.wrap(created)
                sync = sync_cases.get(function)
                if sync is None:
                    sync = is_sync(function, sync_cases)
                outcome = call_sync(function, created) if sync else function(created)
                if outcome is not None:
                    await outcome
                if timeout is not None:
                    lane.stop()
            except BaseException as exc:
                if timeout is not None:
                    lane.stop()  # first: the watchdog interrupts only the stage
                error = exc
            overran: str | None = None
            ended: float | None = None  # when the case ended, under deadlines
            if timeout is not None:
                ended = clock()
                if error is None and ended > lane.due:
                    # Returned by itself, but after its deadline: sync code that
                    # blocks the event loop is never cancelled.
                    error = Late(ended - lane.due + timeout)
                cancelled = lane.disarm()
                if cancelled or type(error) in OVERRUNS:
                    # Read now: the cleanups rearm the lane.
                    overran = lane.overrun(error, timeout, cancelled)
            closing = close_soon(scope, ended)
            if isinstance(closing, list):
                cleanup_errors = closing
                awaited = False
            else:
                closed = await closing
                cleanup_errors = closed.errors
                awaited = closed.awaited
                if closed.outlived is not None:
                    self.stragglers.append(closed.outlived)
            if admitted is not None:
                check.release(admitted, scope)
            duration = clock() - started
            spent = overran is not None
            if awaited and overran is None:
                # Closing awaited (it joined background work or ran async cleanups),
                # shielded. An outside cancellation that arrived meanwhile is
                # honoured now, unless the lane's own deadline passed (only a run of
                # one case keeps it armed then).
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
                    lane.retry = Retry(index, case_id, cast("str", result.reason), duration)
                    return False
                if plan.release:
                    release_result(result)
            if retry is not None and case_id == retry.case_id:
                result = retried(result, retry, timeout)
            results[index] = result if declared is None else probed(result, declared)
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
                trim_traceback(error)
            assert timeout is not None  # only a deadline overruns
            error = TimeoutError(
                f"feature {self.plan.feature_id!r}, case {case_id!r}: stage {stage!r} "
                f"exceeded the {timeout:g}s deadline{overran}: "
                f"{self.plan.deadline_words(case_id, timeout)}"
            ).with_traceback(None)
            if stuck is not None:
                error.add_note(f"where it was stuck:\n{stack_of(stuck)}")
            return CaseResult(
                case_id, CaseStatus.FAILED, str(error), error, tuple(cleanup_errors), duration
            )
        if isinstance(error, anyio.get_cancelled_exc_class()):
            # A real cancellation is delivered again here and ends the run. A
            # cancellation exception the code under test raised on its own (a
            # library bug, or a stale one re-raised) is that case's failure.
            self._note(case_id, cleanup_errors)
            await anyio.lowlevel.checkpoint_if_cancelled()
            if natively_cancelled():
                raise error
        if stage == "case" and not cleanup_errors:
            found = unsupported_reason(error)
            if found is not None:
                # The case found, from what the implementation declares through its
                # API, that its property does not apply: a gap, never a pass.
                return CaseResult(case_id, _UNSUPPORTED, found, duration=duration)
        return failed_result(case_id, stage, error, tuple(cleanup_errors), duration)


async def _outlast(stragglers: list[Background]) -> None:
    """
    Wait, as a task group would, for background work that outlived its join,
    in a run of one case: its scope cancelled it, and interrupted it.
    """
    with anyio.CancelScope(shield=True):
        for background in stragglers:
            if background.done is not None:  # made by the join that gave up on it
                await background.done.wait()
