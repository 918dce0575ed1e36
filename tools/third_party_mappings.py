"""
Run the third-party mapping matrices many times in a row, and probe their declared gaps.

Each store of ``tests/test_third_party_mappings.py`` is run ``--runs`` times on each
backend; a run whose failed set differs from the expected one is counted, and the
first such difference printed. Each store that declares a case unsupported is then
run ``--runs`` times with ``probe_unsupported=True``: a declared gap that passed
(stale) is counted, since a gap a library's documentation states may still pass by
luck on a given run. Exits non-zero if any matrix differed.

    python tools/third_party_mappings.py [--runs 40]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

import conformkit as ck
from conformkit.profiles import mapping

TESTS = Path(__file__).resolve().parent.parent / "tests" / "test_third_party_mappings.py"


def _load() -> ModuleType:
    sys.path.insert(0, str(TESTS.parent))  # the module imports its neighbour third_party
    spec = importlib.util.spec_from_file_location("test_third_party_mappings", TESTS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per store and backend")
    options = parser.parse_args()
    module = _load()
    differed = 0
    for param in module.MAPPINGS:
        implementation, expected = param.values
        for backend in ("asyncio", "trio"):
            wrong = 0
            started = time.perf_counter()
            for _ in range(options.runs):
                report = ck.run_contract_sync(implementation, mapping.suite, backend=backend)
                failed = {r.case_id for r in report.results if r.status is ck.CaseStatus.FAILED}
                if failed != expected:
                    if not wrong:
                        print(f"  {param.id} {backend}: {sorted(failed ^ set(expected))} differ")
                    wrong += 1
            elapsed = time.perf_counter() - started
            print(
                f"{param.id:24} {backend:8} {options.runs - wrong}/{options.runs} as expected "
                f"({elapsed / options.runs:.2f} s a run)"
            )
            differed += wrong
        declared = {
            case for case, kind in implementation.coverage.items() if kind != ck.Supported()
        }
        if declared:
            stale = 0
            for _ in range(options.runs):
                report = ck.run_contract_sync(implementation, mapping.suite, probe_unsupported=True)
                stale += sum(1 for result in report.results if result.stale)
            print(f"{param.id:24} probed   {sorted(declared)} stale in {stale}/{options.runs} runs")
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main())
