"""
The command line's own costs, against the plainest code doing the same work.

- ``conformkit merge`` of two shards' JSON reports, and ``conformkit list --format
  json``, each against writing the very document it writes with ``json.dumps``
  (the same indentation) into a file. Both run in this process, interleaved with
  their baselines, at two sizes; the per-case figure at the larger size over the
  smaller one shows whether any step grows faster than the number of cases.
- ``conformkit --help`` as a whole process, against ``python -c "import anyio"``
  (the target: at most 1.3 times as long); and the same with the command line's
  package under an empty ``conformkit`` package, so that what
  ``conformkit/__init__.py`` adds shows as the difference.

Every figure is the median over the rounds, in wall-clock and in CPU time (this
process's and its children's); on a machine shared with other work, the CPU
figures hold steadier. Nothing here is a verdict.

    python benchmarks/cli.py [--rounds 7] [--sizes 3000,30000] [--process-rounds 15]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import conformkit.cli as cli_package
from conformkit.cli import main as conformkit

WIDTH = 50
"""The width of the labels in the table."""

CONTRACT = """
import conformkit as ck

names = [f"case_{{index}}" for index in range({cases})]
feature = ck.Feature[dict[str, int]]("bench.cli", cases=names)


def case(api: dict[str, int]) -> None:
    api["touched"] = 1


suite = ck.ContractSuite(feature, dict.fromkeys(names, case))


class Whole(ck.FeatureImplementation[dict[str, int]]):
    feature = feature
    coverage = feature.coverage()

    def create(self, scope: ck.FeatureScope) -> dict[str, int]:
        return {{}}


class Gappy(ck.FeatureImplementation[dict[str, int]]):
    feature = feature
    coverage = feature.coverage(
        unsupported={{name: "not in this store" for name in names[::10]}}
    )

    def create(self, scope: ck.FeatureScope) -> dict[str, int]:
        return {{}}
"""


def quietly(arguments: list[str], stdout: io.TextIOBase | None = None) -> int:
    """Run the command line in this process, its stdout going nowhere (or to ``stdout``)."""
    with contextlib.redirect_stdout(stdout or io.StringIO()):
        return conformkit(arguments)


def write_json(document: object, path: Path) -> None:
    """The baseline: the document, indented as the command line indents it, into a file."""
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class Cost:
    """The median cost of one contender: wall-clock seconds, and CPU seconds."""

    wall: float
    cpu: float


def cpu_seconds() -> float:
    """CPU seconds of this process, and of its children that have ended (where known)."""
    try:
        import resource
    except ImportError:  # not on Windows: there, children's CPU time goes uncounted
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def interleave(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, Cost]:
    """
    The median cost of each contender, run in turn each round so drift hits all alike.

    Wall-clock time is what a user waits; CPU time is what a machine shared with
    other work still measures steadily.
    """
    walls: dict[str, list[float]] = {name: [] for name in contenders}
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    # What the benchmark holds (the documents the baselines write) is set aside
    # from the garbage collector, as a command's own process would not hold it:
    # no contender's collections walk another's data.
    gc.collect()
    gc.freeze()
    try:
        for _ in range(rounds):
            for name, contender in contenders.items():
                gc.collect()  # no contender pays for the garbage of the one before
                cpu, wall = cpu_seconds(), time.perf_counter()
                contender()
                walls[name].append(time.perf_counter() - wall)
                cpus[name].append(cpu_seconds() - cpu)
    finally:
        gc.unfreeze()
    return {
        name: Cost(statistics.median(walls[name]), statistics.median(cpus[name]))
        for name in contenders
    }


def measure_size(folder: Path, size: int, rounds: int) -> dict[str, Cost]:
    """Seconds per run of each contender, for a run of ``size`` cases in all."""
    module = folder / f"bench_cli_{size}.py"
    module.write_text(textwrap.dedent(CONTRACT.format(cases=size // 2)), encoding="utf-8")
    shards = [str(folder / f"shard-{size}-{k}.json") for k in (1, 2)]
    merged = folder / f"merged-{size}.json"
    for k, shard in enumerate(shards, start=1):
        status = quietly(["run", str(module), "--shard", f"{k}/2", "-o", shard, "-q"])
        assert status == 0, status
    merge = ["merge", *shards, "-o", str(merged), "-q"]
    assert quietly(merge) == 0
    report = json.loads(merged.read_text("utf-8"))
    assert sum(len(entry["results"]) for entry in report["reports"]) == size
    listed = io.StringIO()
    assert quietly(["list", str(module), "--format", "json"], listed) == 0
    listing = json.loads(listed.getvalue())
    sink = folder / "written.json"
    return interleave(
        {
            "write the report with json.dumps": lambda: write_json(report, sink),
            "conformkit merge (2 shards)": lambda: quietly(merge),
            "write the listing with json.dumps": lambda: write_json(listing, sink),
            "conformkit list --format json": lambda: quietly(
                ["list", str(module), "--format", "json"]
            ),
        },
        rounds,
    )


def measure_processes(folder: Path, rounds: int) -> dict[str, Cost]:
    """
    Seconds per whole process: the command line's help, and the imports it is held to.

    ``conformkit --help`` imports ``conformkit`` first, as any submodule does; the
    command line's own share shows beside a copy of it under an empty
    ``conformkit/__init__.py``. (The package imports its names on first use, so
    the two should differ by little.)
    """
    script = shutil.which("conformkit", path=os.path.dirname(sys.executable))
    help_command = [script] if script else [sys.executable, "-m", "conformkit"]
    alone = folder / "alone"
    (alone / "conformkit").mkdir(parents=True)
    (alone / "conformkit" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copytree(
        Path(cli_package.__file__).parent,
        alone / "conformkit" / "cli",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    help_alone = "import sys; from conformkit.cli import main; sys.exit(main(['--help']))"
    commands = {
        'python -c "pass"': ([sys.executable, "-c", "pass"], None),
        'python -c "import conformkit"': ([sys.executable, "-c", "import conformkit"], None),
        "conformkit --help (cli package alone)": (
            [sys.executable, "-c", help_alone],
            {**os.environ, "PYTHONPATH": str(alone)},
        ),
        'python -c "import anyio"': ([sys.executable, "-c", "import anyio"], None),
        "conformkit --help": ([*help_command, "--help"], None),
    }

    def run(command: list[str], env: dict[str, str] | None) -> Callable[[], object]:
        return lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)

    return interleave({name: run(*command) for name, command in commands.items()}, rounds)


def show(label: str, cost: Cost, size: int | None = None) -> None:
    per_case = "" if size is None else f"  {cost.cpu / size * 1e6:8.2f}"
    print(f"  {label:{WIDTH}} {cost.wall * 1e3:9.1f} {cost.cpu * 1e3:9.1f}{per_case}")


def show_ratio(label: str, cost: Cost, baseline: Cost) -> None:
    print(f"  {label:{WIDTH}} {cost.wall / baseline.wall:8.2f}× {cost.cpu / baseline.cpu:8.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="3000,30000")
    parser.add_argument("--process-rounds", type=int, default=15)
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    print(
        f"rounds={arguments.rounds}, process rounds={arguments.process_rounds}; medians; "
        f"each ratio is to the baseline above it"
    )
    per_case: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            costs = measure_size(Path(folder), size, arguments.rounds)
            print(f"N={size} cases{'':{WIDTH - 13}} {'wall ms':>9} {'CPU ms':>9}  µs/case (CPU)")
            pairs = list(costs.items())
            for (base, base_cost), (name, cost) in zip(pairs[::2], pairs[1::2], strict=True):
                for label, each in ((base, base_cost), (name, cost)):
                    per_case.setdefault(label, []).append(each.cpu / size)
                    show(label, each, size)
                show_ratio("ratio", cost, base_cost)
        if len(sizes) > 1:
            # Memory effects make even json.dumps cost more per case in a larger
            # document; a quadratic step would grow with N, ten times here.
            print(
                f"CPU per case at N={sizes[-1]} over N={sizes[0]} (1.0: linear), "
                f"and that growth over its baseline's"
            )
            labels = list(per_case)
            for index, label in enumerate(labels):
                growth = per_case[label][-1] / per_case[label][0]
                line = f"  {label:{WIDTH}} {growth:8.2f}×"
                if index % 2:
                    baseline = per_case[labels[index - 1]]
                    line += f" {growth / (baseline[-1] / baseline[0]):8.2f}×"
                print(line)
        processes = measure_processes(Path(folder), arguments.process_rounds)
    print(f"whole processes{'':{WIDTH - 15}} {'wall ms':>9} {'CPU ms':>9}")
    for name, cost in processes.items():
        show(name, cost)
    anyio = processes['python -c "import anyio"']
    for name in ("conformkit --help", "conformkit --help (cli package alone)"):
        show_ratio(f"ratio: {name}", processes[name], anyio)
    print('  target: conformkit --help ≤ 1.3× python -c "import anyio"')


if __name__ == "__main__":
    main()
