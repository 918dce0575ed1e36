"""
The runner's per-case costs for two source trees side by side, in one process.

``benchmarks/overhead.py`` measures one tree against hand-written code; a change
to the runner is judged against the tree before it, which a separate run on a
shared machine cannot do within noise. This copies the core of each tree
(``src/conformkit`` without ``cli/`` and ``profiles/``, which the runner does
not import) into a temporary folder as the packages ``conformkit_before`` and
``conformkit_after``, and times the same trivial cases with each, interleaved
round after round by overhead.py's ``interleaved()`` (CPU time, the median over
the rounds; wall-clock time for the sleeping cases):

- ``run_contract`` per case, ``timeout=None`` and default deadlines (overhead.py's
  first measure), and with an async cleanup instead of the sync one;
- ``await case.run()`` per case, from ``contract_cases``, with and without deadlines;
- cases that each sleep 10 ms, all at once, per run.

The figures are for reading, never a verdict: other processes share the machine.

    python benchmarks/compare.py --before ../main/src/conformkit [--after src/conformkit]
        [--backend asyncio|trio|both] [--rounds 15] [--size 10000] [--cases 2000] [--lanes 200]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
LABELS = ("before", "after")


def install(folder: Path, label: str, source: Path) -> None:
    """Copy the core of the tree at ``source`` into ``folder`` as ``conformkit_<label>``."""
    if not (source / "__init__.py").is_file():
        raise SystemExit(f"compare.py: {str(source)!r} is not a conformkit package folder")
    shutil.copytree(
        source,
        folder / f"conformkit_{label}",
        ignore=shutil.ignore_patterns("__pycache__", "cli", "profiles"),
    )


def with_async_cleanup(ck: Any, size: int) -> tuple[Any, Any]:
    """overhead.py's trivial feature, whose create() registers an async cleanup."""
    names = [f"case_{index}" for index in range(size)]
    feature = ck.Feature(f"bench.async_cleanup_{size}", cases=names)

    async def touch(api: dict[str, int]) -> None:
        api["touched"] = 1

    def create(self: object, scope: Any) -> dict[str, int]:
        api: dict[str, int] = {}

        async def clear() -> None:
            api.clear()

        scope.defer(clear)
        return api

    implementation = type(
        "WithAsyncCleanup",
        (ck.FeatureImplementation,),
        {"feature": feature, "coverage": feature.coverage(), "create": create},
    )
    return implementation(), ck.ContractSuite(feature, dict.fromkeys(names, touch))


async def measure(arguments: Any, packages: dict[str, ModuleType]) -> None:
    import overhead

    size, cases, lanes = arguments.size, arguments.cases, arguments.lanes
    trivial: dict[str, Callable[[], Awaitable[object]]] = {}
    sleeping: dict[str, Callable[[], Awaitable[object]]] = {}
    for label, ck in packages.items():
        overhead.ck = ck  # type: ignore[attr-defined]  # build() makes its classes from it
        implementation, suite = overhead.build(size)
        slow, slow_suite = with_async_cleanup(ck, size)
        each, each_suite = overhead.build(cases, feature_id="cases")
        with_deadlines = ck.contract_cases(each, each_suite)
        without = ck.contract_cases(each, each_suite, timeout=None)
        run = ck.run_contract
        trivial |= {
            f"run_contract, timeout=None, {label}": partial(
                run, implementation, suite, timeout=None
            ),
            f"run_contract, default deadlines, {label}": partial(run, implementation, suite),
            f"run_contract, an async cleanup, {label}": partial(run, slow, slow_suite),
            f"await case.run(), default deadlines, {label}": partial(
                overhead.case_loop, with_deadlines
            ),
            f"await case.run(), timeout=None, {label}": partial(overhead.case_loop, without),
        }

        async def nap(api: dict[str, int]) -> None:
            await anyio.sleep(0.01)

        napping, nap_suite = overhead.build(lanes, nap, feature_id="naps")
        sleeping[f"{lanes} cases × 10 ms sleep, at once, {label}"] = partial(
            run, napping, nap_suite, max_concurrency=lanes
        )
    per_case = {
        name: seconds / (cases if "case.run" in name else size) * 1e6
        for name, seconds in (await overhead.interleaved(trivial, arguments.rounds)).items()
    }
    per_run = {
        name: seconds * 1e3
        for name, seconds in (
            await overhead.interleaved(sleeping, arguments.rounds, repeat=3, clock="wall")
        ).items()
    }
    for figures, unit in ((per_case, "µs/case"), (per_run, "ms/run")):
        for name, before in figures.items():
            if name.endswith(", before"):
                measure = name.removesuffix(", before")
                after = figures[f"{measure}, after"]
                print(
                    f"  {measure:48s} before {before:7.2f}  after {after:7.2f} {unit}"
                    f"   {after / before:.3f}×"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--before", type=Path, required=True, help="a src/conformkit folder")
    parser.add_argument("--after", type=Path, default=HERE.parent / "src" / "conformkit")
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--size", type=int, default=10_000, help="cases per run_contract")
    parser.add_argument("--cases", type=int, default=2000, help="cases run one by one")
    parser.add_argument("--lanes", type=int, default=200, help="sleeping cases run at once")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        install(Path(folder), "before", arguments.before.resolve())
        install(Path(folder), "after", arguments.after.resolve())
        sys.path[:0] = [folder, str(HERE)]
        packages = {label: importlib.import_module(f"conformkit_{label}") for label in LABELS}
        backends = ("asyncio", "trio") if arguments.backend == "both" else (arguments.backend,)
        for backend in backends:
            print(f"backend={backend} (median over the rounds; CPU time, but the sleeping cases)")
            anyio.run(measure, arguments, packages, backend=backend)


if __name__ == "__main__":
    main()
