"""
The invocation profile: a host's HTTP wrapper for agent apps.

The host writes a **wrapper**: a callable that takes one :class:`InvocationOptions`
and returns an ASGI application serving a static agent catalog and agent
invocations. The options carry only explicit capabilities that the host
created; the agent's handler receives them, and the request ID, in an
:class:`InvocationContext`. :func:`create_app` is the reference handler: a
plain ASGI callable, with no web framework. It is built on the rules a host on
another framework keeps, which are public: :func:`choose_request_id`,
:func:`is_json_content_type`, :func:`decode_json`, :func:`encode_json`,
:func:`error_envelope`, :func:`resolve_runtime` and :class:`AgentLoader`.

Passing the profile establishes, for one wrapper:

- ``GET /manifest`` and ``GET /agents`` serve the static catalog, which no
  request changes;
- ``POST /agents/{agent}/invoke`` with a JSON object answers 200 with the
  success envelope, whether the body came whole or in chunks;
- the request ID is taken from ``x-request-id`` when given, generated
  otherwise, and echoed in the envelope, the response header and the context;
- the stores and the runtime reach the context as the very objects passed, so
  what an agent writes lands in the host's stores; ``env`` holds exactly the
  host's data (the mapping, or a read-only view or copy of it), left as it was,
  and the process environment is invisible through it;
- ``runtime`` wins over ``runtime_factory``, which wins over
  ``runtime_factory_name``; handler loaders, ``runtime_factory`` and named
  factories load lazily, at the first invocation that needs them, once;
- bad requests get stable error envelopes with documented status codes and
  error codes (unknown agent, invalid body, a body over the limit, refused
  without reading more than the limit, unknown routes and methods), checked in
  a fixed order; an agent, a loader or a factory that raises gets a 500 that
  does not leak its exception unless the host allows it; every response is
  JSON and carries the request ID; and commands run only when granted, by
  their whole name.

It does not establish streaming responses, authentication or authorisation,
deployment descriptors, scheduling or concurrency limits, secrets handling,
lifespan events, WebSockets, or performance. Requests are driven with httpx
(``pip install 'conformkit[http]'``), in-process through its
``ASGITransport`` or over loopback against a live server (:class:`LiveServer`).
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterator,
    Mapping,
    MutableMapping,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, final, get_args

from .._exceptions import FeatureUnavailable
from .._explain import error_line
from .._feature import Feature
from .._implementation import FeatureImplementation
from .._scope import FeatureScope
from .._suite import ContractSuite
from .._util import callable_name, short_repr
from ._support import PointAt
from .session_events import JSON, Event, MemorySessionEvents, SessionEventsAPI
from .workspace import MemoryWorkspace, WorkspaceAPI

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ERROR_STATUS",
    "HOST_PREFIX",
    "ROUTE_HEADER",
    "ASGIApp",
    "AgentLoader",
    "CommandNotGranted",
    "Handler",
    "InProcess",
    "InvocationAPI",
    "InvocationCase",
    "InvocationContext",
    "InvocationError",
    "InvocationOptions",
    "LiveServer",
    "MountedReferenceImplementation",
    "NoRuntime",
    "Placement",
    "ReferenceImplementation",
    "Runtime",
    "Wrapper",
    "WrapperImplementation",
    "choose_request_id",
    "create_app",
    "decode_json",
    "encode_json",
    "error_envelope",
    "feature",
    "implementations",
    "is_json_content_type",
    "resolve_runtime",
    "suite",
]

# --------------------------------------------------------------------------- API and errors

_Scope: TypeAlias = MutableMapping[str, Any]
_Message: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[_Message]]
_Send: TypeAlias = Callable[[_Message], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[_Scope, _Receive, _Send], Awaitable[None]]
"""An ASGI 3 application: ``await app(scope, receive, send)``."""


class Runtime(Protocol):
    """The runtime capability: what runs the commands an agent was granted."""

    async def run(self, command: str, *args: str) -> JSON:
        """Run ``command`` with ``args`` and return what it gave, as JSON."""
        ...


Handler: TypeAlias = Callable[["InvocationContext", dict[str, JSON]], Awaitable[JSON]]
"""An agent's handler: ``await handler(context, body)`` gives the invocation's result."""


class InvocationError(Exception):
    """Base class of the errors an agent's context raises."""


class CommandNotGranted(InvocationError, PermissionError):
    """
    The agent asked to run a command the host did not grant; nothing ran.

    The reference handler answers an invocation that lets it escape with 403 and
    the error code ``command_not_granted``.
    """


class NoRuntime(InvocationError, RuntimeError):
    """A granted command was asked for, but the host gave no runtime to run it."""


_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class InvocationOptions:
    """
    What a host passes to its wrapper: explicit capabilities, and nothing ambient.

    The options are frozen; the objects they hold are passed on as they are, never
    copied, so that an agent's context holds the very objects the host made.

    :ivar catalog: the static agent catalog: each agent's name and its manifest
        entry (a JSON object: a description, and whatever else a manifest needs).
    :ivar handlers: each agent's loader: a zero-argument callable that imports or
        builds the agent's handler when it is first needed. Every agent in the
        catalog has one, and no other.
    :ivar env: plain data from trusted host code; the agent sees this mapping and
        nothing of ``os.environ``.
    :ivar workspace_store: a :class:`~conformkit.profiles.workspace.WorkspaceAPI`.
    :ivar session_event_store: a
        :class:`~conformkit.profiles.session_events.SessionEventsAPI`.
    :ivar runtime: the runtime itself; wins over the two forms below.
    :ivar runtime_factory: a zero-argument callable that makes the runtime; wins
        over ``runtime_factory_name``.
    :ivar runtime_factory_name: the name of a factory in ``runtime_factory_module_map``.
    :ivar runtime_factory_module_map: each factory name's loader: a zero-argument
        callable that imports the factory when it is first needed.
    :ivar max_body_bytes: the most bytes an invocation's body may have.
    :ivar grants: the commands an agent may run; ``None`` (the default) grants none.
    :ivar expose_errors: whether the 500 envelope of an agent that raised shows
        the exception; it never does by default.
    :raises TypeError: for a value of the wrong type.
    :raises ValueError: for an agent without a handler or a catalog entry, an
        agent name that is not a plain name, a factory name missing from the
        map, or a body limit below 1.
    """

    catalog: Mapping[str, Mapping[str, JSON]]
    handlers: Mapping[str, Callable[[], Handler]]
    env: Mapping[str, str] = field(default_factory=dict)
    workspace_store: WorkspaceAPI | None = None
    session_event_store: SessionEventsAPI | None = None
    runtime: Runtime | None = None
    runtime_factory: Callable[[], Runtime] | None = None
    runtime_factory_name: str | None = None
    runtime_factory_module_map: Mapping[str, Callable[[], Callable[[], Runtime]]] = field(
        default_factory=dict
    )
    max_body_bytes: int = _DEFAULT_MAX_BODY_BYTES
    grants: Collection[str] | None = None
    expose_errors: bool = False

    def __post_init__(self) -> None:
        for name in ("catalog", "handlers", "env", "runtime_factory_module_map"):
            if not isinstance(getattr(self, name), Mapping):
                raise TypeError(
                    f"InvocationOptions.{name} must be a mapping, got "
                    f"{short_repr(getattr(self, name))}"
                )
        for agent in (*self.catalog, *self.handlers):
            if not isinstance(agent, str) or not _NAME.match(agent):
                raise ValueError(
                    f"InvocationOptions: agent name {agent!r} is not a plain name (letters, "
                    f"digits, '.', '_', '-', starting with a letter or digit)"
                )
        for agent, entry in self.catalog.items():
            if not isinstance(entry, Mapping):
                raise TypeError(
                    f"InvocationOptions.catalog[{agent!r}] must be a JSON object, got "
                    f"{short_repr(entry)}"
                )
        missing = sorted(set(self.catalog) - set(self.handlers))
        extra = sorted(set(self.handlers) - set(self.catalog))
        if missing or extra:
            raise ValueError(
                "InvocationOptions: the catalog and the handlers must name the same agents; "
                + "; ".join(
                    part
                    for part in (
                        f"no handler for {missing}" if missing else "",
                        f"no catalog entry for {extra}" if extra else "",
                    )
                    if part
                )
            )
        for agent, loader in self.handlers.items():
            if not callable(loader):
                raise TypeError(
                    f"InvocationOptions.handlers[{agent!r}] must be a zero-argument loader, "
                    f"got {short_repr(loader)}"
                )
        factory = self.runtime_factory_name
        if factory is not None and factory not in self.runtime_factory_module_map:
            raise ValueError(
                f"InvocationOptions.runtime_factory_name {factory!r} is not in "
                f"runtime_factory_module_map (it has {sorted(self.runtime_factory_module_map)})"
            )
        limit = self.max_body_bytes
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"InvocationOptions.max_body_bytes must be an int, got {limit!r}")
        if limit < 1:
            raise ValueError(f"InvocationOptions.max_body_bytes must be at least 1, got {limit}")
        if isinstance(self.grants, str | bytes):
            raise TypeError(
                f"InvocationOptions.grants must be a collection of command names, got the "
                f"string {self.grants!r}; write {{{self.grants!r}}}"
            )


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class InvocationContext:
    """
    What an agent's handler receives: the host's capabilities and the request ID.

    :ivar request_id: the ``x-request-id`` the request gave, or a generated one.
    :ivar env: the host's ``env`` data: the mapping itself, or a read-only view or
        copy of it; never anything else, and never written into.
    :ivar workspace_store: the host's workspace store, the very object.
    :ivar session_event_store: the host's session event store, the very object.
    :ivar runtime: the runtime, as the options' precedence resolved it, or ``None``.
    :ivar grants: the commands the agent may run through :meth:`run_command`.
    """

    request_id: str
    env: Mapping[str, str]
    workspace_store: WorkspaceAPI | None
    session_event_store: SessionEventsAPI | None
    runtime: Runtime | None
    grants: Collection[str] | None

    async def run_command(self, command: str, *args: str) -> JSON:
        """
        Run a granted command through the runtime.

        :raises CommandNotGranted: if the host did not grant ``command``; nothing runs.
        :raises NoRuntime: if it is granted but there is no runtime.
        """
        if self.grants is None or command not in self.grants:
            granted = "no command is granted" if not self.grants else "it is not granted"
            raise CommandNotGranted(f"the agent may not run {command!r}: {granted}")
        if self.runtime is None:
            raise NoRuntime(f"{command!r} is granted, but the host gave no runtime to run it")
        return await self.runtime.run(command, *args)


Wrapper: TypeAlias = Callable[[InvocationOptions], ASGIApp]
"""The host's wrapper: builds the ASGI app that serves the options."""


@final
class InProcess:
    """The app is driven in-process, through httpx's ``ASGITransport``: the default."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "InProcess()"


ROUTE_HEADER: Final = "x-conformkit-app"


@final
class LiveServer:
    """
    The app is driven over loopback, through a real ASGI server that serves this object.

    A ``LiveServer`` is itself an ASGI app: serve it with uvicorn, hypercorn or any
    ASGI server, listening at ``base_url``. Each case mounts the app its wrapper
    built, and its requests carry a header that routes them there; the header is
    removed before the app sees the request. A request for no mounted app gets 404.
    Lifespan events are answered here and reach no app.

    :param base_url: where the server listens, ``http://127.0.0.1:8000``.
    """

    __slots__ = ("_apps", "base_url")

    def __init__(self, base_url: str) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"LiveServer: base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._apps: dict[str, ASGIApp] = {}

    def __repr__(self) -> str:
        return f"LiveServer({self.base_url!r})"

    @contextlib.contextmanager
    def mount(self, app: ASGIApp) -> Iterator[str]:
        """Mount ``app`` for the block; yield the route header's value that reaches it."""
        token = uuid.uuid4().hex
        self._apps[token] = app
        try:
            yield token
        finally:
            del self._apps[token]

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rpartition(".")[2]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        route = ROUTE_HEADER.encode()
        headers = [(name, value) for name, value in scope.get("headers", ()) if name != route]
        tokens = [value for name, value in scope.get("headers", ()) if name == route]
        app = self._apps.get(tokens[0].decode("latin-1")) if len(tokens) == 1 else None
        if scope["type"] != "http":  # a WebSocket: no case opens one
            await send({"type": "websocket.close", "code": 1003})
            return
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no app is mounted here"})
            return
        await app({**scope, "headers": headers}, receive, send)


Placement: TypeAlias = InProcess | LiveServer
"""Where the cases reach the app: in-process, or through a live server."""


def _require_httpx() -> None:
    try:
        import httpx  # noqa: F401
    except ImportError as error:
        raise FeatureUnavailable(
            "conformkit.profiles.invocation drives apps over HTTP with httpx, which is not "
            "installed: pip install 'conformkit[http]'"
        ) from error


@final
@dataclass(frozen=True, slots=True)
class InvocationAPI:
    """
    What the cases run against: the host's wrapper, and where its apps are reached.

    :ivar wrapper: builds an app from the options.
    :ivar placement: :class:`InProcess` (the default) or a :class:`LiveServer`.
    :ivar prefix: the path under which the app serves its routes, ``/api`` for an
        app that serves ``/api/manifest``; empty by default.
    :raises FeatureUnavailable: if httpx is not installed.
    """

    wrapper: Wrapper
    placement: Placement = field(default_factory=InProcess)
    prefix: str = ""

    def __post_init__(self) -> None:
        if not callable(self.wrapper):
            raise TypeError(
                f"InvocationAPI: wrapper must be callable, got {short_repr(self.wrapper)}"
            )
        if not isinstance(self.placement, InProcess | LiveServer):
            raise TypeError(
                f"InvocationAPI: placement must be InProcess() or a LiveServer, got "
                f"{short_repr(self.placement)}"
            )
        if self.prefix and (not self.prefix.startswith("/") or self.prefix.endswith("/")):
            raise ValueError(
                f"InvocationAPI: prefix must be empty or start with '/' and not end with it, "
                f"got {self.prefix!r}"
            )
        _require_httpx()

    def build(self, options: InvocationOptions) -> ASGIApp:
        """The app the wrapper builds for ``options``."""
        return self.wrapper(options)

    @contextlib.asynccontextmanager
    async def client(self, app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
        """
        An httpx client whose requests reach ``app``, by path relative to the prefix.

        What ``app`` does against the ASGI protocol (answering twice, a body before
        the response's start, returning without an answer) fails the block with an
        :exc:`AssertionError` that says so, in every placement.
        """
        checked = _Checked(app)
        try:
            async with self._client(checked) as client:
                yield client
        except Exception as error:
            checked.raise_broken(error)
            raise
        checked.raise_broken(None)

    @contextlib.asynccontextmanager
    async def _client(self, app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
        import httpx

        if isinstance(self.placement, LiveServer):
            with self.placement.mount(app) as token:
                async with httpx.AsyncClient(
                    base_url=self.placement.base_url + self.prefix,
                    headers={ROUTE_HEADER: token},
                    # Plain HTTP needs no TLS: loading the certificates would cost
                    # more than all of a case's requests.
                    verify=self.placement.base_url.startswith("https://"),
                ) as client:
                    yield client
        else:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://testserver" + self.prefix,
            ) as client:
                yield client


@final
class _Checked:
    """
    The app under test, held to the ASGI protocol for HTTP: what it does against it
    is recorded, never passed on, and an answer it left unfinished is finished with a
    500, so that the client and the server see a whole response in every placement.

    The message that ends a response is held until the app returns: whatever the app
    sends after it is recorded before the client has the response. Once the app has
    ended its response, ``receive`` still gives it the rest of the body, then
    ``http.disconnect``, as a server does.
    """

    __slots__ = ("app", "broken")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.broken: list[str] = []

    def raise_broken(self, error: Exception | None) -> None:
        """Raise what the app first did against the protocol, if anything, from ``error``."""
        if self.broken:
            raise AssertionError(self.broken[0]) from error

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = f"{scope.get('method')} {scope.get('path')}"
        started = False
        last: _Message | None = None
        body_over = False

        def broke(what: str) -> None:
            self.broken.append(what.format(request=request))

        async def checked_send(message: _Message) -> None:
            nonlocal started, last
            kind = message.get("type")
            if last is not None:
                broke(f"the app answered {{request}}, then sent {kind!r}: it answers once")
            elif kind == "http.response.start" and not started:
                started = True
                await send(message)
            elif kind == "http.response.start":
                broke("the app sent 'http.response.start' twice answering {request}")
            elif kind != "http.response.body":
                broke(f"the app sent {kind!r} answering {{request}}: not an HTTP response message")
            elif not started:
                broke(
                    "the app sent 'http.response.body' before 'http.response.start' "
                    "answering {request}"
                )
            elif message.get("more_body", False):
                await send(message)
            else:
                last = message

        async def checked_receive() -> _Message:
            nonlocal body_over
            if last is not None and body_over:
                return {"type": "http.disconnect"}
            message = await receive()
            body_over = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        try:
            await self.app(scope, checked_receive, checked_send)
        except Exception:
            if last is not None:  # it answered, then failed: the answer stands
                await send(last)
            raise
        if last is None:
            broke(
                "the app returned without finishing its response to {request} (no body "
                "message without more_body)"
                if started
                else "the app returned without responding to {request}"
            )
            if not started:
                await send({"type": "http.response.start", "status": 500, "headers": []})
            last = {"type": "http.response.body", "body": b""}
        await send(last)


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

_SEE: Final = PointAt("docs/profile-invocation.md#failure-modes")
_CHUNK: Final = 256
"""The most body bytes the cases hand the app per ``receive()``, whatever the server read."""
_LIMIT: Final = 1024
"""The body limit of the cases about it."""


@final
class _Metered:
    """
    The app under test, fed the request body in pieces of at most ``_CHUNK`` bytes,
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

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        index = len(self.pulled)
        self.pulled.append(0)
        self.before_response.append(None)
        pending = b""
        more = True

        async def metered() -> _Message:
            nonlocal pending, more
            if not pending:
                if not more:
                    return await receive()  # the body is over: a disconnect, eventually
                message = await receive()
                if message["type"] != "http.request":
                    return message
                pending = bytes(message.get("body", b""))
                more = bool(message.get("more_body", False))
            piece, pending = pending[:_CHUNK], pending[_CHUNK:]
            self.pulled[index] += len(piece)
            return {"type": "http.request", "body": piece, "more_body": bool(pending) or more}

        async def noted(message: _Message) -> None:
            if message["type"] == "http.response.start" and self.before_response[index] is None:
                self.before_response[index] = self.pulled[index]
            await send(message)

        await self.app(scope, metered, noted)


@final
class _Runtime:
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


def _catalog() -> dict[str, dict[str, JSON]]:
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
class _Probe:
    """The options of one case, with handlers, loaders and factories that record their use."""

    def __init__(self) -> None:
        self.loaded: list[str] = []
        self.contexts: list[InvocationContext] = []
        self.factory_loads: list[str] = []
        self.factory_calls: list[str] = []
        self.runtimes: dict[str, _Runtime] = {}
        self.secret = f"secret-{uuid.uuid4().hex}"
        self.run_tag = uuid.uuid4().hex[:6]
        self.workspace = MemoryWorkspace()
        self.session_events = MemorySessionEvents()
        self.env: dict[str, str] = {"GREETING": "hello", "REGION": "eu-west"}
        self.catalog = _catalog()

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

    def runtime(self, label: str) -> _Runtime:
        if label not in self.runtimes:
            self.runtimes[label] = _Runtime(label, self.run_tag)
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


async def _build(api: InvocationAPI, options: InvocationOptions) -> _Metered:
    """The app the wrapper builds, metered; a wrapper that raises blocks the case."""
    try:
        app = api.build(options)
    except Exception as error:
        raise AssertionError(
            f"blocked: the wrapper {callable_name(api.wrapper)} raised {error!r} building "
            f"the app; the wrapper owns that"
        ) from error
    return _Metered(app)


def _json(response: httpx.Response, what: str) -> Any:
    """The response's JSON body, or a failure that shows what came instead."""
    try:
        return response.json()
    except ValueError:
        raise AssertionError(
            f"{what}: expected a JSON body, got {response.status_code} with "
            f"{short_repr(response.content)}"
        ) from None


def _json_body(value: JSON) -> bytes:
    return json.dumps(value).encode()


_JSON_HEADERS: Final = {"content-type": "application/json"}


async def _post(
    client: httpx.AsyncClient,
    agent: str,
    body: JSON,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    return await client.post(
        f"/agents/{agent}/invoke",
        content=_json_body(body),
        headers={**_JSON_HEADERS, **(headers or {})},
    )


async def _invoke(
    client: httpx.AsyncClient,
    agent: str,
    body: JSON,
    headers: Mapping[str, str] | None = None,
) -> tuple[httpx.Response, dict[str, Any]]:
    """An invocation the case needs to succeed; one that does not blocks the case."""
    response = await _post(client, agent, body, headers)
    envelope = _json(response, f"blocked: POST /agents/{agent}/invoke")
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


async def _answered(what: str, request: Awaitable[httpx.Response]) -> httpx.Response:
    """The response; an app that raised instead of answering fails with what it raised."""
    try:
        return await request
    except Exception as error:
        raise AssertionError(f"{what}: the app raised {error!r} instead of answering") from error


def _expect_error(
    response: httpx.Response, what: str, status: int, code: str, *, leak: str | None = None
) -> dict[str, Any]:
    """Check an error envelope: its status, its shape, its code; return it."""
    envelope = _json(response, what)
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


async def _served_catalog(client: httpx.AsyncClient, when: str) -> None:
    """The manifest and the listing are the catalog as the case gave it, unchanged."""
    catalog = _catalog()
    for path, expected in (
        ("/manifest", {"agents": catalog}),
        ("/agents", {"agents": [{"name": name, **entry} for name, entry in catalog.items()]}),
    ):
        response = await client.get(path)
        served = _json(response, f"GET {path}{when}")
        if response.status_code != 200 or served != expected:
            raise AssertionError(
                f"GET {path}{when}: expected 200 with {short_repr(expected)}, got "
                f"{response.status_code} with {short_repr(served)}"
            )


@suite.case("catalog_is_served")
async def _catalog_is_served(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        async with api.client(app) as client:
            await _served_catalog(client, "")
            # Requests that must leave the catalog as it is: listing it again, an
            # invocation, and a POST to the listing, which is no registration. How the
            # last two are answered is other cases' business.
            await _served_catalog(client, " after a first listing")
            with contextlib.suppress(Exception):
                await _post(client, "echo", {"text": "hi"}, {"x-request-id": "catalog-check"})
            with contextlib.suppress(Exception):
                await client.post(
                    "/agents",
                    content=_json_body({"name": "intruder", "description": "Not in the catalog."}),
                    headers=_JSON_HEADERS,
                )
            await _served_catalog(client, " after an invocation and a POST /agents")
        if probe.catalog != _catalog():
            raise AssertionError(
                f"serving requests changed the host's catalog in place: it now holds "
                f"{short_repr(probe.catalog)}"
            )


async def _post_chunks(
    client: httpx.AsyncClient,
    path: str,
    data: bytes,
    size: int,
    *,
    sized: bool = False,
    headers: Mapping[str, str] = _JSON_HEADERS,
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


@suite.case("invoke_returns_envelope")
async def _invoke_returns_envelope(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        body: JSON = {"text": "héllo", "numbers": [1, 2.5, None], "nested": {"flag": True}}
        async with api.client(app) as client:
            for how in ("whole", "in chunks", *_JSON_VARIANTS):
                if how == "whole":
                    response = await _post(client, "echo", body)
                elif how == "in chunks":
                    response = await _post_chunks(
                        client, "/agents/echo/invoke", _json_body(body), 7
                    )
                else:
                    response = await _post(client, "echo", body, {"content-type": how})
                    how = f"whole, with the content type {how!r}"
                what = f"POST /agents/echo/invoke with a JSON object sent {how}"
                envelope = _json(response, what)
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
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        async with api.client(app) as client:
            given = f"req-{uuid.uuid4().hex[:12]}"
            response, envelope = await _invoke(client, "echo", {}, {"x-request-id": given})
            seen = probe.context().request_id
            got = (envelope.get("request_id"), response.headers.get("x-request-id"), seen)
            if got != (given, given, given):
                raise AssertionError(
                    f"with x-request-id {given!r}: expected it in the envelope, the response "
                    f"header and the context; got {got[0]!r}, {got[1]!r} and {got[2]!r}"
                )
            generated = []
            for _ in range(2):
                response, envelope = await _invoke(client, "echo", {})
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
            response, envelope = await _invoke(client, "echo", {}, {"x-request-id": longest})
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
                response, envelope = await _invoke(client, "echo", {}, {"x-request-id": refused})
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
                ("POST", "/agents/nobody/invoke", _JSON_HEADERS),
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


@suite.case("capabilities_reach_context")
async def _capabilities_reach_context(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        async with api.client(app) as client:
            await _invoke(client, "writer", {})
        context = probe.context()
        if await probe.workspace.read("/from-agent.txt") != b"written by the agent":
            raise AssertionError(
                "the agent wrote /from-agent.txt through its context's workspace_store, but "
                "the host's workspace store does not have it: the context held another store"
            )
        if await probe.session_events.load_session("from-agent") is None:
            raise AssertionError(
                "the agent created a session through its context's session_event_store, but "
                "the host's store does not have it: the context held another store"
            )
        for name, expected in (
            ("workspace_store", probe.workspace),
            ("session_event_store", probe.session_events),
            ("runtime", probe.runtime("given")),
        ):
            got = getattr(context, name)
            if got is not expected:
                kept = (
                    "; the wrapper kept it from an app it built for an earlier case"
                    if isinstance(got, _Runtime) and got.run_tag != probe.run_tag
                    else ""
                )
                raise AssertionError(
                    f"the context's {name} is {short_repr(got)}, not the object the host "
                    f"passed ({short_repr(expected)}){kept}"
                )


_ENV_PROBE: Final = "CONFORMKIT_INVOCATION_AMBIENT"


@suite.case("env_is_host_data")
async def _env_is_host_data(api: InvocationAPI) -> None:
    import os

    with _SEE:
        probe = _Probe()
        given = dict(probe.env)
        name = f"{_ENV_PROBE}_{uuid.uuid4().hex[:8].upper()}"
        os.environ[name] = "ambient"
        try:
            app = await _build(api, probe.options())
            _expect_env_unchanged(probe, given, "building the app")
            async with api.client(app) as client:
                for invocation in ("a first", "a second"):
                    _, envelope = await _invoke(client, "env", {})
                    context = probe.context()
                    # A read-only view or a copy of the host's data is fine; other data is not.
                    if dict(context.env) != given:
                        raise AssertionError(
                            f"{invocation} invocation: the context's env is "
                            f"{short_repr(dict(context.env))}, not the host's data "
                            f"({short_repr(given)})"
                        )
                    seen = envelope.get("result")
                    if seen != {"env": given}:
                        raise AssertionError(
                            f"{invocation} invocation: the agent saw the env {short_repr(seen)}, "
                            f"expected exactly the host's {short_repr({'env': given})}; {name} is "
                            f"set only in os.environ"
                        )
                    _expect_env_unchanged(probe, given, f"{invocation} invocation")
        finally:
            del os.environ[name]


def _expect_env_unchanged(probe: _Probe, given: dict[str, str], when: str) -> None:
    if probe.env != given:
        added = sorted(set(probe.env) - set(given))
        changed = sorted(key for key in given if probe.env.get(key) != given[key])
        raise AssertionError(
            f"{when} wrote into the host's env mapping: added {short_repr(added)}, changed or "
            f"removed {short_repr(changed)}; it is the host's data, read-only to the wrapper"
        )


async def _runtime_seen(api: InvocationAPI, probe: _Probe, options: InvocationOptions) -> object:
    app = await _build(api, options)
    async with api.client(app) as client:
        await _invoke(client, "echo", {})
    return probe.context().runtime


@suite.case("runtime_wins_over_factory")
async def _runtime_wins_over_factory(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        options = probe.options(runtime=probe.runtime("given"), runtime_factory=probe.factory("f"))
        seen = await _runtime_seen(api, probe, options)
        if seen is not probe.runtime("given"):
            raise AssertionError(
                f"with both runtime and runtime_factory: the context got {short_repr(seen)}, "
                f"expected the runtime passed, {short_repr(probe.runtime('given'))}"
            )


@suite.case("factory_wins_over_factory_name")
async def _factory_wins_over_factory_name(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        options = probe.options(
            runtime=None,
            runtime_factory=probe.factory("factory"),
            runtime_factory_name="named",
            runtime_factory_module_map={"named": probe.factory_loader("named")},
        )
        seen = await _runtime_seen(api, probe, options)
        if seen is not probe.runtime("factory"):
            raise AssertionError(
                f"with both runtime_factory and runtime_factory_name: the context got "
                f"{short_repr(seen)}, expected what runtime_factory made, "
                f"{short_repr(probe.runtime('factory'))}"
            )


@suite.case("named_factory_loads_lazily")
async def _named_factory_loads_lazily(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        mapped = {label: probe.factory_loader(label) for label in ("named", "other")}
        app = await _build(
            api,
            probe.options(
                runtime=None, runtime_factory_name="named", runtime_factory_module_map=mapped
            ),
        )
        if probe.factory_loads:
            raise AssertionError(
                f"building the app loaded the named factories {probe.factory_loads}; "
                f"nothing should load before an invocation needs it"
            )
        async with api.client(app) as client:
            await client.get("/manifest")
            await client.get("/agents")
            if probe.factory_loads:
                raise AssertionError(
                    f"serving the catalog loaded the named factories {probe.factory_loads}"
                )
            for _ in range(2):
                await _invoke(client, "echo", {})
            if probe.factory_loads != ["named"]:
                raise AssertionError(
                    f"after two invocations with runtime_factory_name 'named': expected the "
                    f"entry 'named' loaded once, got the loads {probe.factory_loads}"
                )
            if probe.context().runtime is not probe.runtime("named"):
                raise AssertionError(
                    f"with runtime_factory_name 'named': the context got "
                    f"{short_repr(probe.context().runtime)}, expected what its factory made"
                )
        for form, wins in (
            ("runtime", {"runtime": probe.runtime("given")}),
            ("runtime_factory", {"runtime": None, "runtime_factory": probe.factory("factory")}),
        ):
            loads = len(probe.factory_loads)
            options = probe.options(
                runtime_factory_name="named", runtime_factory_module_map=mapped, **wins
            )
            app = await _build(api, options)
            async with api.client(app) as client:
                await _invoke(client, "echo", {})
            if len(probe.factory_loads) != loads:
                raise AssertionError(
                    f"with {form} given, which wins over runtime_factory_name, the named "
                    f"factory was loaded ({probe.factory_loads[loads:]})"
                )


@suite.case("runtime_factory_called_lazily")
async def _runtime_factory_called_lazily(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options(runtime=None, runtime_factory=probe.factory("f")))
        if probe.factory_calls:
            raise AssertionError(
                "building the app called runtime_factory(); it should be called when an "
                "invocation first needs the runtime"
            )
        async with api.client(app) as client:
            await client.get("/manifest")
            await client.get("/agents")
            if probe.factory_calls:
                raise AssertionError("serving the catalog called runtime_factory()")
            for _ in range(2):
                await _invoke(client, "echo", {})
            if probe.factory_calls != ["f"]:
                raise AssertionError(
                    f"after two invocations: expected runtime_factory() called once, it was "
                    f"called {len(probe.factory_calls)} times"
                )
            if probe.context().runtime is not probe.runtime("f"):
                raise AssertionError(
                    f"with only runtime_factory: the context got "
                    f"{short_repr(probe.context().runtime)}, expected what the factory made"
                )


@suite.case("handlers_load_lazily")
async def _handlers_load_lazily(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        if probe.loaded:
            raise AssertionError(
                f"building the app ran the handler loaders of {probe.loaded}; each should "
                f"run when its agent is first invoked"
            )
        async with api.client(app) as client:
            await client.get("/manifest")
            await client.get("/agents")
            if probe.loaded:
                raise AssertionError(
                    f"serving the catalog ran the handler loaders of {probe.loaded}"
                )
            await _invoke(client, "echo", {})
            await _invoke(client, "echo", {})
            if not probe.loaded and probe.kept_handler_called():
                raise AssertionError(
                    "after invoking 'echo' twice: no loader of this app ran; the app called a "
                    "handler kept from an app built before, with another catalog"
                )
            if probe.loaded != ["echo"]:
                raise AssertionError(
                    f"after invoking 'echo' twice: expected only its loader run, once; got the "
                    f"loads {probe.loaded}"
                )
            await _invoke(client, "env", {})
            if probe.loaded != ["echo", "env"]:
                raise AssertionError(
                    f"after invoking 'env' too: expected the loads ['echo', 'env'], got "
                    f"{probe.loaded}"
                )


@suite.case("unknown_agent_rejected")
async def _unknown_agent_rejected(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        async with api.client(app) as client:
            for agent in ("nobody", "Echo", "echo.v2"):
                what = f"POST /agents/{agent}/invoke"
                index = len(app.pulled)
                response = await _answered(what, _post(client, agent, {"text": "hi"}))
                _expect_error(response, what, 404, "unknown_agent")
                read = app.read_before_response(index)
                if read:
                    raise AssertionError(
                        f"{what}: the app read {read} bytes of the body before refusing the "
                        f"unknown agent; it should refuse it before reading any"
                    )


@suite.case("invalid_body_rejected")
async def _invalid_body_rejected(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options(runtime=None, runtime_factory=probe.factory("f")))
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
                    "/agents/echo/invoke", content=content, headers=_JSON_HEADERS
                )
                _expect_error(response, f"POST /agents/echo/invoke with {what}", status, code)
            for headers, what in (
                ({"content-type": "text/plain"}, "content type text/plain"),
                ({"content-type": "application/x-www-form-urlencoded"}, "a form content type"),
                ({}, "no content type"),
            ):
                response = await client.post(
                    "/agents/echo/invoke", content=b'{"a": 1}', headers=headers
                )
                _expect_error(
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
    empty = _json_body({"pad": ""})
    return _json_body({"pad": "x" * (size - len(empty))})


@suite.case("oversized_body_rejected")
async def _oversized_body_rejected(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options(max_body_bytes=_LIMIT))
        async with api.client(app) as client:
            response = await client.post(
                "/agents/echo/invoke", content=_padded(_LIMIT), headers=_JSON_HEADERS
            )
            if response.status_code != 200:
                raise AssertionError(
                    f"a body of exactly max_body_bytes ({_LIMIT}) bytes: expected 200, got "
                    f"{response.status_code} with {short_repr(response.content)}"
                )
            big = _padded(16 * _LIMIT)
            for how, content in (
                ("one byte over", _padded(_LIMIT + 1)),
                ("with a content-length", big),
                ("in chunks, with no content-length", big),
            ):
                what = f"a body of {len(content)} bytes {how}, over max_body_bytes {_LIMIT}"
                pulled = len(app.pulled)
                response = await _post_chunks(
                    client,
                    "/agents/echo/invoke",
                    content,
                    1024,
                    sized=not how.startswith("in chunks"),
                )
                _expect_error(response, what, 413, "body_too_large")
                read = app.read_before_response(pulled)
                if how.startswith("in chunks") and read > _LIMIT + _CHUNK:
                    raise AssertionError(
                        f"{what}: the app read {read} bytes of it before refusing it; it "
                        f"should stop once it has more than {_LIMIT}"
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
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options())
        async with api.client(app) as client:
            for method, path, allowed in (
                ("GET", "/agents/echo/invoke", "POST"),
                ("PUT", "/agents/echo/invoke", "POST"),
                ("POST", "/manifest", "GET"),
                ("POST", "/agents", "GET"),
                ("DELETE", "/agents", "GET"),
            ):
                response = await client.request(method, path, headers=_JSON_HEADERS)
                what = f"{method} {path}"
                _expect_error(response, what, 405, "method_not_allowed")
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
                response = await client.request(method, path, content=b"{}", headers=_JSON_HEADERS)
                _expect_error(response, f"{method} {path}", 404, "not_found")


@suite.case("agent_error_contained")
async def _agent_error_contained(api: InvocationAPI) -> None:
    with _SEE:
        probe = _Probe()
        for expose in (False, True):
            app = await _build(api, probe.options(expose_errors=expose))
            async with api.client(app) as client:
                response = await _post(client, "fails", {})
            what = f"an agent that raised, with expose_errors={expose}"
            probe.expect_own_handlers(what)
            envelope = _expect_error(
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
    with _SEE:
        probe = _Probe()
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
                    app = _Metered(api.build(options))
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
                    response = await _answered(what, _post(client, "echo", {}))
                said = f"{what}, with expose_errors={expose}"
                probe.expect_own_handlers(said)
                envelope = _expect_error(
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
    with _SEE:
        probe = _Probe()
        app = await _build(api, probe.options(max_body_bytes=_LIMIT))
        text = {"content-type": "text/plain"}
        big, big_object = b"x" * (16 * _LIMIT), _padded(16 * _LIMIT)
        echo, nobody = "/agents/echo/invoke", "/agents/nobody/invoke"
        # Each row: the earlier check, the later one, a request that fails both, and
        # one that fails only the earlier, which must be refused on its own first.
        rows: tuple[tuple[str, str, _Sent, _Sent], ...] = (
            (
                "not_found",
                "method_not_allowed",
                ("PUT", "/nowhere", _JSON_HEADERS, b"{}"),
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
                ("POST", nobody, _JSON_HEADERS, b"{}"),
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
                ("POST", echo, _JSON_HEADERS, big),
                ("POST", echo, _JSON_HEADERS, big_object),
            ),
        )

        async def refusal(request: _Sent) -> tuple[object, str]:
            method, path, headers, content = request
            try:
                response = await _post_chunks(
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
    with _SEE:
        probe = _Probe()
        runtime = probe.runtime("given")
        for grants, how in ((None, "no grants"), (frozenset(), "an empty grant set")):
            app = await _build(api, probe.options(grants=grants))
            async with api.client(app) as client:
                response = await _post(client, "command", {"command": "deploy", "args": ["prod"]})
            what = f"with {how}, an agent running 'deploy'"
            _expect_error(response, what, 403, "command_not_granted")
            if runtime.ran:
                raise AssertionError(f"with {how}, the runtime ran {runtime.ran}")
        app = await _build(api, probe.options(grants=frozenset({"build"})))
        async with api.client(app) as client:
            response = await _post(client, "command", {"command": "build", "args": ["x"]})
            seen = probe.contexts[-1].runtime if probe.contexts else runtime
            if seen is not runtime:
                raise AssertionError(
                    f"blocked: with 'build' granted, running it answered "
                    f"{response.status_code}; the context's runtime is {short_repr(seen)}, "
                    f"not the one the host passed; capabilities_reach_context owns that"
                )
            await _invoke(client, "command", {"command": "build", "args": ["y"]})
            if runtime.ran != [("build", ("x",)), ("build", ("y",))]:
                raise AssertionError(
                    f"with 'build' granted, an agent running it twice: expected the runtime to "
                    f"run ('build', ('x',)) then ('build', ('y',)), it ran {runtime.ran}"
                )
            for command in ("deploy", "build-and-deploy", "buil", "BUILD"):
                response = await _post(client, "command", {"command": command, "args": []})
                _expect_error(
                    response,
                    f"with only 'build' granted, an agent running {command!r}",
                    403,
                    "command_not_granted",
                )
        if len(runtime.ran) != 2:
            raise AssertionError(f"with only 'build' granted, the runtime ran {runtime.ran}")


# --------------------------------------------------------------------------- reference stores
# The reference handler, and a host that mounts it: the profile's bundled apps.

ERROR_STATUS: Final[Mapping[str, int]] = {
    "invalid_json": 400,
    "body_not_object": 400,
    "command_not_granted": 403,
    "not_found": 404,
    "unknown_agent": 404,
    "method_not_allowed": 405,
    "body_too_large": 413,
    "unsupported_media_type": 415,
    "agent_error": 500,
    "internal_error": 500,
}
"""The reference handler's error codes, and the status of each."""

# What a host reuses: the rules of the reference handler that any host keeps, whatever
# its framework. The reference handler is built on them, and a host on another framework
# calls them instead of re-deriving them.

_REQUEST_ID: Final = re.compile(r"^[\x21-\x7e]{1,128}$")
_JSON_TYPES: Final = re.compile(r"^application/(?:[\w.+-]+\+)?json$")


def choose_request_id(given: str | None) -> str:
    """
    The request ID of a request whose ``x-request-id`` header is ``given``.

    A given ID of 1 to 128 visible ASCII characters is kept; any other, or none,
    is replaced by a fresh hex UUID.

    :param given: the header's value, or ``None`` when the request has none.
    """
    if given is not None and _REQUEST_ID.match(given):
        return given
    return uuid.uuid4().hex


def is_json_content_type(content_type: str | None) -> bool:
    """
    Whether an invocation's ``content-type`` header says JSON.

    ``application/json`` and ``application/<anything>+json`` are JSON, in any case;
    parameters (``; charset=utf-8``) are ignored. ``None`` (no header) is not.
    """
    if content_type is None:
        return False
    return bool(_JSON_TYPES.match(content_type.partition(";")[0].strip().lower()))


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def decode_json(data: bytes) -> JSON:
    """
    The JSON value of an invocation's body: UTF-8, and strict JSON.

    :raises ValueError: if ``data`` is not UTF-8 (:exc:`UnicodeDecodeError`), not
        JSON (:exc:`json.JSONDecodeError`; an empty body included), or holds
        ``NaN``, ``Infinity`` or ``-Infinity``, which are not JSON.
    """
    value: JSON = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    return value


def encode_json(value: JSON) -> bytes:
    """
    ``value`` as a response body: UTF-8 JSON.

    :raises ValueError: for ``NaN`` or an infinity, which are not JSON.
    :raises TypeError: for a value JSON cannot hold (a set, an object).
    """
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode()


def error_envelope(code: str, message: str, request_id: str) -> tuple[int, dict[str, JSON]]:
    """
    The status and the body of a refusal: ``{"ok": false, "error": {...}, "request_id": ...}``.

    :param code: one of :data:`ERROR_STATUS`.
    :raises ValueError: for a code that is not in :data:`ERROR_STATUS`.
    """
    if code not in ERROR_STATUS:
        raise ValueError(f"error_envelope: unknown error code {code!r}; see ERROR_STATUS")
    return ERROR_STATUS[code], {
        "ok": False,
        "error": {"code": code, "message": message},
        "request_id": request_id,
    }


def resolve_runtime(options: InvocationOptions) -> Runtime | None:
    """
    The runtime that ``options`` give: ``runtime``, else ``runtime_factory()``, else
    the named factory, loaded from ``runtime_factory_module_map`` and called; else
    ``None``. It loads and calls what it needs each time: a host calls it once, at
    the first invocation (:class:`AgentLoader` does).

    :raises Exception: whatever the factory or its loader raises.
    """
    if options.runtime is not None:
        return options.runtime
    if options.runtime_factory is not None:
        return options.runtime_factory()
    if options.runtime_factory_name is not None:
        return options.runtime_factory_module_map[options.runtime_factory_name]()()
    return None


_UNSET: Final = object()


@final
class AgentLoader:
    """
    What an app loads lazily, once: each agent's handler, and the runtime.

    Nothing loads when it is made. :meth:`handler` calls an agent's loader at its
    first call for that agent; :meth:`runtime` resolves the runtime
    (:func:`resolve_runtime`) at its first call. Each keeps what it got, and loads
    again only after a failure. Neither awaits, so concurrent invocations load once.

    :param options: the host's options.
    :raises TypeError: if ``options`` is not :class:`InvocationOptions`.
    """

    __slots__ = ("_handlers", "_options", "_runtime")

    def __init__(self, options: InvocationOptions) -> None:
        if not isinstance(options, InvocationOptions):
            raise TypeError(f"AgentLoader() takes InvocationOptions, got {short_repr(options)}")
        self._options = options
        self._handlers: dict[str, Handler] = {}
        self._runtime: object = _UNSET

    def __repr__(self) -> str:
        return f"<AgentLoader for {sorted(self._options.handlers)}>"

    def handler(self, agent: str) -> Handler:
        """
        The agent's handler, loaded at the first call.

        :raises KeyError: if the options have no agent named ``agent``.
        :raises Exception: whatever the agent's loader raises.
        """
        handler = self._handlers.get(agent)
        if handler is None:
            handler = self._handlers[agent] = self._options.handlers[agent]()
        return handler

    def runtime(self) -> Runtime | None:
        """
        The runtime, resolved at the first call; ``None`` when the options give none.

        :raises Exception: whatever the factory or its loader raises.
        """
        runtime = self._runtime
        if runtime is _UNSET:
            runtime = self._runtime = resolve_runtime(self._options)
        return runtime  # type: ignore[return-value]

    def context(self, request_id: str) -> InvocationContext:
        """
        The context of one invocation: the options' capabilities, the runtime
        (resolved now if it was not), and ``request_id``.

        :raises Exception: whatever resolving the runtime raises.
        """
        options = self._options
        return InvocationContext(
            request_id=request_id,
            env=options.env,
            workspace_store=options.workspace_store,
            session_event_store=options.session_event_store,
            runtime=self.runtime(),
            grants=options.grants,
        )


# The reference handler's own parts.

_DISCARDED_AT_MOST: Final = 1024 * 1024
"""The most bytes of a refused body the reference handler reads and drops after answering."""


@final
class _Body:
    """A request's ``receive``, which knows when the body is over."""

    __slots__ = ("_receive", "over")

    def __init__(self, receive: _Receive) -> None:
        self._receive = receive
        self.over = False

    async def receive(self) -> _Message:
        message = await self._receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.over = True
        return message

    async def discard(self) -> None:
        """
        Read what is left of the body, up to ``_DISCARDED_AT_MOST`` bytes, and drop it.

        Some servers (hypercorn) close a connection whose body was left unread: the
        client, still sending it, then gets a broken connection instead of the answer.
        """
        size = 0
        while not self.over and size <= _DISCARDED_AT_MOST:
            message = await self.receive()
            size += len(message.get("body", b""))


@final
class _Request:
    """One request's route path, request ID and headers."""

    __slots__ = ("headers", "method", "path", "request_id")

    def __init__(self, scope: _Scope) -> None:
        self.method: str = scope["method"]
        path: str = scope["path"]
        root = scope.get("root_path", "")
        # Mounted under a prefix (Starlette's Mount, a proxy): the path keeps it.
        if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
            path = path[len(root) :]
        self.path = path
        self.headers: dict[str, str] = {}
        for name, value in scope.get("headers", ()):
            self.headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        self.request_id = choose_request_id(self.headers.get("x-request-id"))


async def _respond(
    send: _Send,
    request: _Request,
    status: int,
    body: JSON,
    extra: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    data = encode_json(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"x-request-id", request.request_id.encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _fail(
    send: _Send,
    request: _Request,
    code: str,
    message: str,
    extra: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    status, envelope = error_envelope(code, message, request.request_id)
    await _respond(send, request, status, envelope, extra)


@final
class _ReferenceApp:
    """The reference handler: see :func:`create_app`."""

    __slots__ = ("_loader", "_options")

    def __init__(self, options: InvocationOptions) -> None:
        if not isinstance(options, InvocationOptions):
            raise TypeError(f"create_app() takes InvocationOptions, got {short_repr(options)}")
        self._options = options
        self._loader = AgentLoader(options)

    def __repr__(self) -> str:
        return f"<conformkit reference invocation app for {sorted(self._options.catalog)}>"

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            while True:
                message = await receive()
                step = message["type"].rpartition(".")[2]
                await send({"type": f"lifespan.{step}.complete"})
                if step == "shutdown":
                    return
        if kind != "http":
            if kind == "websocket":
                await receive()
                await send({"type": "websocket.close", "code": 1003})
            return
        body = _Body(receive)
        await self._answer(_Request(scope), body.receive, send)
        await body.discard()

    async def _answer(self, request: _Request, receive: _Receive, send: _Send) -> None:
        parts = request.path.split("/")
        if request.path in ("/manifest", "/agents"):
            if request.method not in ("GET", "HEAD"):
                await _fail(
                    send,
                    request,
                    "method_not_allowed",
                    f"{request.path} takes GET, not {request.method}",
                    ((b"allow", b"GET, HEAD"),),
                )
            elif request.path == "/manifest":
                manifest: dict[str, JSON] = {**self._manifest()}
                await _respond(send, request, 200, {"agents": manifest})
            else:
                listing: list[JSON] = [
                    {"name": name, **entry} for name, entry in self._manifest().items()
                ]
                await _respond(send, request, 200, {"agents": listing})
        elif len(parts) == 4 and parts[1] == "agents" and parts[2] and parts[3] == "invoke":
            if request.method != "POST":
                await _fail(
                    send,
                    request,
                    "method_not_allowed",
                    f"invoking an agent takes POST, not {request.method}",
                    ((b"allow", b"POST"),),
                )
            else:
                await self._invoke(parts[2], request, receive, send)
        else:
            await _fail(send, request, "not_found", f"no route for {request.path}")

    def _manifest(self) -> dict[str, dict[str, JSON]]:
        return {name: dict(entry) for name, entry in self._options.catalog.items()}

    async def _invoke(self, agent: str, request: _Request, receive: _Receive, send: _Send) -> None:
        options = self._options
        if agent not in options.handlers:
            await _fail(send, request, "unknown_agent", f"no agent named {agent!r}")
            return
        content_type = request.headers.get("content-type")
        if not is_json_content_type(content_type):
            await _fail(
                send,
                request,
                "unsupported_media_type",
                f"the body must be application/json, got {content_type or 'no content type'}",
            )
            return
        body = await self._read(request, receive, send)
        if body is None:
            return
        try:
            value = decode_json(body)
        except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            await _fail(send, request, "invalid_json", f"the body is not JSON: {error}")
            return
        if not isinstance(value, dict):
            await _fail(
                send,
                request,
                "body_not_object",
                f"the body must be a JSON object, got a JSON {type(value).__name__}",
            )
            return
        try:
            handler = self._loader.handler(agent)
            context = self._loader.context(request.request_id)
        except Exception as error:
            await _fail(
                send, request, "internal_error", self._hide(error, "loading the agent failed")
            )
            return
        try:
            result = await handler(context, value)
            envelope: JSON = {"ok": True, "result": result, "request_id": request.request_id}
            encode_json(envelope)
        except CommandNotGranted as error:
            await _fail(send, request, "command_not_granted", str(error))
            return
        except Exception as error:
            await _fail(send, request, "agent_error", self._hide(error, "the agent failed"))
            return
        await _respond(send, request, 200, envelope)

    def _hide(self, error: Exception, message: str) -> str:
        if not self._options.expose_errors:
            return message
        return f"{message}: {error_line(error)}"

    async def _read(self, request: _Request, receive: _Receive, send: _Send) -> bytes | None:
        """The body, or ``None`` once a 413 is sent: never more than the limit kept."""
        limit = self._options.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await self._too_large(request, send)
            return None
        pieces: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            piece = message.get("body", b"")
            size += len(piece)
            if size > limit:
                await self._too_large(request, send)
                return None
            pieces.append(piece)
            if not message.get("more_body", False):
                return b"".join(pieces)

    async def _too_large(self, request: _Request, send: _Send) -> None:
        await _fail(
            send,
            request,
            "body_too_large",
            f"the body is over the limit of {self._options.max_body_bytes} bytes",
        )


def create_app(options: InvocationOptions) -> ASGIApp:
    """
    The reference handler: a plain ASGI app serving ``options``, with no web framework.

    Routes: ``GET /manifest``, ``GET /agents`` and ``POST /agents/{agent}/invoke``;
    every response is JSON and carries ``x-request-id``. Under a ``root_path``
    (mounted by Starlette's ``Mount``, say) it serves the same routes below it.
    Nothing is loaded when the app is built or the catalog served: an agent's
    handler loader runs at its first invocation, and the runtime is resolved at
    the first invocation (``runtime``, else ``runtime_factory()``, else the named
    factory, loaded and called), each once.

    :raises TypeError: if ``options`` is not :class:`InvocationOptions`.
    """
    return _ReferenceApp(options)


HOST_PREFIX: Final = "/host/v1"


@final
class _Host:
    """
    A host-style app: its own health route, the reference handler mounted under a
    prefix (the path kept, ``root_path`` set, as Starlette's ``Mount`` does), and a
    middleware that names the host in every response.
    """

    __slots__ = ("_inner",)

    def __init__(self, options: InvocationOptions) -> None:
        self._inner = create_app(options)

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        path: str = scope["path"]
        root = scope.get("root_path", "") + HOST_PREFIX
        if path == "/healthz":
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"x-host", b"demo")]}
            )
            await send({"type": "http.response.body", "body": b"ok"})
            return
        if not (path.startswith(root + "/") or path == root):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"not found"})
            return

        async def named(message: _Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", ()), (b"x-host", b"demo")],
                }
            await send(message)

        await self._inner({**scope, "root_path": root}, receive, named)


def _host_app(options: InvocationOptions) -> ASGIApp:
    return _Host(options)


# --------------------------------------------------------------------------- implementations


class _AppImplementation(FeatureImplementation[InvocationAPI, InvocationCase]):
    """What every implementation here shares: a wrapper, where its apps are reached, a prefix."""

    feature = feature
    coverage = feature.coverage()

    def __init__(self, wrapper: Wrapper, placement: Placement | None, prefix: str) -> None:
        self.wrapper = wrapper
        self.placement = InProcess() if placement is None else placement
        self.prefix = prefix

    def create(self, scope: FeatureScope) -> InvocationAPI:
        return InvocationAPI(self.wrapper, self.placement, self.prefix)


@final
class ReferenceImplementation(_AppImplementation):
    """
    The reference handler, :func:`create_app`, as the wrapper.

    :param placement: where the cases reach its apps; in-process by default.
    """

    def __init__(self, placement: Placement | None = None) -> None:
        super().__init__(create_app, placement, "")

    def __repr__(self) -> str:
        return f"ReferenceImplementation({self.placement!r})"


@final
class MountedReferenceImplementation(_AppImplementation):
    """
    A host-style wrapper: the reference handler mounted under ``/host/v1`` inside
    another ASGI app, behind a middleware that adds a response header.

    :param placement: where the cases reach its apps; in-process by default.
    """

    def __init__(self, placement: Placement | None = None) -> None:
        super().__init__(_host_app, placement, HOST_PREFIX)

    def __repr__(self) -> str:
        return f"MountedReferenceImplementation({self.placement!r})"


@final
class WrapperImplementation(_AppImplementation):
    """
    Any wrapper, claiming every case: the shortest way to run the profile on yours.

    :param wrapper: builds the app from the options.
    :param placement: where the cases reach its apps; in-process by default.
    :param prefix: the path under which the app serves its routes.
    """

    def __init__(
        self, wrapper: Wrapper, *, placement: Placement | None = None, prefix: str = ""
    ) -> None:
        if not callable(wrapper):
            raise TypeError(f"WrapperImplementation: wrapper must be callable, got {wrapper!r}")
        super().__init__(wrapper, placement, prefix)

    def __repr__(self) -> str:
        return f"WrapperImplementation({callable_name(self.wrapper)}, {self.placement!r})"


implementations: tuple[FeatureImplementation[InvocationAPI, InvocationCase], ...] = (
    ReferenceImplementation(),
    MountedReferenceImplementation(),
)
"""One instance of each bundled implementation, in-process, as ``conformkit demo`` runs them."""
