"""
Per-case overhead of the runner against a hand-written loop doing the same work.

Each trivial case creates an API (a dict), registers one sync cleanup, awaits an
async case function that touches the API, cleans up and records a result. The
runner and the hand-written loop run interleaved in one process, on one event
loop; the figure is the median over the rounds, in microseconds per case.

    python benchmarks/overhead.py [--backend asyncio|trio] [--rounds 7] [--sizes 2000,20000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio

import conformkit as ck

API = dict[str, int]


def build(size: int) -> tuple[ck.FeatureImplementation[API], ck.ContractSuite[API]]:
    names = [f"case_{index}" for index in range(size)]
    trivial = ck.Feature[API]("bench.trivial", cases=names)

    async def case(api: API) -> None:
        api["touched"] = 1

    suite = ck.ContractSuite(trivial, dict.fromkeys(names, case))

    class Trivial(ck.FeatureImplementation[API]):
        feature = trivial
        coverage = trivial.coverage()

        def create(self, scope: ck.FeatureScope) -> API:
            api: API = {}
            scope.defer(api.clear)
            return api

    return Trivial(), suite


async def hand_loop(
    implementation: ck.FeatureImplementation[API], suite: ck.ContractSuite[API]
) -> list[tuple[str, bool, float]]:
    """The same work without conformkit's runner: create, call, clean up, record."""
    results: list[tuple[str, bool, float]] = []
    for case_id in implementation.feature.cases:
        started = time.perf_counter()
        cleanups: list[Callable[[], object]] = []
        api: API = {}
        cleanups.append(api.clear)
        error: BaseException | None = None
        try:
            outcome = cast("Callable[[API], Awaitable[None]]", suite[case_id])(api)
            if outcome is not None:
                await outcome
        except Exception as exc:
            error = exc
        while cleanups:
            cleanups.pop()()
        results.append((case_id, error is None, time.perf_counter() - started))
    return results


async def measure(label: str, size: int, rounds: int) -> dict[str, list[float]]:
    implementation, suite = build(size)
    contenders: dict[str, Callable[[], Awaitable[Any]]] = {
        "hand-written loop": lambda: hand_loop(implementation, suite),
        "run_contract (default deadlines)": lambda: ck.run_contract(implementation, suite),
        "run_contract (timeout=None)": lambda: ck.run_contract(implementation, suite, timeout=None),
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, contender in contenders.items():  # interleaved, so drift hits all alike
            gc.collect()  # no contender pays for the garbage of the one before
            started = time.perf_counter()
            outcome = await contender()
            elapsed = time.perf_counter() - started
            if isinstance(outcome, ck.ContractReport):
                ck.assert_contract(outcome, require_full=True)
            samples[name].append(elapsed / size * 1e6)
    return samples


async def main_async(backend: str, rounds: int, sizes: list[int]) -> None:
    print(f"backend={backend} rounds={rounds} (median µs per case; ratio to the hand-written loop)")
    for size in sizes:
        samples = await measure(backend, size, rounds)
        baseline = statistics.median(samples["hand-written loop"])
        print(f"N={size}")
        for name, values in samples.items():
            median = statistics.median(values)
            print(f"  {name:34} {median:8.2f} µs/case   {median / baseline:6.1f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="2000,20000")
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    anyio.run(main_async, arguments.backend, arguments.rounds, sizes, backend=arguments.backend)


if __name__ == "__main__":
    main()
