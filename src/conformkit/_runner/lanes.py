"""
The lanes of a run, each running cases one after another under the stages'
deadlines, and the one task that cancels a lane whose stage overran.
"""

from __future__ import annotations

from typing import Final, final

import anyio

from .._watchdog import BLOCKED, UNANSWERED, StageStuck, Watch, clock, stuck_detail, waker


@final
class Lane(Watch):
    """
    One lane of a run: its cases run one after another inside its cancel scope,
    each stage (``create``, then the case) under the run's deadline.

    Starting a stage (in :meth:`Execution._stretch`, the hot path) arms the
    watch (:meth:`Watch.start_case`, :meth:`Watch.start`), which records when it
    is due, and sets ``deadline`` to the same, until something acts on it.
    In a run of several cases, the run's one watchdog (:func:`watch_lanes`) cancels
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
        self.retry: Retry | None = None

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
                self.set_waker(waker())

    def halt(self) -> None:
        """Ctrl-C, in a run of one case: cancel the lane's scope, which is no overrun."""
        self.stopped = True
        cancel_scope = getattr(self, "cancel_scope", None)
        if cancel_scope is not None:
            cancel_scope.cancel()

    def disarm(self) -> bool:
        """
        End the stages of a case, which :meth:`stop` stopped watching; return
        whether one overran, cancelling the lane's scope.

        A lane whose scope carries the deadline keeps it through the case's
        cleanup, which that deadline may cancel the scope during (shielded, so
        harmlessly): the run of one case ends with that case.
        """
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
        if type(error) is Late:
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
class Retry:
    """A case that overran the default guard, to run again: where, and its first reason."""

    __slots__ = ("case_id", "duration", "index", "reason")

    def __init__(self, index: int, case_id: str, reason: str, duration: float) -> None:
        self.index = index
        self.case_id = case_id
        self.reason = reason
        self.duration = duration


class Late(Exception):
    """A stage returned after its deadline; ``ran`` is how long it took."""

    def __init__(self, ran: float) -> None:
        self.ran = ran  # never shown: the stage's TimeoutError replaces it


OVERRUNS: Final = (Late, StageStuck)


async def watch_lanes(lanes: list[Lane], timeout: float) -> None:
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
