"""An example contract: a string store, its suite and two implementations."""

from __future__ import annotations

from typing import Literal, Protocol

import anyio
import anyio.lowlevel

import conformkit as ck


class TextAPI(Protocol):
    """What the consumers of a string store rely on."""

    async def read(self, key: str) -> str | None: ...
    async def write(self, key: str, value: str) -> None: ...
    async def delete(self, key: str) -> None: ...


TextCase = Literal["missing", "read_your_writes", "delete"]

text = ck.Feature[TextAPI, TextCase](
    "example.text",
    cases=("missing", "read_your_writes", "delete"),
    description="A string store: values read back as written, per key.",
    does_not_establish="Durability across processes, or behaviour under concurrent writers.",
)

suite = ck.ContractSuite(text)


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
async def delete(api: TextAPI) -> None:
    await api.write("key", "value")
    await api.delete("key")
    value = await api.read("key")
    if value is not None:
        raise AssertionError(f"expected None after delete, read back {value!r}")


class MemoryTextAPI:
    """A dict behind the TextAPI methods."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def read(self, key: str) -> str | None:
        return self.values.get(key)

    async def write(self, key: str, value: str) -> None:
        self.values[key] = value

    async def delete(self, key: str) -> None:
        self.values.pop(key, None)


class MemoryText(ck.FeatureImplementation[TextAPI, TextCase]):
    """The in-memory reference implementation: every case supported."""

    feature = text
    coverage = text.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        api = MemoryTextAPI()
        scope.defer(api.values.clear)
        return api


class AppendOnlyTextAPI(MemoryTextAPI):
    """A log-structured store: it can append, but never delete."""

    async def delete(self, key: str) -> None:
        raise NotImplementedError("an append-only log cannot delete")


class AppendOnlyText(ck.FeatureImplementation[TextAPI, TextCase]):
    """An implementation with an honest, declared gap: ``delete`` is unsupported."""

    feature = text
    coverage = text.coverage(unsupported={"delete": "an append-only log cannot delete"})

    async def create(self, scope: ck.FeatureScope) -> TextAPI:
        await anyio.lowlevel.checkpoint()  # stands in for opening a connection
        return AppendOnlyTextAPI()


implementations: tuple[ck.FeatureImplementation[TextAPI, TextCase], ...] = (
    MemoryText(),
    AppendOnlyText(),
)
