"""
``Feature.implementation()``: the factory's return type must be the feature's API.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest. Each negative line carries the exact error code, so a guarantee that
silently disappears fails the build.
"""

from __future__ import annotations

from typing import Literal, Protocol, assert_type

import conformkit as ck


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...


class MemoryTextAPI:
    async def read(self, key: str) -> str | None:
        return None


class NotTextAPI:
    async def fetch(self, key: str) -> str | None:
        return None


TextCase = Literal["missing", "read_your_writes"]
text = ck.Feature[TextAPI, TextCase]("typing.one_line", cases=("missing", "read_your_writes"))


def from_scope(scope: ck.FeatureScope) -> MemoryTextAPI:
    return MemoryTextAPI()


async def opened(scope: ck.FeatureScope) -> MemoryTextAPI:
    return MemoryTextAPI()


async def opened_alone() -> MemoryTextAPI:
    return MemoryTextAPI()


# -- accepted: a factory of the API, sync or async, taking the scope or nothing ----

assert_type(
    text.implementation(MemoryTextAPI, name="Memory"), ck.FeatureImplementation[TextAPI, TextCase]
)
text.implementation(from_scope, name="FromScope")
text.implementation(opened, name="Opened")
text.implementation(opened_alone, name="OpenedAlone")
text.implementation(lambda: MemoryTextAPI(), name="Lambda")
text.implementation(
    MemoryTextAPI,
    name="Partial",
    coverage=text.coverage(unsupported={"read_your_writes": "read-only"}),
)
suite = ck.ContractSuite(text)
ck.run_contract_sync(text.implementation(MemoryTextAPI, name="Run"), suite)

# -- rejected: a factory of something else, or a coverage of other cases ----------

text.implementation(NotTextAPI, name="Wrong")  # type: ignore[arg-type]
text.implementation(int, name="Number")  # type: ignore[arg-type]


async def opened_wrong(scope: ck.FeatureScope) -> NotTextAPI:
    return NotTextAPI()


def two_arguments(scope: ck.FeatureScope, extra: int) -> MemoryTextAPI:
    return MemoryTextAPI()


text.implementation(opened_wrong, name="OpenedWrong")  # type: ignore[arg-type]
text.implementation(two_arguments, name="TwoArguments")  # type: ignore[arg-type]
text.implementation(MemoryTextAPI, name="Invented", coverage={"reed": ck.Supported()})  # type: ignore[dict-item]
text.implementation(MemoryTextAPI)  # type: ignore[call-arg]
