"""
Live servers for the invocation profile's LiveServer placement: uvicorn and hypercorn.

Each runs on asyncio, in a thread of its own with its own event loop, on 127.0.0.1
and a free port, serving one :class:`LiveServer`: the cases drive it over loopback
from asyncio and from trio alike. Each is a feature implementation, so that its
resources are released in reverse order whatever fails, and its shutdown is bounded:
a request still open when it stops (a streaming app, a client that never reads) is
cancelled after :data:`GRACE` seconds, and a thread still alive :data:`JOIN` seconds
after the stop is a failure of the cleanup, never a hang.

Used by tests/test_profile_invocation.py and tools/invocation_soak.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx
import hypercorn.asyncio
import hypercorn.config
import uvicorn

import conformkit as ck
from conformkit.profiles.invocation import LiveServer

GRACE = 1
"""Seconds a server waits for open requests when it stops, before cancelling them."""
JOIN = 10.0
"""Seconds the server's thread has to end once stopped: far past GRACE."""
THREAD_PREFIX = "live-server "
"""The name of every server thread starts with it: a test finds what is left by it."""

live_server_feature = ck.Feature[LiveServer, str]("tests.live_server", cases=("serves",))


def listen() -> tuple[socket.socket, LiveServer]:
    """A listening socket on 127.0.0.1 and a free port, and the LiveServer it is for."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # Accepted connections inherit it: without it, Nagle's algorithm and delayed
        # acknowledgements hold each response back some 40 ms.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
    except BaseException:
        sock.close()
        raise
    return sock, LiveServer(f"http://127.0.0.1:{sock.getsockname()[1]}")


def join(thread: threading.Thread) -> None:
    """Wait for a stopped server's thread; one still alive after JOIN seconds is a failure."""
    thread.join(timeout=JOIN)
    if thread.is_alive():
        raise RuntimeError(f"the live server's thread {thread.name!r} did not end within {JOIN} s")


class Uvicorn(ck.FeatureImplementation[LiveServer, str]):
    """A uvicorn server; each resource's cleanup is deferred the moment it exists."""

    feature = live_server_feature
    coverage = live_server_feature.coverage()
    timeout = 3 * JOIN

    async def create(self, scope: ck.FeatureScope) -> LiveServer:
        sock, live = listen()
        scope.defer(sock.close)
        config = uvicorn.Config(
            live,
            lifespan="on",
            log_level="warning",
            access_log=False,
            http="h11",
            ws="none",
            timeout_graceful_shutdown=GRACE,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run,
            kwargs={"sockets": [sock]},
            name=f"{THREAD_PREFIX}uvicorn {live.base_url}",
            daemon=True,
        )

        def stop() -> None:
            server.should_exit = True
            join(thread)

        thread.start()
        scope.defer(functools.partial(anyio.to_thread.run_sync, stop))
        with anyio.fail_after(JOIN):
            while not server.started:  # uvicorn says so with a flag, not an event
                if not thread.is_alive():
                    raise RuntimeError("the live server stopped as it started")
                await anyio.sleep(0.01)
        return live


class Hypercorn(ck.FeatureImplementation[LiveServer, str]):
    """A hypercorn server; each resource's cleanup is deferred the moment it exists."""

    feature = live_server_feature
    coverage = live_server_feature.coverage()
    timeout = 3 * JOIN

    async def create(self, scope: ck.FeatureScope) -> LiveServer:
        sock, live = listen()
        scope.defer(sock.close)
        config = hypercorn.config.Config()
        # hypercorn closes the sockets it serves: it gets a duplicate of ours, and owns it.
        duplicate = os.dup(sock.fileno())
        config.bind = [f"fd://{duplicate}"]
        config.graceful_timeout = GRACE
        config.accesslog = None
        config.loglevel = "WARNING"
        loop: list[asyncio.AbstractEventLoop] = []
        ready = threading.Event()
        stopping = asyncio.Event()

        async def serve() -> None:
            loop.append(asyncio.get_running_loop())
            ready.set()
            # hypercorn types its apps with its own ASGI types; a LiveServer is one.
            app: Any = live
            await hypercorn.asyncio.serve(app, config, shutdown_trigger=stopping.wait)

        def run() -> None:
            try:
                asyncio.run(serve())
            finally:
                ready.set()

        thread = threading.Thread(
            target=run, name=f"{THREAD_PREFIX}hypercorn {live.base_url}", daemon=True
        )

        def stop() -> None:
            ready.wait(JOIN)
            if loop:
                with contextlib.suppress(RuntimeError):  # the loop has closed already
                    loop[0].call_soon_threadsafe(stopping.set)
            join(thread)

        thread.start()
        scope.defer(functools.partial(anyio.to_thread.run_sync, stop))
        # The socket listens already: the first request is answered once hypercorn serves.
        async with httpx.AsyncClient(verify=False, timeout=JOIN) as client:
            response = await client.get(live.base_url + "/")
        if response.status_code != 404:
            raise RuntimeError(f"the live server answered {response.status_code} to a probe")
        return live


SERVERS: dict[str, type[ck.FeatureImplementation[LiveServer, str]]] = {
    "uvicorn": Uvicorn,
    "hypercorn": Hypercorn,
}


@contextlib.contextmanager
def serving(name: str) -> Iterator[LiveServer]:
    """A live server of the named kind for the block, from sync code: started, then stopped."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(ck.open_feature(SERVERS[name]())) as session,
    ):
        yield session.api
