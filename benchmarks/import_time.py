"""
The time ``import conformkit`` takes against ``import anyio``, each in a fresh interpreter.

Each run starts a new Python process that times its one statement (the
interpreter's own start-up is not counted), in wall-clock and in CPU time; the
contenders alternate, many times, and each figure is the median. A first run of
each writes the bytecode caches, as any first import does. The whole process's
wall-clock time is shown too, for context.

Both packages import their names on first use: ``import anyio`` and ``import
conformkit`` load almost nothing of either. The last row is what a module
defining a contract then loads, the core of conformkit (the names used below and
anyio with them), so that the import's own figure is not mistaken for it.

The last row is the floor of the core's row: the modules that the core needs
besides its own, imported alone (typing_extensions for the TypeVar defaults of
``Feature[API]``, dataclasses for the frozen result types).

The target: ``import conformkit`` takes at most 1.5 times as long as ``import anyio``.

    python benchmarks/import_time.py [--runs 41]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CONTENDERS = {
    "import anyio": "import anyio",
    "import conformkit": "import conformkit",
    "conformkit's core on first use": (
        "import conformkit as ck\n"
        "ck.Feature, ck.ContractSuite, ck.FeatureImplementation, ck.run_contract"
    ),
    "  its floor: its dependencies alone": (
        "import anyio, typing_extensions, dataclasses, contextvars, math"
    ),
}
"""Each contender's label and statement; the first is the baseline."""

TIMED = (
    "import time\n"
    "wall, cpu = time.perf_counter(), time.process_time()\n"
    "{statement}\n"
    "print(time.perf_counter() - wall, time.process_time() - cpu)"
)


def run(statement: str, environment: dict[str, str]) -> tuple[float, float, float]:
    """Seconds the statement took in a fresh interpreter (wall, CPU), and the whole process."""
    started = time.perf_counter()
    output = subprocess.run(
        [sys.executable, "-c", TIMED.format(statement=statement)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = map(float, output.stdout.split())
    return wall, cpu, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=41)
    arguments = parser.parse_args()
    # Bytecode is written and used, as for a user: a developer's environment may say otherwise.
    environment = {
        name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
    }
    for statement in CONTENDERS.values():
        run(statement, environment)  # writes the bytecode caches
    figures: dict[str, list[tuple[float, float, float]]] = {label: [] for label in CONTENDERS}
    for _ in range(arguments.runs):
        for label, statement in CONTENDERS.items():  # interleaved, so drift hits all alike
            figures[label].append(run(statement, environment))
    medians = {
        label: [statistics.median(column) for column in zip(*runs, strict=True)]
        for label, runs in figures.items()
    }
    base = medians[next(iter(CONTENDERS))]
    print(f"runs={arguments.runs}; medians in ms, each with its ratio to the first row")
    print(f"  {'':36} {'wall':>8} {'':6} {'CPU':>8} {'':6} {'whole process':>14}")
    for label, (wall, cpu, whole) in medians.items():
        print(
            f"  {label:36} {wall * 1e3:8.2f} {wall / base[0]:5.2f}× {cpu * 1e3:8.2f}"
            f" {cpu / base[1]:5.2f}× {whole * 1e3:8.2f} {whole / base[2]:5.2f}×"
        )
    print("  target: import conformkit ≤ 1.5× import anyio")


if __name__ == "__main__":
    main()
