"""Contract suites: registering case functions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, Protocol

import pytest

import conformkit as ck

feature = ck.Feature[Any]("kv", cases=("read", "write"))


async def read(api: Any) -> None:
    """A case function named after its case."""


class TestRegistration:
    def test_decorator_takes_the_function_name(self) -> None:
        """@suite.case registers under the function's name and returns it unchanged."""
        suite = ck.ContractSuite(feature)
        assert suite.case(read) is read
        assert suite["read"] is read
        assert list(suite) == ["read"]
        assert "read" in suite
        assert len(suite) == 1

    def test_decorator_with_an_explicit_name(self) -> None:
        """@suite.case("write") registers the function under that name."""
        suite = ck.ContractSuite(feature)

        @suite.case("write")
        async def _anything(api: Any) -> None: ...

        assert suite["write"] is _anything

    def test_mapping_constructor(self) -> None:
        """ContractSuite(feature, {...}) registers each entry."""
        suite = ck.ContractSuite(feature, {"read": read, "write": read})
        assert list(suite) == ["read", "write"]

    def test_rejects_an_invented_case_at_registration(self) -> None:
        """A function for a case the feature does not declare fails at once, with a hint."""
        suite = ck.ContractSuite(feature)
        with pytest.raises(
            ck.ContractDefinitionError, match="names case 'reed'.*did you mean 'read'"
        ):
            suite.case("reed")(read)
        with pytest.raises(ck.ContractDefinitionError, match="names case 'erase'"):
            ck.ContractSuite(feature, {"erase": read})

    def test_rejects_a_second_function_for_a_case(self) -> None:
        """Registering a case twice names the case and the first function."""
        suite = ck.ContractSuite(feature)
        suite.case(read)
        with pytest.raises(
            ck.ContractDefinitionError, match="already has a function for case 'read'.*read at"
        ):
            suite.case("read")(read)

    def test_rejects_non_callables(self) -> None:
        """A case must be callable."""
        with pytest.raises(
            ck.ContractDefinitionError, match="case 'read' of feature 'kv' must be callable"
        ):
            ck.ContractSuite(feature, {"read": 42})  # type: ignore[dict-item]

    def test_rejects_a_non_feature(self) -> None:
        """The first argument must be a Feature."""
        with pytest.raises(ck.ContractDefinitionError, match="needs a Feature"):
            ck.ContractSuite("kv")  # type: ignore[arg-type]

    def test_repr_names_feature_and_cases(self) -> None:
        """The repr shows the feature ID and the registered cases."""
        suite = ck.ContractSuite(feature, {"read": read})
        assert repr(suite) == "ContractSuite('kv', cases=['read'])"


class TextAPI(Protocol):
    async def write(self, key: str, value: str) -> None: ...
    async def read(self, key: str) -> str: ...


class TextAPIWithSize(TextAPI, Protocol):
    def size(self) -> int: ...


class TextAPIWithName(TextAPI, Protocol):
    name: str


class TextAPIWithPrivateState(TextAPI, Protocol):
    _pending: list[str]  # private: not an operation of the API


class TextAPIWithAsyncHelpers(TextAPI, Protocol):
    @staticmethod
    async def ping() -> None: ...

    @classmethod
    async def open(cls) -> None: ...


class TestSyncCasesOverAsyncAPIs:
    """A plain function that returns nothing, over an API that is all async, is refused."""

    def test_a_sync_case_over_an_async_only_api_is_refused_naming_the_operations(self) -> None:
        suite = ck.ContractSuite(ck.Feature[TextAPI]("test.suite.sync", cases=("writes",)))

        def writes(api: TextAPI) -> None:
            api.write("k", "v")  # type: ignore[unused-coroutine]  # the defect under test

        with pytest.raises(ck.ContractDefinitionError) as raised:
            suite.case(writes)
        message = str(raised.value)
        assert message.startswith(
            "case 'writes' of feature 'test.suite.sync' is a plain function that returns "
            "nothing, but every operation of TextAPI is async (read, write)"
        )
        assert "make it 'async def' and await each call" in message
        assert "writes at " in message
        assert "test_suite.py" in message
        assert "writes" not in suite

    def test_the_mapping_form_is_checked_too(self) -> None:
        feature = ck.Feature[TextAPI]("test.suite.sync", cases=("writes",))

        def writes(api: TextAPI) -> None:
            return None

        with pytest.raises(ck.ContractDefinitionError, match="is a plain function"):
            ck.ContractSuite(feature, {"writes": writes})

    def test_a_family_function_is_checked_too(self) -> None:
        feature = ck.Feature[TextAPI]("test.suite.sync", cases=(), families={"keys": ("a", "b")})
        suite = ck.ContractSuite(feature)

        def keys(api: TextAPI, key: str) -> None:
            api.write(key, "v")  # type: ignore[unused-coroutine]  # the defect under test

        with pytest.raises(ck.ContractDefinitionError, match="case 'keys' .* plain function"):
            suite.family(keys)

    @pytest.mark.parametrize(
        "case",
        [
            pytest.param(lambda api: api.write("k", "v"), id="lambda-returning-the-coroutine"),
            pytest.param(lambda api: None, id="lambda"),
        ],
    )
    def test_a_lambda_may_return_the_coroutine(self, case: Any) -> None:
        suite = ck.ContractSuite(ck.Feature[TextAPI]("test.suite.sync", cases=("writes",)))
        suite.case("writes")(case)
        assert "writes" in suite

    def test_a_def_returning_a_value_may_return_the_coroutine(self) -> None:
        suite = ck.ContractSuite(ck.Feature[TextAPI]("test.suite.sync", cases=("writes", "or")))

        def writes(api: TextAPI) -> Awaitable[None]:
            return api.write("k", "v")

        def or_(api: TextAPI) -> Any:
            return api.read("k") or None  # reaches its return with the coroutine

        suite.case(writes)
        suite.case("or")(or_)
        assert list(suite) == ["writes", "or"]

    @pytest.mark.parametrize(
        "api_type",
        [TextAPIWithSize, TextAPIWithName, Any],
        ids=["a-sync-method", "a-data-member", "unknown-api"],
    )
    def test_a_sync_case_is_allowed_when_the_api_has_a_sync_member(self, api_type: Any) -> None:
        suite = ck.ContractSuite(ck.Feature[api_type]("test.suite.sync", cases=("sizes",)))

        def sizes(api: Any) -> None:
            assert api.size() == 0

        suite.case(sizes)
        assert "sizes" in suite

    @pytest.mark.parametrize(
        ("api_type", "operations"),
        [
            (TextAPIWithPrivateState, "read, write"),
            (TextAPIWithAsyncHelpers, "open, ping, read, write"),
        ],
        ids=["a-private-annotation", "async-static-and-class-methods"],
    )
    def test_private_members_and_async_static_methods_keep_the_api_async_only(
        self, api_type: Any, operations: str
    ) -> None:
        suite = ck.ContractSuite(ck.Feature[api_type]("test.suite.sync", cases=("writes",)))

        def writes(api: Any) -> None:
            api.write("k", "v")

        with pytest.raises(ck.ContractDefinitionError) as raised:
            suite.case(writes)
        assert f"every operation of {api_type.__name__} is async ({operations})" in str(
            raised.value
        )

    def test_a_generator_function_is_left_to_the_run(self) -> None:
        """A generator returns a generator, not nothing: this check does not judge it."""
        suite = ck.ContractSuite(ck.Feature[TextAPI]("test.suite.sync", cases=("gen", "agen")))

        def gen(api: TextAPI) -> Iterator[None]:
            yield

        async def agen(api: TextAPI) -> AsyncIterator[None]:
            yield

        suite.case(gen)  # type: ignore[type-var]
        suite.case(agen)  # type: ignore[type-var]
        assert list(suite) == ["gen", "agen"]

    def test_an_async_case_over_an_async_api_is_allowed(self) -> None:
        suite = ck.ContractSuite(ck.Feature[TextAPI]("test.suite.sync", cases=("writes",)))

        @suite.case
        async def writes(api: TextAPI) -> None:
            await api.write("k", "v")

        assert suite["writes"] is writes


families = ck.Feature[Any]("kv.fields", cases=("read",), families={"keeps": ("a", "b")})


async def keeps(api: Any, field: str) -> None:
    """A family function named after its family."""


class TestFamilyRegistration:
    def test_decorator_takes_the_function_name(self) -> None:
        """@suite.family registers under the function's name and returns it unchanged."""
        suite = ck.ContractSuite(families)
        assert suite.family(keeps) is keeps
        assert suite["keeps"] is keeps
        assert list(suite) == ["keeps"]

    def test_decorator_with_an_explicit_name(self) -> None:
        """@suite.family("keeps") registers the function under that name and returns it."""
        suite = ck.ContractSuite(families)

        async def _anything(api: Any, field: str) -> None: ...

        assert suite.family("keeps")(_anything) is _anything
        assert suite["keeps"] is _anything

    def test_a_plain_case_is_not_a_family(self) -> None:
        """@suite.family on a plain case's function is refused, pointing at @suite.case."""
        suite = ck.ContractSuite(families)
        with pytest.raises(ck.ContractDefinitionError, match="'read' is a case .*@suite.case"):
            suite.family(read)  # type: ignore[arg-type]
        with pytest.raises(ck.ContractDefinitionError, match="'keeps' is a family .*@suite.family"):
            suite.case(keeps)  # type: ignore[arg-type]
        assert list(suite) == []


class TestNamelessCallables:
    """A callable without a ``__name__`` is registered under its repr, which no case matches."""

    @pytest.mark.parametrize("register", ["case", "family"])
    def test_is_refused_naming_its_repr(self, register: str) -> None:
        import functools

        nameless = functools.partial(keeps, field="a")
        suite = ck.ContractSuite(families)
        with pytest.raises(ck.ContractDefinitionError) as caught:
            getattr(suite, register)(nameless)
        assert str(caught.value).startswith(
            f"suite of feature 'kv.fields' names case {repr(nameless)!r}"
        )


class TestCompleteness:
    def test_a_run_names_every_case_without_a_function(self) -> None:
        """A run of a suite lacking functions refuses to start, listing each missing case."""

        class Memory(ck.FeatureImplementation[Any]):
            feature = families
            coverage = families.coverage()

            def create(self, scope: ck.FeatureScope) -> Any:
                return {}

        with pytest.raises(ck.ContractDefinitionError) as caught:
            ck.run_contract_sync(Memory(), ck.ContractSuite(families))
        assert str(caught.value) == (
            "suite of feature 'kv.fields' has no function for case(s) 'read', 'keeps'"
        )
