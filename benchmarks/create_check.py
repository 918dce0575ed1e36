"""
The cost of the create-stage checks: the API's shape and its isolation.

Each trivial case creates an API, awaits a case that calls one async method on
it, and cleans up. Measured, per case, as the median over interleaved rounds:

- a run whose API type is a Protocol, with the checks and with a stand-in that
  checks nothing (the same plan, its ``check`` replaced): their ratio is what
  the checks add to a trivial case;
- the same with ``Any`` as the API type (no shape check; the isolation check
  still runs);
- the check alone, ``CreateCheck.admit()`` then ``release()`` on one object of a
  Protocol type, as a run of several lanes (or ``contract_cases``) makes it: its
  share of a case (a run of one lane, as measured above, checks the shape only);
- ``run_contract(check_isolation=True)`` against the default: a second
  ``create`` per case.

The figures are for reading, never a verdict: other processes share the machine.

    python benchmarks/create_check.py [--backend asyncio|trio] [--rounds 7] [--cases 5000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Protocol

import anyio

import conformkit as ck
from conformkit._runner import Execution, RunPlan
from conformkit._scope import FeatureScope
from conformkit._shape import CLEAN, CreateCheck


class Counter(Protocol):
    name: str

    async def increment(self) -> int: ...
    async def value(self) -> int: ...
    def reset(self) -> None: ...


class MemoryCounter:
    def __init__(self) -> None:
        self.name = "memory"
        self.count = 0

    async def increment(self) -> int:
        self.count += 1
        return self.count

    async def value(self) -> int:
        return self.count

    def reset(self) -> None:
        self.count = 0


def build(api_type: Any, size: int) -> tuple[ck.FeatureImplementation[Any], ck.ContractSuite[Any]]:
    names = [f"case_{index}" for index in range(size)]
    feature: ck.Feature[Any] = ck.Feature[api_type]("bench.create_check", cases=names)
    declared = feature

    async def increments(api: Counter) -> None:
        await api.increment()

    class Implementation(ck.FeatureImplementation[Any]):
        feature = declared
        coverage = declared.coverage()

        def create(self, scope: ck.FeatureScope) -> Any:
            api = MemoryCounter()
            scope.defer(api.reset)
            return api

    return Implementation(), ck.ContractSuite(feature, dict.fromkeys(names, increments))


class Clean(dict[type, object]):
    """Every type's verdict: clean, nothing to check."""

    def get(self, key: type, default: object = None) -> object:
        return CLEAN


class NoCheck:
    """Checks nothing: what a run costs without the create-stage checks."""

    verdicts = Clean()

    def admit(self, created: object, scope: object) -> None:
        return None

    def release(self, identity: object, scope: object) -> None:
        pass


async def per_case(
    implementation: ck.FeatureImplementation[Any],
    suite: ck.ContractSuite[Any],
    size: int,
    *,
    checked: bool = True,
    check_isolation: bool = False,
) -> float:
    plan = RunPlan(implementation, suite, None, check_isolation=check_isolation)
    if not checked:
        plan.check = NoCheck()  # type: ignore[assignment]
    started = time.perf_counter()
    execution = Execution(plan, plan.case_ids)
    await execution.run(1)
    elapsed = time.perf_counter() - started
    report = execution.report()
    assert all(result.status is ck.CaseStatus.PASSED for result in report.results)
    return elapsed / size


def check_alone(calls: int) -> float:
    check = CreateCheck(Counter)
    api = MemoryCounter()
    scope: Any = FeatureScope.__new__(FeatureScope)
    started = time.perf_counter()
    for _ in range(calls):
        check.release(check.admit(api, scope) or 0, scope)
    return (time.perf_counter() - started) / calls


async def main(rounds: int, size: int) -> None:
    protocol = build(Counter, size)
    untyped = build(Any, size)
    figures: dict[str, list[float]] = {
        "protocol": [],
        "unchecked": [],
        "any": [],
        "isolation": [],
        "check": [],
    }
    for round_ in range(rounds):
        # In turn first and second, so that neither pays for what ran before it.
        pair = [("protocol", True), ("unchecked", False)]
        for name, checked in pair if round_ % 2 else reversed(pair):
            figures[name].append(await per_case(*protocol, size, checked=checked))
        figures["any"].append(await per_case(*untyped, size))
        figures["isolation"].append(await per_case(*protocol, size, check_isolation=True))
        figures["check"].append(check_alone(size))
    median = {name: statistics.median(values) for name, values in figures.items()}
    ratio = statistics.median(
        checked / unchecked
        for checked, unchecked in zip(figures["protocol"], figures["unchecked"], strict=True)
    )
    print(f"{size} cases, median of {rounds} rounds, per case (timeout=None):")
    print(f"  Protocol API type, checked:             {median['protocol'] * 1e6:7.2f} µs")
    print(f"  Protocol API type, a no-op check:       {median['unchecked'] * 1e6:7.2f} µs")
    print(f"  ratio checked / no-op, round by round:  {ratio:7.3f}")
    print(f"  Any API type, checked:                  {median['any'] * 1e6:7.2f} µs")
    print(f"  admit() + release() alone (lanes > 1):  {median['check'] * 1e6:7.2f} µs")
    share = median["check"] / median["protocol"]
    print(f"  that, over a one-lane Protocol case:    {share:7.1%}")
    isolation = median["isolation"] / median["protocol"]
    print(f"  ratio check_isolation=True / default:   {isolation:7.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cases", type=int, default=5000)
    arguments = parser.parse_args()
    anyio.run(main, arguments.rounds, arguments.cases, backend=arguments.backend)
