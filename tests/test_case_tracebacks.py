"""What pytest shows when a case of contract_cases() fails: its frames, not the runner's."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

LOOP = """
import pytest

import conformkit as ck

feature = ck.Feature("example.tracebacks", cases=("breaks",))
suite = ck.ContractSuite(feature)


@suite.case
async def breaks(api):
    value = 1
    assert value == 2


class Impl(ck.FeatureImplementation):
    feature = feature
    coverage = feature.coverage()

    async def create(self, scope):
        return object()


@pytest.mark.parametrize("case", ck.contract_cases(Impl(), suite), ids=str)
def test_sync(case):
    case.run_sync()


@pytest.mark.parametrize("case", ck.contract_cases(Impl(), suite), ids=str)
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_async(case, anyio_backend):
    await case.run()
"""


def test_a_failure_shows_the_cases_frame_and_hides_the_runners(pytester: pytest.Pytester) -> None:
    """run() and run_sync() hide their own frames; the case's assert is shown, values and all."""
    pytester.makepyfile(test_loop=LOOP)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=3)
    output = result.stdout.str()
    assert output.count(">       assert value == 2") == 3
    assert output.count("E       assert 1 == 2") == 3
    # The lines that raise in run() and run_sync(), were their frames shown.
    assert "raise errors[0]" not in output
    assert "anyio.run(self.run" not in output
