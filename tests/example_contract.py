"""A small example contract for the tests of collection, reports and the demo: a string store."""

from __future__ import annotations

from typing import Literal, Protocol

import anyio
import anyio.lowlevel

from conformkit import ContractSuite, Feature, FeatureImplementation, FeatureScope


class TextAPI(Protocol):
    """A string store."""

    async def read(self, key: str) -> str | None: ...
    async def write(self, key: str, value: str) -> None: ...
    async def delete(self, key: str) -> None: ...


TextCase = Literal["missing", "read_your_writes", "overwrite", "delete", "keys_are_distinct"]

text = Feature[TextAPI, TextCase](
    "conformkit.demo.text",
    cases=("missing", "read_your_writes", "overwrite", "delete", "keys_are_distinct"),
    description="A string store: values read back as written, per key.",
    does_not_establish="Durability across processes, or behaviour under concurrent writers.",
)

suite = ContractSuite(text)


@suite.case
async def missing(api: TextAPI) -> None:
    value = await api.read("absent")
    if value is not None:
        raise AssertionError(f"expected None for a key never written, got {value!r}")


@suite.case
async def read_your_writes(api: TextAPI) -> None:
    await api.write("key", "value")
    value = await api.read("key")
    if value != "value":
        raise AssertionError(f"wrote 'value', read back {value!r}")


@suite.case
async def overwrite(api: TextAPI) -> None:
    await api.write("key", "first")
    await api.write("key", "second")
    value = await api.read("key")
    if value != "second":
        raise AssertionError(f"overwrote with 'second', read back {value!r}")


@suite.case
async def delete(api: TextAPI) -> None:
    await api.write("key", "value")
    await api.delete("key")
    value = await api.read("key")
    if value is not None:
        raise AssertionError(f"expected None after delete, read back {value!r}")


@suite.case
async def keys_are_distinct(api: TextAPI) -> None:
    await api.write("a", "1")
    await api.write("b", "2")
    values = (await api.read("a"), await api.read("b"))
    if values != ("1", "2"):
        raise AssertionError(f"wrote a=1 and b=2, read back {values!r}")


class MemoryTextAPI:
    """The reference implementation: a dict."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    async def read(self, key: str) -> str | None:
        return self._values.get(key)

    async def write(self, key: str, value: str) -> None:
        self._values[key] = value

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)


class MemoryText(FeatureImplementation[TextAPI, TextCase]):
    """The in-memory reference implementation, supporting every case."""

    feature = text
    coverage = text.coverage()

    def create(self, scope: FeatureScope) -> TextAPI:
        api = MemoryTextAPI()
        scope.defer(api._values.clear)
        return api


class AppendOnlyTextAPI(MemoryTextAPI):
    """A log-structured store that cannot delete: an honest, declared gap."""

    async def delete(self, key: str) -> None:
        raise NotImplementedError("an append-only log cannot delete")


class AppendOnlyText(FeatureImplementation[TextAPI, TextCase]):
    """An implementation that declares one case unsupported, with its reason."""

    feature = text
    coverage = text.coverage(unsupported={"delete": "an append-only log cannot delete"})

    async def create(self, scope: FeatureScope) -> TextAPI:
        await anyio.lowlevel.checkpoint()  # an async create works the same way
        return AppendOnlyTextAPI()


implementations: tuple[FeatureImplementation[TextAPI, TextCase], ...] = (
    MemoryText(),
    AppendOnlyText(),
)
