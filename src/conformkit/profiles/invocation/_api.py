"""The invocation API: what a wrapper is built and driven with, its options, context and errors."""

from __future__ import annotations

import contextlib
import re
import uuid
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
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, final

from ..._exceptions import FeatureUnavailable
from ..._util import short_repr
from ..session_events import JSON, SessionEventsAPI
from ..workspace import WorkspaceAPI

if TYPE_CHECKING:
    import httpx

# --------------------------------------------------------------------------- API and errors

ASGIScope: TypeAlias = MutableMapping[str, Any]
ASGIMessage: TypeAlias = MutableMapping[str, Any]
ASGIReceive: TypeAlias = Callable[[], Awaitable[ASGIMessage]]
ASGISend: TypeAlias = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[ASGIScope, ASGIReceive, ASGISend], Awaitable[None]]
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

    async def __call__(self, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
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

    async def __call__(self, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = f"{scope.get('method')} {scope.get('path')}"
        started = False
        last: ASGIMessage | None = None
        body_over = False

        def broke(what: str) -> None:
            self.broken.append(what.format(request=request))

        async def checked_send(message: ASGIMessage) -> None:
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

        async def checked_receive() -> ASGIMessage:
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
