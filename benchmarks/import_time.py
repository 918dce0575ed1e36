"""
The time ``import conformkit`` takes against ``import anyio``, each in a fresh interpreter.

Each run starts a new Python process that times its one import statement (the
interpreter's own start-up is not counted); runs of the two modules alternate,
many times, and each figure is the median. A first run of each writes the
bytecode caches, as any first import does. The whole process's wall-clock time
is shown too, for context. The target: ``import conformkit`` takes at most 1.5
times as long as ``import anyio``.

    python benchmarks/import_time.py [--runs 41] [--modules anyio,conformkit]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TIMED = (
    "import time\n"
    "started = time.perf_counter()\n"
    "import {module}\n"
    "print(time.perf_counter() - started)"
)


def run(module: str, environment: dict[str, str]) -> tuple[float, float]:
    """Seconds the import took inside a fresh interpreter, and the whole process took."""
    started = time.perf_counter()
    output = subprocess.run(
        [sys.executable, "-c", TIMED.format(module=module)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(output.stdout), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument(
        "--modules",
        type=lambda text: text.split(","),
        default=["anyio", "conformkit"],
        help="the baseline module first, then those compared with it",
    )
    arguments = parser.parse_args()
    # Bytecode is written and used, as for a user: a developer's environment may say otherwise.
    environment = {
        name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
    }
    modules: list[str] = arguments.modules
    for module in modules:
        run(module, environment)  # writes the bytecode caches
    imports: dict[str, list[float]] = {module: [] for module in modules}
    processes: dict[str, list[float]] = {module: [] for module in modules}
    for _ in range(arguments.runs):
        for module in modules:  # interleaved, so drift hits all alike
            imported, whole = run(module, environment)
            imports[module].append(imported)
            processes[module].append(whole)
    baseline = modules[0]
    base_import = statistics.median(imports[baseline])
    base_process = statistics.median(processes[baseline])
    print(f"runs={arguments.runs} (median; ratio to {baseline})")
    for module in modules:
        imported = statistics.median(imports[module])
        whole = statistics.median(processes[module])
        print(
            f"  import {module:12} {imported * 1e3:7.2f} ms  {imported / base_import:5.2f}×"
            f"   whole process {whole * 1e3:7.2f} ms  {whole / base_process:5.2f}×"
        )
    print("  target: import conformkit ≤ 1.5× import anyio")


if __name__ == "__main__":
    main()
