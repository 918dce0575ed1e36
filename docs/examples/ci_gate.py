"""
A CI gate: run the text contract against each implementation and exit 1 if any
report fails the gate.

    python docs/examples/ci_gate.py                 # failed and unavailable cases fail
    python docs/examples/ci_gate.py --require-full  # and so does any case not passed
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from text_contract import implementations, suite

import conformkit as ck


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Gate the text contract.")
    parser.add_argument("--require-full", action="store_true", help="every case must pass")
    arguments = parser.parse_args(argv)
    failed = False
    for implementation in implementations:
        report = ck.run_contract_sync(implementation, suite)
        print(report)
        try:
            ck.assert_contract(report, require_full=arguments.require_full)
        except ck.ContractFailure as failure:
            print(failure, file=sys.stderr)
            failed = True
    print("gate: " + ("FAILED" if failed else "every contract holds"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
