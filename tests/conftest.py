"""Every async test runs on asyncio and on trio."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# mutmut (tools/mutation.py) runs the suite several times in one process, with every
# function behind a trampoline: hypothesis would see its tests change executors, and
# time them with that overhead.
settings.register_profile(
    "mutation", suppress_health_check=[HealthCheck.differing_executors], deadline=None
)
if os.environ.get("CONFORMKIT_MUTATION"):  # set by tools/mutation.py
    settings.load_profile("mutation")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The async backend of the test: each async test runs once on each."""
    backend: str = request.param
    return backend
