"""
What a type checker catches in a contract, and what the runtime checks catch.

Every line marked ``# type: ignore[code]`` is a mistake that mypy rejects with
that error code; the project checks this file with ``warn_unused_ignores``, so
a guarantee that stopped holding would fail the build. Run it to see the
runtime checks catch the same mistakes (where they can):

    python docs/examples/typing_checks.py
"""

from __future__ import annotations

from typing import assert_type

import anyio
from text_contract import MemoryText, MemoryTextAPI, TextAPI, TextCase, suite, text

import conformkit as ck


# [start:session]
async def use_the_api() -> None:
    async with ck.open_feature(MemoryText()) as session:
        assert_type(session, ck.Session[TextAPI])  # the API type flows from the implementation
        await session.api.write("key", "value")

    wished_for: ck.Session[dict[str, str]]
    async with ck.open_feature(MemoryText()) as wished_for:  # type: ignore[assignment]
        print(type(wished_for.api).__name__)  # MemoryTextAPI, whatever the annotation says


anyio.run(use_the_api)
# [end:session]


# [start:create]
class WrongCreate(ck.FeatureImplementation[TextAPI, TextCase]):
    feature = text
    coverage = text.coverage()

    def create(self, scope: ck.FeatureScope) -> dict[str, str]:  # type: ignore[override]
        return {}  # a dict is not a TextAPI: it has no read() or write()


report = ck.run_contract_sync(WrongCreate(), suite)
print(f"WrongCreate at run time: {report.counts()[ck.CaseStatus.FAILED]} failed")
# [end:create]

# [start:case]
checks = ck.ContractSuite(text)


async def read_as_dict(api: dict[str, str]) -> None:
    assert api.get("absent") is None


checks.case("missing")(read_as_dict)  # type: ignore[arg-type]
# [end:case]

# [start:pairing]
numbers = ck.Feature[int]("example.numbers", cases=("positive",))
number_suite = ck.ContractSuite(numbers)

try:
    ck.run_contract_sync(MemoryText(), number_suite)  # type: ignore[misc]
except ck.ContractDefinitionError as error:
    print(f"run time: {error}")
# [end:pairing]

# [start:names]
try:

    class Typo(ck.FeatureImplementation[TextAPI, TextCase]):
        feature = text
        coverage = {
            "missing": ck.Supported(),
            "read_your_write": ck.Supported(),  # type: ignore[dict-item]
            "delete": ck.Unsupported("no deletes"),
        }

        def create(self, scope: ck.FeatureScope) -> TextAPI:
            return MemoryTextAPI()

except ck.ContractDefinitionError as error:
    print(f"run time: {error}")

try:
    text.coverage(unsupported={"dlete": "no deletes"})  # type: ignore[dict-item]
except ck.ContractDefinitionError as error:
    print(f"run time: {error}")


async def delete_twice(api: TextAPI) -> None:
    await api.delete("key")


try:
    checks.case("dlete")(delete_twice)  # type: ignore[call-overload]
except ck.ContractDefinitionError as error:
    print(f"run time: {error}")
# [end:names]
