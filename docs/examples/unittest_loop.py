"""
The text contract as a unittest module: one subtest per implementation and case.

    cd docs/examples && python -m unittest -v unittest_loop
"""

from __future__ import annotations

import unittest

from text_contract import implementations, suite

import conformkit as ck


class TestTextContract(unittest.IsolatedAsyncioTestCase):
    async def test_text_contract(self) -> None:
        for implementation in implementations:
            for case in ck.contract_cases(implementation, suite):
                with self.subTest(implementation=case.implementation, case=case.id):
                    await case.run()  # an unsupported case is skipped, with its reason


if __name__ == "__main__":
    unittest.main()
