"""The invocation reference handler, the rules a host reuses, and the bundled implementations."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import (
    Mapping,
)
from typing import TYPE_CHECKING, Final, final

from ..._explain import error_line
from ..._implementation import FeatureImplementation
from ..._scope import FeatureScope
from ..._util import callable_name, short_repr
from ..session_events import JSON

if TYPE_CHECKING:
    pass
from ._api import (
    ASGIApp,
    ASGIMessage,
    ASGIReceive,
    ASGIScope,
    ASGISend,
    CommandNotGranted,
    Handler,
    InProcess,
    InvocationAPI,
    InvocationContext,
    InvocationOptions,
    Placement,
    Runtime,
    Wrapper,
)
from ._cases import InvocationCase, feature

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

    def __init__(self, receive: ASGIReceive) -> None:
        self._receive = receive
        self.over = False

    async def receive(self) -> ASGIMessage:
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

    def __init__(self, scope: ASGIScope) -> None:
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
    send: ASGISend,
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
    send: ASGISend,
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

    async def __call__(self, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
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

    async def _answer(self, request: _Request, receive: ASGIReceive, send: ASGISend) -> None:
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

    async def _invoke(
        self, agent: str, request: _Request, receive: ASGIReceive, send: ASGISend
    ) -> None:
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

    async def _read(self, request: _Request, receive: ASGIReceive, send: ASGISend) -> bytes | None:
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

    async def _too_large(self, request: _Request, send: ASGISend) -> None:
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

    async def __call__(self, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
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

        async def named(message: ASGIMessage) -> None:
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
