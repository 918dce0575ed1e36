"""
``contract_test_case()`` and ``contract_test()``: an implementation and a suite of one API.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest. Each negative line carries the exact error code, so a guarantee that
silently disappears fails the build.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable
from typing import Protocol, assert_type

import conformkit as ck
from conformkit.pytest_plugin import contract_test


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...


class CounterAPI(Protocol):
    async def increment(self) -> int: ...


class MemoryTextAPI:
    async def read(self, key: str) -> str | None:
        return None


text = ck.Feature[TextAPI]("typing.runners.text", cases=("missing",))
counter = ck.Feature[CounterAPI]("typing.runners.counter", cases=("increment",))
text_suite = ck.ContractSuite(text)
counter_suite = ck.ContractSuite(counter)
memory = text.implementation(MemoryTextAPI, name="Memory")

# -- accepted: one implementation or several, with the suite of their API ----------

assert_type(ck.contract_test_case(memory, text_suite), type[unittest.TestCase])
assert_type(ck.contract_test_case([memory, memory], text_suite), type[unittest.TestCase])
ck.contract_test_case(memory, text_suite, name="TestText", backend="trio", timeout=None)
assert_type(contract_test(memory, text_suite), Callable[..., None])
contract_test((memory,), text_suite, backends=("asyncio", "trio"))

# -- rejected: a suite of another API, a backend that does not exist ----------------

ck.contract_test_case(memory, counter_suite)  # type: ignore[misc]
ck.contract_test_case(memory, text_suite, backend="curio")  # type: ignore[arg-type]
contract_test(memory, counter_suite)  # type: ignore[misc]
contract_test(memory, text_suite, backends=("curio",))  # type: ignore[arg-type]
