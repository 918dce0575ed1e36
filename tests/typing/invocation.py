"""
The invocation profile's types, each pinned by a positive and a negative line.

Checked by mypy (strict, ``warn_unused_ignores``), never run: see guarantees.py.
"""

from __future__ import annotations

from typing import Any, assert_type

import conformkit as ck
from conformkit.profiles import invocation
from conformkit.profiles.invocation import (
    ASGIApp,
    InvocationAPI,
    InvocationCase,
    InvocationContext,
    InvocationOptions,
    create_app,
)


async def echo(context: InvocationContext, body: dict[str, Any]) -> Any:
    return body


options = InvocationOptions(catalog={"echo": {}}, handlers={"echo": lambda: echo})
assert_type(options.max_body_bytes, int)
options.max_body_bytes = 10  # type: ignore[misc]  # the options are frozen
InvocationOptions(catalog={}, handlers={}, max_body_bytes="1 MB")  # type: ignore[arg-type]
InvocationOptions({}, {})  # type: ignore[call-arg]  # keyword-only

assert_type(create_app(options), ASGIApp)
create_app({"catalog": {}})  # type: ignore[arg-type]


def wrapper(options: InvocationOptions) -> ASGIApp:
    return create_app(options)


def not_a_wrapper(options: dict[str, Any]) -> ASGIApp:
    return create_app(InvocationOptions(**options))


InvocationAPI(wrapper)
InvocationAPI(not_a_wrapper)  # type: ignore[arg-type]

invocation.WrapperImplementation(wrapper)
invocation.WrapperImplementation(not_a_wrapper)  # type: ignore[arg-type]
assert_type(invocation.suite, ck.ContractSuite[InvocationAPI, InvocationCase])


async def use() -> None:
    async with ck.open_feature(invocation.ReferenceImplementation()) as session:
        assert_type(session.api, InvocationAPI)
