"""
The text contract as a pytest module: one test per implementation and case.

    python -m pytest docs/examples/pytest_loop.py
"""

from __future__ import annotations

import pytest
from text_contract import TextAPI, implementations, suite

import conformkit as ck

pytestmark = pytest.mark.anyio  # anyio's pytest plugin runs the async test


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every case on asyncio and on trio."""
    backend: str = request.param
    return backend


# contract_cases() checks the definitions now, so a mistake fails at collection.
CASES = [
    case for implementation in implementations for case in ck.contract_cases(implementation, suite)
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.implementation}-{case}")
async def test_text_contract(case: ck.ContractCase[TextAPI]) -> None:
    await case.run()  # an unsupported case is reported as skipped, with its reason
