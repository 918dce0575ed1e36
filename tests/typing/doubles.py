"""
Static guarantees of the test doubles, each pinned by a positive and a negative line.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected by pytest.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Protocol, assert_type
from unittest.mock import ANY, call

import conformkit as ck
from conformkit.laws import CallRecorder


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...
    def size(self) -> int: ...


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self) -> int: ...


# -- a stub is typed by the API type it is built from, a Protocol or an ABC -------

stub = ck.Stub(TextAPI, returns={"size": 0}, side_effects={"read": ["v"]})
assert_type(stub, ck.Stub[TextAPI])
assert_type(stub.api, TextAPI)
assert_type(stub.api.size(), int)
assert_type(ck.Stub(Base).api, Base)
wrong: ck.Stub[int] = ck.Stub(TextAPI)  # type: ignore[arg-type]
api: int = stub.api  # type: ignore[assignment]
ck.Stub(TextAPI, returns=[("size", 0)])  # type: ignore[arg-type]
ck.Stub(TextAPI, {"size": 0})  # type: ignore[call-arg]


async def check_async_operations() -> None:
    assert_type(await stub.api.read("k"), str | None)
    await stub.api.size()  # type: ignore[misc]


# -- the call assertions, on a stub and on a recorder ------------------------------

recorder = CallRecorder()
for calls in (stub, recorder):
    calls.assert_called("read", times=2)
    calls.assert_not_called("size")
    calls.assert_any_call("read", ANY)
    calls.assert_called_with("read", key="k")
    calls.assert_called_once_with("read", "k")
    calls.assert_has_calls([call.read("k"), call.size()], any_order=True)
    calls.assert_called("read", times="2")  # type: ignore[arg-type]
    calls.assert_any_call()  # type: ignore[call-arg]
    calls.assert_has_calls([call.read("k")], True)  # type: ignore[call-arg]

assert_type(stub.refused, tuple[str, ...])
stub.refused = ()  # type: ignore[misc]

# -- a fixture folder --------------------------------------------------------------

assert_type(ck.Examples.from_dir("examples/parse"), ck.Examples)
assert_type(ck.Examples.from_dir(Path("examples")), ck.Examples)
ck.Examples.from_dir(3)  # type: ignore[arg-type]
