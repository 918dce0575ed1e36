"""The last-resort watchdog thread: stuck stages are seen, and interrupted where Python allows."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, with a hard timeout: a hang fails the test."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )


class TestWatch:
    def test_a_thread_spinning_in_python_is_interrupted_with_its_stack(self) -> None:
        """Past its deadline, sync code that never yields gets StageStuck; the stack is kept."""
        done = run_python(
            """
            import time
            from conformkit._watchdog import StageStuck, Watch

            def spin():
                while True:
                    pass

            with Watch() as watch:
                watch.arm(time.monotonic() + 0.2, "case 'spin' (stage 'case')")
                try:
                    spin()
                except StageStuck:
                    print("interrupted")
                print("in spin" if "in spin" in (watch.stack or "") else watch.stack)
            """
        )
        assert done.stdout.splitlines() == ["interrupted", "in spin"], done.stderr

    def test_a_stage_that_ends_in_time_is_left_alone(self) -> None:
        """A disarmed watch never fires, however long the thread then runs."""
        done = run_python(
            """
            import time
            from conformkit._watchdog import Watch

            with Watch() as watch:
                watch.arm(time.monotonic() + 0.1, "quick")
                watch.disarm()
                time.sleep(0.4)
                print(watch.fired, watch.stack)
            """
        )
        assert done.stdout.splitlines() == ["False None"], done.stderr

    def test_a_cancelled_stage_still_running_is_handed_to_on_stuck(self) -> None:
        """When the loop did cancel the stage and it runs on, on_stuck gets its stack."""
        done = run_python(
            """
            import threading, time
            from conformkit._watchdog import Watch

            seen = threading.Event()

            def on_stuck(watch):
                print("stuck:", watch.label)
                seen.set()

            with Watch(on_stuck) as watch:
                watch.arm(time.monotonic() + 0.1, "case 'deaf' (stage 'case')")
                watch.cancelled = True  # the event loop's own watchdog cancelled it
                print(seen.wait(10))
            """
        )
        assert done.stdout.splitlines() == ["stuck: case 'deaf' (stage 'case')", "True"], (
            done.stderr
        )
