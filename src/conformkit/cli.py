"""The ``conformkit`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import _demo
from ._exceptions import ContractFailure
from ._report import assert_contract
from ._runner import Backend, run_contract_sync


def _demo_command(backend: Backend) -> int:
    failed = False
    for implementation in _demo.implementations:
        report = run_contract_sync(implementation, _demo.suite, backend=backend)
        print(report)
        try:
            assert_contract(report)
        except ContractFailure as failure:
            print(failure, file=sys.stderr)
            failed = True
    print("verdict: " + ("FAILED" if failed else "every contract holds"))
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 holds, 1 fails, 2 usage)."""
    parser = argparse.ArgumentParser(
        prog="conformkit", description="Conformance testing: run contracts against implementations."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="run the bundled example contract and print its report")
    demo.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        return _demo_command(arguments.backend)
    parser.error(f"unknown command {arguments.command!r}")  # argparse already rejects it


if __name__ == "__main__":
    sys.exit(main())
