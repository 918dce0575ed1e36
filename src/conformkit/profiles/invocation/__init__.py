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

# Each module adds its cases to the one suite, in the feature's order.
# isort: off
from . import _cases_serving  # noqa: F401
from . import _cases_host  # noqa: F401
from . import _cases_refusals  # noqa: F401

# isort: on
from ._api import ROUTE_HEADER as ROUTE_HEADER
from ._api import ASGIApp as ASGIApp
from ._api import CommandNotGranted as CommandNotGranted
from ._api import Handler as Handler
from ._api import InProcess as InProcess
from ._api import InvocationAPI as InvocationAPI
from ._api import InvocationContext as InvocationContext
from ._api import InvocationError as InvocationError
from ._api import InvocationOptions as InvocationOptions
from ._api import LiveServer as LiveServer
from ._api import NoRuntime as NoRuntime
from ._api import Placement as Placement
from ._api import Runtime as Runtime
from ._api import Wrapper as Wrapper
from ._cases import InvocationCase as InvocationCase
from ._cases import feature as feature
from ._cases import suite as suite
from ._reference import ERROR_STATUS as ERROR_STATUS
from ._reference import HOST_PREFIX as HOST_PREFIX
from ._reference import AgentLoader as AgentLoader
from ._reference import MountedReferenceImplementation as MountedReferenceImplementation
from ._reference import ReferenceImplementation as ReferenceImplementation
from ._reference import WrapperImplementation as WrapperImplementation
from ._reference import choose_request_id as choose_request_id
from ._reference import create_app as create_app
from ._reference import decode_json as decode_json
from ._reference import encode_json as encode_json
from ._reference import error_envelope as error_envelope
from ._reference import implementations as implementations
from ._reference import is_json_content_type as is_json_content_type
from ._reference import resolve_runtime as resolve_runtime

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

# Each class and function shows as conformkit.profiles.invocation.Name, whichever submodule
# defines it: in reprs, tracebacks, reports, and where implementations are collected by module.
for _public in (
    AgentLoader,
    CommandNotGranted,
    InProcess,
    InvocationAPI,
    InvocationContext,
    InvocationError,
    InvocationOptions,
    LiveServer,
    MountedReferenceImplementation,
    NoRuntime,
    ReferenceImplementation,
    Runtime,
    WrapperImplementation,
    choose_request_id,
    create_app,
    decode_json,
    encode_json,
    error_envelope,
    is_json_content_type,
    resolve_runtime,
):
    _public.__module__ = __name__
del _public
