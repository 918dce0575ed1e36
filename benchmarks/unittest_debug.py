"""
What asyncio's debug mode costs a unittest loop over ``contract_cases``.

``unittest.IsolatedAsyncioTestCase`` runs every test with asyncio's debug mode
on (``asyncio.Runner(debug=True)``). The same trivial cases run five ways,
interleaved round after round: ``await case.run()`` in an
``IsolatedAsyncioTestCase`` as it is; the same with debug mode turned off in
``asyncSetUp``; ``case.run_sync()`` from a plain ``TestCase``, an event loop
per case; ``ck.contract_test_case()``, a test method per case on one event
loop, unittest's own cost of running each test included; and, for comparison,
``await case.run()`` outside unittest. Each
figure is the median over the rounds, per case.

    python benchmarks/unittest_debug.py [--cases 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time
import unittest
from typing import ClassVar

import anyio
from overhead import API, build, case_loop

import conformkit as ck


class DebugOn(unittest.IsolatedAsyncioTestCase):
    """``await case.run()`` for each case, as a unittest loop writes it."""

    cases: ClassVar[list[ck.ContractCase[API]]] = []
    elapsed: ClassVar[list[float]] = []

    async def test_cases(self) -> None:
        started = time.perf_counter()
        for case in self.cases:
            await case.run()
        self.elapsed.append(time.perf_counter() - started)


class DebugOff(DebugOn):
    """The same, with the fix: asyncio's debug mode off for the test."""

    elapsed: ClassVar[list[float]] = []

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().set_debug(False)


class RunSync(unittest.TestCase):
    """``case.run_sync()`` for each case from a plain TestCase: an event loop per case."""

    cases: ClassVar[list[ck.ContractCase[API]]] = []
    elapsed: ClassVar[list[float]] = []

    def test_cases(self) -> None:
        started = time.perf_counter()
        for case in self.cases:
            case.run_sync()
        self.elapsed.append(time.perf_counter() - started)


def run_test(test_case: type[unittest.TestCase]) -> None:
    tests = unittest.defaultTestLoader.loadTestsFromTestCase(test_case)
    result = unittest.TextTestRunner(stream=io.StringIO()).run(tests)
    if not result.wasSuccessful():
        raise RuntimeError(f"{test_case.__name__} failed: {result.errors or result.failures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    arguments = parser.parse_args()
    size: int = arguments.cases
    built = build(size, feature_id="unittest")
    cases = ck.contract_cases(*built)
    DebugOn.cases = RunSync.cases = cases
    helper = ck.contract_test_case(*built, name="Helper")
    plain: list[float] = []
    generated: list[float] = []
    for _ in range(arguments.rounds):  # interleaved, so drift hits all alike
        run_test(DebugOn)
        run_test(DebugOff)
        run_test(RunSync)
        started = time.perf_counter()
        run_test(helper)  # unittest's own cost of a test per case included
        generated.append(time.perf_counter() - started)
        started = time.perf_counter()
        anyio.run(case_loop, cases)
        plain.append(time.perf_counter() - started)
    figures = {
        "IsolatedAsyncioTestCase, await case.run()": DebugOn.elapsed,
        "the same, debug mode off in asyncSetUp": DebugOff.elapsed,
        "TestCase, case.run_sync()": RunSync.elapsed,
        "ck.contract_test_case(), a test per case": generated,
        "await case.run() outside unittest": plain,
    }
    baseline = statistics.median(DebugOff.elapsed)
    print(f"cases={size} rounds={arguments.rounds} (median µs per case; ratio to debug mode off)")
    for label, values in figures.items():
        median = statistics.median(values)
        print(f"  {label:44} {median / size * 1e6:8.2f} µs/case  {median / baseline:6.2f}×")


if __name__ == "__main__":
    main()
