"""Every async test runs on asyncio and on trio."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's deadline and its "too slow" health checks are timing assertions; on
# a shared, loaded machine they fail tests that are right. Examples still run in full.
settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

# mutmut (tools/mutation.py) runs the suite several times in one process, with every
# function behind a trampoline: hypothesis would see its tests change executors, and
# time them with that overhead.
settings.register_profile(
    "mutation",
    parent=settings.get_profile("default"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
if os.environ.get("CONFORMKIT_MUTATION"):  # set by tools/mutation.py
    settings.load_profile("mutation")


MUTANT_HANG_LIMIT = 30.0
"""
Seconds a test may run under tools/mutation.py before it counts as hung: far above
what any test takes, and below mutmut's own limit for a mutant, a multiple of its
tests' total time, which a mutant that hangs its first test would wait out.
"""

if os.environ.get("CONFORMKIT_MUTATION"):

    @pytest.fixture(autouse=True)
    def hang_limit(request: pytest.FixtureRequest) -> Iterator[None]:
        """Under a mutant, a test that hangs ends the run at once, failed (status 1)."""

        def hung() -> None:
            capture = request.config.pluginmanager.getplugin("capturemanager")
            if capture is not None:
                capture.suspend_global_capture(in_=True)  # so that the line is seen
            sys.stderr.write(f"{request.node.nodeid} hung: {MUTANT_HANG_LIMIT:g}s passed\n")
            sys.stderr.flush()
            os._exit(1)

        timer = threading.Timer(MUTANT_HANG_LIMIT, hung)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    @pytest.fixture(autouse=True)
    def sigint_as_python_sets_it() -> Iterator[None]:
        """
        mutmut's workers ignore SIGINT. A run then installs no SIGINT handler of
        its own, and its watchdog cannot interrupt sync code that blocks in a call
        (a sleep): the tests would take the path of a program that ignores Ctrl-C,
        not the one they are written for. Under mutmut, each test has Python's own.
        """
        previous = signal.getsignal(signal.SIGINT)
        if previous is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under mutmut, skip the tests of frames: a trampoline stands between each core call."""
    if not os.environ.get("CONFORMKIT_MUTATION"):
        return
    skip = pytest.mark.skip(reason="under mutmut, a trampoline frame precedes each core call")
    for item in items:
        if item.get_closest_marker("frames") is not None:
            item.add_marker(skip)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The async backend of the test: each async test runs once on each."""
    backend: str = request.param
    return backend
