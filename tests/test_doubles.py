"""Test doubles: a stub's answers and refusals, and the call assertions it shares with recorders."""

from __future__ import annotations

import abc
import inspect
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any, Protocol
from unittest.mock import ANY, call

import pytest

import conformkit as ck
from conformkit.laws import Call, CallRecorder


class TextAPI(Protocol):
    label: str

    async def read(self, key: str) -> str | None: ...
    async def write(self, key: str, value: str) -> None: ...
    def size(self) -> int: ...


class MemoryText:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.label = "memory"

    async def read(self, key: str) -> str | None:
        return self.values.get(key)

    async def write(self, key: str, value: str) -> None:
        self.values[key] = value

    def size(self) -> int:
        return len(self.values)


class Table(Protocol):
    def __getitem__(self, key: str) -> int: ...
    def __len__(self) -> int: ...


class TestAnswers:
    @pytest.mark.anyio
    async def test_returns_gives_every_call_the_same_value(self) -> None:
        """A value in returns answers each call of a sync or async operation."""
        stub = ck.Stub(TextAPI, returns={"read": "v", "size": 3})
        assert await stub.api.read("a") == "v"
        assert await stub.api.read("b") == "v"
        assert stub.api.size() == 3
        assert stub.calls == [
            Call("read", ("a",), {}, "v"),
            Call("read", ("b",), {}, "v"),
            Call("size", (), {}, 3),
        ]

    @pytest.mark.anyio
    async def test_async_operations_are_coroutine_functions(self) -> None:
        """An async def of the API type is a coroutine function on the stub; a def is not."""
        stub = ck.Stub(TextAPI, returns={"read": None, "size": 0})
        assert inspect.iscoroutinefunction(stub.api.read)
        assert not inspect.iscoroutinefunction(stub.api.size)
        assert stub.api.size() == 0
        assert await stub.api.read("k") is None

    @pytest.mark.anyio
    async def test_a_sequence_answers_one_call_each_and_raises_its_exceptions(self) -> None:
        """An iterable side effect gives one answer per call; an exception in it is raised."""
        stub = ck.Stub(TextAPI, side_effects={"read": ["a", KeyError("gone"), None]})
        assert await stub.api.read("k") == "a"
        with pytest.raises(KeyError, match="gone"):
            await stub.api.read("k")
        assert await stub.api.read("k") is None

    @pytest.mark.anyio
    async def test_a_sequence_that_runs_out_refuses(self) -> None:
        """One call more than the answers raises, naming the operation and its arguments."""
        stub = ck.Stub(TextAPI, side_effects={"read": iter(["a"])})
        await stub.api.read("k")
        with pytest.raises(
            ck.LawViolation,
            match=r"^unexpected call TextAPI.read\('x'\): the side effects of read ran out$",
        ):
            await stub.api.read("x")

    @pytest.mark.anyio
    @pytest.mark.parametrize("effect", [OSError("disk"), OSError], ids=["instance", "class"])
    async def test_an_exception_is_raised_on_every_call(self, effect: object) -> None:
        """An exception side effect, instance or class, is raised by each call."""
        stub = ck.Stub(TextAPI, side_effects={"write": effect})
        for _ in range(2):
            with pytest.raises(OSError, match="disk|^$"):  # the canned error itself
                await stub.api.write("k", "v")
        assert [type(call.error) for call in stub.calls] == [OSError, OSError]

    @pytest.mark.anyio
    async def test_a_callable_gets_the_arguments(self) -> None:
        """A callable side effect is called with the arguments; an async one is awaited."""
        seen: list[tuple[str, str]] = []

        async def write(key: str, value: str) -> None:
            seen.append((key, value))

        stub = ck.Stub(TextAPI, side_effects={"write": write, "read": str.upper})
        await stub.api.write("k", value="v")
        assert await stub.api.read("key") == "KEY"
        assert seen == [("k", "v")]

    def test_attributes_come_from_returns(self) -> None:
        """A declared attribute reads its value from returns, unrecorded."""
        stub = ck.Stub(TextAPI, returns={"label": "stubbed"})
        assert stub.api.label == "stubbed"
        assert stub.calls == []

    @pytest.mark.anyio
    async def test_an_abstract_base_class_with_a_property(self) -> None:
        """An ABC works as a Protocol does; its property reads from returns."""

        class Source(abc.ABC):
            @property
            @abc.abstractmethod
            def name(self) -> str: ...

            @abc.abstractmethod
            async def fetch(self, key: str) -> bytes: ...

        stub = ck.Stub(Source, returns={"name": "s3", "fetch": b"data"})
        assert stub.api.name == "s3"
        assert inspect.iscoroutinefunction(stub.api.fetch)
        assert await stub.api.fetch(key="k") == b"data"
        stub.assert_called_once_with("fetch", "k")

    def test_special_methods(self) -> None:
        """The operators of a mapping-like API type answer like any operation."""
        stub = ck.Stub(
            Table, side_effects={"__getitem__": {"a": 1}.__getitem__}, returns={"__len__": 1}
        )
        assert stub.api["a"] == 1
        assert len(stub.api) == 1
        with pytest.raises(KeyError):  # the side effect's own error
            stub.api["b"]
        # call.__getitem__ is the tuple's own: special methods are asserted by name.
        stub.assert_any_call("__getitem__", "a")
        stub.assert_called("__len__", times=1)

    def test_the_stub_has_only_the_types_members(self) -> None:
        """A name the API type does not declare is an AttributeError, as on the real object."""
        stub = ck.Stub(TextAPI)
        with pytest.raises(AttributeError):  # no such member
            stub.api.delete  # type: ignore[attr-defined]  # noqa: B018

    def test_repr(self) -> None:
        """The repr names the type, the answered operations and the number of calls."""
        stub = ck.Stub(TextAPI, returns={"size": 0, "read": None})
        stub.api.size()
        assert repr(stub) == "<Stub of TextAPI answering ['read', 'size'], 1 call(s)>"


refusal_feature = ck.Feature[TextAPI]("test.doubles.refusal", cases=("writes",))
refusal_suite = ck.ContractSuite(refusal_feature)


@refusal_suite.case
async def writes(api: TextAPI) -> None:
    await api.write("k", "v")


class Stubbed(ck.FeatureImplementation[TextAPI]):
    feature = refusal_feature
    coverage = refusal_feature.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return ck.Stub(TextAPI, returns={"read": None}).api


class TestRefusals:
    @pytest.mark.anyio
    async def test_an_unanswered_operation_raises_at_once(self) -> None:
        """A call with no answer raises LawViolation naming the operation and the arguments."""
        stub = ck.Stub(TextAPI, returns={"read": None})
        message = (
            "unexpected call TextAPI.write('k', value='v'): the stub has no answer for write; "
            "give one in returns or side_effects"
        )
        with pytest.raises(ck.LawViolation) as raised:
            await stub.api.write("k", value="v")
        assert str(raised.value) == message
        assert stub.refused == (message,)
        with pytest.raises(ck.LawViolation, match=r"TextAPI.size\(\): the stub has no answer"):
            stub.api.size()

    @pytest.mark.anyio
    async def test_arguments_that_do_not_fit_the_signature_are_a_type_error(self) -> None:
        """As on a real object, a call the signature rejects raises TypeError, naming the call."""
        stub = ck.Stub(TextAPI, returns={"write": None})
        with pytest.raises(TypeError, match=r"^TextAPI.write\('k'\) does not fit the signature"):
            await stub.api.write("k")  # type: ignore[call-arg]
        assert len(stub.refused) == 1

    def test_an_unanswered_attribute_read_is_refused(self) -> None:
        """Reading a declared attribute without a value raises, naming it."""
        stub = ck.Stub(TextAPI)
        with pytest.raises(
            ck.LawViolation, match=r"^unexpected read of TextAPI.label: the stub has no value"
        ):
            stub.api.label  # noqa: B018

    def test_every_assertion_fails_on_a_swallowed_refusal(self) -> None:
        """A consumer that swallows the refusal does not hide it: the next assertion fails."""
        stub = ck.Stub(TextAPI, returns={"size": 0})

        def careless(api: TextAPI) -> int:
            try:
                return api.size() + len(api.label)
            except Exception:
                return 0

        assert careless(stub.api) == 0
        checks: list[Callable[[], None]] = [
            lambda: stub.assert_called("size"),
            lambda: stub.assert_not_called("read"),
            lambda: stub.assert_any_call("size"),
            lambda: stub.assert_called_with("size"),
            lambda: stub.assert_called_once_with("size"),
            lambda: stub.assert_has_calls([call.size()]),
        ]
        for check in checks:
            with pytest.raises(
                ck.LawViolation, match=r"^the stub refused a call: unexpected read of TextAPI.label"
            ):
                check()

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_case_that_makes_an_unanswered_call_fails(self, backend: Any) -> None:
        """In a contract, the refusal fails the case, and its reason names the call."""
        report = ck.run_contract_sync(Stubbed(), refusal_suite, backend=backend)
        result = report["writes"]
        assert result.status is ck.CaseStatus.FAILED
        assert result.reason is not None
        assert "unexpected call TextAPI.write('k', 'v')" in result.reason


class TestDroppedCoroutines:
    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    @pytest.mark.parametrize("reject_vacuous", [False, True])
    def test_a_sync_case_that_drops_a_stubs_coroutine_fails(
        self, backend: Any, reject_vacuous: bool
    ) -> None:
        """A stub's async operation called and never awaited is named like the API's own."""

        def drops(api: TextAPI) -> None:
            api.write("k", "v")  # type: ignore[unused-coroutine]

        suite = ck.ContractSuite(refusal_feature, {"writes": drops})
        report = ck.run_contract_sync(
            Stubbed(), suite, backend=backend, reject_vacuous=reject_vacuous
        )
        assert report["writes"].status is ck.CaseStatus.FAILED
        assert report["writes"].reason is not None
        assert "coroutine api.write() was never awaited" in report["writes"].reason


class TestBadStubs:
    @pytest.mark.parametrize(
        ("make", "message"),
        [
            pytest.param(
                lambda: ck.Stub(Any),
                "Stub() needs the API type, a class or a Protocol, got ",
                id="any",
            ),
            pytest.param(lambda: ck.Stub(3), "Stub() needs the API type", id="not-a-class"),  # type: ignore[arg-type]
            pytest.param(
                lambda: ck.Stub(TextAPI, returns={"raed": None}),
                "Stub(TextAPI): returns names 'raed', which TextAPI does not declare; "
                "did you mean 'read'?",
                id="unknown-name",
            ),
            pytest.param(
                lambda: ck.Stub(TextAPI, returns={"read": None}, side_effects={"read": [1]}),
                "Stub(TextAPI): 'read' is in both returns and side_effects; give it one answer",
                id="both",
            ),
            pytest.param(
                lambda: ck.Stub(TextAPI, side_effects={"read": 3}),
                "Stub(TextAPI): side_effects['read'] must be an exception, a callable or an "
                "iterable of answers, got 3; one value for every call goes in returns",
                id="a-value-as-side-effect",
            ),
            pytest.param(
                lambda: ck.Stub(TextAPI, side_effects={"read": "abc"}),
                "Stub(TextAPI): side_effects['read'] must be an exception, a callable or an "
                "iterable of answers, got 'abc'",
                id="a-string-as-side-effect",
            ),
            pytest.param(
                lambda: ck.Stub(TextAPI, side_effects={"label": ["a"]}),
                "Stub(TextAPI): 'label' is an attribute of TextAPI; give its value in returns",
                id="attribute-side-effect",
            ),
            pytest.param(
                lambda: ck.Stub(TextAPI, returns=[("read", None)]),  # type: ignore[arg-type]
                "Stub(TextAPI): returns must map operation names to answers, got ",
                id="not-a-mapping",
            ),
        ],
    )
    def test_a_malformed_stub_is_a_definition_error(
        self, make: Callable[[], object], message: str
    ) -> None:
        """Each mistake is a one-line ContractDefinitionError naming the offending thing."""
        with pytest.raises(ck.ContractDefinitionError) as raised:
            make()
        assert str(raised.value).startswith(message)
        assert "\n" not in str(raised.value)


def recorder_double() -> tuple[TextAPI, Any]:
    recorder = CallRecorder()
    return recorder.wrap(MemoryText()), recorder


def stub_double() -> tuple[TextAPI, Any]:
    stub = ck.Stub(TextAPI, returns={"write": None, "read": None, "size": 0})
    return stub.api, stub


@pytest.fixture(params=[recorder_double, stub_double], ids=["recorder", "stub"])
def double(request: pytest.FixtureRequest) -> tuple[TextAPI, Any]:
    """An API and what recorded its calls: a CallRecorder's proxy, or a stub."""
    made: tuple[TextAPI, Any] = request.param()
    return made


class TestCallAssertions:
    @pytest.mark.anyio
    async def test_assert_any_call(self, double: tuple[TextAPI, Any]) -> None:
        """Any call with these arguments, however they were passed; ANY matches anything."""
        api, calls = double
        await api.write("k", value="v")
        await api.write("j", "w")
        calls.assert_any_call("write", "k", "v")
        calls.assert_any_call("write", key="j", value="w")
        calls.assert_any_call("write", "k", ANY)
        with pytest.raises(
            ck.LawViolation,
            match=r"^expected a call write\('k', 'w'\); the calls of write were: "
            r"write\('k', value='v'\), write\('j', 'w'\)$",
        ):
            calls.assert_any_call("write", "k", "w")
        with pytest.raises(
            ck.LawViolation, match=r"expected a call read\(<ANY>\); read was never called$"
        ):
            calls.assert_any_call("read", ANY)

    @pytest.mark.anyio
    async def test_assert_called_with_checks_the_last_call(
        self, double: tuple[TextAPI, Any]
    ) -> None:
        """Only the last call of the operation counts, as in unittest.mock."""
        api, calls = double
        await api.read("first")
        await api.read("last")
        calls.assert_called_with("read", "last")
        with pytest.raises(
            ck.LawViolation, match=r"^expected the last call of read to be read\('first'\)"
        ):
            calls.assert_called_with("read", "first")

    @pytest.mark.anyio
    async def test_assert_called_once_with(self, double: tuple[TextAPI, Any]) -> None:
        """Exactly one call, with these arguments."""
        api, calls = double
        with pytest.raises(
            ck.LawViolation, match=r"^expected one call read\('k'\); read was never called$"
        ):
            calls.assert_called_once_with("read", "k")
        await api.read("k")
        calls.assert_called_once_with("read", key="k")
        with pytest.raises(ck.LawViolation, match=r"expected one call read\('j'\), got 1 call"):
            calls.assert_called_once_with("read", "j")
        await api.read("k")
        with pytest.raises(ck.LawViolation, match=r"got 2 call\(s\) of read"):
            calls.assert_called_once_with("read", "k")

    @pytest.mark.anyio
    async def test_assert_called_times(self, double: tuple[TextAPI, Any]) -> None:
        """times= counts the calls of each named operation exactly."""
        api, calls = double
        await api.read("a")
        await api.read("b")
        api.size()
        calls.assert_called("read", times=2)
        calls.assert_called("size", times=1)
        calls.assert_called("write", times=0)
        with pytest.raises(
            ck.LawViolation,
            match=r"^expected read to be called 3 time\(s\), it was called 2 time\(s\); "
            r"the calls of read were: read\('a'\), read\('b'\)$",
        ):
            calls.assert_called("read", times=3)

    @pytest.mark.parametrize(
        ("times", "names", "message"),
        [
            (-1, ("read",), "times must be a whole number of calls, 0 or more, got -1"),
            (True, ("read",), "times must be a whole number of calls, 0 or more, got True"),
            (1, (), r"assert_called\(times=...\) needs the methods to count"),
        ],
    )
    def test_a_bad_count_is_a_definition_error(
        self, double: tuple[TextAPI, Any], times: Any, names: tuple[str, ...], message: str
    ) -> None:
        """A count that is not a whole number, or one without names, is refused."""
        _, calls = double
        with pytest.raises(ck.ContractDefinitionError, match=message):
            calls.assert_called(*names, times=times)

    @pytest.mark.anyio
    async def test_assert_not_called(self, double: tuple[TextAPI, Any]) -> None:
        """Never called: the named operations, or, without names, anything at all."""
        api, calls = double
        calls.assert_not_called()
        await api.read("k")
        calls.assert_not_called("write", "size")
        with pytest.raises(
            ck.LawViolation, match=r"^expected no call of read, got 1: read\('k'\)$"
        ):
            calls.assert_not_called("read")
        with pytest.raises(ck.LawViolation, match=r"^expected no call of the API, got 1"):
            calls.assert_not_called()

    @pytest.mark.anyio
    async def test_assert_has_calls_in_order(self, double: tuple[TextAPI, Any]) -> None:
        """The calls consecutive and in order, others around them allowed, as in unittest.mock."""
        api, calls = double
        api.size()
        await api.write("k", "v")
        await api.read("k")
        api.size()
        calls.assert_has_calls([call.write("k", value="v"), call.read("k")])
        calls.assert_has_calls([call.size(), call.write(ANY, ANY)])
        with pytest.raises(
            ck.LawViolation,
            match=r"^expected the calls read\('k'\), write\('k', 'v'\) in this order; "
            r"the calls were: size\(\), write\('k', 'v'\), read\('k'\), size\(\)$",
        ):
            calls.assert_has_calls([call.read("k"), call.write("k", "v")])
        with pytest.raises(ck.LawViolation, match="in this order"):  # not consecutive
            calls.assert_has_calls([call.size(), call.read("k")])
        calls.assert_has_calls([call.read("k"), call.write("k", "v")], any_order=True)
        with pytest.raises(ck.LawViolation, match=r"in any order, but not read\('j'\)"):
            calls.assert_has_calls([call.read("k"), call.read("j")], any_order=True)
        with pytest.raises(ck.LawViolation, match=r"in any order, but not size\(\)"):
            calls.assert_has_calls([call.size()] * 3, any_order=True)  # each call used once

    @pytest.mark.parametrize(
        ("check", "message"),
        [
            pytest.param(
                lambda calls: calls.assert_not_called("wirte"),
                "assert_not_called() names 'wirte', which {owner} does not declare; "
                "did you mean 'write'?",
                id="assert_not_called",
            ),
            pytest.param(
                lambda calls: calls.assert_called("size", "sizes", times=0),
                "assert_called() names 'sizes', which {owner} does not declare; "
                "did you mean 'size'?",
                id="assert_called",
            ),
            pytest.param(
                lambda calls: calls.assert_any_call("reed", "k"),
                "assert_any_call() names 'reed'",
                id="assert_any_call",
            ),
            pytest.param(
                lambda calls: calls.assert_called_with("reed", "k"),
                "assert_called_with() names 'reed'",
                id="assert_called_with",
            ),
            pytest.param(
                lambda calls: calls.assert_called_once_with("reed", "k"),
                "assert_called_once_with() names 'reed'",
                id="assert_called_once_with",
            ),
            pytest.param(
                lambda calls: calls.assert_has_calls([call.size(), call.reed("k")]),
                "assert_has_calls() names 'reed'",
                id="assert_has_calls",
            ),
            pytest.param(
                lambda calls: calls.assert_has_calls([]),
                "assert_has_calls() needs at least one call to look for",
                id="no-calls",
            ),
            pytest.param(
                lambda calls: calls.assert_not_called(3),
                "assert_not_called() takes method names, got 3",
                id="not-a-name",
            ),
        ],
    )
    def test_an_assertion_that_could_never_fail_is_refused(
        self, double: tuple[TextAPI, Any], check: Callable[[Any], None], message: str
    ) -> None:
        """A misspelt name, or no call to look for, would make an assertion that always holds."""
        api, calls = double
        api.size()  # the recorder learns the type it wraps from wrap()
        owner = "TextAPI" if isinstance(calls, ck.Stub) else "MemoryText"
        with pytest.raises(ck.ContractDefinitionError) as raised:
            check(calls)
        assert str(raised.value).startswith(message.format(owner=owner))

    @pytest.mark.parametrize("item", [("read", "k"), call("k"), "read"], ids=repr)
    def test_assert_has_calls_takes_named_calls_only(
        self, double: tuple[TextAPI, Any], item: object
    ) -> None:
        """An item that is not a call naming the method is a definition error."""
        _, calls = double
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"^assert_has_calls takes unittest.mock call objects that name the method",
        ):
            calls.assert_has_calls([item])


class Counter:
    """The local plugin a consumer is wired against."""

    def __init__(self) -> None:
        self.value = 0

    def add(self, amount: int) -> int:
        self.value += amount
        return self.value


class Tally:
    """The consumer: counts words through the plugin."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter

    def count(self, text: str) -> int:
        if not text.strip():
            raise ValueError("nothing to count")
        return self.counter.add(len(text.split()))


class ShortcutTally(Tally):
    """A consumer that answers by itself and never reaches the plugin."""

    def count(self, text: str) -> int:
        if not text.strip():
            raise ValueError("nothing to count")
        return len(text.split())


class WiredTally:
    def __init__(self, tally: type[Tally]) -> None:
        self.recorder = CallRecorder()
        self.tally = tally(self.recorder.wrap(Counter()))


tallying = ck.Feature[WiredTally]("test.doubles.consumer", cases=("counts", "refuses_blank"))
tally_suite = ck.ContractSuite(tallying)


@tally_suite.case
def counts(wired: WiredTally) -> None:
    assert wired.tally.count("two words") == 2
    wired.recorder.assert_called_once_with("add", 2)


@tally_suite.case
def refuses_blank(wired: WiredTally) -> None:
    with pytest.raises(ValueError, match="nothing to count"):
        wired.tally.count(" ")
    wired.recorder.assert_not_called("add")


class Honest(ck.FeatureImplementation[WiredTally]):
    feature = tallying
    coverage = tallying.coverage()

    def create(self, scope: ck.FeatureScope) -> WiredTally:
        return WiredTally(Tally)


class Shortcut(ck.FeatureImplementation[WiredTally]):
    feature = tallying
    coverage = tallying.coverage()

    def create(self, scope: ck.FeatureScope) -> WiredTally:
        return WiredTally(ShortcutTally)


class TestConsumerContract:
    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_consumer_that_goes_through_the_plugin_passes(self, backend: Any) -> None:
        """Wired to the local plugin, the honest consumer passes its happy and failure paths."""
        report = ck.run_contract_sync(Honest(), tally_suite, backend=backend)
        ck.assert_contract(report, require_full=True)

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_consumer_that_bypasses_the_plugin_fails(self, backend: Any) -> None:
        """Same answers without the plugin: the recorder fails exactly the happy path."""
        report = ck.run_contract_sync(Shortcut(), tally_suite, backend=backend)
        assert [(result.case_id, result.status.value) for result in report.results] == [
            ("counts", "failed"),
            ("refuses_blank", "passed"),
        ]
        assert report["counts"].reason is not None
        assert "expected one call add(2); add was never called" in report["counts"].reason


class TestImportCost:
    def test_stubs_and_their_assertions_load_no_unittest(self) -> None:
        """Building a stub, calling it and asserting by name imports neither unittest nor json."""
        code = textwrap.dedent(
            """
            import sys
            from typing import Protocol
            import conformkit as ck

            class Sized(Protocol):
                def size(self) -> int: ...
                def clear(self) -> None: ...

            stub = ck.Stub(Sized, returns={"size": 1})
            stub.api.size()
            stub.assert_called_once_with("size")
            stub.assert_any_call("size")
            stub.assert_called("size", times=1)
            stub.assert_not_called("clear")
            print(sorted(name for name in ("unittest", "unittest.mock") if name in sys.modules))
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
        assert done.stdout.strip() == "[]"
