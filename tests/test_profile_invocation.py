"""The invocation profile: conformkit.profiles.invocation, in-process and against a live server."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conformkit as ck
from conformkit.profiles import invocation
from conformkit.profiles.invocation import (
    ASGIApp,
    CommandNotGranted,
    InProcess,
    InvocationAPI,
    InvocationCase,
    InvocationContext,
    InvocationOptions,
    LiveServer,
    MountedReferenceImplementation,
    NoRuntime,
    Placement,
    ReferenceImplementation,
    Wrapper,
    WrapperImplementation,
    create_app,
    feature,
    suite,
)
from invocation_wrappers import BLOCKED_BY, broken_wrappers
from live_servers import SERVERS, THREAD_PREFIX, serving

DOCS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "profile-invocation.md"


def failed_cases(report: ck.ContractReport) -> set[str]:
    """The IDs of the report's failed cases."""
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


# --------------------------------------------------------------------------- the live server


@pytest.fixture(scope="module", params=sorted(SERVERS))
def live_server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """One live server of each kind for the module, started and stopped in a feature scope."""
    with serving(request.param) as live:
        yield live


# --------------------------------------------------------------------------- broken wrappers


def implementation(name: str, placement: Placement) -> ck.FeatureImplementation[Any, Any]:
    """A bundled implementation, reaching its apps through ``placement``."""
    if name == "reference":
        return ReferenceImplementation(placement)
    return MountedReferenceImplementation(placement)


# --------------------------------------------------------------------------- verdicts


class TestBundledImplementations:
    """Every bundled implementation passes the whole profile."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("index", range(len(invocation.implementations)))
    async def test_passes_with_full_coverage(self, index: int) -> None:
        """Each bundled implementation passes every case, in the feature's order."""
        report = await ck.run_contract(invocation.implementations[index], suite)
        ck.assert_contract(report, require_full=True)
        assert [result.case_id for result in report.results] == list(feature.cases)

    @pytest.mark.anyio
    async def test_no_case_is_vacuous(self) -> None:
        """Every case calls the API, and together they call every operation."""
        report = await ck.run_contract(ReferenceImplementation(), suite, reject_vacuous=True)
        ck.assert_contract(report, require_full=True)
        assert report.unexercised == ()

    def test_bundles_the_reference_and_a_mounted_host(self) -> None:
        """implementations holds the reference handler and the host that mounts it."""
        assert [type(each) for each in invocation.implementations] == [
            ReferenceImplementation,
            MountedReferenceImplementation,
        ]

    def test_docs_page_lists_every_case(self) -> None:
        """The profile's page names each case ID in its table of cases, in order."""
        page = DOCS_PAGE.read_text(encoding="utf-8")
        section = page.split("\n## The cases\n", 1)[1].split("\n## ", 1)[0]
        assert re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE) == list(feature.cases)

    def test_docs_page_lists_every_error_code(self) -> None:
        """The page's error-code table has each code with its status, in order."""
        page = DOCS_PAGE.read_text(encoding="utf-8")
        rows = re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \|", page, re.MULTILINE)
        assert rows == [(code, str(status)) for code, status in invocation.ERROR_STATUS.items()]


TABLE = list(broken_wrappers())


class TestBrokenWrappers:
    """Each wrapper that breaks one rule fails exactly the cases that own it, on both backends."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(("name", "wrapper", "expected"), TABLE, ids=[row[0] for row in TABLE])
    async def test_fails_exactly_its_cases(
        self, name: str, wrapper: Wrapper, expected: frozenset[InvocationCase]
    ) -> None:
        """The report's failed cases are the expected ones, each with a reason on the page."""
        report = await ck.run_contract(WrapperImplementation(wrapper), suite)
        assert failed_cases(report) == expected, report
        for result in report.results:
            if result.status is ck.CaseStatus.FAILED:
                reason = result.reason or ""
                assert "(see docs/profile-invocation.md#failure-modes)" in reason, reason
                owner = BLOCKED_BY.get((name, result.case_id))
                if owner is None:
                    assert "blocked:" not in reason, reason
                else:
                    assert "blocked: " in reason, reason
                    assert f"{owner} owns that" in reason, reason

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", ["annotates_on_invoke", "registers_on_post"])
    async def test_a_wrapper_that_edits_the_catalog_leaves_the_next_run_alone(
        self, name: str
    ) -> None:
        """After a wrapper edited its catalog in place, the reference still passes every case."""
        [wrapper] = [row[1] for row in TABLE if row[0] == name]
        report = await ck.run_contract(WrapperImplementation(wrapper), suite)
        assert failed_cases(report) == {"catalog_is_served"}, report
        report = await ck.run_contract(ReferenceImplementation(), suite)
        ck.assert_contract(report, require_full=True)


class TestTheTableLive:
    """The whole table of broken wrappers, over uvicorn and hypercorn, on asyncio and trio."""

    @pytest.mark.parametrize(
        ("index", "name", "wrapper", "expected"),
        [(index, *row) for index, row in enumerate(TABLE)],
        ids=[row[0] for row in TABLE],
    )
    def test_fails_exactly_its_cases_live(
        self,
        index: int,
        name: str,
        wrapper: Wrapper,
        expected: frozenset[InvocationCase],
        live_server: LiveServer,
        request: pytest.FixtureRequest,
    ) -> None:
        """
        Each wrapper fails exactly its cases on each server, the backend alternating
        from one wrapper to the next and from one server to the other: each server
        serves half the table from asyncio and half from trio, in seconds.
        """
        server = sorted(SERVERS).index(request.node.callspec.params["live_server"])
        backend: Literal["asyncio", "trio"] = "trio" if (index + server) % 2 else "asyncio"
        implementation = WrapperImplementation(wrapper, placement=live_server)
        report = ck.run_contract_sync(implementation, suite, backend=backend)
        assert failed_cases(report) == expected, (backend, report)


class TestPlacements:
    """The same verdicts in-process and against a live server, on asyncio and trio."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", ["reference", "mounted"])
    async def test_same_verdicts_in_process_and_live(
        self, name: str, live_server: LiveServer
    ) -> None:
        """Each bundled wrapper passes every case, in-process and over loopback."""
        in_process = await ck.run_contract(implementation(name, InProcess()), suite)
        live = await ck.run_contract(implementation(name, live_server), suite)
        assert failed_cases(in_process) == set(), in_process
        assert failed_cases(live) == set(), live
        statuses = [(result.case_id, result.status) for result in in_process.results]
        assert [(result.case_id, result.status) for result in live.results] == statuses

    @pytest.mark.anyio
    async def test_a_failure_says_what_and_points_at_the_page(self) -> None:
        """A broken wrapper's reason names what went wrong and the failure-modes table."""
        [wrapper] = [row[1] for row in TABLE if row[0] == "buffers_the_body"]
        report = await ck.run_contract(WrapperImplementation(wrapper), suite)
        [result] = [each for each in report.results if each.case_id == "oversized_body_rejected"]
        assert result.reason is not None
        assert "the app read 1025 bytes of it before refusing it" in result.reason
        assert "(see docs/profile-invocation.md#failure-modes)" in result.reason

    @pytest.mark.anyio
    async def test_a_broken_invocation_blocks_the_cases_that_need_it(self) -> None:
        """A wrapper whose invocations all fail: the cases that need one say they are blocked."""

        def always_500(options: InvocationOptions) -> ASGIApp:
            async def app(scope: Any, receive: Any, send: Any) -> None:
                await send({"type": "http.response.start", "status": 500, "headers": []})
                await send({"type": "http.response.body", "body": b"{}"})

            return app

        report = await ck.run_contract(WrapperImplementation(always_500), suite)
        reasons = {result.case_id: result.reason or "" for result in report.results}
        assert (
            "AssertionError: blocked: POST /agents/echo/invoke" in reasons["handlers_load_lazily"]
        )
        assert "invoke_returns_envelope owns that" in reasons["handlers_load_lazily"]
        assert failed_cases(report) == set(feature.cases)

    @pytest.mark.anyio
    async def test_the_live_server_removes_its_route_header(self, live_server: LiveServer) -> None:
        """The app never sees the header that routes requests to it; unrouted requests get 404."""
        seen: list[list[tuple[bytes, bytes]]] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            seen.append(list(scope["headers"]))
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        api = InvocationAPI(lambda options: app, live_server)
        async with api.client(app) as client:
            assert (await client.get("/anything")).status_code == 204
        assert not any(name == invocation.ROUTE_HEADER.encode() for name, _ in seen[0])
        async with httpx.AsyncClient() as plain:
            response = await plain.get(live_server.base_url + "/manifest")
        assert (response.status_code, response.text) == (404, "no app is mounted here")


# --------------------------------------------------------------------------- the reference handler


def options(**overrides: Any) -> InvocationOptions:
    """Options with one agent, 'echo', which returns its input."""

    async def echo(context: InvocationContext, body: dict[str, Any]) -> Any:
        return {"input": body}

    settings: dict[str, Any] = {"catalog": {"echo": {}}, "handlers": {"echo": lambda: echo}}
    settings.update(overrides)
    return InvocationOptions(**settings)


async def call(
    app: ASGIApp, messages: list[dict[str, Any]], headers: list[tuple[bytes, bytes]], **scope: Any
) -> tuple[int, dict[str, str], bytes]:
    """Drive ``app`` with raw ASGI messages; its status, headers and body."""
    sent: list[dict[str, Any]] = []
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop(0)
        if any(each["type"] == "http.response.body" for each in sent):
            return {"type": "http.disconnect"}  # as a server does once the app has answered
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: Any) -> None:
        sent.append(dict(message))

    http = {
        "type": "http",
        "method": "POST",
        "path": "/agents/echo/invoke",
        "root_path": "",
        "headers": headers,
        **scope,
    }
    with anyio.fail_after(5):
        await app(http, receive, send)
    start, *bodies = sent
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], response_headers, b"".join(body.get("body", b"") for body in bodies)


JSON_TYPE = [(b"content-type", b"application/json")]


class TestReferenceHandlerInput:
    """Bad input to the reference handler gets a stable envelope, never a traceback."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("pieces", "headers", "status", "code"),
        [
            ([b"{nope"], JSON_TYPE, 400, "invalid_json"),
            ([b'{"a": Infinity}'], JSON_TYPE, 400, "invalid_json"),
            ([b"\xc3"], JSON_TYPE, 400, "invalid_json"),
            ([b"[]"], JSON_TYPE, 400, "body_not_object"),
            ([b"12"], JSON_TYPE, 400, "body_not_object"),
            ([b'{"a":', b" 1", b"}"], JSON_TYPE, 200, None),
            ([b"{", b"", b"}"], JSON_TYPE, 200, None),
            ([b'{"a": 1}'], [(b"content-type", b"application/json; charset=utf-8")], 200, None),
            ([b'{"a": 1}'], [(b"content-type", b"application/vnd.api+json")], 200, None),
            ([b'{"a": 1}'], [(b"content-type", b"text/json")], 415, "unsupported_media_type"),
            ([b'{"a": 1}'], [], 415, "unsupported_media_type"),
            ([b"x" * 600, b"x" * 600], JSON_TYPE, 413, "body_too_large"),
        ],
    )
    async def test_envelopes(
        self, pieces: list[bytes], headers: list[tuple[bytes, bytes]], status: int, code: str | None
    ) -> None:
        """Each body, whole or in chunks, gets its status and envelope."""
        messages = [
            {"type": "http.request", "body": piece, "more_body": index < len(pieces) - 1}
            for index, piece in enumerate(pieces)
        ]
        got, response_headers, body = await call(
            create_app(options(max_body_bytes=1000)), messages, headers
        )
        envelope = json.loads(body)
        assert got == status, envelope
        assert response_headers["content-type"] == "application/json"
        assert envelope["request_id"] == response_headers["x-request-id"]
        if code is None:
            assert envelope["ok"] is True
        else:
            assert envelope["ok"] is False
            assert envelope["error"]["code"] == code
            assert invocation.ERROR_STATUS[code] == status

    @pytest.mark.anyio
    async def test_a_declared_length_over_the_limit_reads_nothing(self) -> None:
        """A content-length over the limit is refused before any body is read."""
        got, _, body = await call(
            create_app(options(max_body_bytes=10)),
            [],  # receive() would wait for ever: nothing may be read
            [*JSON_TYPE, (b"content-length", b"11")],
        )
        assert (got, json.loads(body)["error"]["code"]) == (413, "body_too_large")

    @pytest.mark.anyio
    async def test_a_client_gone_mid_body_gets_no_response(self) -> None:
        """A disconnect while the body is read ends the request quietly: no response, no error."""
        sent: list[Any] = []
        messages = [
            {"type": "http.request", "body": b"{", "more_body": True},
            {"type": "http.disconnect"},
        ]

        async def receive() -> Any:
            return messages.pop(0)

        async def send(message: Any) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/agents/echo/invoke",
            "headers": JSON_TYPE,
        }
        await create_app(options())(scope, receive, send)
        assert sent == []

    @pytest.mark.anyio
    async def test_a_request_id_is_taken_only_when_it_is_printable(self) -> None:
        """x-request-id is echoed when it is 1 to 128 visible ASCII characters, else replaced."""
        app = create_app(options())
        message = [{"type": "http.request", "body": b"{}", "more_body": False}]
        for sent, kept in (
            ("abc-123", True),
            ("x" * 128, True),
            ("x" * 129, False),
            ("a b", False),
        ):
            _, headers, body = await call(
                app, list(message), [*JSON_TYPE, (b"x-request-id", sent.encode())]
            )
            assert (headers["x-request-id"] == sent) is kept
            assert json.loads(body)["request_id"] == headers["x-request-id"]

    @pytest.mark.anyio
    async def test_answers_lifespan_and_closes_websockets(self) -> None:
        """Lifespan events complete; a WebSocket is closed, not served."""
        app = create_app(options())
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        events = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

        async def lifespan() -> Any:
            return events.pop(0)

        await app({"type": "lifespan"}, lifespan, send)
        assert [message["type"] for message in sent] == [
            "lifespan.startup.complete",
            "lifespan.shutdown.complete",
        ]

        async def connect() -> Any:
            return {"type": "websocket.connect"}

        await app({"type": "websocket", "path": "/agents"}, connect, send)
        assert sent[-1] == {"type": "websocket.close", "code": 1003}

    @settings(max_examples=30, deadline=None)
    @given(
        body=st.one_of(
            st.binary(max_size=64),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner),
                max_leaves=6,
            ).map(lambda value: json.dumps(value).encode()),
        ),
        cut=st.integers(min_value=0, max_value=64),
        content_type=st.sampled_from([b"application/json", b"text/plain", b""]),
    )
    def test_any_body_gets_a_documented_envelope(
        self, body: bytes, cut: int, content_type: bytes
    ) -> None:
        """Whatever the body and however it is cut, the answer is a documented envelope."""
        messages = [
            {"type": "http.request", "body": body[:cut], "more_body": True},
            {"type": "http.request", "body": body[cut:], "more_body": False},
        ]
        headers = [(b"content-type", content_type)] if content_type else []
        status, _, raw = anyio.run(call, create_app(options(max_body_bytes=48)), messages, headers)
        envelope = json.loads(raw)
        if status == 200:
            assert envelope["ok"] is True
            assert envelope["result"] == {"input": json.loads(body)}
        else:
            assert invocation.ERROR_STATUS[envelope["error"]["code"]] == status


class TestReferenceHandlerRuntime:
    """How the reference handler resolves the runtime and runs agents."""

    @pytest.mark.anyio
    async def test_a_failing_loader_is_an_internal_error_that_hides_its_text(self) -> None:
        """A handler loader that raises gets 500 internal_error, its message hidden."""

        def broken() -> Any:
            raise ImportError("no module named secret_agent")

        for expose in (False, True):
            app = create_app(options(handlers={"echo": broken}, expose_errors=expose))
            status, _, body = await call(
                app, [{"type": "http.request", "body": b"{}", "more_body": False}], JSON_TYPE
            )
            assert status == 500
            error = json.loads(body)["error"]
            assert error["code"] == "internal_error"
            assert ("secret_agent" in error["message"]) is expose

    @pytest.mark.anyio
    async def test_a_result_json_cannot_hold_is_an_agent_error(self) -> None:
        """An agent that returns what JSON cannot hold gets 500 agent_error."""

        async def returns_a_set(context: InvocationContext, body: dict[str, Any]) -> Any:
            return {1, 2}

        app = create_app(options(handlers={"echo": lambda: returns_a_set}))
        status, _, body = await call(
            app, [{"type": "http.request", "body": b"{}", "more_body": False}], JSON_TYPE
        )
        assert (status, json.loads(body)["error"]["code"]) == (500, "agent_error")


class TestContext:
    """InvocationContext.run_command: grants, then the runtime."""

    @pytest.mark.anyio
    async def test_run_command_checks_grants_then_runtime(self) -> None:
        """Ungranted commands raise CommandNotGranted; granted ones need a runtime."""
        ran: list[tuple[str, tuple[str, ...]]] = []

        class Recorder:
            async def run(self, command: str, *args: str) -> Any:
                ran.append((command, args))
                return "done"

        base = InvocationContext(
            request_id="r",
            env={},
            workspace_store=None,
            session_event_store=None,
            runtime=Recorder(),
            grants=None,
        )
        with pytest.raises(CommandNotGranted, match="no command is granted"):
            await base.run_command("ls")
        granted = replace(base, grants=frozenset({"ls"}))
        assert await granted.run_command("ls", "-l") == "done"
        with pytest.raises(CommandNotGranted, match="'rm': it is not granted"):
            await granted.run_command("rm")
        with pytest.raises(NoRuntime, match="no runtime"):
            await replace(granted, runtime=None).run_command("ls")
        assert ran == [("ls", ("-l",))]
        assert issubclass(CommandNotGranted, PermissionError)


class TestOptions:
    """InvocationOptions refuses what cannot work, with a one-line message naming it."""

    @pytest.mark.parametrize(
        ("overrides", "error", "message"),
        [
            ({"catalog": []}, TypeError, r"catalog must be a mapping, got \[\]"),
            ({"catalog": {"echo": "x"}}, TypeError, r"catalog\['echo'\] must be a JSON object"),
            ({"catalog": {"echo": {}, "b": {}}}, ValueError, r"no handler for \['b'\]"),
            ({"handlers": {"echo": 3}}, TypeError, r"handlers\['echo'\] must be a zero-argument"),
            (
                {"catalog": {"a/b": {}}, "handlers": {"a/b": print}},
                ValueError,
                "'a/b' is not a plain",
            ),
            ({"runtime_factory_name": "x"}, ValueError, "'x' is not in runtime_factory_module_map"),
            ({"max_body_bytes": 0}, ValueError, "at least 1, got 0"),
            ({"max_body_bytes": True}, TypeError, "must be an int, got True"),
            ({"grants": "ls"}, TypeError, "got the string 'ls'"),
        ],
    )
    def test_bad_options(
        self, overrides: dict[str, Any], error: type[Exception], message: str
    ) -> None:
        """Each bad option raises at construction, in one line."""
        with pytest.raises(error, match=message) as caught:
            options(**overrides)
        assert "\n" not in str(caught.value)

    def test_options_are_frozen(self) -> None:
        """The options cannot be changed after the host made them."""
        made = options()
        with pytest.raises(AttributeError):
            made.max_body_bytes = 5  # type: ignore[misc]

    def test_create_app_takes_only_options(self) -> None:
        """create_app() names what it got instead of the options."""
        with pytest.raises(TypeError, match=r"create_app\(\) takes InvocationOptions, got \{\}"):
            create_app({})  # type: ignore[arg-type]

    def test_the_api_checks_its_parts(self) -> None:
        """InvocationAPI refuses a wrapper that is not callable, or a bad prefix or placement."""
        with pytest.raises(TypeError, match="wrapper must be callable"):
            InvocationAPI(3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="prefix must be empty or start with '/'"):
            InvocationAPI(create_app, prefix="api/")
        with pytest.raises(TypeError, match="placement must be InProcess"):
            InvocationAPI(create_app, "http://x")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="base_url must be an http"):
            LiveServer("127.0.0.1:80")


class TestOptionalDependency:
    """httpx is an optional extra, imported by this profile only, and said so when missing."""

    def run(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )

    def test_missing_httpx_makes_the_cases_unavailable_with_one_line(self) -> None:
        """Without httpx, creating the API raises FeatureUnavailable saying what to install."""
        done = self.run(
            "import sys; sys.modules['httpx'] = None\n"
            "import conformkit as ck\n"
            "from conformkit.profiles import invocation\n"
            "implementation = invocation.ReferenceImplementation()\n"
            "report = ck.run_contract_sync(implementation, invocation.suite)\n"
            "print({result.status.value for result in report.results})\n"
            "print(report.results[0].reason)\n"
        )
        assert done.returncode == 0, done.stderr
        statuses, reason = done.stdout.splitlines()
        assert statuses == "{'unavailable'}"
        assert "pip install 'conformkit[http]'" in reason

    def test_importing_the_profile_does_not_import_httpx(self) -> None:
        """httpx is imported when a case first needs it, not with the module."""
        done = self.run(
            "import sys\nimport conformkit.profiles.invocation\nprint('httpx' in sys.modules)\n"
        )
        assert done.stdout.strip() == "False", done.stderr

    def test_no_other_module_imports_httpx(self) -> None:
        """Only the invocation profile mentions httpx among conformkit's modules."""
        package = Path(ck.__file__).parent
        importers = sorted(
            str(path.relative_to(package))
            for path in package.rglob("*.py")
            if re.search(r"^\s*(import|from) httpx", path.read_text(encoding="utf-8"), re.MULTILINE)
        )
        assert {importer.rsplit("/", 1)[0] for importer in importers} == {"profiles/invocation"}


class TestMounting:
    """The reference handler serves the same routes below a root_path."""

    @pytest.mark.anyio
    async def test_under_a_root_path(self) -> None:
        """With root_path '/api' and the path kept, /api/manifest is the manifest."""
        app = create_app(options())
        status, _, body = await call(
            app, [], [], method="GET", path="/api/manifest", root_path="/api"
        )
        assert (status, json.loads(body)) == (200, {"agents": {"echo": {}}})
        status, _, body = await call(
            app, [], [], method="GET", path="/apimanifest", root_path="/api"
        )
        assert status == 404


class TestDemo:
    """`conformkit demo` runs the profile when httpx is installed, and names it when not."""

    def test_the_demo_leaves_the_profile_out_without_httpx(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without httpx the demo holds on the other profiles, and says what to install."""
        from conformkit import cli, profiles

        monkeypatch.setattr(profiles, "BUNDLED", ("durable_mapping", "invocation"))
        monkeypatch.setitem(sys.modules, "httpx", None)  # as if it were not installed
        assert cli.main(["demo", "--format", "json"]) == 0
        captured = capsys.readouterr()
        assert captured.err == (
            "conformkit demo: left out conformkit.profiles.invocation, which needs httpx: "
            "pip install 'conformkit[http]'\n"
        )
        assert json.loads(captured.out)["run"]["targets"] == ["conformkit.profiles.durable_mapping"]

    def test_the_demo_runs_the_profile_with_httpx(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """With httpx, the demo runs both bundled wrappers, and they hold."""
        from conformkit import cli, profiles

        monkeypatch.setattr(profiles, "BUNDLED", ("invocation",))
        assert cli.main(["demo", "--format", "json"]) == 0
        captured = capsys.readouterr()
        assert captured.err == ""
        report = json.loads(captured.out)
        assert report["verdict"] == "holds"
        assert len(report["reports"]) == len(invocation.implementations)


class TestHostileWrappers:
    """Wrappers that cheat get failed cases with true reasons, never a crash of the run."""

    @pytest.mark.anyio
    async def test_an_app_that_answers_without_calling_the_agent(self) -> None:
        """A 200 envelope no handler produced fails the cases that inspect the context."""

        def fake(options: InvocationOptions) -> ASGIApp:
            inner = create_app(options)

            async def app(scope: Any, receive: Any, send: Any) -> None:
                if scope["type"] == "http" and scope["path"].endswith("/invoke"):
                    body = b'{"ok": true, "result": null, "request_id": "r"}'
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [(b"content-type", b"application/json")],
                        }
                    )
                    await send({"type": "http.response.body", "body": body})
                    return
                await inner(scope, receive, send)

            return app

        report = await ck.run_contract(WrapperImplementation(fake), suite)
        reasons = {result.case_id: result.reason or "" for result in report.results}
        assert "no agent's handler was called" in reasons["capabilities_reach_context"]
        assert "no agent's handler was called" in reasons["runtime_wins_over_factory"]
        assert "catalog_is_served" not in failed_cases(report)

    @pytest.mark.anyio
    async def test_a_wrapper_that_raises_blocks_every_case(self) -> None:
        """A wrapper that cannot build an app fails every case, each saying so."""

        def refuses(options: InvocationOptions) -> ASGIApp:
            raise LookupError("no such host configuration")

        report = await ck.run_contract(WrapperImplementation(refuses), suite)
        assert failed_cases(report) == set(feature.cases)
        for result in report.results:
            assert "blocked: the wrapper" in (result.reason or "")
            assert "no such host configuration" in (result.reason or "")


class TestRefusedBodies:
    """The reference handler reads what is left of a refused body after it answers."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("path", "headers", "status"),
        [
            ("/agents/nobody/invoke", JSON_TYPE, 404),
            ("/agents/echo/invoke", [], 415),
            ("/agents/echo/invoke", [*JSON_TYPE, (b"content-length", b"301")], 413),
            ("/manifest", JSON_TYPE, 405),
        ],
    )
    async def test_the_rest_of_a_refused_body_is_read_after_the_answer(
        self, path: str, headers: list[tuple[bytes, bytes]], status: int
    ) -> None:
        """
        Every piece of the body is received, each after the answer is complete: a
        server such as hypercorn closes a connection whose body is left unread.
        """
        pieces = [
            {"type": "http.request", "body": b"x" * 100, "more_body": more}
            for more in (True, True, False)
        ]
        events: list[str] = []

        async def receive() -> Any:
            if not pieces:
                raise AssertionError("receive() called after the body was over")
            events.append("received")
            return pieces.pop(0)

        async def send(message: Any) -> None:
            events.append(message["type"])
            if message["type"] == "http.response.start":
                assert message["status"] == status

        scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
        with anyio.fail_after(5):
            await create_app(options(max_body_bytes=300))(scope, receive, send)
        assert events == [
            "http.response.start",
            "http.response.body",
            "received",
            "received",
            "received",
        ]


def hostile(kind: str) -> Callable[[InvocationOptions], ASGIApp]:
    """A wrapper whose app breaks the ASGI protocol in the way named ``kind``."""

    def wrapper(options: InvocationOptions) -> ASGIApp:
        inner = create_app(options)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
            elif kind == "answers twice":

                async def again(message: Any) -> None:
                    await send(message)
                    if message["type"] == "http.response.body":
                        await send({"type": "http.response.start", "status": 200, "headers": []})

                await inner(scope, receive, again)
            elif kind == "a body before the start":
                await send({"type": "http.response.body", "body": b"{}"})
            elif kind == "never responds":
                return
            else:  # starts, never finishes
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": b"{", "more_body": True})

        return app

    wrapper.__name__ = kind.replace(" ", "_")
    return wrapper


HOSTILE = {
    "answers twice": "the app answered GET /manifest, then sent 'http.response.start': "
    "it answers once",
    "a body before the start": "the app sent 'http.response.body' before "
    "'http.response.start' answering GET /manifest",
    "never responds": "the app returned without responding to GET /manifest",
    "starts, never finishes": "the app returned without finishing its response to GET /manifest",
}


class TestHostileApps:
    """An app that breaks the ASGI protocol fails with what it did, in every placement."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("kind", HOSTILE)
    async def test_the_reason_names_what_the_app_did(
        self, kind: str, live_server: LiveServer
    ) -> None:
        """Every case fails, and catalog_is_served's reason is the app's misstep, in one line."""
        for placement in (InProcess(), live_server):
            report = await ck.run_contract(
                WrapperImplementation(hostile(kind), placement=placement), suite
            )
            assert failed_cases(report) == set(feature.cases), report
            reason = report.results[0].reason or ""
            assert HOSTILE[kind] in reason.splitlines()[0], (placement, reason)

    @pytest.mark.parametrize("kind", HOSTILE)
    def test_the_failure_modes_table_has_the_reason(self, kind: str) -> None:
        """The page's failure-mode table has a row whose symptom matches the whole reason."""
        page = DOCS_PAGE.read_text(encoding="utf-8")
        section = page.split("\n## Failure modes\n", 1)[1].split("\n## ", 1)[0]
        symptoms = [
            re.compile(".*".join(map(re.escape, quoted.split("…"))))
            for row in re.findall(r"^\| (.*?) \|", section, re.MULTILINE)
            for quoted in re.findall(r"`([^`]+)`", row)
        ]
        assert any(symptom.fullmatch(HOSTILE[kind]) for symptom in symptoms), HOSTILE[kind]

    @pytest.mark.anyio
    async def test_an_answer_stands_when_the_app_fails_after_it(
        self, live_server: LiveServer
    ) -> None:
        """An app that raises after its whole answer: the client has the answer."""

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"done"})
            raise RuntimeError("failed after the answer")

        async with InvocationAPI(lambda options: app, live_server).client(app) as client:
            response = await client.get("/anything")
        assert (response.status_code, response.text) == (200, "done")

    def test_an_app_that_swallows_its_cancellation_is_bounded(self) -> None:
        """Each stage of a run against it ends at its deadline's guard, on both backends."""
        code = (
            "import anyio, conformkit as ck\n"
            "from conformkit.profiles import invocation\n"
            "def deaf(options):\n"
            "    async def app(scope, receive, send):\n"
            "        while True:\n"
            "            try:\n"
            "                await anyio.sleep(1)\n"
            "            except anyio.get_cancelled_exc_class():\n"
            "                pass\n"
            "    return app\n"
            "implementation = invocation.WrapperImplementation(deaf)\n"
            "async def main():\n"
            "    cases = ck.contract_cases(implementation, invocation.suite, timeout=0.2)\n"
            "    for case in cases[:2]:\n"
            "        try:\n"
            "            await case.run()\n"
            "        except Exception as error:\n"
            "            print(str(error).splitlines()[0])\n"
            "for backend in ('asyncio', 'trio'):\n"
            "    anyio.run(main, backend=backend)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == 4, done.stdout
        for line in lines:
            assert "exceeded the 0.2s deadline" in line, line
            assert "it ignored its cancellation" in line, line


class TestLiveServerShutdown:
    """A live server stops within its grace, leaving no thread and no app running."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", sorted(SERVERS))
    async def test_a_streaming_app_is_stopped_with_its_server(self, name: str) -> None:
        """An app still streaming when the server stops is ended, and the thread with it."""
        started = threading.Event()
        ended = threading.Event()

        async def streams_forever(scope: Any, receive: Any, send: Any) -> None:
            started.set()
            try:
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": b"a", "more_body": True})
                await anyio.sleep_forever()
            finally:
                ended.set()

        async with httpx.AsyncClient() as client, contextlib.AsyncExitStack() as streams:
            async with ck.open_feature(SERVERS[name]()) as session:
                live = session.api
                with live.mount(streams_forever) as token:
                    headers = {invocation.ROUTE_HEADER: token}
                    await streams.enter_async_context(
                        client.stream("GET", live.base_url, headers=headers)
                    )
                    assert started.is_set()
            assert ended.is_set()
            ours = f"{THREAD_PREFIX}{name} {live.base_url}"
            assert [each.name for each in threading.enumerate() if each.name == ours] == []


class TestWhatAHostReuses:
    """The reference handler's rules, public for a host on another framework."""

    @pytest.mark.parametrize(
        ("given", "kept"),
        [("abc-123", True), ("x" * 128, True), ("x" * 129, False), ("a b", False), ("", False)],
    )
    def test_choose_request_id(self, given: str, kept: bool) -> None:
        """A printable ID of 1 to 128 characters is kept; any other gets a fresh hex UUID."""
        chosen = invocation.choose_request_id(given)
        assert (chosen == given) is kept
        if not kept:
            assert re.fullmatch(r"[0-9a-f]{32}", chosen)
        assert invocation.choose_request_id(None) != invocation.choose_request_id(None)

    @pytest.mark.parametrize(
        ("content_type", "is_json"),
        [
            ("application/json", True),
            ("Application/JSON; charset=utf-8", True),
            ("application/vnd.api+json", True),
            ("text/json", False),
            ("application/jsonx", False),
            ("", False),
            (None, False),
        ],
    )
    def test_is_json_content_type(self, content_type: str | None, is_json: bool) -> None:
        """application/json and application/*+json, parameters and case ignored."""
        assert invocation.is_json_content_type(content_type) is is_json

    def test_decode_json_refuses_what_is_not_json(self) -> None:
        """NaN, infinities, bad UTF-8 and an empty body raise ValueError."""
        assert invocation.decode_json(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
        for data in (b'{"a": NaN}', b"[Infinity]", b"-Infinity", b"\xc3", b"", b"{"):
            with pytest.raises(ValueError, match=r"."):  # each is not JSON in UTF-8
                invocation.decode_json(data)

    def test_encode_json_refuses_what_is_not_json(self) -> None:
        """A NaN raises ValueError, a set TypeError; text is UTF-8, not escaped."""
        assert invocation.encode_json({"t": "é"}) == '{"t": "é"}'.encode()
        with pytest.raises(ValueError, match="Out of range float values"):  # NaN is not JSON
            invocation.encode_json(float("nan"))
        with pytest.raises(TypeError):  # JSON has no sets
            invocation.encode_json({1})  # type: ignore[arg-type]

    def test_error_envelope(self) -> None:
        """A documented code gets its status and the envelope; another code is refused."""
        assert invocation.error_envelope("unknown_agent", "no agent named 'x'", "r-1") == (
            404,
            {
                "ok": False,
                "error": {"code": "unknown_agent", "message": "no agent named 'x'"},
                "request_id": "r-1",
            },
        )
        with pytest.raises(ValueError, match="unknown error code 'teapot'"):
            invocation.error_envelope("teapot", "", "r-1")

    def test_resolve_runtime_follows_the_precedence(self) -> None:
        """runtime, else runtime_factory(), else the named factory, else None."""
        given, made, named = object(), object(), object()
        factory = lambda: made  # noqa: E731
        module_map = {"named": lambda: lambda: named}
        assert invocation.resolve_runtime(options()) is None
        for overrides, expected in (
            ({"runtime": given, "runtime_factory": factory}, given),
            ({"runtime_factory": factory, "runtime_factory_name": "named"}, made),
            ({"runtime_factory_name": "named"}, named),
        ):
            resolved = invocation.resolve_runtime(
                options(runtime_factory_module_map=module_map, **overrides)
            )
            assert resolved is expected

    def test_agent_loader_loads_at_first_need_once(self) -> None:
        """Nothing loads when it is made; each handler and the runtime load once, at first need."""
        loads: list[str] = []
        runtime = object()

        def loader(name: str) -> Callable[[], Any]:
            def load() -> Any:
                loads.append(name)
                return name

            return load

        def factory() -> Any:
            loads.append("runtime")
            return runtime

        made = options(
            catalog={"a": {}, "b": {}},
            handlers={"a": loader("a"), "b": loader("b")},
            runtime_factory=factory,
        )
        agents = invocation.AgentLoader(made)
        assert loads == []
        assert [agents.handler("a"), agents.handler("a")] == ["a", "a"]  # type: ignore[comparison-overlap]
        assert agents.runtime() is runtime
        assert agents.runtime() is runtime
        context = agents.context("r-7")
        assert (context.request_id, context.runtime, context.env) == ("r-7", runtime, made.env)
        assert loads == ["a", "runtime"]
        with pytest.raises(KeyError):  # no agent named 'c'
            agents.handler("c")

    def test_agent_loader_loads_again_after_a_failure(self) -> None:
        """A loader that raised is called again at the next need."""
        attempts: list[int] = []

        def flaky() -> Any:
            attempts.append(1)
            if len(attempts) == 1:
                raise ImportError("not yet")
            return "loaded"

        agents = invocation.AgentLoader(options(handlers={"echo": flaky}))
        with pytest.raises(ImportError):  # the first load fails
            agents.handler("echo")
        assert agents.handler("echo") == "loaded"  # type: ignore[comparison-overlap]
        assert len(attempts) == 2

    @pytest.mark.anyio
    async def test_a_read_only_env_is_the_context_env(self) -> None:
        """A MappingProxyType env is accepted, and the agent gets that very mapping."""
        env = types.MappingProxyType({"REGION": "eu-west"})
        seen: list[Any] = []

        async def looks(context: InvocationContext, body: dict[str, Any]) -> Any:
            seen.append(context.env)
            return dict(context.env)

        app = create_app(options(env=env, handlers={"echo": lambda: looks}))
        status, _, body = await call(
            app, [{"type": "http.request", "body": b"{}", "more_body": False}], JSON_TYPE
        )
        assert (status, json.loads(body)["result"]) == (200, {"REGION": "eu-west"})
        assert seen[0] is env
