"""The invocation cases of refusals and errors: bad requests, failures, check order, grants."""

from __future__ import annotations

import contextlib
from collections.abc import (
    Mapping,
)
from typing import TYPE_CHECKING, Final, TypeAlias

from ..._util import callable_name, short_repr

if TYPE_CHECKING:
    pass
from ._api import InvocationAPI
from ._cases import (
    CHUNK,
    JSON_HEADERS,
    LIMIT,
    SEE,
    Metered,
    Probe,
    answer_of,
    build_app,
    expect_error,
    invoke_agent,
    json_body,
    post_chunks,
    post_json,
    suite,
)


@suite.case("unknown_agent_rejected")
async def _unknown_agent_rejected(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
        async with api.client(app) as client:
            for agent in ("nobody", "Echo", "echo.v2"):
                what = f"POST /agents/{agent}/invoke"
                index = len(app.pulled)
                response = await answer_of(what, post_json(client, agent, {"text": "hi"}))
                expect_error(response, what, 404, "unknown_agent")
                read = app.read_before_response(index)
                if read:
                    raise AssertionError(
                        f"{what}: the app read {read} bytes of the body before refusing the "
                        f"unknown agent; it should refuse it before reading any"
                    )


@suite.case("invalid_body_rejected")
async def _invalid_body_rejected(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options(runtime=None, runtime_factory=probe.factory("f")))
        # What loads when the app is built is another case's.
        called, loaded = len(probe.factory_calls), len(probe.loaded)
        async with api.client(app) as client:
            for content, what, status, code in (
                (b"{not json", "a body that is not JSON", 400, "invalid_json"),
                (b"", "an empty body", 400, "invalid_json"),
                (b'{"a": 1', "a truncated object", 400, "invalid_json"),
                (b'{"a": NaN}', "NaN, which JSON does not have", 400, "invalid_json"),
                (b"\xff\xfe{}", "a body that is not UTF-8", 400, "invalid_json"),
                (b"[1, 2]", "a JSON array", 400, "body_not_object"),
                (b'"text"', "a JSON string", 400, "body_not_object"),
                (b"null", "JSON null", 400, "body_not_object"),
            ):
                response = await client.post(
                    "/agents/echo/invoke", content=content, headers=JSON_HEADERS
                )
                expect_error(response, f"POST /agents/echo/invoke with {what}", status, code)
            for headers, what in (
                ({"content-type": "text/plain"}, "content type text/plain"),
                ({"content-type": "application/x-www-form-urlencoded"}, "a form content type"),
                ({}, "no content type"),
            ):
                response = await client.post(
                    "/agents/echo/invoke", content=b'{"a": 1}', headers=headers
                )
                expect_error(
                    response,
                    f"POST /agents/echo/invoke with a JSON object and {what}",
                    415,
                    "unsupported_media_type",
                )
        if probe.contexts:
            raise AssertionError(f"an invalid body reached the agent ({len(probe.contexts)} times)")
        if len(probe.loaded) > loaded or len(probe.factory_calls) > called:
            raise AssertionError(
                f"refused requests ran the handler loaders of {probe.loaded[loaded:]} and called "
                f"runtime_factory() {len(probe.factory_calls) - called} times; a request is "
                f"refused before anything loads"
            )


def _padded(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes."""
    empty = json_body({"pad": ""})
    return json_body({"pad": "x" * (size - len(empty))})


@suite.case("oversized_body_rejected")
async def _oversized_body_rejected(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options(max_body_bytes=LIMIT))
        async with api.client(app) as client:
            response = await client.post(
                "/agents/echo/invoke", content=_padded(LIMIT), headers=JSON_HEADERS
            )
            if response.status_code != 200:
                raise AssertionError(
                    f"a body of exactly max_body_bytes ({LIMIT}) bytes: expected 200, got "
                    f"{response.status_code} with {short_repr(response.content)}"
                )
            big = _padded(16 * LIMIT)
            for how, content in (
                ("one byte over", _padded(LIMIT + 1)),
                ("with a content-length", big),
                ("in chunks, with no content-length", big),
            ):
                what = f"a body of {len(content)} bytes {how}, over max_body_bytes {LIMIT}"
                pulled = len(app.pulled)
                response = await post_chunks(
                    client,
                    "/agents/echo/invoke",
                    content,
                    1024,
                    sized=not how.startswith("in chunks"),
                )
                expect_error(response, what, 413, "body_too_large")
                read = app.read_before_response(pulled)
                if how.startswith("in chunks") and read > LIMIT + CHUNK:
                    raise AssertionError(
                        f"{what}: the app read {read} bytes of it before refusing it; it "
                        f"should stop once it has more than {LIMIT}"
                    )
                if not how.startswith("in chunks") and read:
                    raise AssertionError(
                        f"{what}: the app read {read} bytes of it before refusing it; its "
                        f"content-length says it is over the limit before any is read"
                    )
        if len(probe.contexts) != 1:
            probe.expect_own_handlers("a body of exactly max_body_bytes answered 200")
            raise AssertionError("a body over the limit reached the agent")


@suite.case("unknown_route_rejected")
async def _unknown_route_rejected(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
        async with api.client(app) as client:
            for method, path, allowed in (
                ("GET", "/agents/echo/invoke", "POST"),
                ("PUT", "/agents/echo/invoke", "POST"),
                ("POST", "/manifest", "GET"),
                ("POST", "/agents", "GET"),
                ("DELETE", "/agents", "GET"),
            ):
                response = await client.request(method, path, headers=JSON_HEADERS)
                what = f"{method} {path}"
                expect_error(response, what, 405, "method_not_allowed")
                allow = {part.strip() for part in response.headers.get("allow", "").split(",")}
                if allowed not in allow:
                    raise AssertionError(
                        f"{what}: expected an allow header naming {allowed}, got "
                        f"{response.headers.get('allow')!r}"
                    )
            for method, path in (
                ("GET", "/nowhere"),
                ("GET", "/agents/echo"),
                ("POST", "/agents/echo/invoke/more"),
                ("POST", "/agents//invoke"),
                ("GET", "/manifest/extra"),
            ):
                response = await client.request(method, path, content=b"{}", headers=JSON_HEADERS)
                expect_error(response, f"{method} {path}", 404, "not_found")


@suite.case("agent_error_contained")
async def _agent_error_contained(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        for expose in (False, True):
            app = await build_app(api, probe.options(expose_errors=expose))
            async with api.client(app) as client:
                response = await post_json(client, "fails", {})
            what = f"an agent that raised, with expose_errors={expose}"
            probe.expect_own_handlers(what)
            envelope = expect_error(
                response, what, 500, "agent_error", leak=None if expose else probe.secret
            )
            if any(frame in response.text for frame in _FRAMES):
                raise AssertionError(
                    f"{what}: the response shows stack frames: {short_repr(response.text)}"
                )
            if expose and probe.secret not in envelope["error"]["message"]:
                raise AssertionError(
                    f"{what}: expected the error message to show the exception, got "
                    f"{envelope['error']['message']!r}"
                )


_FRAMES: Final = ("Traceback (most recent call last)", 'File "')
"""What shows a stack frame in a response."""


@suite.case("load_errors_contained")
async def _load_errors_contained(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        for what, overrides in (
            (
                "a handler loader that raised",
                {"handlers": {**probe.options().handlers, "echo": probe.failing_loader()}},
            ),
            (
                "a runtime factory that raised",
                {"runtime": None, "runtime_factory": probe.failing_factory()},
            ),
        ):
            for expose in (False, True):
                options = probe.options(expose_errors=expose, **overrides)
                loads, calls = len(probe.loaded), len(probe.factory_calls)
                try:
                    app = Metered(api.build(options))
                except Exception as error:
                    owner = (
                        "handlers_load_lazily"
                        if "failing" in probe.loaded[loads:]
                        else "runtime_factory_called_lazily"
                        if "failing" in probe.factory_calls[calls:]
                        else None
                    )
                    if owner is None:
                        raise AssertionError(
                            f"blocked: the wrapper {callable_name(api.wrapper)} raised "
                            f"{error!r} building the app; the wrapper owns that"
                        ) from error
                    raise AssertionError(
                        f"blocked: {what}: the wrapper called it when it built the app, which "
                        f"raised {error!r}; {owner} owns that"
                    ) from error
                async with api.client(app) as client:
                    response = await answer_of(what, post_json(client, "echo", {}))
                said = f"{what}, with expose_errors={expose}"
                probe.expect_own_handlers(said)
                envelope = expect_error(
                    response, said, 500, "internal_error", leak=None if expose else probe.secret
                )
                if expose and probe.secret not in envelope["error"]["message"]:
                    raise AssertionError(
                        f"{said}: expected the error message to show the exception, got "
                        f"{envelope['error']['message']!r}"
                    )


_ORDER_OWNERS: Final = {
    "not_found": "unknown_route_rejected",
    "method_not_allowed": "unknown_route_rejected",
    "unknown_agent": "unknown_agent_rejected",
    "unsupported_media_type": "invalid_body_rejected",
    "body_too_large": "oversized_body_rejected",
}


_Sent: TypeAlias = tuple[str, str, Mapping[str, str], bytes]
"""A request the order case sends: method, path, headers, body."""


@suite.case("checks_run_in_order")
async def _checks_run_in_order(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options(max_body_bytes=LIMIT))
        text = {"content-type": "text/plain"}
        big, big_object = b"x" * (16 * LIMIT), _padded(16 * LIMIT)
        echo, nobody = "/agents/echo/invoke", "/agents/nobody/invoke"
        # Each row: the earlier check, the later one, a request that fails both, and
        # one that fails only the earlier, which must be refused on its own first.
        rows: tuple[tuple[str, str, _Sent, _Sent], ...] = (
            (
                "not_found",
                "method_not_allowed",
                ("PUT", "/nowhere", JSON_HEADERS, b"{}"),
                ("GET", "/nowhere", {}, b""),
            ),
            (
                "method_not_allowed",
                "unknown_agent",
                ("GET", nobody, {}, b""),
                ("GET", echo, {}, b""),
            ),
            (
                "unknown_agent",
                "unsupported_media_type",
                ("POST", nobody, text, b"x"),
                ("POST", nobody, JSON_HEADERS, b"{}"),
            ),
            (
                "unsupported_media_type",
                "body_too_large",
                ("POST", echo, text, big),
                ("POST", echo, text, b"{}"),
            ),
            (
                "unsupported_media_type",
                "invalid_json",
                ("POST", echo, text, b"{nope"),
                ("POST", echo, text, b"{}"),
            ),
            (
                "body_too_large",
                "invalid_json",
                ("POST", echo, JSON_HEADERS, big),
                ("POST", echo, JSON_HEADERS, big_object),
            ),
        )

        async def refusal(request: _Sent) -> tuple[object, str]:
            method, path, headers, content = request
            try:
                response = await post_chunks(
                    client, path, content, 1024, sized=True, headers=headers, method=method
                )
            except Exception as error:  # the app raised: the earlier check's case says so
                return None, f"the app raised {error!r}"
            code: object = None
            with contextlib.suppress(Exception):
                code = response.json()["error"]["code"]
            return code, f"{response.status_code} with {short_repr(response.content)}"

        def said(request: _Sent) -> str:
            method, path, headers, content = request
            kind = headers.get("content-type", "no content type")
            return f"{method} {path} with {kind} and {len(content)} bytes"

        async with api.client(app) as client:
            for first, then, both, alone in rows:
                code, got = await refusal(alone)
                if code != first:
                    raise AssertionError(
                        f"blocked: {said(alone)}: expected {first}, got {got}; "
                        f"{_ORDER_OWNERS[first]} owns that"
                    )
                code, got = await refusal(both)
                if code != first:
                    raise AssertionError(
                        f"{said(both)}, which fails the {first} and the {then} checks: expected "
                        f"{first}, got {got}: the checks run in the order route, method, agent, "
                        f"content type, size, JSON"
                    )


@suite.case("commands_fail_closed")
async def _commands_fail_closed(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        runtime = probe.runtime("given")
        for grants, how in ((None, "no grants"), (frozenset(), "an empty grant set")):
            app = await build_app(api, probe.options(grants=grants))
            async with api.client(app) as client:
                response = await post_json(
                    client, "command", {"command": "deploy", "args": ["prod"]}
                )
            what = f"with {how}, an agent running 'deploy'"
            expect_error(response, what, 403, "command_not_granted")
            if runtime.ran:
                raise AssertionError(f"with {how}, the runtime ran {runtime.ran}")
        app = await build_app(api, probe.options(grants=frozenset({"build"})))
        async with api.client(app) as client:
            response = await post_json(client, "command", {"command": "build", "args": ["x"]})
            seen = probe.contexts[-1].runtime if probe.contexts else runtime
            if seen is not runtime:
                raise AssertionError(
                    f"blocked: with 'build' granted, running it answered "
                    f"{response.status_code}; the context's runtime is {short_repr(seen)}, "
                    f"not the one the host passed; capabilities_reach_context owns that"
                )
            await invoke_agent(client, "command", {"command": "build", "args": ["y"]})
            if runtime.ran != [("build", ("x",)), ("build", ("y",))]:
                raise AssertionError(
                    f"with 'build' granted, an agent running it twice: expected the runtime to "
                    f"run ('build', ('x',)) then ('build', ('y',)), it ran {runtime.ran}"
                )
            for command in ("deploy", "build-and-deploy", "buil", "BUILD"):
                response = await post_json(client, "command", {"command": command, "args": []})
                expect_error(
                    response,
                    f"with only 'build' granted, an agent running {command!r}",
                    403,
                    "command_not_granted",
                )
        if len(runtime.ran) != 2:
            raise AssertionError(f"with only 'build' granted, the runtime ran {runtime.ran}")
