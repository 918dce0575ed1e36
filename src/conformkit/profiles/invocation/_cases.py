"""The invocation case names, feature and suite, and the probe and requests the cases share."""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
)
from typing import TYPE_CHECKING, Any, Final, Literal, final, get_args

from ..._feature import Feature
from ..._suite import ContractSuite
from ..._util import callable_name, short_repr
from .._support import PointAt
from ..session_events import JSON, Event, MemorySessionEvents
from ..workspace import MemoryWorkspace

if TYPE_CHECKING:
    import httpx
from ._api import (
    ASGIApp,
    ASGIMessage,
    ASGIReceive,
    ASGIScope,
    ASGISend,
    Handler,
    InvocationAPI,
    InvocationContext,
    InvocationOptions,
    Runtime,
)

# --------------------------------------------------------------------------- case names

InvocationCase = Literal[
    "catalog_is_served",
    "invoke_returns_envelope",
    "request_id_echoed",
    "capabilities_reach_context",
    "env_is_host_data",
    "runtime_wins_over_factory",
    "factory_wins_over_factory_name",
    "named_factory_loads_lazily",
    "runtime_factory_called_lazily",
    "handlers_load_lazily",
    "unknown_agent_rejected",
    "invalid_body_rejected",
    "oversized_body_rejected",
    "unknown_route_rejected",
    "agent_error_contained",
    "load_errors_contained",
    "checks_run_in_order",
    "commands_fail_closed",
]
"""The names of the profile's cases."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[InvocationAPI, InvocationCase](
    "conformkit.profiles.invocation",
    cases=get_args(InvocationCase),
    description=(
        "A host's HTTP wrapper for agent apps: a static catalog, agent invocations with "
        "stable envelopes, explicit capabilities passed as the very objects, lazy loading, "
        "and commands that run only when granted."
    ),
    does_not_establish=(
        "Streaming responses, authentication or authorisation, deployment descriptors, "
        "scheduling or concurrency limits, secrets handling, lifespan events, WebSockets, "
        "or performance."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

SEE: Final = PointAt("docs/profile-invocation.md#failure-modes")
CHUNK: Final = 256
"""The most body bytes the cases hand the app per ``receive()``, whatever the server read."""
LIMIT: Final = 1024
"""The body limit of the cases about it."""


@final
class Metered:
    """
    The app under test, fed the request body in pieces of at most ``CHUNK`` bytes,
    counting the body bytes it pulled for each request: the same in every placement.
    """

    __slots__ = ("app", "before_response", "pulled")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.pulled: list[int] = []
        self.before_response: list[int | None] = []
        """For each request, the body bytes pulled when the response started, if it did."""

    def read_before_response(self, index: int) -> int:
        """The body bytes request ``index`` pulled before its response started, or in all."""
        if index >= len(self.pulled):
            return 0
        before = self.before_response[index]
        return self.pulled[index] if before is None else before

    async def __call__(self, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        index = len(self.pulled)
        self.pulled.append(0)
        self.before_response.append(None)
        pending = b""
        more = True

        async def metered() -> ASGIMessage:
            nonlocal pending, more
            if not pending:
                if not more:
                    return await receive()  # the body is over: a disconnect, eventually
                message = await receive()
                if message["type"] != "http.request":
                    return message
                pending = bytes(message.get("body", b""))
                more = bool(message.get("more_body", False))
            piece, pending = pending[:CHUNK], pending[CHUNK:]
            self.pulled[index] += len(piece)
            return {"type": "http.request", "body": piece, "more_body": bool(pending) or more}

        async def noted(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start" and self.before_response[index] is None:
                self.before_response[index] = self.pulled[index]
            await send(message)

        await self.app(scope, metered, noted)


@final
class ProbeRuntime:
    """A runtime that records the commands it runs."""

    __slots__ = ("label", "ran", "run_tag")

    def __init__(self, label: str, run_tag: str) -> None:
        self.label = label
        self.run_tag = run_tag
        self.ran: list[tuple[str, tuple[str, ...]]] = []

    def __repr__(self) -> str:
        # The tag tells one case's runtime from another's, were a wrapper to keep one.
        return f"<runtime {self.label!r} of case run {self.run_tag}>"

    async def run(self, command: str, *args: str) -> JSON:
        self.ran.append((command, args))
        return {"runtime": self.label, "command": command, "args": list(args)}


def fresh_catalog() -> dict[str, dict[str, JSON]]:
    """A fresh copy of the cases' catalog: a wrapper that edits one in place edits only its own."""
    return {
        "echo": {"description": "Returns its input.", "version": "1.0"},
        "writer": {"description": "Writes through the stores in its context."},
        "env": {"description": "Returns the env it sees."},
        "fails": {"description": "Raises."},
        "command": {"description": "Runs a command through its context.", "tags": ["tools"]},
    }


_KEPT_CALLS: Final[deque[InvocationContext]] = deque(maxlen=16)
"""
The last contexts a probe's handler got from an app built with another probe's options:
the wrapper called a handler it kept from an earlier app. Each probe has its own
workspace, so a context names the app that called the handler.
"""


@final
class Probe:
    """The options of one case, with handlers, loaders and factories that record their use."""

    def __init__(self) -> None:
        self.loaded: list[str] = []
        self.contexts: list[InvocationContext] = []
        self.factory_loads: list[str] = []
        self.factory_calls: list[str] = []
        self.runtimes: dict[str, ProbeRuntime] = {}
        self.secret = f"secret-{uuid.uuid4().hex}"
        self.run_tag = uuid.uuid4().hex[:6]
        self.workspace = MemoryWorkspace()
        self.session_events = MemorySessionEvents()
        self.env: dict[str, str] = {"GREETING": "hello", "REGION": "eu-west"}
        self.catalog = fresh_catalog()

    def context(self) -> InvocationContext:
        """The context of the last invocation the agent's handler got; there must be one."""
        if not self.contexts:
            self.expect_own_handlers("the invocation answered 200")
            raise AssertionError(
                "the invocation answered 200, but no agent's handler was called: the wrapper "
                "answered for it"
            )
        return self.contexts[-1]

    def kept_handler_called(self) -> bool:
        """Whether this probe's app called a handler that another probe's app loaded."""
        return any(context.workspace_store is self.workspace for context in _KEPT_CALLS)

    def expect_own_handlers(self, when: str) -> None:
        """Blocks the case when its app called a handler kept from an earlier app."""
        if self.kept_handler_called():
            raise AssertionError(
                f"blocked: {when}, but the app called a handler kept from an app built before, "
                f"with another catalog, not one its own loaders gave; handlers_load_lazily "
                f"owns that"
            )

    def _called(self, context: InvocationContext) -> None:
        self.contexts.append(context)
        if context.workspace_store is not self.workspace:
            _KEPT_CALLS.append(context)

    def runtime(self, label: str) -> ProbeRuntime:
        if label not in self.runtimes:
            self.runtimes[label] = ProbeRuntime(label, self.run_tag)
        return self.runtimes[label]

    def factory(self, label: str) -> Callable[[], Runtime]:
        def make() -> Runtime:
            self.factory_calls.append(label)
            return self.runtime(label)

        return make

    def factory_loader(self, label: str) -> Callable[[], Callable[[], Runtime]]:
        def load() -> Callable[[], Runtime]:
            self.factory_loads.append(label)
            return self.factory(label)

        return load

    def failing_loader(self) -> Callable[[], Handler]:
        def load() -> Handler:
            self.loaded.append("failing")
            raise ImportError(f"the loader failed: {self.secret}")

        return load

    def failing_factory(self) -> Callable[[], Runtime]:
        def make() -> Runtime:
            self.factory_calls.append("failing")
            raise RuntimeError(f"the runtime factory failed: {self.secret}")

        return make

    def loader(self, agent: str) -> Callable[[], Handler]:
        handler = getattr(self, f"_agent_{agent}")

        def load() -> Handler:
            self.loaded.append(agent)
            return handler  # type: ignore[no-any-return]

        return load

    async def _agent_echo(self, context: InvocationContext, body: dict[str, JSON]) -> JSON:
        self._called(context)
        return {"input": body}

    async def _agent_writer(self, context: InvocationContext, body: dict[str, JSON]) -> JSON:
        self._called(context)
        if context.workspace_store is None or context.session_event_store is None:
            raise RuntimeError("the context holds no store")
        await context.workspace_store.write("/from-agent.txt", b"written by the agent")
        await context.session_event_store.create_session("from-agent", metadata={"by": "agent"})
        await context.session_event_store.append("from-agent", Event("e-1", 0, {"n": 1}))
        return {"written": True}

    async def _agent_env(self, context: InvocationContext, body: dict[str, JSON]) -> JSON:
        self._called(context)
        return {"env": dict(context.env)}

    async def _agent_fails(self, context: InvocationContext, body: dict[str, JSON]) -> JSON:
        self._called(context)
        raise RuntimeError(f"the agent failed: {self.secret}")

    async def _agent_command(self, context: InvocationContext, body: dict[str, JSON]) -> JSON:
        self._called(context)
        command = str(body.get("command"))
        args = body.get("args", [])
        return await context.run_command(command, *map(str, args if isinstance(args, list) else []))

    def options(self, **overrides: Any) -> InvocationOptions:
        settings: dict[str, Any] = {
            "catalog": self.catalog,
            "handlers": {agent: self.loader(agent) for agent in self.catalog},
            "env": self.env,
            "workspace_store": self.workspace,
            "session_event_store": self.session_events,
            "runtime": self.runtime("given"),
        }
        settings.update(overrides)
        return InvocationOptions(**settings)


async def build_app(api: InvocationAPI, options: InvocationOptions) -> Metered:
    """The app the wrapper builds, metered; a wrapper that raises blocks the case."""
    try:
        app = api.build(options)
    except Exception as error:
        raise AssertionError(
            f"blocked: the wrapper {callable_name(api.wrapper)} raised {error!r} building "
            f"the app; the wrapper owns that"
        ) from error
    return Metered(app)


def response_json(response: httpx.Response, what: str) -> Any:
    """The response's JSON body, or a failure that shows what came instead."""
    try:
        return response.json()
    except ValueError:
        raise AssertionError(
            f"{what}: expected a JSON body, got {response.status_code} with "
            f"{short_repr(response.content)}"
        ) from None


def json_body(value: JSON) -> bytes:
    return json.dumps(value).encode()


JSON_HEADERS: Final = {"content-type": "application/json"}


async def post_json(
    client: httpx.AsyncClient,
    agent: str,
    body: JSON,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    return await client.post(
        f"/agents/{agent}/invoke",
        content=json_body(body),
        headers={**JSON_HEADERS, **(headers or {})},
    )


async def invoke_agent(
    client: httpx.AsyncClient,
    agent: str,
    body: JSON,
    headers: Mapping[str, str] | None = None,
) -> tuple[httpx.Response, dict[str, Any]]:
    """An invocation the case needs to succeed; one that does not blocks the case."""
    response = await post_json(client, agent, body, headers)
    envelope = response_json(response, f"blocked: POST /agents/{agent}/invoke")
    if (
        response.status_code != 200
        or not isinstance(envelope, dict)
        or envelope.get("ok") is not True
    ):
        raise AssertionError(
            f"blocked: POST /agents/{agent}/invoke answered {response.status_code} with "
            f"{short_repr(envelope)}; invoke_returns_envelope owns that"
        )
    return response, envelope


async def answer_of(what: str, request: Awaitable[httpx.Response]) -> httpx.Response:
    """The response; an app that raised instead of answering fails with what it raised."""
    try:
        return await request
    except Exception as error:
        raise AssertionError(f"{what}: the app raised {error!r} instead of answering") from error


def expect_error(
    response: httpx.Response, what: str, status: int, code: str, *, leak: str | None = None
) -> dict[str, Any]:
    """Check an error envelope: its status, its shape, its code; return it."""
    envelope = response_json(response, what)
    if response.status_code != status:
        raise AssertionError(
            f"{what}: expected {status} with error code {code!r}, got "
            f"{response.status_code} with {short_repr(envelope)}"
        )
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if (
        not isinstance(envelope, dict)
        or envelope.get("ok") is not False
        or not isinstance(error, dict)
        or not isinstance(error.get("message"), str)
        or not isinstance(envelope.get("request_id"), str)
    ):
        raise AssertionError(
            f"{what}: expected the error envelope {{'ok': False, 'error': {{'code': ..., "
            f"'message': ...}}, 'request_id': ...}}, got {short_repr(envelope)}"
        )
    if error.get("code") != code:
        raise AssertionError(
            f"{what}: expected error code {code!r}, got {error.get('code')!r} in "
            f"{short_repr(envelope)}"
        )
    if leak is not None and leak in response.text:
        raise AssertionError(f"{what}: the response shows the agent's exception: {response.text!r}")
    return envelope


async def post_chunks(
    client: httpx.AsyncClient,
    path: str,
    data: bytes,
    size: int,
    *,
    sized: bool = False,
    headers: Mapping[str, str] = JSON_HEADERS,
    method: str = "POST",
) -> httpx.Response:
    """
    Send ``data`` in pieces of ``size`` bytes: chunked on the wire, or with a
    content-length if ``sized``. Any body an app may refuse half-way goes this way.
    """
    import httpx

    class Chunks(httpx.AsyncByteStream):
        # An iterator, not an async generator (as httpx's own streams are): one
        # refused half-way is not left unfinished, for trio to warn about.
        def __init__(self) -> None:
            self._pieces = iter([data[start : start + size] for start in range(0, len(data), size)])

        def __aiter__(self) -> AsyncIterator[bytes]:
            return self

        async def __anext__(self) -> bytes:
            try:
                return next(self._pieces)
            except StopIteration:
                raise StopAsyncIteration from None

    request = client.build_request(method, path, headers=headers)
    request.headers.pop("content-length", None)
    if sized:
        request.headers["content-length"] = str(len(data))
    else:
        request.headers["transfer-encoding"] = "chunked"
    request.stream = Chunks()
    return await client.send(request)
