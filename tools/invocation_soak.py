"""
Run correct invocation wrappers many times in a row against live servers; count the passes.

Each wrapper (the bundled reference handler, and the Starlette host of
docs/profile-invocation.md) runs the whole invocation profile ``--runs`` times in a
row on each live server (uvicorn and hypercorn, from tests/live_servers.py) and each
backend (asyncio and trio). A run passes when every case passes. The figures are
printed one line per wrapper, server and backend, with the reasons of any failure:

    python tools/invocation_soak.py              # 40 runs of each
    python tools/invocation_soak.py --runs 10 --servers hypercorn --backends trio

It exits 1 when any run failed. Needs the test extra: pip install -e '.[test]'.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

import conformkit as ck
from conformkit.profiles import invocation
from conformkit.profiles.invocation import (
    ASGIApp,
    InvocationAPI,
    InvocationCase,
    InvocationOptions,
    LiveServer,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from live_servers import SERVERS, serving


async def healthz(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def starlette_host(options: InvocationOptions) -> ASGIApp:
    """The Starlette recipe of docs/profile-invocation.md."""
    return Starlette(
        routes=[Route("/healthz", healthz), Mount("/api", app=invocation.create_app(options))],
        middleware=[Middleware(GZipMiddleware, minimum_size=100)],
    )


def reference(live: LiveServer) -> ck.FeatureImplementation[InvocationAPI, InvocationCase]:
    """The bundled reference handler."""
    return invocation.ReferenceImplementation(live)


def starlette(live: LiveServer) -> ck.FeatureImplementation[InvocationAPI, InvocationCase]:
    """The docs' Starlette host."""
    return invocation.WrapperImplementation(starlette_host, placement=live, prefix="/api")


WRAPPERS: dict[
    str, Callable[[LiveServer], ck.FeatureImplementation[InvocationAPI, InvocationCase]]
] = {"reference": reference, "starlette": starlette}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=40, help="runs in a row of each (40)")
    parser.add_argument("--servers", nargs="+", choices=sorted(SERVERS), default=sorted(SERVERS))
    parser.add_argument("--backends", nargs="+", choices=("asyncio", "trio"))
    parser.add_argument("--wrappers", nargs="+", choices=sorted(WRAPPERS))
    args = parser.parse_args(argv)
    backends = args.backends or ["asyncio", "trio"]
    wrappers = args.wrappers or list(WRAPPERS)
    failed_any = False
    for server in args.servers:
        with serving(server) as live:
            for wrapper in wrappers:
                for backend in backends:
                    passes = 0
                    reasons: collections.Counter[str] = collections.Counter()
                    started = time.monotonic()
                    for _ in range(args.runs):
                        report = ck.run_contract_sync(
                            WRAPPERS[wrapper](live), invocation.suite, backend=backend
                        )
                        failures = [each for each in report.results if each.status != "passed"]
                        passes += not failures
                        for each in failures:
                            first = (each.reason or "").splitlines()[0] if each.reason else ""
                            reasons[f"{each.case_id}: {first}"] += 1
                    took = time.monotonic() - started
                    print(
                        f"{wrapper:10} {server:10} {backend:8} {passes}/{args.runs} runs passed "
                        f"({took:.1f} s)",
                        flush=True,
                    )
                    for reason, count in reasons.most_common():
                        print(f"    {count} x {reason}")
                    failed_any = failed_any or passes != args.runs
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
