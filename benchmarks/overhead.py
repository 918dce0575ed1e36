"""
The runner's cost against hand-written code doing the same work, on asyncio and trio.

Each trivial case creates an API (a dict), registers one sync cleanup, awaits an
async case function that touches the API, cleans up and records a result. Each
measure runs its contenders interleaved, round after round, in one process and
on one event loop, so that drift and other processes hit all of them alike,
after one untimed round that warms the process up; a figure is the median over
the rounds (three times as many for the cheap measures of ``run_contract`` on
the smaller size and of ``case.run()``, twice for the sleeping cases).
Measures and their targets:

- ``run_contract`` on N trivial cases (the smaller size), ``timeout=None`` and
  default deadlines, per case, against a hand-written loop: at most 3 and 4 times that;
- how the per-case cost of ``run_contract`` grows from the smaller size to the
  larger one, against how its floor's grows (below): at most 1.25 times that;
- ``await case.run()`` per case, from ``contract_cases``: at most 15 µs, and
  at most 5 times its floor, the same loop with the deadline each case has (below);
- cases that each sleep 10 ms, all at once (``max_concurrency`` = their
  number), against a hand-written task group: at most 1.1 times it;
- ``report[case_id]`` per lookup, every case of a report looked up once, at
  two sizes of report: it must not grow with the report.

Two targets are set against a floor rather than against the plain hand loop,
which no runner could meet: one anyio cancel scope with a deadline around a
trivial case costs about 10 times the whole hand-loop case, and a hand loop that
keeps one ``CaseResult`` per case (a report's content) grows about 1.5 times from
10k to 300k cases, by the garbage collector's passes alone.

The figures of the trivial cases are CPU time (this process's), which other
processes on a shared machine disturb far less than the wall clock; the
sleeping cases are measured by the wall clock, as waiting is what they do.
Floors measured in the same run show what no runner can go below:

- ``await case.run()`` against the hand loop with one anyio cancel scope per
  case, the bare primitive that a deadline needs, and against a task group
  per case;
- the growth from the smaller size to the larger one against a hand loop that
  keeps one ``CaseResult`` per case, as any report does: the garbage collector
  goes over every object kept, again and again as they grow in number, where
  the plain hand loop keeps tuples that it stops tracking.

On trio each ratio may be at most 1.5 times the asyncio one. The figures are
for reading, never a verdict: other processes share the machine.

    python benchmarks/overhead.py [--backend asyncio|trio|both] [--rounds 7]
        [--sizes 10000,300000] [--lookups 3000,30000] [--cases 2000] [--lanes 200]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio

import conformkit as ck

API = dict[str, int]
Contenders = dict[str, Callable[[], Awaitable[object]]]


def build(
    size: int, case: Callable[[API], Awaitable[None]] | None = None, feature_id: str = "trivial"
) -> tuple[ck.FeatureImplementation[API], ck.ContractSuite[API]]:
    """A feature of ``size`` cases, every one ``case``, and an implementation of it."""
    names = [f"case_{index}" for index in range(size)]
    trivial = ck.Feature[API](f"bench.{feature_id}", cases=names)

    async def touch(api: API) -> None:
        api["touched"] = 1

    suite = ck.ContractSuite(trivial, dict.fromkeys(names, case or touch))

    class Trivial(ck.FeatureImplementation[API]):
        feature = trivial
        coverage = trivial.coverage()

        def create(self, scope: ck.FeatureScope) -> API:
            api: API = {}
            scope.defer(api.clear)
            return api

    return Trivial(), suite


async def hand_case(
    suite: ck.ContractSuite[API], case_id: str, results: list[tuple[str, bool, float]]
) -> None:
    """One case without conformkit: create, call, clean up, record."""
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


async def hand_loop(
    implementation: ck.FeatureImplementation[API], suite: ck.ContractSuite[API]
) -> list[tuple[str, bool, float]]:
    """The same work as the runner without it, one case after another."""
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


async def hand_loop_kept(
    implementation: ck.FeatureImplementation[API], suite: ck.ContractSuite[API]
) -> list[ck.CaseResult]:
    """The hand loop, keeping one CaseResult per case as a report does, instead of a tuple."""
    results: list[ck.CaseResult] = []
    passed = ck.CaseStatus.PASSED
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
        duration = time.perf_counter() - started
        results.append(ck.CaseResult(case_id, passed, None, error, (), duration))
    return results


async def hand_loop_scoped(
    implementation: ck.FeatureImplementation[API],
    suite: ck.ContractSuite[API],
    group: bool = False,
) -> None:
    """
    The hand loop with each case in an anyio cancel scope carrying a deadline
    (the least a deadline costs), or in a task group (``group``).
    """
    for case_id in implementation.feature.cases:
        cleanups: list[Callable[[], object]] = []
        api: API = {}
        cleanups.append(api.clear)
        if group:
            async with anyio.create_task_group():
                outcome = cast("Callable[[API], Awaitable[None]]", suite[case_id])(api)
                if outcome is not None:
                    await outcome
        else:
            with anyio.CancelScope(deadline=anyio.current_time() + 5.0):
                outcome = cast("Callable[[API], Awaitable[None]]", suite[case_id])(api)
                if outcome is not None:
                    await outcome
        while cleanups:
            cleanups.pop()()


async def hand_group(
    implementation: ck.FeatureImplementation[API], suite: ck.ContractSuite[API]
) -> list[tuple[str, bool, float]]:
    """The same work as the runner without it, every case at once in one task group."""
    results: list[tuple[str, bool, float]] = []
    async with anyio.create_task_group() as task_group:
        for case_id in implementation.feature.cases:
            task_group.start_soon(hand_case, suite, case_id, results)
    return results


async def case_loop(cases: Sequence[ck.ContractCase[API]]) -> None:
    """What a test runner's loop does: ``await case.run()`` for each case."""
    for case in cases:
        await case.run()


def lookups(report: ck.ContractReport) -> Callable[[], Awaitable[None]]:
    """Look every case up in a fresh copy of the report, as a user reading all results would."""
    case_ids = [result.case_id for result in report.results]

    async def look_up() -> None:
        fresh = dataclasses.replace(report)  # no lookup made on it yet
        for case_id in case_ids:
            fresh[case_id]

    return look_up


async def interleaved(
    contenders: Contenders, rounds: int, repeat: int = 1, *, clock: str = "cpu"
) -> dict[str, float]:
    """
    The median seconds each contender takes, over ``rounds`` interleaved rounds:
    CPU seconds (``clock="cpu"``), or wall-clock ones (``"wall"``).

    Each round starts one contender further along, so that none always follows
    the same one (a large run's freed memory, or a cache another left warm).
    """
    timer = time.process_time if clock == "cpu" else time.perf_counter
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    order = list(contenders)
    for name in order:  # a round untimed: the first calls of a process warm it up
        await contenders[name]()
    for round_number in range(rounds):
        start = round_number % len(order)
        for _ in range(repeat):
            for name in order[start:] + order[:start]:
                gc.collect()  # no contender pays for the garbage of the one before
                started = timer()
                outcome = await contenders[name]()
                elapsed = timer() - started
                if isinstance(outcome, ck.ContractReport):
                    ck.assert_contract(outcome, require_full=True)
                # Freed now, not while the next contender is timed.
                del outcome
                samples[name].append(elapsed)
    return {name: statistics.median(values) for name, values in samples.items()}


@dataclass(frozen=True)
class Row:
    """One measure: its figure, the ratio that its target bounds, and the target."""

    measure: str
    figure: str
    ratio: float
    target: float | None  # the ratio may be at most this; None: context only


async def measure_all(
    sizes: tuple[int, int],
    lookup_sizes: tuple[int, int],
    cases: int,
    lanes: int,
    rounds: int,
) -> list[Row]:
    small, large = sizes
    rows: list[Row] = []

    # run_contract against the hand-written loop, at the smaller size.
    implementation, suite = build(small)
    medians = await interleaved(
        {
            "hand": lambda: hand_loop(implementation, suite),
            "none": lambda: ck.run_contract(implementation, suite, timeout=None),
            "default": lambda: ck.run_contract(implementation, suite),
        },
        3 * rounds,  # cheap, and the measure with the tightest target
    )
    per_case = {name: seconds / small * 1e6 for name, seconds in medians.items()}
    hand = per_case["hand"]
    for name, label, target in (
        ("none", "timeout=None", 3.0),
        ("default", "default deadlines", 4.0),
    ):
        rows.append(
            Row(
                f"run_contract, N={small}, {label}",
                f"{per_case[name]:.2f} µs/case (hand loop {hand:.2f})",
                per_case[name] / hand,
                target,
            )
        )

    # Growth of the per-case cost from the smaller size to the larger one.
    large_implementation, large_suite = build(large)
    medians = await interleaved(
        {
            "hand small": lambda: hand_loop(implementation, suite),
            "kept small": lambda: hand_loop_kept(implementation, suite),
            "none small": lambda: ck.run_contract(implementation, suite, timeout=None),
            "default small": lambda: ck.run_contract(implementation, suite),
            "hand large": lambda: hand_loop(large_implementation, large_suite),
            "kept large": lambda: hand_loop_kept(large_implementation, large_suite),
            "none large": lambda: ck.run_contract(large_implementation, large_suite, timeout=None),
            "default large": lambda: ck.run_contract(large_implementation, large_suite),
        },
        rounds,
    )
    per_case = {
        name: seconds / (small if name.endswith("small") else large) * 1e6
        for name, seconds in medians.items()
    }
    growth = {
        name: per_case[f"{name} large"] / per_case[f"{name} small"]
        for name in ("none", "default", "kept", "hand")
    }
    for name, label in (
        ("none", "run_contract, timeout=None"),
        ("default", "run_contract, default deadlines"),
        ("kept", "hand loop keeping a CaseResult per case (the floor)"),
        ("hand", "hand loop (for comparison)"),
    ):
        before, after = per_case[f"{name} small"], per_case[f"{name} large"]
        rows.append(
            Row(f"growth N={small}→{large}, {label}", f"{before:.2f} → {after:.2f} µs/case",
                growth[name], None)
        )  # fmt: skip
    for name, label in (("none", "timeout=None"), ("default", "default deadlines")):
        rows.append(
            Row(f"  run_contract's growth, {label}, over the floor's",
                f"{growth[name]:.2f}× against {growth['kept']:.2f}×",
                growth[name] / growth["kept"], 1.25)
        )  # fmt: skip

    # await case.run() per case against the same loop.
    implementation, suite = build(cases, feature_id="cases")
    each_case = ck.contract_cases(implementation, suite)
    each_case_no_deadline = ck.contract_cases(implementation, suite, timeout=None)
    medians = await interleaved(
        {
            "hand": lambda: hand_loop(implementation, suite),
            "scoped": lambda: hand_loop_scoped(implementation, suite),
            "grouped": lambda: hand_loop_scoped(implementation, suite, group=True),
            "run": lambda: case_loop(each_case),
            "run none": lambda: case_loop(each_case_no_deadline),
        },
        3 * rounds,
    )
    per_case = {name: seconds / cases * 1e6 for name, seconds in medians.items()}
    hand = per_case["hand"]
    rows.append(
        Row(
            f"await case.run(), {cases} cases, default deadlines",
            f"{per_case['run']:.2f} µs/case (target ≤ 15; hand loop {hand:.2f})",
            per_case["run"] / hand,
            None,
        )
    )
    rows.append(
        Row(
            f"await case.run(), {cases} cases, timeout=None",
            f"{per_case['run none']:.2f} µs/case",
            per_case["run none"] / hand,
            None,
        )
    )
    rows.append(
        Row(
            "  floor: hand loop, one cancel scope with a deadline per case",
            f"{per_case['scoped']:.2f} µs/case",
            per_case["scoped"] / hand,
            None,
        )
    )
    rows.append(
        Row(
            "  for comparison: hand loop, one task group per case",
            f"{per_case['grouped']:.2f} µs/case",
            per_case["grouped"] / hand,
            None,
        )
    )
    rows.append(
        Row(
            "  await case.run() against the floor",
            f"{per_case['run'] - per_case['scoped']:.2f} µs/case above it",
            per_case["run"] / per_case["scoped"],
            5.0,
        )
    )

    # Every case at once, each sleeping 10 ms, against a hand-written task group.
    async def nap(api: API) -> None:
        await anyio.sleep(0.01)
        api["touched"] = 1

    implementation, suite = build(lanes, nap, feature_id="naps")
    medians = await interleaved(
        {
            "hand": lambda: hand_group(implementation, suite),
            "default": lambda: ck.run_contract(implementation, suite, max_concurrency=lanes),
        },
        2 * rounds,
        repeat=5,
        clock="wall",
    )
    rows.append(
        Row(
            f"{lanes} cases × 10 ms sleep, max_concurrency={lanes}, default deadlines",
            f"{medians['default'] * 1e3:.2f} ms (task group {medians['hand'] * 1e3:.2f} ms)",
            medians["default"] / medians["hand"],
            1.1,
        )
    )

    # report[case_id], per lookup, at two sizes: every case looked up once.
    small, large = lookup_sizes
    small_report = await ck.run_contract(*build(small), timeout=None)
    large_report = await ck.run_contract(*build(large), timeout=None)
    medians = await interleaved(
        {"small": lookups(small_report), "large": lookups(large_report)}, rounds
    )
    before, after = medians["small"] / small * 1e6, medians["large"] / large * 1e6
    rows.append(
        Row(
            f"report[case_id], every case of a report of {small} and of {large} cases",
            f"{before:.3f} → {after:.3f} µs/lookup",
            after / before,
            None,
        )
    )
    return rows


def show(backend: str, rows: list[Row]) -> None:
    print(f"backend={backend} (median over the rounds; CPU time, but the sleeping cases)")
    for row in rows:
        target = "" if row.target is None else f"  (target ≤ {row.target:g}×)"
        print(f"  {row.measure}\n      {row.figure}   {row.ratio:.2f}×{target}")


def compare(by_backend: dict[str, list[Row]]) -> None:
    """Each trio ratio against the asyncio one: it may be at most 1.5 times it."""
    print("trio ratio / asyncio ratio (target ≤ 1.5)")
    for on_asyncio, on_trio in zip(by_backend["asyncio"], by_backend["trio"], strict=True):
        if on_asyncio.target is not None:
            print(f"  {on_asyncio.measure}: {on_trio.ratio / on_asyncio.ratio:.2f}")


async def main_async(arguments: Any) -> list[Row]:
    sizes = cast("tuple[int, int]", tuple(arguments.sizes))
    lookup_sizes = cast("tuple[int, int]", tuple(arguments.lookups))
    return await measure_all(
        sizes, lookup_sizes, arguments.cases, arguments.lanes, arguments.rounds
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=[10_000, 300_000],
        help="the smaller and the larger number of trivial cases",
    )
    parser.add_argument(
        "--lookups",
        type=lambda text: [int(size) for size in text.split(",")],
        default=[3_000, 30_000],
        help="the sizes of the two reports whose every case is looked up",
    )
    parser.add_argument("--cases", type=int, default=2000, help="cases run one by one")
    parser.add_argument("--lanes", type=int, default=200, help="sleeping cases run at once")
    arguments = parser.parse_args()
    if len(arguments.sizes) != 2 or len(arguments.lookups) != 2:
        parser.error("--sizes and --lookups take two numbers: the smaller and the larger")
    backends = ("asyncio", "trio") if arguments.backend == "both" else (arguments.backend,)
    by_backend: dict[str, list[Row]] = {}
    for backend in backends:
        by_backend[backend] = anyio.run(main_async, arguments, backend=backend)
        show(backend, by_backend[backend])
    if len(by_backend) == 2:
        compare(by_backend)


if __name__ == "__main__":
    main()
