"""The last-resort watchdog thread: stuck stages are seen, and interrupted where Python allows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import types
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import conformkit
from conformkit._watchdog import (
    Guard,
    StageStuck,
    TaskWatch,
    Watch,
    _watchdog,
    clock,
    format_frames,
    frames_of,
    interrupt_at,
    interruptible,
    stuck_detail,
    summary,
)

HARD_TIMEOUT = 20.0 if os.environ.get("CONFORMKIT_MUTATION") else 60.0
"""Seconds a fresh interpreter may take: less under tools/mutation.py (see test_faults.py)."""


def run_python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, with a hard timeout: a hang fails the test."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=HARD_TIMEOUT,
        cwd=cwd,
    )


class TestWatch:
    def test_a_thread_spinning_in_python_is_interrupted_with_its_stack(self) -> None:
        """Past its deadline and grace, sync code that never yields gets StageStuck."""
        done = run_python(
            """
            import sys, time
            from conformkit._watchdog import StageStuck, Watch

            def spin():
                while True:
                    pass

            with Watch(0.2) as watch:
                watch.frame = sys._getframe()
                watch.case_id = "spin"
                watch.start("case", time.perf_counter() + 0.2)
                try:
                    spin()
                except StageStuck as stuck:
                    print("interrupted:", stuck.how)
                watch.stop()
                print("in spin" if "in spin" in (watch.stack or "") else watch.stack)
            """
        )
        assert done.stdout.splitlines() == [
            "interrupted: sync code blocked the event loop",
            "in spin",
        ], done.stderr

    def test_a_stage_that_ends_in_time_is_left_alone(self) -> None:
        """A stopped watch never fires, however long the thread then runs."""
        done = run_python(
            """
            import sys, time
            from conformkit._watchdog import Watch

            with Watch(0.1) as watch:
                watch.frame = sys._getframe()
                watch.start("case", time.perf_counter() + 0.1)
                watch.stop()
                time.sleep(0.5)
                print(watch.stack)
            """
        )
        assert done.stdout.splitlines() == ["None"], done.stderr
        assert done.stderr == ""  # the watchdog's thread looked at it and went on

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
    def test_a_forked_child_gets_a_watchdog_of_its_own(self) -> None:
        """The thread does not survive fork(): the child starts one when it watches a stage."""
        done = run_python(
            """
            import os, sys, time
            from conformkit._watchdog import StageStuck, Watch

            def spin(until):
                while time.perf_counter() < until:
                    pass

            def watched():
                with Watch(0.1) as watch:
                    watch.frame = sys._getframe()
                    watch.start("case", time.perf_counter() + 0.1)
                    try:
                        spin(time.perf_counter() + 5)
                        return "not interrupted"
                    except StageStuck:
                        return "interrupted"
                    finally:
                        watch.stop()

            print("parent:", watched(), flush=True)  # the parent's thread is running now
            child = os.fork()
            if child == 0:
                print("child:", watched(), flush=True)
                time.sleep(1.3)  # the child's thread, idle for a second, sleeps
                print("child:", watched(), flush=True)
                os._exit(0)
            os.waitpid(child, 0)
            """
        )
        assert done.stdout.splitlines() == [
            "parent: interrupted",
            "child: interrupted",
            "child: interrupted",
        ], done.stderr
        assert done.stderr == ""

    def test_a_stage_that_runs_into_its_grace_is_left_alone(self) -> None:
        """Past its deadline, a stage is stuck only once its grace is spent too."""
        done = run_python(
            """
            import sys, time
            from conformkit._watchdog import StageStuck, Watch

            with Watch(1.0) as watch:  # a grace of 1 s
                watch.frame = sys._getframe()
                watch.start("case", time.perf_counter() + 0.1)
                try:
                    time.sleep(0.5)  # past the deadline, well within the grace
                except StageStuck:
                    print("interrupted")
                watch.stop()
            print("done")
            """
        )
        assert done.stdout.splitlines() == ["done"], done.stderr

    def test_a_stage_started_after_one_that_ignored_its_cancellation_starts_afresh(
        self,
    ) -> None:
        """What the previous stage did is forgotten: interrupted, the new one blocked the loop."""
        watch = Watch(0.2)
        watch.first_cancel = 1.0  # the previous stage ignored a cancellation
        watch.start("case", clock() + 0.2)
        assert watch.stuck().how == "sync code blocked the event loop"

    def test_code_that_cannot_be_interrupted_goes_to_the_stuck_hook(self) -> None:
        """A stage still stuck after its interruption is handed over with its stack."""
        done = run_python(
            """
            import sys, threading, time
            from conformkit._watchdog import StageStuck, Watch, set_stuck_hook

            seen = threading.Event()

            def hook(watch):
                print("stuck:", watch.label(), "deaf" in watch.stack)
                seen.set()

            def deaf():
                while not seen.is_set():
                    try:
                        time.sleep(0.01)
                    except StageStuck:
                        pass  # the defect under test: even this is swallowed

            set_stuck_hook(hook)
            with Watch(0.1) as watch:
                watch.frame = sys._getframe()
                watch.case_id = "deaf"
                watch.start("case", time.perf_counter() + 0.1)
                deaf()
                watch.stop()
            """
        )
        assert done.stdout.splitlines() == ["stuck: case 'deaf' (stage 'case') True"], done.stderr

    def test_a_hook_that_raises_leaves_later_stages_watched(self) -> None:
        """The thread ends with the hook's error; the next stage watched starts another."""
        done = run_python(
            """
            import sys, threading, time
            from conformkit._watchdog import StageStuck, Watch, set_stuck_hook

            def hook(watch):
                raise RuntimeError("the hook failed")

            def deaf(until):
                while time.perf_counter() < until:
                    try:
                        time.sleep(0.01)
                    except StageStuck:
                        pass

            def spin(until):
                while time.perf_counter() < until:
                    pass

            threading.excepthook = lambda args: print("thread:", args.exc_value)
            set_stuck_hook(hook)
            with Watch(0.1) as watch:
                watch.frame = sys._getframe()
                watch.start("case", time.perf_counter() + 0.1)
                deaf(time.perf_counter() + 1.0)
                watch.stop()
            with Watch(0.1) as watch:
                watch.frame = sys._getframe()
                watch.start("case", time.perf_counter() + 0.1)
                try:
                    spin(time.perf_counter() + 5)
                    print("not interrupted")
                except StageStuck:
                    print("interrupted")
                watch.stop()
            """
        )
        assert done.stdout.splitlines() == ["thread: the hook failed", "interrupted"], done.stderr

    def test_the_default_hook_prints_the_stack(self) -> None:
        """Without a hook, the stuck stage's stack goes to stderr: no hang goes unexplained."""
        done = run_python(
            """
            import sys, time
            from conformkit._watchdog import StageStuck, Watch, set_stuck_hook

            set_stuck_hook(print)
            set_stuck_hook(None)  # the default again

            def deaf(until):
                while time.perf_counter() < until:
                    try:
                        time.sleep(0.01)
                    except StageStuck:
                        pass

            with Watch(0.1) as watch:
                watch.frame = sys._getframe()
                watch.case_id = "deaf"
                watch.start("case", time.perf_counter() + 0.1)
                deaf(time.perf_counter() + 1.0)
                watch.stop()
            """
        )
        assert "conformkit: case 'deaf' (stage 'case') is stuck past its 0.1s deadline" in (
            done.stderr
        )
        assert "in deaf" in done.stderr

    def test_a_stage_that_winds_down_within_its_grace_is_not_reported(self) -> None:
        """Interrupted, a stage has its grace again to end before the hook hears of it."""
        done = run_python(
            """
            import sys, time
            from conformkit._watchdog import StageStuck, Watch, set_stuck_hook

            reported = []
            set_stuck_hook(lambda watch: reported.append(watch.case_id))
            with Watch(0.8) as watch:  # a grace of 0.8 s
                watch.frame = sys._getframe()
                watch.case_id = "slow to stop"
                watch.start("case", time.perf_counter() + 0.1)
                try:
                    while True:
                        pass
                except StageStuck:
                    until = time.perf_counter() + 0.2  # winding down, well within its grace
                    while time.perf_counter() < until:
                        pass
                watch.stop()
            time.sleep(0.9)  # past when a report would have come
            print(reported)
            """
        )
        assert done.stdout.splitlines() == ["[]"], done.stderr

    def test_a_watch_gone_before_the_first_look_leaves_the_thread_well(self) -> None:
        """The thread's first look may find no watch at all: it goes on quietly."""
        done = run_python(
            """
            import time
            from conformkit._watchdog import Watch

            with Watch(0.1):
                pass
            time.sleep(0.3)
            print("done")
            """
        )
        assert (done.stdout, done.stderr) == ("done\n", "")

    def test_the_default_hook_says_so_when_it_has_no_stack(self) -> None:
        """A watch that knows neither frame nor coroutine: the hook says it has no stack."""
        done = run_python(
            """
            import time
            from conformkit._watchdog import Watch

            with Watch(0.1) as watch:
                watch.case_id = "nowhere"
                watch.start("case", time.perf_counter() + 0.1)
                time.sleep(0.8)  # nothing to interrupt it by: no frame, no coroutine
                watch.stop()
            """
        )
        assert "could not be interrupted; it is here:\n  (no stack)\n" in done.stderr, done.stderr


class TestInTheLoopsCode:
    """
    An interruption that finds the event loop's thread in the loop's own code is
    held back: an exception raised there would leave the loop's state half
    changed (on trio, a cancel scope half entered ends the run with "Cancel scope
    stack corrupted").
    """

    @staticmethod
    def armed() -> tuple[Watch, float]:
        watch = Watch(0.2)
        watch.frame = sys._getframe(1)  # the test's frame: the stage runs while it does
        watch.start("case", clock())
        assert watch.stuck_at is not None
        return watch, watch.stuck_at

    def test_the_stage_is_not_interrupted_inside_the_loops_code(self) -> None:
        import outcome  # trio's

        watch, stage = self.armed()
        # A frame of outcome's, called by the stage: as trio's resumption of a task is.
        in_the_loop = outcome.capture(sys._getframe).unwrap()
        assert in_the_loop.f_back is sys._getframe()
        interrupt_at(watch, stage, in_the_loop)  # raises nothing
        assert watch.missed == stage  # the watchdog tries again

    @pytest.mark.anyio
    async def test_its_next_cancellation_is_stage_stuck_at_once(self) -> None:
        """Held back, the stage is interrupted where the loop delivers a cancellation."""
        import outcome

        watch, stage = self.armed()
        with anyio.CancelScope() as scope:
            scope.cancel()
            try:
                await anyio.sleep(1)
            except anyio.get_cancelled_exc_class() as exc:
                cancelled = exc
                raise
        watch.first_cancel = clock()  # it ignored a first cancellation just now
        assert watch.intercept(cancelled, None) is cancelled  # within its grace
        interrupt_at(watch, stage, outcome.capture(sys._getframe).unwrap())
        stuck = watch.intercept(cancelled, None)
        assert isinstance(stuck, StageStuck)
        assert stuck.how == "it ignored its cancellation"

    def test_nor_in_code_the_loops_code_calls(self) -> None:
        """Code without a file of the loop's (attrs' generated methods) unwinds through it."""
        import outcome

        watch, stage = self.armed()
        # A frame of this file's, called by outcome's, called by the stage.
        inner = outcome.capture(lambda: sys._getframe()).unwrap()
        assert inner.f_back is not None
        assert inner.f_back.f_back is sys._getframe()
        interrupt_at(watch, stage, inner)  # raises nothing
        assert watch.missed == stage

    def test_it_is_interrupted_in_its_own_code(self) -> None:
        watch, stage = self.armed()
        with pytest.raises(StageStuck, match="sync code blocked the event loop"):
            interrupt_at(watch, stage, sys._getframe())
        assert watch.missed is None

    def test_nor_is_another_stage_or_code_outside_the_stage(self) -> None:
        watch, stage = self.armed()
        interrupt_at(watch, stage + 1, sys._getframe())  # it ended; another is armed
        frames: list[types.FrameType] = []
        elsewhere = threading.Thread(target=lambda: frames.append(sys._getframe()))
        elsewhere.start()
        elsewhere.join()
        interrupt_at(watch, stage, frames[0])  # the stage is not on that stack
        assert watch.missed is None

    def test_the_watchdog_tries_again_after_an_interruption_held_back(self) -> None:
        """Until the stage ends or is handed to the stuck hook: a spin that runs the
        loop's code part of the time is caught in its own the next time."""
        done = run_python(
            """
            import sys, threading, time
            from conformkit._watchdog import Watch

            fired = []
            again = threading.Event()

            def interrupt(watch, stage):
                fired.append(stage)
                if len(fired) == 1:
                    watch.missed = stage  # as if caught in the loop's code
                else:
                    again.set()

            with Watch(0.1) as watch:
                watch.frame = sys._getframe()
                watch.interrupt = interrupt
                # Stuck at once, and reported a minute after the watchdog first fires:
                # a window to try again in that no loaded machine's poll misses.
                watch.grace = 60.0
                watch.start("case", time.perf_counter() - watch.grace)
                print("again" if again.wait(30) else "once")
                watch.stop()
            print(len(set(fired)), "stage")
            """
        )
        assert done.stdout.splitlines() == ["again", "1 stage"], done.stderr


class TestWhere:
    """The one line of a reason that says where stuck code was: its own frames only."""

    def test_conformkits_and_the_event_loops_frames_are_left_out(self) -> None:
        import asyncio

        import outcome
        import trio

        package = Path(conformkit.__file__).parent

        def frame(path: Path | str, name: str, line: int = 1) -> traceback.FrameSummary:
            return traceback.FrameSummary(str(path), line, name)

        def library(module: object, name: str) -> traceback.FrameSummary:
            return frame(Path(str(getattr(module, "__file__", ""))).parent / "x.py", name)

        frames = [  # outermost first, as a traceback lists them
            frame("/project/tests/test_store.py", "test_store", 7),
            frame(package / "_runner" / "execution.py", "_stretch"),
            frame(package / "profiles" / "mapping.py", "reads", 12),
            library(asyncio, "run"),
            library(anyio, "checkpoint"),
            library(trio, "run"),
            library(outcome, "send"),
            frame(package / "_scope.py", "_close"),
            frame("/project/store.py", "write", 30),
            frame(package / "_watchdog.py", "interruptible"),
        ]
        assert summary(frames) == (
            "write at store.py:30 ← reads at mapping.py:12 ← test_store at test_store.py:7"
        )

    def test_a_cancel_scope_caught_mid_exit_is_left_out_too(self) -> None:
        """A loop caught exiting a cancel scope (contextlib's frames) hides no own frame."""
        import contextlib

        import trio

        frames = [
            traceback.FrameSummary("/project/store.py", 30, "work"),
            traceback.FrameSummary(str(Path(trio.__file__).parent / "_timeouts.py"), 91, "sleep"),
            traceback.FrameSummary(contextlib.__file__, 301, "helper"),
            traceback.FrameSummary(contextlib.__file__, 104, "__init__"),
        ]
        assert summary(frames) == "work at store.py:30"

    def test_the_await_chain_runs_through_generator_based_coroutines(self) -> None:
        """A suspended chain's frames, outermost first, across ``yield from`` too."""

        @types.coroutine
        def pause() -> Generator[None, None, None]:
            yield

        async def inner() -> None:
            await pause()

        @types.coroutine
        def middle() -> Generator[None, None, None]:
            yield from inner()  # allowed in a types.coroutine generator

        async def outer() -> None:
            await middle()

        coroutine = outer()
        coroutine.send(None)  # suspended in pause()
        try:
            frames = frames_of(coroutine)
            assert [frame.name for frame in frames] == ["outer", "middle", "inner", "pause"]
            text = format_frames(frames)
            assert text.count("\n  File ") == 3, text
            assert all(line.startswith(("  File ", "    ")) for line in text.splitlines()), text
        finally:
            coroutine.close()
        fresh = outer()  # not started: its own frame, awaiting nothing
        try:
            assert [frame.name for frame in frames_of(fresh)] == ["outer"]
        finally:
            fresh.close()

    def test_an_interruption_says_how_and_where(self) -> None:
        def stuck_here() -> None:
            raise StageStuck("it hung")

        assert str(StageStuck("it hung")) == "stuck past its deadline: it hung; interrupted"
        assert stuck_detail(StageStuck("it hung")) == "it hung; interrupted"  # nowhere known
        with pytest.raises(StageStuck) as excinfo:
            stuck_here()
        detail = stuck_detail(excinfo.value)
        assert re.fullmatch(
            r"it hung; interrupted in stuck_here at test_watchdog\.py:\d+ ← "
            r"test_an_interruption_says_how_and_where at test_watchdog\.py:\d+",
            detail,
        ), detail

    def test_the_innermost_three_are_shown(self) -> None:
        frames = [traceback.FrameSummary(f"/project/f{n}.py", n, f"f{n}") for n in range(5)]
        assert summary(frames) == "f4 at f4.py:4 ← f3 at f3.py:3 ← f2 at f2.py:2"
        assert summary([]) == ""


class TestRegistration:
    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 3])
    async def test_a_run_leaves_no_watch_behind(self, cases: int) -> None:
        """The watchdog lets go of a run's lanes when it ends: nothing piles up run after run."""
        from test_runner import passing, rig

        watches = _watchdog().watches
        before = set(watches)
        r = rig({f"c{n}": passing(f"c{n}") for n in range(cases)})
        for _ in range(3):
            report = await conformkit.run_contract(r.implementation, r.suite, max_concurrency=2)
            conformkit.assert_contract(report, require_full=True)
        assert set(watches) <= before

    @pytest.mark.anyio
    @pytest.mark.parametrize("cases", [1, 2])
    async def test_nor_what_it_did_to_a_stuck_stage(self, cases: int) -> None:
        """A lane whose stage the thread interrupted is let go of as well."""
        from test_runner import SHORT, passing, rig

        async def blocks(api: object) -> None:
            time.sleep(3 * SHORT)  # noqa: ASYNC251 - the defect under test

        watchdog = _watchdog()
        before = set(watchdog.fired)
        r = rig({"blocks": blocks, **{f"c{n}": passing(f"c{n}") for n in range(cases - 1)}})
        report = await conformkit.run_contract(r.implementation, r.suite, timeout=SHORT)
        assert "sync code blocked the event loop" in (report["blocks"].reason or "")
        assert set(watchdog.fired) <= before

    def test_its_thread_is_named_in_thread_dumps(self) -> None:
        with Watch(1.0):
            names = [thread.name for thread in threading.enumerate()]
        assert "conformkit watchdog" in names


class TestArming:
    """The methods through which the host arms, disarms and equips a watch."""

    def test_start_case_arms_the_create_stage_as_start_does(self) -> None:
        """start_case() names the case and its deadline, and arms 'create' exactly as start()."""
        by_start, by_start_case = Watch(2.0), Watch(2.0)
        for watch in (by_start, by_start_case):
            watch.first_cancel = 1.0  # a cancellation the previous stage saw
        by_start.start("create", 10.0)
        by_start_case.start_case("reads", 3.0, 10.0)
        fields = ("stage", "due", "first_cancel", "stuck_at")
        assert [getattr(by_start_case, name) for name in fields] == [
            getattr(by_start, name) for name in fields
        ]
        assert (by_start_case.stage, by_start_case.stuck_at, by_start_case.first_cancel) == (
            "create",
            11.0,  # a second's grace
            None,
        )
        assert (by_start_case.case_id, by_start_case.timeout) == ("reads", 3.0)
        assert by_start_case.label() == "case 'reads' (stage 'create')"

    def test_stop_disarms(self) -> None:
        """A stopped stage is no longer armed: the watchdog thread leaves it alone."""
        watch = Watch(1.0)
        watch.start("cleanup", 5.0)
        assert watch.stuck_at == 6.0
        watch.stop()
        assert watch.stuck_at is None

    def test_release_lets_go_of_the_run(self) -> None:
        """What connect() and follow() gave the watch is let go of by release()."""
        watch = Watch(1.0)

        def means(watch: Watch, stage: float) -> None: ...

        async def code() -> None: ...

        coroutine = code()
        watch.connect("feature", means, means)
        watch.follow(coroutine, "driver")
        assert (watch.feature_id, watch.interrupt, watch.wake) == ("feature", means, means)
        assert (watch.coroutine, watch.driver) == (coroutine, "driver")
        watch.release()
        coroutine.close()
        assert [watch.interrupt, watch.wake, watch.frame, watch.coroutine, watch.driver] == [
            None
        ] * 5
        assert watch.feature_id == "feature"  # what the stuck hook's message names


class TestTaskWatch:
    def test_its_label_names_the_feature_the_case_and_the_task(self) -> None:
        """What the stuck hook and the command line name: feature, case (or session), task."""
        in_a_case = TaskWatch(0.5, "example.text", "missing", "app.heartbeat")
        in_a_session = TaskWatch(0.5, "example.text", None, "app.heartbeat")
        assert in_a_case.label() == (
            "feature 'example.text', case 'missing' (background task 'app.heartbeat')"
        )
        assert in_a_session.label() == (
            "feature 'example.text', the session (background task 'app.heartbeat')"
        )

    def test_a_stage_is_named_with_its_feature_once_known(self) -> None:
        """A lane's watch names its stage, and its feature when the run set it."""
        watch = Watch(0.5)
        watch.case_id, watch.stage = "missing", "case"
        assert watch.label() == "case 'missing' (stage 'case')"
        watch.feature_id = "example.text"
        assert watch.label() == "feature 'example.text', case 'missing' (stage 'case')"

    @pytest.mark.anyio
    async def test_before_it_is_armed_or_due_its_cancellations_pass(self) -> None:
        """Work is cancelled as usual until its join's deadline has passed."""
        for due in (None, clock() + 30.0):
            watch = TaskWatch(5.0, "f", "c", "w")
            swallowed: list[str] = []
            if due is not None:
                watch.arm(due, None)
            try:
                with anyio.CancelScope() as scope:
                    scope.cancel()
                    answer = await interruptible(slow_to_answer(swallowed), watch)
            finally:
                watch.__exit__()
            assert (answer, swallowed) == ("answered", ["swallowed"] * 3)

    @pytest.mark.anyio
    async def test_past_its_deadline_an_ignored_cancellation_is_stage_stuck_at_once(
        self,
    ) -> None:
        """Armed and past due, the work's next cancellation becomes StageStuck, no grace first."""
        watch = TaskWatch(5.0, "f", "c", "w")  # a grace of 5 s: none is waited for
        watch.arm(clock(), None)
        swallowed: list[str] = []
        try:
            with anyio.CancelScope() as scope:
                scope.cancel()
                with pytest.raises(StageStuck) as excinfo:
                    await interruptible(slow_to_answer(swallowed), watch)
        finally:
            watch.__exit__()
        assert swallowed == []
        assert excinfo.value.how == "it ignored its cancellation"

    def test_the_default_hook_says_the_task_did_not_stop(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Written to stderr: the task named, how long it had, and where it is."""
        from conformkit._watchdog import print_stuck

        watch = TaskWatch(0.5, "example.text", "missing", "app.heartbeat")
        watch.stack = '  File "app.py", line 3, in heartbeat\n'
        print_stuck(watch)
        assert capsys.readouterr().err == (
            "conformkit: feature 'example.text', case 'missing' (background task "
            "'app.heartbeat') did not stop within 0.5s of being cancelled and could not be "
            'interrupted; it is here:\n  File "app.py", line 3, in heartbeat\n\n'
        )


async def slow_to_answer(swallowed: list[str]) -> str:
    """Swallow three cancellations, noting each in ``swallowed``; then answer."""
    for _ in range(3):
        try:
            await anyio.sleep(1)
        except anyio.get_cancelled_exc_class():
            swallowed.append("swallowed")
    return "answered"


class TestInterruptible:
    @pytest.mark.anyio
    async def test_a_swallowed_cancellation_becomes_stage_stuck(self) -> None:
        """Cancelled again after its grace, code that swallows cancellation gets StageStuck."""
        cancelled = anyio.get_cancelled_exc_class()
        swallowed: list[str] = []

        async def deaf() -> None:
            while True:
                try:
                    await anyio.sleep(1)
                except cancelled:
                    swallowed.append("swallowed")  # the defect under test

        guard = Guard(0.0, 0.05)
        with anyio.CancelScope() as scope:
            scope.cancel()
            with pytest.raises(StageStuck) as excinfo:
                await interruptible(deaf(), guard)
        assert swallowed
        assert excinfo.value.how == "it ignored its cancellation"
        assert guard.where is not None
        assert "deaf at test_watchdog.py" in guard.where

    @pytest.mark.anyio
    async def test_cancellations_within_the_grace_are_passed_on(self) -> None:
        """Until its grace has passed, code past its deadline gets its cancellations as usual."""
        swallowed: list[str] = []
        guard = Guard(0.0, 30.0)  # past its deadline from the start, with a long grace
        with anyio.CancelScope() as scope:
            scope.cancel()
            answer = await interruptible(slow_to_answer(swallowed), guard)
        assert (answer, swallowed) == ("answered", ["swallowed"] * 3)

    @pytest.mark.anyio
    async def test_code_before_its_deadline_is_cancelled_as_usual(self) -> None:
        """A cancellation before the guard's deadline is the code's own: passed on as it is."""
        guard = Guard(float("inf"), 0.0)
        with anyio.move_on_after(0.01) as scope:
            await interruptible(anyio.sleep(1), guard)
        assert scope.cancelled_caught
        assert guard.first_cancel is None

    @pytest.mark.anyio
    async def test_an_armed_watch_passes_a_cancellation_before_the_deadline_on(self) -> None:
        """A watch armed for a stage lets the stage's own cancellation through, as it is."""
        watch = Watch(0.2)
        watch.start("case", clock() + 60)
        with anyio.move_on_after(0.01) as scope:
            await interruptible(anyio.sleep(1), watch)
        assert scope.cancelled_caught
        assert watch.first_cancel is None

    @pytest.mark.anyio
    async def test_an_armed_watch_leaves_a_cleanups_cancellations_to_its_guard(self) -> None:
        """
        In a cleanup stage, past the case's deadline, the watch passes every cancellation
        on: the cleanup's own guard, with the cleanup's deadline, judges them (and a
        cleanup's own timeouts are its own).
        """
        swallowed: list[str] = []
        watch = Watch(0.0)  # no grace: it would interrupt at the first cancellation it judged
        watch.start("cleanup", clock() - 60)  # the case's deadline, long past
        with anyio.CancelScope() as scope:
            scope.cancel()
            answer = await interruptible(slow_to_answer(swallowed), watch)
        assert (answer, swallowed) == ("answered", ["swallowed"] * 3)
        assert watch.first_cancel is None

    @pytest.mark.anyio
    async def test_results_and_errors_pass_through(self) -> None:
        """What the awaited code returns or raises comes out unchanged."""
        guard = Guard(0.0, 0.0)

        async def answer() -> int:
            await anyio.lowlevel.checkpoint()
            return 42

        async def fails() -> None:
            await anyio.lowlevel.checkpoint()
            raise KeyError("k")

        assert await interruptible(answer(), guard) == 42
        with pytest.raises(KeyError):
            await interruptible(fails(), guard)


STUCK_CONTRACT = """
import signal
import time

import anyio
import anyio.lowlevel

import conformkit as ck

stuck_feature = ck.Feature[object]("test.cli.stuck", cases=("first", "stuck", "never"))
suite = ck.ContractSuite(stuck_feature)


@suite.case
async def first(api: object) -> None:
    await anyio.lowlevel.checkpoint()


@suite.case
async def stuck(api: object) -> None:
    # What no deadline can interrupt: on trio, a shielded wait; on asyncio,
    # which wakes those, sync code that blocks the signal the watchdog sends.
    if anyio.get_cancelled_exc_class().__module__.startswith("trio"):
        with anyio.CancelScope(shield=True):
            await anyio.sleep(60)
    else:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        time.sleep(60)


@suite.case
async def never(api: object) -> None:
    await anyio.lowlevel.checkpoint()


class Stuck(ck.FeatureImplementation[object]):
    feature = stuck_feature
    coverage = stuck_feature.coverage()

    def create(self, scope: ck.FeatureScope) -> object:
        return object()
"""


def run_stuck(
    folder: Path, contract: str, backend: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``conformkit run`` of a contract that gets stuck, under 0.1 s deadlines: status 2."""
    (folder / "contract.py").write_text(contract, encoding="utf-8")
    done = run_python(
        "import sys; from conformkit.cli import main; sys.exit(main(sys.argv[1:]))",
        "run", "contract.py", "--backend", backend, "--timeout", "0.1",
        "--format", "json", "--output", "report.json", "-q",
        cwd=folder,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    report: dict[str, Any] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return done, report


class TestCommandLine:
    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_run_stuck_beyond_interruption_stops_with_what_it_judged(
        self, tmp_path: Path, backend: str
    ) -> None:
        """Exit status 2, one line naming case and stage, the results so far written."""
        done, report = run_stuck(tmp_path, STUCK_CONTRACT, backend)
        [line] = [line for line in done.stderr.splitlines() if line.startswith("conformkit:")]
        assert line.startswith(
            "conformkit: error: case 'stuck' of test.cli.stuck × Stuck is stuck in stage 'case'"
        )
        [entry] = report["reports"]
        statuses = {result["case_id"]: result["status"] for result in entry["results"]}
        assert statuses == {"first": "passed", "stuck": "failed"}
        reason = (
            "feature 'test.cli.stuck', case 'stuck': stage 'case' exceeded the 0.1s deadline "
            "and is stuck: it could not be interrupted, and the run was stopped"
        )
        stuck = entry["results"][1]
        assert stuck["reason"] == reason
        assert (stuck["error"]["type"], stuck["error"]["message"]) == ("TimeoutError", reason)
        assert "where it was stuck:" in stuck["error"]["traceback"]
        assert "in stuck" in stuck["error"]["traceback"]
        assert report["verdict"] == "fails"

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_stopped_run_keeps_the_late_failures_of_background_work(
        self, tmp_path: Path, backend: str
    ) -> None:
        """Work that outlived its case and failed afterwards is in the report written."""
        done, report = run_stuck(tmp_path, LATE_CONTRACT, backend)
        assert "is stuck in stage 'case'" in done.stderr
        [entry] = report["reports"]
        assert [result["case_id"] for result in entry["results"]] == ["first", "stuck"]
        assert [(error["type"], error["message"]) for error in entry["cleanup_errors"]] == [
            ("ValueError", "failed after its case")
        ]


# The first case's background work ignores its cancellation and outlives its
# join; it fails once the second case, which swallows every cancellation and
# blocks the signal the watchdog interrupts with, is stuck. (A case that only
# swallowed could be interrupted between its handler and its next try.)
LATE_CONTRACT = """
import signal

import anyio

import conformkit as ck

late_feature = ck.Feature[object]("test.cli.late", cases=("first", "stuck"))
suite = ck.ContractSuite(late_feature)
stuck_started = False


async def stubborn() -> None:
    while not stuck_started:
        try:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)
        except BaseException:
            pass  # its interruption too
    raise ValueError("failed after its case")


@suite.case
async def first(api: object) -> None:
    pass


@suite.case
async def stuck(api: object) -> None:
    global stuck_started
    stuck_started = True
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    while True:
        try:
            await anyio.sleep(0.01)
        except BaseException:
            pass


class Late(ck.FeatureImplementation[object]):
    feature = late_feature
    coverage = late_feature.coverage()
    created = 0

    def create(self, scope: ck.FeatureScope) -> object:
        if Late.created == 0:
            scope.start_soon(stubborn)
        Late.created += 1
        return object()
"""
