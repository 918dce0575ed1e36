"""Call recording, vacuous cases and operations no case exercised."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

import pytest

import conformkit as ck
from conformkit.laws import Call, CallRecorder


class Store(Protocol):
    async def read(self, key: str) -> str | None: ...
    async def write(self, key: str, value: str) -> None: ...
    def size(self) -> int: ...


class MemoryStore:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.label = "memory"

    async def read(self, key: str) -> str | None:
        return self.values.get(key)

    async def write(self, key: str, value: str) -> None:
        if not key:
            raise ValueError("empty key")
        self.values[key] = value

    def size(self) -> int:
        return len(self.values)


class TestCallRecorder:
    @pytest.mark.anyio
    async def test_records_sync_and_async_calls_with_their_outcomes(self) -> None:
        """Each method call is recorded with its arguments and result, in order."""
        recorder = CallRecorder()
        store = recorder.wrap(MemoryStore())
        await store.write("k", value="v")
        assert await store.read("k") == "v"
        assert store.size() == 1
        assert recorder.calls == [
            Call("write", ("k",), {"value": "v"}, None),
            Call("read", ("k",), {}, "v"),
            Call("size", (), {}, 1),
        ]
        assert str(recorder.calls[1]) == "read('k') -> 'v'"

    @pytest.mark.anyio
    async def test_records_errors_and_reraises_them(self) -> None:
        """A raising call is recorded with its error; the caller still sees the error."""
        recorder = CallRecorder()
        store = recorder.wrap(MemoryStore())
        with pytest.raises(ValueError, match="empty key"):
            await store.write("", "v")
        [call] = recorder.calls
        assert isinstance(call.error, ValueError)
        assert str(call).startswith("write('', 'v') raised ValueError")

    def test_attributes_pass_through_unrecorded(self) -> None:
        """Plain attributes read and write through to the callee without records."""
        target = MemoryStore()
        store = CallRecorder().wrap(target)
        assert store.label == "memory"
        store.label = "changed"
        assert target.label == "changed"

    def test_records_special_methods(self) -> None:
        """A mapping API works through the proxy, and its operators are recorded."""
        recorder = CallRecorder()
        mapping: MutableMapping[str, int] = recorder.wrap({})
        mapping["a"] = 1
        assert mapping["a"] == 1
        assert "a" in mapping
        assert len(mapping) == 1
        assert list(iter(mapping)) == ["a"]  # list() alone would ask __len__ too
        del mapping["a"]
        assert [call.name for call in recorder.calls] == [
            "__setitem__", "__getitem__", "__contains__", "__len__", "__iter__", "__delitem__",
        ]  # fmt: skip

    def test_assert_called(self) -> None:
        """assert_called names what was never called, and what was."""
        recorder = CallRecorder()
        with pytest.raises(ck.LawViolation, match="the API was never called"):
            recorder.assert_called()
        recorder.wrap(MemoryStore()).size()
        recorder.assert_called("size")
        with pytest.raises(ck.LawViolation, match="never called 'read'; the calls were: size"):
            recorder.assert_called("read", "size")


text = ck.Feature[Store]("test.recording", cases=("writes", "reads", "idle"))
suite = ck.ContractSuite(text)


@suite.case
async def writes(api: Store) -> None:
    await api.write("k", "v")


@suite.case
async def reads(api: Store) -> None:
    assert await api.read("absent") is None


@suite.case
async def idle(api: Store) -> None:
    """A case that never touches the API: it cannot fail, so it proves nothing."""


class Memory(ck.FeatureImplementation[Store]):
    feature = text
    coverage = text.coverage()

    def create(self, scope: ck.FeatureScope) -> Store:
        return MemoryStore()


class TestVacuousCases:
    def test_off_by_default(self) -> None:
        """Without the option, a case that never calls the API passes and nothing is tracked."""
        report = ck.run_contract_sync(Memory(), suite)
        assert report["idle"].status is ck.CaseStatus.PASSED
        assert report.unexercised is None

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_case_that_never_calls_the_api_fails(self, backend: str) -> None:
        """With reject_vacuous, a passing case without a single API call is a failure."""
        report = ck.run_contract_sync(Memory(), suite, reject_vacuous=True, backend=backend)  # type: ignore[arg-type]
        assert report["idle"].status is ck.CaseStatus.FAILED
        assert report["idle"].reason == "vacuous: the case never called the API"
        assert report["writes"].status is ck.CaseStatus.PASSED
        with pytest.raises(ck.ContractFailure, match="idle: failed: vacuous"):
            ck.assert_contract(report)

    def test_lists_operations_no_case_exercised(self) -> None:
        """The report names the API type's operations that no case called."""
        report = ck.run_contract_sync(Memory(), suite, reject_vacuous=True)
        assert report.unexercised == ("size",)
        assert "  operations no case exercised: size" in str(report).splitlines()
        assert report.to_dict()["unexercised"] == ["size"]

    def test_unknown_api_type_lists_nothing(self) -> None:
        """For Feature[Any], there is no type to list operations from."""
        untyped = ck.Feature[Any]("test.untyped", cases=("only",))

        class Untyped(ck.FeatureImplementation[Any]):
            feature = untyped
            coverage = untyped.coverage()

            def create(self, scope: ck.FeatureScope) -> Any:
                return MemoryStore()

        async def only(api: Any) -> None:
            await api.read("k")

        report = ck.run_contract_sync(
            Untyped(), ck.ContractSuite(untyped, {"only": only}), reject_vacuous=True
        )
        assert report.unexercised is None
        assert report["only"].status is ck.CaseStatus.PASSED

    @pytest.mark.anyio
    async def test_loops_raise_for_a_vacuous_case(self) -> None:
        """In a loop, a vacuous case raises LawViolation with the reason."""
        cases = {case.id: case for case in ck.contract_cases(Memory(), suite, reject_vacuous=True)}
        await cases["writes"].run()
        with pytest.raises(
            ck.LawViolation, match="case 'idle': vacuous: the case never called the API"
        ):
            await cases["idle"].run()

    @pytest.mark.anyio
    async def test_a_failing_case_keeps_its_own_error(self) -> None:
        """Recording changes nothing for the callee: errors surface as they are."""

        async def broken(api: Store) -> None:
            await api.write("", "v")

        broken_suite = ck.ContractSuite(text, {"writes": broken, "reads": reads, "idle": writes})
        report = await ck.run_contract(Memory(), broken_suite, reject_vacuous=True)
        assert isinstance(report["writes"].error, ValueError)
        assert report["idle"].status is ck.CaseStatus.PASSED


class TestConsumers:
    @pytest.mark.anyio
    async def test_a_consumer_that_bypasses_the_implementation_is_caught(self) -> None:
        """A consumer test can prove the consumer went through the implementation under test."""

        async def honest_consumer(store: Store) -> int:
            await store.write("seen", "yes")
            return store.size()

        cache: dict[str, str] = {}

        async def caching_consumer(store: Store) -> int:
            cache["seen"] = "yes"  # never reaches the store
            return len(cache)

        recorder = CallRecorder()
        assert await honest_consumer(recorder.wrap(MemoryStore())) == 1
        recorder.assert_called("write")

        bypassed = CallRecorder()
        assert await caching_consumer(bypassed.wrap(MemoryStore())) == 1
        with pytest.raises(ck.LawViolation, match="never called 'write'; the calls were: nothing"):
            bypassed.assert_called("write")
