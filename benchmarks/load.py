"""
Verdicts idle and under load: a contract's verdict must not depend on how busy the machine is.

Runs a set of contracts on an idle machine, then again while ``--busy`` processes
spin (each a ``while True: pass``, started here and ended here by its own id), on
asyncio and trio, and prints each case's verdict side by side, flagging every case
whose status differs. The set:

- each bundled profile (``conformkit.profiles.BUNDLED``) against each of its
  bundled implementations;
- with ``--third-party``, the third-party stores of
  ``tests/test_third_party_profiles.py`` (fsspec, zict, diskcache, dbm, shelve),
  where that module imports.

A case that passed only when run again under the longer deadline is marked
``passed (slow)``: a pass, which the default deadline, a guard against hangs,
allowed it; the flag is about statuses. The default deadlines apply, as for a
user who declares none. Not run by the test suite nor in CI: it loads the
machine on purpose, for a few minutes.

    python benchmarks/load.py [--busy 8] [--backend asyncio|trio|both] [--third-party]
        [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import conformkit as ck
from conformkit.profiles import BUNDLED

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def contracts(third_party: bool) -> Iterator[tuple[str, Any, Any]]:
    """``(label, implementation, suite)`` for each contract of the set."""
    suites: dict[str, Any] = {}
    for name in BUNDLED:
        try:
            module = importlib.import_module(f"conformkit.profiles.{name}")
        except ImportError as exc:  # an optional extra that is not installed
            print(f"skipped profile {name!r}: {exc}", file=sys.stderr)
            continue
        suites[module.feature.id] = module.suite
        for implementation in module.implementations:
            yield f"{name} × {type(implementation).__qualname__}", implementation, module.suite
    if not third_party:
        return
    sys.path.insert(0, os.path.join(_ROOT, "tests"))
    try:
        stores = importlib.import_module("test_third_party_profiles")
    except ImportError as exc:
        print(f"skipped the third-party stores: {exc}", file=sys.stderr)
        return
    found: list[tuple[str, Any]] = []
    for param in stores.MAPPINGS:
        found.append((f"mapping × {param.id}", param.values[0]))
    for name, make in stores.DURABLE_STORES.items():
        found.append((f"durable_mapping × {name}", stores.ThirdPartyDurable(make)))
    for kind in ("memory", "local", "dir"):
        found.append((f"workspace × fsspec-{kind}", stores.ThirdPartyWorkspace(kind)))
    for label, implementation in found:
        yield label, implementation, suites[implementation.feature.id]


Verdicts = dict[tuple[str, str], tuple[str, float]]
"""``(contract, case) -> (verdict, seconds)``."""


def run_all(chosen: list[tuple[str, Any, Any]], backend: str) -> tuple[Verdicts, dict[str, str]]:
    """Every contract's verdicts on one backend, and the reason of each case that did not pass."""
    verdicts: Verdicts = {}
    reasons: dict[str, str] = {}
    for label, implementation, suite in chosen:
        report = ck.run_contract_sync(implementation, suite, backend=backend)  # type: ignore[arg-type]
        for result in report.results:
            slow = getattr(result, "slow", False)  # none before conformkit had it
            verdict = result.status.value + (" (slow)" if slow else "")
            verdicts[label, result.case_id] = (verdict, result.duration)
            if result.reason is not None:
                reasons[f"{label} / {result.case_id}"] = result.reason
    return verdicts, reasons


def spin(count: int) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` processes that each keep a core busy."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(busy: list[subprocess.Popen[bytes]]) -> None:
    for process in busy:
        process.kill()  # each by its own id: only the processes started here
    for process in busy:
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=8, help="busy processes (default 8)")
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--third-party", action="store_true", help="the third-party stores too")
    parser.add_argument("--only", default="", help="only the contracts whose label has this")
    options = parser.parse_args()
    backends = ["asyncio", "trio"] if options.backend == "both" else [options.backend]
    chosen = [item for item in contracts(options.third_party) if options.only in item[0]]
    print(f"{len(chosen)} contracts on {os.cpu_count()} cores, {options.busy} busy processes")
    differ = 0
    for backend in backends:
        began = time.perf_counter()
        idle, idle_reasons = run_all(chosen, backend)
        idle_wall = time.perf_counter() - began
        busy = spin(options.busy)
        try:
            time.sleep(1.0)  # let the busy processes take the cores
            began = time.perf_counter()
            loaded, loaded_reasons = run_all(chosen, backend)
            loaded_wall = time.perf_counter() - began
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        finally:
            stop(busy)
        print(
            f"\nbackend={backend}: idle {idle_wall:.1f}s, loaded {loaded_wall:.1f}s "
            f"(load average {load:.1f})"
        )
        width = max(len(f"{label} / {case}") for label, case in idle)
        print(f"  {'contract / case'.ljust(width)}  {'idle':<22} {'loaded':<22}")
        for key, (verdict, seconds) in idle.items():
            under, under_seconds = loaded.get(key, ("missing", 0.0))
            same = verdict.split(" ")[0] == under.split(" ")[0]
            if same and verdict == under:
                continue
            flag = "" if same else "  DIFFERS"
            differ += not same
            name = f"{key[0]} / {key[1]}"
            print(
                f"  {name.ljust(width)}  {f'{verdict} {seconds:.2f}s':<22} "
                f"{f'{under} {under_seconds:.2f}s':<22}{flag}"
            )
        alike = sum(verdict == loaded.get(key, ("",))[0] for key, (verdict, _) in idle.items())
        statuses = sorted({verdict for verdict, _ in idle.values()})
        counts = ", ".join(
            f"{sum(v == status for v, _ in idle.values())} {status}" for status in statuses
        )
        print(f"  (and {alike} more cases alike, idle and loaded; idle: {counts})")
        slowest = sorted(loaded.items(), key=lambda item: -item[1][1])[:5]
        print(
            "  slowest loaded: "
            + ", ".join(
                f"{label} / {case} {seconds:.2f}s (idle {idle[label, case][1]:.2f}s)"
                for (label, case), (_, seconds) in slowest
            )
        )
        for where, reason in loaded_reasons.items():
            if idle_reasons.get(where) != reason and reason.startswith("slow:"):
                print(f"  slow under load: {where}: {reason[:300]}")
    print(f"\n{differ} verdict(s) differ between idle and loaded")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
