"""
Run the text contract against each implementation and print the reports.

    python docs/examples/script.py
"""

from __future__ import annotations

from text_contract import implementations, suite

import conformkit as ck

for implementation in implementations:
    report = ck.run_contract_sync(implementation, suite)
    print(report)
