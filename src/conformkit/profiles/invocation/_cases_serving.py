"""The invocation cases of serving: the catalog, the envelope and the request ID."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Final

from ..._util import short_repr
from ..session_events import JSON

if TYPE_CHECKING:
    import httpx
from ._api import InvocationAPI
from ._cases import (
    JSON_HEADERS,
    SEE,
    Probe,
    build_app,
    fresh_catalog,
    invoke_agent,
    json_body,
    post_chunks,
    post_json,
    response_json,
    suite,
)


async def _served_catalog(client: httpx.AsyncClient, when: str) -> None:
    """The manifest and the listing are the catalog as the case gave it, unchanged."""
    catalog = fresh_catalog()
    for path, expected in (
        ("/manifest", {"agents": catalog}),
        ("/agents", {"agents": [{"name": name, **entry} for name, entry in catalog.items()]}),
    ):
        response = await client.get(path)
        served = response_json(response, f"GET {path}{when}")
        if response.status_code != 200 or served != expected:
            raise AssertionError(
                f"GET {path}{when}: expected 200 with {short_repr(expected)}, got "
                f"{response.status_code} with {short_repr(served)}"
            )


@suite.case("catalog_is_served")
async def _catalog_is_served(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
        async with api.client(app) as client:
            await _served_catalog(client, "")
            # Requests that must leave the catalog as it is: listing it again, an
            # invocation, and a POST to the listing, which is no registration. How the
            # last two are answered is other cases' business.
            await _served_catalog(client, " after a first listing")
            with contextlib.suppress(Exception):
                await post_json(client, "echo", {"text": "hi"}, {"x-request-id": "catalog-check"})
            with contextlib.suppress(Exception):
                await client.post(
                    "/agents",
                    content=json_body({"name": "intruder", "description": "Not in the catalog."}),
                    headers=JSON_HEADERS,
                )
            await _served_catalog(client, " after an invocation and a POST /agents")
        if probe.catalog != fresh_catalog():
            raise AssertionError(
                f"serving requests changed the host's catalog in place: it now holds "
                f"{short_repr(probe.catalog)}"
            )


@suite.case("invoke_returns_envelope")
async def _invoke_returns_envelope(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
        body: JSON = {"text": "héllo", "numbers": [1, 2.5, None], "nested": {"flag": True}}
        async with api.client(app) as client:
            for how in ("whole", "in chunks", *_JSON_VARIANTS):
                if how == "whole":
                    response = await post_json(client, "echo", body)
                elif how == "in chunks":
                    response = await post_chunks(client, "/agents/echo/invoke", json_body(body), 7)
                else:
                    response = await post_json(client, "echo", body, {"content-type": how})
                    how = f"whole, with the content type {how!r}"
                what = f"POST /agents/echo/invoke with a JSON object sent {how}"
                envelope = response_json(response, what)
                _expect_json_type(response, what)
                if response.status_code != 200:
                    raise AssertionError(
                        f"{what}: expected 200, got {response.status_code} with "
                        f"{short_repr(envelope)}"
                    )
                if (
                    not isinstance(envelope, dict)
                    or set(envelope) != {"ok", "result", "request_id"}
                    or envelope["ok"] is not True
                    or not isinstance(envelope["request_id"], str)
                    or not envelope["request_id"]
                ):
                    raise AssertionError(
                        f"{what}: expected the envelope {{'ok': True, 'result': ..., "
                        f"'request_id': ...}}, got {short_repr(envelope)}"
                    )
                if envelope["result"] != {"input": body}:
                    raise AssertionError(
                        f"{what}: expected the result {short_repr({'input': body})}, got "
                        f"{short_repr(envelope['result'])}"
                    )
            for method, path, headers in (
                ("GET", "/manifest", {}),
                ("GET", "/agents", {}),
                ("POST", "/agents/echo/invoke", {"content-type": "text/plain"}),
            ):
                response = await client.request(method, path, content=b"{}", headers=headers)
                _expect_json_type(response, f"{method} {path} with {short_repr(headers)}")


_JSON_VARIANTS: Final = ("application/json; charset=utf-8", "application/vnd.conformkit+json")
"""Content types an invocation's body may come with, besides ``application/json``."""


def _expect_json_type(response: httpx.Response, what: str) -> None:
    given = response.headers.get("content-type", "")
    if given.partition(";")[0].strip().lower() != "application/json":
        raise AssertionError(
            f"{what}: expected the content type application/json, got "
            f"{given or 'none'!r} with {short_repr(response.content)}"
        )


@suite.case("request_id_echoed")
async def _request_id_echoed(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
        async with api.client(app) as client:
            given = f"req-{uuid.uuid4().hex[:12]}"
            response, envelope = await invoke_agent(client, "echo", {}, {"x-request-id": given})
            seen = probe.context().request_id
            got = (envelope.get("request_id"), response.headers.get("x-request-id"), seen)
            if got != (given, given, given):
                raise AssertionError(
                    f"with x-request-id {given!r}: expected it in the envelope, the response "
                    f"header and the context; got {got[0]!r}, {got[1]!r} and {got[2]!r}"
                )
            generated = []
            for _ in range(2):
                response, envelope = await invoke_agent(client, "echo", {})
                rid = envelope.get("request_id")
                got = (rid, response.headers.get("x-request-id"), probe.context().request_id)
                if not isinstance(rid, str) or not rid or got != (rid, rid, rid):
                    raise AssertionError(
                        f"without x-request-id: expected one generated ID in the envelope, "
                        f"the response header and the context; got {got[0]!r}, {got[1]!r} and "
                        f"{got[2]!r}"
                    )
                generated.append(rid)
            if generated[0] == generated[1]:
                raise AssertionError(
                    f"without x-request-id: two requests got the same ID {generated[0]!r}"
                )
            longest = "r" * 128
            response, envelope = await invoke_agent(client, "echo", {}, {"x-request-id": longest})
            got = (
                envelope.get("request_id"),
                response.headers.get("x-request-id"),
                probe.context().request_id,
            )
            if got != (longest, longest, longest):
                raise AssertionError(
                    f"with an x-request-id of 128 visible characters, the longest kept: expected "
                    f"it in the envelope, the response header and the context; got "
                    f"{short_repr(got[0])}, {short_repr(got[1])} and {short_repr(got[2])}"
                )
            for refused, why in (("r" * 129, "129 characters"), ("a b c", "spaces")):
                response, envelope = await invoke_agent(
                    client, "echo", {}, {"x-request-id": refused}
                )
                rid = envelope.get("request_id")
                got = (rid, response.headers.get("x-request-id"), probe.context().request_id)
                if rid == refused or not isinstance(rid, str) or got != (rid, rid, rid):
                    raise AssertionError(
                        f"with an x-request-id of {why}, which is not a valid ID: expected a "
                        f"generated ID in the envelope, the response header and the context; got "
                        f"{short_repr(got[0])}, {short_repr(got[1])} and {short_repr(got[2])}"
                    )
            echoed = 0
            # Any refusal echoes the ID; several are tried, so that one whose own case
            # fails (an unknown agent answered with a crash) does not fail this one.
            for method, path, headers in (
                ("POST", "/agents/nobody/invoke", JSON_HEADERS),
                ("POST", "/agents/echo/invoke", {"content-type": "text/plain"}),
                ("GET", "/agents/echo/invoke", {}),
            ):
                what = f"a refused {method} {path}, with x-request-id {given!r}"
                try:
                    response = await client.request(
                        method, path, content=b"{}", headers={**headers, "x-request-id": given}
                    )
                    envelope = response.json()
                except Exception:  # the case that owns this refusal fails on it
                    continue
                if response.status_code < 400 or not isinstance(envelope, dict):
                    continue
                echoed += 1
                echoes = (envelope.get("request_id"), response.headers.get("x-request-id"))
                if echoes != (given, given):
                    raise AssertionError(
                        f"{what}: expected the ID in the error envelope and the response header, "
                        f"got {echoes[0]!r} and {echoes[1]!r}"
                    )
            if not echoed:
                raise AssertionError(
                    "blocked: no refused request answered with an error envelope; "
                    "unknown_agent_rejected owns that"
                )
