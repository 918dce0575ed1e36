"""The invocation cases of the host's capabilities: stores, env, runtimes, lazy loading."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final

from ..._util import short_repr

if TYPE_CHECKING:
    pass
from ._api import InvocationAPI, InvocationOptions
from ._cases import SEE, Probe, ProbeRuntime, build_app, invoke_agent, suite


@suite.case("capabilities_reach_context")
async def _capabilities_reach_context(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
        async with api.client(app) as client:
            await invoke_agent(client, "writer", {})
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
                    if isinstance(got, ProbeRuntime) and got.run_tag != probe.run_tag
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

    with SEE:
        probe = Probe()
        given = dict(probe.env)
        name = f"{_ENV_PROBE}_{uuid.uuid4().hex[:8].upper()}"
        os.environ[name] = "ambient"
        try:
            app = await build_app(api, probe.options())
            _expect_env_unchanged(probe, given, "building the app")
            async with api.client(app) as client:
                for invocation in ("a first", "a second"):
                    _, envelope = await invoke_agent(client, "env", {})
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


def _expect_env_unchanged(probe: Probe, given: dict[str, str], when: str) -> None:
    if probe.env != given:
        added = sorted(set(probe.env) - set(given))
        changed = sorted(key for key in given if probe.env.get(key) != given[key])
        raise AssertionError(
            f"{when} wrote into the host's env mapping: added {short_repr(added)}, changed or "
            f"removed {short_repr(changed)}; it is the host's data, read-only to the wrapper"
        )


async def _runtime_seen(api: InvocationAPI, probe: Probe, options: InvocationOptions) -> object:
    app = await build_app(api, options)
    async with api.client(app) as client:
        await invoke_agent(client, "echo", {})
    return probe.context().runtime


@suite.case("runtime_wins_over_factory")
async def _runtime_wins_over_factory(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        options = probe.options(runtime=probe.runtime("given"), runtime_factory=probe.factory("f"))
        seen = await _runtime_seen(api, probe, options)
        if seen is not probe.runtime("given"):
            raise AssertionError(
                f"with both runtime and runtime_factory: the context got {short_repr(seen)}, "
                f"expected the runtime passed, {short_repr(probe.runtime('given'))}"
            )


@suite.case("factory_wins_over_factory_name")
async def _factory_wins_over_factory_name(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
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
    with SEE:
        probe = Probe()
        mapped = {label: probe.factory_loader(label) for label in ("named", "other")}
        app = await build_app(
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
                await invoke_agent(client, "echo", {})
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
            app = await build_app(api, options)
            async with api.client(app) as client:
                await invoke_agent(client, "echo", {})
            if len(probe.factory_loads) != loads:
                raise AssertionError(
                    f"with {form} given, which wins over runtime_factory_name, the named "
                    f"factory was loaded ({probe.factory_loads[loads:]})"
                )


@suite.case("runtime_factory_called_lazily")
async def _runtime_factory_called_lazily(api: InvocationAPI) -> None:
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options(runtime=None, runtime_factory=probe.factory("f")))
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
                await invoke_agent(client, "echo", {})
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
    with SEE:
        probe = Probe()
        app = await build_app(api, probe.options())
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
            await invoke_agent(client, "echo", {})
            await invoke_agent(client, "echo", {})
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
            await invoke_agent(client, "env", {})
            if probe.loaded != ["echo", "env"]:
                raise AssertionError(
                    f"after invoking 'env' too: expected the loads ['echo', 'env'], got "
                    f"{probe.loaded}"
                )
