"""
Run pytest several times in a row while busy processes load the machine.

The test suite must pass on a loaded machine as on an idle one: no test may
depend on a deadline close to the time its work takes. This starts ``--busy``
processes that each keep a core busy (``while True: pass``), runs the pytest
command ``--runs`` times, and ends the busy processes, each by its own id,
however pytest ended. It prints each run's outcome and exits non-zero if any
run failed.

    python tools/load_check.py [--busy 8] [--runs 5] [-- PYTEST ARGUMENTS...]

Without pytest arguments it runs the whole suite (``-p no:cacheprovider``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=8, help="busy processes (default 8)")
    parser.add_argument("--runs", type=int, default=5, help="pytest runs in a row (default 5)")
    parser.add_argument("pytest", nargs=argparse.REMAINDER, help="arguments for pytest")
    options = parser.parse_args()
    arguments = [argument for argument in options.pytest if argument != "--"]
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments]
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A shell starts a background job (`... &`) with SIGINT ignored, which pytest
        # would inherit: the tests of Ctrl-C need it as a terminal gives it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(options.busy)
    ]
    failed = 0
    try:
        for run in range(1, options.runs + 1):
            began = time.perf_counter()
            code = subprocess.call(command)
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            took = time.perf_counter() - began
            print(
                f"load_check: run {run}/{options.runs}: exit {code} in {took:.0f}s "
                f"(load average {load:.1f}, {options.busy} busy processes)",
                flush=True,
            )
            failed += code != 0
    finally:
        for process in busy:
            process.kill()  # each by its own id: only the processes started here
        for process in busy:
            process.wait()
    print(f"load_check: {failed} of {options.runs} runs failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
