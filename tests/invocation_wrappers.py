"""
Deliberately broken invocation wrappers, each breaking one rule, and the cases each fails.

Every wrapper here wraps the reference handler, :func:`create_app`, and breaks one
rule the invocation profile promises to check; :func:`broken_wrappers` yields each
with the exact set of case IDs it must fail, whatever the placement (in-process or
a live server) and the backend. A case that fails because another case's rule is
broken says ``blocked: … <owner> owns that``, and is in the set too.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import types
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import replace
from typing import Any, cast

from conformkit.profiles.invocation import (
    ASGIApp,
    Handler,
    InvocationCase,
    InvocationContext,
    InvocationOptions,
    Wrapper,
    create_app,
)
from conformkit.profiles.workspace import MemoryWorkspace

_INVOKE = re.compile(r"^/agents/([^/]+)/invoke$")


def _agent(scope: Any) -> str | None:
    """The agent an HTTP request invokes, or ``None`` for any other request."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    found = _INVOKE.match(scope["path"])
    return found[1] if found else None


def _header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


def _with_header(scope: Any, name: bytes, value: bytes | None) -> Any:
    headers = [(key, each) for key, each in scope["headers"] if key.lower() != name]
    if value is not None:
        headers.append((name, value))
    return {**scope, "headers": headers}


async def _read_all(receive: Any) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def _replaying(body: bytes, receive: Any) -> Any:
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _rewriting(send: Any, edit: Callable[[int, dict[str, Any]], dict[str, Any]]) -> Any:
    """A ``send`` that lets ``edit`` change each JSON response's body, given its status."""
    state: dict[str, Any] = {}

    async def rewritten(message: Any) -> None:
        if message["type"] == "http.response.start":
            state["start"] = message
            return
        start = state.pop("start")
        body = json.dumps(edit(start["status"], json.loads(message["body"]))).encode()
        headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({**message, "body": body})

    return rewritten


def _middleware(
    options: InvocationOptions, around: Callable[[ASGIApp, Any, Any, Any], Any]
) -> ASGIApp:
    inner = create_app(options)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        await around(inner, scope, receive, send)

    return app


def _each_handler(
    options: InvocationOptions, wrap: Callable[[Handler], Handler]
) -> InvocationOptions:
    """The options with each handler wrapped by ``wrap``, its loader still called lazily."""

    def loader(load: Callable[[], Handler]) -> Callable[[], Handler]:
        return lambda: wrap(load())

    return replace(
        options, handlers={agent: loader(load) for agent, load in options.handlers.items()}
    )


# --------------------------------------------------------------------------- lazy loading


def imports_handlers_at_build(options: InvocationOptions) -> ASGIApp:
    """Runs every handler loader when the app is built."""
    loaded = {agent: load() for agent, load in options.handlers.items()}
    handlers = {agent: functools.partial(lambda handler: handler, h) for agent, h in loaded.items()}
    return create_app(replace(options, handlers=handlers))


def loads_the_named_factory_at_build(options: InvocationOptions) -> ASGIApp:
    """Loads the named runtime factory when the app is built."""
    name = options.runtime_factory_name
    if name is None:
        return create_app(options)
    factory = options.runtime_factory_module_map[name]()
    return create_app(replace(options, runtime_factory_module_map={name: lambda: factory}))


def calls_the_runtime_factory_at_build(options: InvocationOptions) -> ASGIApp:
    """Calls runtime_factory() when the app is built, when it wins, not at an invocation."""
    if options.runtime is None and options.runtime_factory is not None:
        options = replace(options, runtime=options.runtime_factory(), runtime_factory=None)
    return create_app(options)


def _loading_once(options: InvocationOptions) -> InvocationOptions:
    """The options with loaders that load each handler once, whatever calls them."""
    loaded: dict[str, Handler] = {}

    def once(agent: str, load: Callable[[], Handler]) -> Callable[[], Handler]:
        def loader() -> Handler:
            if agent not in loaded:
                loaded[agent] = load()
            return loaded[agent]

        return loader

    return replace(
        options, handlers={agent: once(agent, load) for agent, load in options.handlers.items()}
    )


_KEPT_HANDLERS: dict[str, Handler] = {}


def keeps_handlers_across_apps(options: InvocationOptions) -> ASGIApp:
    """
    Keeps handlers in a module-level dict across apps: the first app it builds fills it,
    and every later app, built with another catalog, calls the handlers kept from it.
    """
    if not _KEPT_HANDLERS:
        _KEPT_HANDLERS.update({agent: load() for agent, load in options.handlers.items()})
    kept = {
        agent: functools.partial(_KEPT_HANDLERS.__getitem__, agent) for agent in options.handlers
    }
    return create_app(replace(options, handlers=kept))


def calls_the_runtime_factory_per_invocation(options: InvocationOptions) -> ASGIApp:
    """Calls runtime_factory() at every invocation instead of once."""
    if options.runtime is not None or options.runtime_factory is None:
        return create_app(options)
    options = _loading_once(options)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await create_app(options)(scope, receive, send)  # the runtime is resolved afresh

    return app


# --------------------------------------------------------------------------- capabilities


def prefers_the_factory(options: InvocationOptions) -> ASGIApp:
    """Uses runtime_factory even when a runtime is given: precedence inverted."""
    if options.runtime_factory is not None:
        options = replace(options, runtime=None)
    return create_app(options)


def drops_the_runtime(options: InvocationOptions) -> ASGIApp:
    """Forgets the runtime the host gave (a factory, when given, still makes one)."""
    return create_app(replace(options, runtime=None))


_KEPT: list[Any] = []
"""The first runtime :func:`keeps_the_first_runtime` was given, kept for the process's life."""


def keeps_the_first_runtime(options: InvocationOptions) -> ASGIApp:
    """Keeps the runtime of the first app it built, and gives it to every later app."""
    if options.runtime is None:
        return create_app(options)
    if not _KEPT:
        _KEPT.append(options.runtime)
    return create_app(replace(options, runtime=_KEPT[0]))


def brings_its_own_workspace(options: InvocationOptions) -> ASGIApp:
    """Gives agents a request-local workspace instead of the host's."""
    return create_app(replace(options, workspace_store=MemoryWorkspace()))


def reads_os_environ(options: InvocationOptions) -> ASGIApp:
    """Lets agents see the process environment under the host's env."""
    return create_app(replace(options, env={**os.environ, **options.env}))


def merges_os_environ_into_env(options: InvocationOptions) -> ASGIApp:
    """Merges the process environment into the host's env mapping itself, in place."""
    env = cast(MutableMapping[str, str], options.env)
    env.update({name: value for name, value in os.environ.items() if name not in env})
    return create_app(options)


def writes_request_data_into_env(options: InvocationOptions) -> ASGIApp:
    """Writes each request's ID into the host's env, where the next invocation sees it."""

    def noting(handler: Handler) -> Handler:
        async def noted(context: InvocationContext, body: dict[str, Any]) -> Any:
            cast(MutableMapping[str, str], context.env)["REQUEST_ID"] = context.request_id
            return await handler(context, body)

        return noted

    return create_app(_each_handler(options, noting))


def hands_agents_a_read_only_env(options: InvocationOptions) -> ASGIApp:
    """Hands agents a read-only view of the host's env: correct, it passes every case."""
    return create_app(replace(options, env=types.MappingProxyType(options.env)))


# --------------------------------------------------------------------------- the catalog


def names_entries_while_listing(options: InvocationOptions) -> ASGIApp:
    """Builds GET /agents by writing each agent's name into its catalog entry, in place."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        if scope["method"] == "GET" and scope["path"] == "/agents":
            for name, entry in options.catalog.items():
                cast(MutableMapping[str, Any], entry)["name"] = name
        await inner(scope, receive, send)

    return _middleware(options, around)


def annotates_on_invoke(options: InvocationOptions) -> ASGIApp:
    """Notes each invocation's request ID in the agent's catalog entry, in place."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        agent = _agent(scope)
        if agent is not None and agent in options.catalog:
            entry = cast(MutableMapping[str, Any], options.catalog[agent])
            entry["last_request"] = (_header(scope, b"x-request-id") or b"").decode()
        await inner(scope, receive, send)

    return _middleware(options, around)


def registers_on_post(options: InvocationOptions) -> ASGIApp:
    """Registers the agent a POST /agents names in the host's catalog; the app then refuses it."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        if scope["method"] == "POST" and scope["path"] == "/agents":
            body = await _read_all(receive)
            with contextlib.suppress(ValueError, AttributeError):
                entry = dict(json.loads(body))
                name = str(entry.pop("name", "registered"))
                cast(MutableMapping[str, Any], options.catalog)[name] = entry
            receive = _replaying(body, receive)
        await inner(scope, receive, send)

    return _middleware(options, around)


def takes_post_on_the_listing(options: InvocationOptions) -> ASGIApp:
    """Answers POST /agents with the listing, as a route that takes GET and POST would."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/agents" and scope["method"] == "POST":
            scope = {**scope, "method": "GET"}
        await inner(scope, receive, send)

    return _middleware(options, around)


# --------------------------------------------------------------------------- grants


class _Everything:
    """A collection that holds every command name."""

    def __contains__(self, command: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 1


def grants_by_default(options: InvocationOptions) -> ASGIApp:
    """With no grants, grants every command."""
    grants = _Everything() if options.grants is None else options.grants
    return create_app(replace(options, grants=grants))


def reads_an_empty_grant_set_as_everything(options: InvocationOptions) -> ASGIApp:
    """An empty grant set, not None, grants every command."""
    if options.grants is not None and not options.grants:
        return create_app(replace(options, grants=_Everything()))
    return create_app(options)


class _Prefixes:
    """Grants a command when a granted name is its prefix."""

    def __init__(self, grants: Any) -> None:
        self.grants = tuple(grants)

    def __contains__(self, command: object) -> bool:
        return isinstance(command, str) and any(command.startswith(g) for g in self.grants)

    def __iter__(self) -> Iterator[str]:
        return iter(self.grants)

    def __len__(self) -> int:
        return len(self.grants)


def grants_by_prefix(options: InvocationOptions) -> ASGIApp:
    """A grant 'build' lets 'build-and-deploy' run."""
    if options.grants is None:
        return create_app(options)
    return create_app(replace(options, grants=_Prefixes(options.grants)))


class _AnyCase:
    """Grants a command whatever its case: 'BUILD' runs when 'build' is granted."""

    def __init__(self, grants: Any) -> None:
        self.grants = frozenset(grant.lower() for grant in grants)

    def __contains__(self, command: object) -> bool:
        return isinstance(command, str) and command.lower() in self.grants

    def __iter__(self) -> Iterator[str]:
        return iter(self.grants)

    def __len__(self) -> int:
        return len(self.grants)


def grants_ignoring_case(options: InvocationOptions) -> ASGIApp:
    """Matches command names to grants without regard to case."""
    if options.grants is None:
        return create_app(options)
    return create_app(replace(options, grants=_AnyCase(options.grants)))


# --------------------------------------------------------------------------- the request ID


def drops_the_request_id(options: InvocationOptions) -> ASGIApp:
    """A proxy-like middleware that strips x-request-id from requests."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        await inner(_with_header(scope, b"x-request-id", None), receive, send)

    return _middleware(options, around)


def errors_without_the_request_id_header(options: InvocationOptions) -> ASGIApp:
    """Error responses lack the x-request-id header (their envelope still has the ID)."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        async def stripped(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                headers = [(k, v) for k, v in message["headers"] if k != b"x-request-id"]
                message = {**message, "headers": headers}
            await send(message)

        await inner(scope, receive, stripped)

    return _middleware(options, around)


def echoes_any_request_id(options: InvocationOptions) -> ASGIApp:
    """Echoes an x-request-id of any length or characters back in the response."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        given = _header(scope, b"x-request-id")
        if given is None or re.fullmatch(rb"[\x21-\x7e]{1,128}", given):
            await inner(scope, receive, send)
            return
        echoed = given.decode("latin-1")

        def edit(status: int, body: dict[str, Any]) -> dict[str, Any]:
            return {**body, "request_id": echoed}

        async def header(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k != b"x-request-id"]
                message = {**message, "headers": [*headers, (b"x-request-id", given)]}
            await send(message)

        await inner(scope, receive, _rewriting(header, edit))

    return _middleware(options, around)


def caps_request_ids_at_64(options: InvocationOptions) -> ASGIApp:
    """Replaces a valid x-request-id longer than 64 characters with a generated one."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        given = _header(scope, b"x-request-id")
        if given is not None and len(given) > 64:
            scope = _with_header(scope, b"x-request-id", None)
        await inner(scope, receive, send)

    return _middleware(options, around)


# --------------------------------------------------------------------------- responses


def answers_in_text_plain(options: InvocationOptions) -> ASGIApp:
    """Sends the JSON envelopes with the content type text/plain."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        async def plain(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k != b"content-type"]
                message = {**message, "headers": [*headers, (b"content-type", b"text/plain")]}
            await send(message)

        await inner(scope, receive, plain)

    return _middleware(options, around)


_FRAMES = 'Traceback (most recent call last):\n  File "agent.py", line 3, in handle'


def shows_stack_frames(options: InvocationOptions) -> ASGIApp:
    """A debug mode: every 500 body carries the stack frames."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        def edit(status: int, body: dict[str, Any]) -> dict[str, Any]:
            if status == 500:
                body["error"]["message"] += "\n" + _FRAMES
            return body

        await inner(scope, receive, _rewriting(send, edit))

    return _middleware(options, around)


def loader_failure_is_an_agent_error(options: InvocationOptions) -> ASGIApp:
    """Loads each handler inside the agent's call, so a loader that raises is an agent_error."""

    def deferred(load: Callable[[], Handler]) -> Callable[[], Handler]:
        loaded: list[Handler] = []

        async def handler(context: InvocationContext, body: dict[str, Any]) -> Any:
            if not loaded:
                loaded.append(load())
            return await loaded[0](context, body)

        return lambda: handler

    handlers = {agent: deferred(load) for agent, load in options.handlers.items()}
    return create_app(replace(options, handlers=handlers))


def always_exposes_errors(options: InvocationOptions) -> ASGIApp:
    """Shows every exception in its 500 envelope, whatever expose_errors says."""
    return create_app(replace(options, expose_errors=True))


# --------------------------------------------------------------------------- requests refused


def buffers_the_body(options: InvocationOptions) -> ASGIApp:
    """A middleware that reads the whole body before the app checks its size."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        await inner(scope, _replaying(await _read_all(receive), receive), send)

    return _middleware(options, around)


def ignores_content_length(options: InvocationOptions) -> ASGIApp:
    """Refuses a body over the limit only once it has read past it, whatever its content-length."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        await inner(_with_header(scope, b"content-length", None), receive, send)

    return _middleware(options, around)


def reads_an_unknown_agents_body(options: InvocationOptions) -> ASGIApp:
    """Reads the whole body of an invocation before refusing its unknown agent."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        agent = _agent(scope)
        if agent is not None and agent not in options.handlers:
            receive = _replaying(await _read_all(receive), receive)
        await inner(scope, receive, send)

    return _middleware(options, around)


def unknown_agent_crashes(options: InvocationOptions) -> ASGIApp:
    """Looks the agent up with handlers[agent]: an unknown one raises KeyError, a 500."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        agent = _agent(scope)
        if agent is not None:
            options.handlers[agent]  # the lookup is the defect
        await inner(scope, receive, send)

    return _middleware(options, around)


def loads_before_the_content_type_check(options: InvocationOptions) -> ASGIApp:
    """Loads an agent's handler as its request arrives, before the content type is checked."""
    options = _loading_once(options)

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        agent = _agent(scope)
        if agent is not None and agent in options.handlers:
            # A loader that raises: the app answers internal_error when it loads it again.
            with contextlib.suppress(Exception):
                options.handlers[agent]()
        await inner(scope, receive, send)

    return _middleware(options, around)


def refuses_json_with_a_charset(options: InvocationOptions) -> ASGIApp:
    """Takes only the exact content type application/json, refusing its parameters."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        if _agent(scope) is not None and _header(scope, b"content-type") != b"application/json":
            scope = _with_header(scope, b"content-type", b"text/plain")
        await inner(scope, receive, send)

    return _middleware(options, around)


def checks_size_before_content_type(options: InvocationOptions) -> ASGIApp:
    """Refuses a declared length over the limit before looking at the content type."""

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        declared = (_header(scope, b"content-length") or b"").decode()
        if declared.isdigit() and int(declared) > options.max_body_bytes:
            scope = _with_header(scope, b"content-type", b"application/json")
        await inner(scope, receive, send)

    return _middleware(options, around)


def ignores_max_body_bytes(options: InvocationOptions) -> ASGIApp:
    """Uses the default body limit, 1 MiB, whatever the host set."""
    return create_app(replace(options, max_body_bytes=1024 * 1024))


def checks_content_type_before_agent(options: InvocationOptions) -> ASGIApp:
    """Refuses a body that is not JSON before it looks the agent up."""
    known = next(iter(options.handlers))

    async def around(inner: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        agent = _agent(scope)
        kind = (_header(scope, b"content-type") or b"").partition(b";")[0].strip()
        if agent is not None and agent not in options.handlers and kind != b"application/json":
            # Answered as the known agent would be: 415, before the agent is looked up.
            scope = {**scope, "path": f"/agents/{known}/invoke"}
        await inner(scope, receive, send)

    return _middleware(options, around)


def starlette_default_refusals(options: InvocationOptions) -> ASGIApp:
    """A Starlette app, a route per endpoint: unknown routes and methods get its own 404 and 405."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    inner = create_app(options)

    class Delegate:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await inner(scope, receive, send)

    return Starlette(
        routes=[
            Route("/manifest", Delegate(), methods=["GET"]),
            Route("/agents", Delegate(), methods=["GET"]),
            Route("/agents/{agent}/invoke", Delegate(), methods=["POST"]),
        ]
    )


# --------------------------------------------------------------------------- the table


_BLOCKED_BY_KEPT_HANDLERS: tuple[InvocationCase, ...] = (
    "agent_error_contained",
    "capabilities_reach_context",
    "env_is_host_data",
    "factory_wins_over_factory_name",
    "load_errors_contained",
    "named_factory_loads_lazily",
    "oversized_body_rejected",
    "request_id_echoed",
    "runtime_factory_called_lazily",
    "runtime_wins_over_factory",
)
"""The cases that a wrapper keeping handlers across apps blocks: all that invoke an agent."""

_TABLE: tuple[tuple[Wrapper, frozenset[InvocationCase]], ...] = (
    (imports_handlers_at_build, frozenset({"handlers_load_lazily", "load_errors_contained"})),
    (loads_the_named_factory_at_build, frozenset({"named_factory_loads_lazily"})),
    (
        calls_the_runtime_factory_at_build,
        frozenset({"runtime_factory_called_lazily", "load_errors_contained"}),
    ),
    (calls_the_runtime_factory_per_invocation, frozenset({"runtime_factory_called_lazily"})),
    # Every case that invokes an agent after the first app is blocked: the handler it
    # called is an earlier app's. Only handlers_load_lazily owns that rule and fails on it.
    (keeps_handlers_across_apps, frozenset({"handlers_load_lazily", *_BLOCKED_BY_KEPT_HANDLERS})),
    (prefers_the_factory, frozenset({"runtime_wins_over_factory"})),
    (
        drops_the_runtime,
        frozenset(
            {
                "capabilities_reach_context",
                "runtime_wins_over_factory",
                "named_factory_loads_lazily",
                "commands_fail_closed",
            }
        ),
    ),
    (brings_its_own_workspace, frozenset({"capabilities_reach_context"})),
    (
        keeps_the_first_runtime,
        frozenset(
            {"capabilities_reach_context", "runtime_wins_over_factory", "commands_fail_closed"}
        ),
    ),
    (reads_os_environ, frozenset({"env_is_host_data"})),
    (merges_os_environ_into_env, frozenset({"env_is_host_data"})),
    (writes_request_data_into_env, frozenset({"env_is_host_data"})),
    (hands_agents_a_read_only_env, frozenset()),
    (names_entries_while_listing, frozenset({"catalog_is_served"})),
    (annotates_on_invoke, frozenset({"catalog_is_served"})),
    (registers_on_post, frozenset({"catalog_is_served"})),
    (takes_post_on_the_listing, frozenset({"unknown_route_rejected"})),
    (grants_by_default, frozenset({"commands_fail_closed"})),
    (reads_an_empty_grant_set_as_everything, frozenset({"commands_fail_closed"})),
    (grants_by_prefix, frozenset({"commands_fail_closed"})),
    (grants_ignoring_case, frozenset({"commands_fail_closed"})),
    (drops_the_request_id, frozenset({"request_id_echoed"})),
    (errors_without_the_request_id_header, frozenset({"request_id_echoed"})),
    (echoes_any_request_id, frozenset({"request_id_echoed"})),
    (caps_request_ids_at_64, frozenset({"request_id_echoed"})),
    (answers_in_text_plain, frozenset({"invoke_returns_envelope"})),
    (refuses_json_with_a_charset, frozenset({"invoke_returns_envelope"})),
    (shows_stack_frames, frozenset({"agent_error_contained"})),
    (loader_failure_is_an_agent_error, frozenset({"load_errors_contained"})),
    (always_exposes_errors, frozenset({"agent_error_contained", "load_errors_contained"})),
    # Like a framework that reads the whole body before any view runs: it breaks both
    # "refuse past the limit without reading on" and "refuse an unknown agent unread".
    (buffers_the_body, frozenset({"oversized_body_rejected", "unknown_agent_rejected"})),
    (ignores_content_length, frozenset({"oversized_body_rejected"})),
    (reads_an_unknown_agents_body, frozenset({"unknown_agent_rejected"})),
    (unknown_agent_crashes, frozenset({"unknown_agent_rejected", "checks_run_in_order"})),
    (loads_before_the_content_type_check, frozenset({"invalid_body_rejected"})),
    (checks_size_before_content_type, frozenset({"checks_run_in_order"})),
    (checks_content_type_before_agent, frozenset({"checks_run_in_order"})),
    (ignores_max_body_bytes, frozenset({"oversized_body_rejected", "checks_run_in_order"})),
    (starlette_default_refusals, frozenset({"unknown_route_rejected", "checks_run_in_order"})),
)


def broken_wrappers() -> Iterator[tuple[str, Wrapper, frozenset[InvocationCase]]]:
    """
    Each broken wrapper: its name, the wrapper (options to an ASGI app, routes at
    ``/``), and the exact set of case IDs it fails, in every placement and backend.
    """
    for wrapper, expected in _TABLE:
        yield wrapper.__name__, wrapper, expected


BLOCKED_BY: dict[tuple[str, str], InvocationCase] = {
    ("drops_the_runtime", "commands_fail_closed"): "capabilities_reach_context",
    ("keeps_the_first_runtime", "commands_fail_closed"): "capabilities_reach_context",
    ("imports_handlers_at_build", "load_errors_contained"): "handlers_load_lazily",
    ("calls_the_runtime_factory_at_build", "load_errors_contained"): (
        "runtime_factory_called_lazily"
    ),
    ("unknown_agent_crashes", "checks_run_in_order"): "unknown_agent_rejected",
    **{
        ("keeps_handlers_across_apps", case): "handlers_load_lazily"
        for case in _BLOCKED_BY_KEPT_HANDLERS
    },
    ("ignores_max_body_bytes", "checks_run_in_order"): "oversized_body_rejected",
    ("starlette_default_refusals", "checks_run_in_order"): "unknown_route_rejected",
}
"""For a broken wrapper's case that is blocked, not failed on its own rule: the owner it names."""
