"""
The types of ``check_isolation``, the option that creates a second API per case.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest.
"""

from __future__ import annotations

from typing import Protocol, assert_type

import conformkit as ck


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...


class MemoryTextAPI:
    async def read(self, key: str) -> str | None:
        return None


text = ck.Feature[TextAPI]("typing.isolation", cases=("missing",))
suite = ck.ContractSuite(text)


class MemoryText(ck.FeatureImplementation[TextAPI]):
    feature = text
    coverage = text.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


async def check_isolation_option() -> None:
    report = await ck.run_contract(MemoryText(), suite, check_isolation=True)
    assert_type(report, ck.ContractReport)
    synced = ck.run_contract_sync(MemoryText(), suite, check_isolation=False, max_concurrency=1)
    assert_type(synced, ck.ContractReport)
    cases = ck.contract_cases(MemoryText(), suite, check_isolation=True)
    assert_type(cases, list[ck.ContractCase[TextAPI]])


async def check_isolation_is_a_bool() -> None:
    await ck.run_contract(MemoryText(), suite, check_isolation="yes")  # type: ignore[arg-type]
    ck.run_contract_sync(MemoryText(), suite, check_isolation=1.0)  # type: ignore[arg-type]
    ck.contract_cases(MemoryText(), suite, check_isolation=None)  # type: ignore[arg-type]
