"""FeatureImplementation: declarations checked when the class is created."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck

feature = ck.Feature[Any]("kv", cases=("read", "write"))


class TestDeclarations:
    def test_a_complete_declaration_is_accepted(self) -> None:
        """A feature and a coverage naming every case make a usable class."""

        class Memory(ck.FeatureImplementation[Any]):
            feature = feature
            coverage = feature.coverage(unsupported={"write": "read-only"})

            def create(self, scope: ck.FeatureScope) -> Any:
                return {}

        assert repr(Memory()).endswith("<locals>.Memory implementing 'kv'>")

    def test_rejects_coverage_missing_a_case(self) -> None:
        """Coverage that leaves a case undeclared fails at class creation, naming it."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"Partial\.coverage does not declare case\(s\) 'write' of feature 'kv'; "
            r"declare each Supported\(\) or Unsupported\(reason\)$",
        ):

            class Partial(ck.FeatureImplementation[Any]):
                feature = feature
                coverage = {"read": ck.Supported()}

                def create(self, scope: ck.FeatureScope) -> Any: ...

    def test_names_every_undeclared_case(self) -> None:
        """Each case the coverage leaves out is listed, in declared order."""
        with pytest.raises(
            ck.ContractDefinitionError, match=r"does not declare case\(s\) 'read', 'write' of"
        ):

            class Empty(ck.FeatureImplementation[Any]):
                feature = feature
                coverage: dict[str, ck.Supported] = {}

                def create(self, scope: ck.FeatureScope) -> Any: ...

    def test_rejects_coverage_inventing_a_case(self) -> None:
        """Coverage naming an undeclared case fails at class creation, with a hint."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"\.Invented\.coverage names case 'reed'.*did you mean 'read'",
        ):

            class Invented(ck.FeatureImplementation[Any]):
                feature = feature
                coverage = {"reed": ck.Supported(), "read": ck.Supported(), "write": ck.Supported()}

                def create(self, scope: ck.FeatureScope) -> Any: ...

    def test_rejects_values_that_are_not_markers(self) -> None:
        """Coverage values must be Supported() or Unsupported(reason)."""
        with pytest.raises(
            ck.ContractDefinitionError, match=r"coverage\['read'\] must be Supported\(\)"
        ):

            class Truthy(ck.FeatureImplementation[Any]):
                feature = feature
                coverage = {"read": True, "write": ck.Supported()}  # type: ignore[dict-item]

                def create(self, scope: ck.FeatureScope) -> Any: ...

    def test_rejects_a_coverage_that_is_not_a_mapping(self) -> None:
        """A list of names is not a coverage declaration; the message says how to build one."""
        with pytest.raises(
            ck.ContractDefinitionError, match=r"must be a mapping.*feature\.coverage\(\)"
        ):

            class Listed(ck.FeatureImplementation[Any]):
                feature = feature
                coverage = ["read", "write"]  # type: ignore[assignment]

                def create(self, scope: ck.FeatureScope) -> Any: ...

    def test_rejects_coverage_without_a_feature(self) -> None:
        """Coverage without a feature is a mistake, not an abstract base."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"Orphan does not set the class attribute 'feature' \(the Feature it "
            r"implements\)$",
        ):

            class Orphan(ck.FeatureImplementation[Any]):
                coverage = {"read": ck.Supported()}

                def create(self, scope: ck.FeatureScope) -> Any: ...

    @pytest.mark.parametrize(
        "extra",
        [
            {"feature": None},  # set, but to nothing: not a misspelling of itself
            {"fixture": None},  # an unrelated word, however alike
            {"__feature__": None},  # Python's own kind of name
        ],
    )
    def test_only_a_close_ordinary_name_is_offered_as_a_misspelling(
        self, extra: dict[str, Any]
    ) -> None:
        """No hint for an attribute that is the missing one, unrelated to it, or a dunder."""
        namespace: dict[str, Any] = {
            "coverage": feature.coverage(),
            "create": lambda self, scope: {},
            **extra,
        }
        with pytest.raises(ck.ContractDefinitionError) as caught:
            type("Loose", (ck.FeatureImplementation,), namespace)
        assert str(caught.value) == (
            "Loose does not set the class attribute 'feature' (the Feature it implements)"
        )

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (
                lambda cls: setattr(cls, "coverage", None),
                "Memory does not set the class attribute 'coverage' "
                "(each case Supported() or Unsupported(reason))",
            ),
            (
                lambda cls: delattr(cls, "coverage"),
                "Memory does not set the class attribute 'coverage' "
                "(each case Supported() or Unsupported(reason))",
            ),
            (
                lambda cls: setattr(cls, "feature", "kv"),
                "Memory.feature must be a Feature, got 'kv'",
            ),
        ],
        ids=["coverage-none", "coverage-deleted", "feature-not-a-feature"],
    )
    def test_a_declaration_changed_after_the_class_was_made_is_named_when_used(
        self, change: Any, message: str
    ) -> None:
        """A class whose declarations were changed later is refused before anything runs."""

        class Memory(ck.FeatureImplementation[Any]):
            feature = feature
            coverage = feature.coverage()

            def create(self, scope: ck.FeatureScope) -> Any:
                return {}

        change(Memory)
        suite = ck.ContractSuite(feature, {"read": lambda api: None, "write": lambda api: None})
        with pytest.raises(ck.ContractDefinitionError) as caught:
            ck.run_contract_sync(Memory(), suite)
        assert str(caught.value).endswith(message)

    def test_the_default_deadline_shows_as_its_name(self) -> None:
        """DEFAULT_TIMEOUT reads as its name in signatures and messages, not as 5.0."""
        assert repr(ck.DEFAULT_TIMEOUT) == "DEFAULT_TIMEOUT"
        assert ck.DEFAULT_TIMEOUT == 5.0

    def test_a_misspelt_feature_is_named(self) -> None:
        """A near miss of ``feature`` is named as the likely misspelling."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"\.Typo does not set the class attribute 'feature' .*; it sets 'featuer': "
            r"a misspelling\?$",
        ):

            class Typo(ck.FeatureImplementation[Any]):
                featuer = feature
                coverage = {"read": ck.Supported()}

                def create(self, scope: ck.FeatureScope) -> Any: ...

    @pytest.mark.anyio
    async def test_a_class_declaring_nothing_is_named_when_used(self) -> None:
        """Both attributes misspelt: the class looks abstract, and using it says what is missing."""

        class Misspelt(ck.FeatureImplementation[Any]):
            featuer = feature
            covrage = {"read": ck.Supported(), "write": ck.Supported()}

            def create(self, scope: ck.FeatureScope) -> Any:
                return {}

        suite = ck.ContractSuite(feature, {"read": lambda api: None, "write": lambda api: None})
        message = (
            r"\.Misspelt does not set the class attribute 'feature' \(the Feature it "
            r"implements\); it sets 'featuer': a misspelling\?$"
        )
        with pytest.raises(ck.ContractDefinitionError, match=message):
            await ck.run_contract(Misspelt(), suite)
        with pytest.raises(ck.ContractDefinitionError, match=message):
            ck.contract_cases(Misspelt(), suite)
        with pytest.raises(ck.ContractDefinitionError, match=message):
            async with ck.open_feature(Misspelt()):
                pytest.fail("the session opened")

    def test_rejects_a_feature_that_is_not_a_feature(self) -> None:
        """feature must be a Feature object."""
        with pytest.raises(ck.ContractDefinitionError, match="feature must be a Feature, got 'kv'"):

            class Named(ck.FeatureImplementation[Any]):
                feature = "kv"  # type: ignore[assignment]
                coverage = {"read": ck.Supported()}

                def create(self, scope: ck.FeatureScope) -> Any: ...

    def test_intermediate_bases_are_checked_at_their_subclasses(self) -> None:
        """A base with neither attribute is abstract; its subclass is checked."""

        class SqlBase(ck.FeatureImplementation[Any]):
            def create(self, scope: ck.FeatureScope) -> Any:
                return {}

        with pytest.raises(ck.ContractDefinitionError, match="does not declare"):

            class Sqlite(SqlBase):
                feature = feature
                coverage = {"read": ck.Supported()}

    def test_create_is_abstract(self) -> None:
        """A class without create() cannot be instantiated."""

        class NoCreate(ck.FeatureImplementation[Any]):
            feature = feature
            coverage = feature.coverage()

        with pytest.raises(TypeError, match="create"):
            NoCreate()  # type: ignore[abstract]


class TestHostOwnsTheLifecycle:
    @pytest.mark.parametrize(
        "name",
        ["dispose", "close", "aclose", "open", "__aenter__", "__aexit__", "__enter__", "__exit__"],
    )
    def test_rejects_lifecycle_methods(self, name: str) -> None:
        """A subclass cannot define a disposal or initialisation hook the host would never call."""
        namespace: dict[str, Any] = {
            "feature": feature,
            "coverage": feature.coverage(),
            "create": lambda self, scope: {},
            name: lambda self, *args: None,
        }
        with pytest.raises(
            ck.ContractDefinitionError, match=rf"defines '{name}'.*scope\.defer\(\)"
        ):
            type("Hooked", (ck.FeatureImplementation,), namespace)

    def test_names_every_lifecycle_method_it_defines(self) -> None:
        namespace: dict[str, Any] = {
            "feature": feature,
            "coverage": feature.coverage(),
            "create": lambda self, scope: {},
            "close": lambda self: None,
            "__aexit__": lambda self, *args: None,
        }
        with pytest.raises(ck.ContractDefinitionError) as raised:
            type("Hooked", (ck.FeatureImplementation,), namespace)
        assert str(raised.value).startswith(
            "Hooked defines '__aexit__', 'close', but the lifecycle belongs to the host"
        )

    def test_rejects_a_generator_create(self) -> None:
        """create() that yields (fixture style) is rejected at class creation."""
        with pytest.raises(
            ck.ContractDefinitionError, match=r"create\(\) must return the API, not yield it"
        ):

            class Fixture(ck.FeatureImplementation[Any]):
                feature = feature
                coverage = feature.coverage()

                def create(self, scope: ck.FeatureScope) -> Iterator[Any]:
                    yield {}

        with pytest.raises(ck.ContractDefinitionError, match="not yield it"):

            class AsyncFixture(ck.FeatureImplementation[Any]):
                feature = feature
                coverage = feature.coverage()

                async def create(self, scope: ck.FeatureScope) -> AsyncIterator[Any]:
                    yield {}

    def test_configuration_in_init_is_allowed(self) -> None:
        """An implementation may take configuration in __init__ (a path, a DSN)."""

        class Configured(ck.FeatureImplementation[Any]):
            feature = feature
            coverage = feature.coverage()

            def __init__(self, path: str) -> None:
                self.path = path

            def create(self, scope: ck.FeatureScope) -> Any:
                return {"path": self.path}

        assert Configured("/tmp/x").path == "/tmp/x"


class Store:
    """A dict behind a feature whose cases check that each API starts empty."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}


fresh = ck.Feature[Store]("kv.fresh", cases=("empty", "write"))
fresh_suite = ck.ContractSuite(fresh)


@fresh_suite.case
def empty(api: Store) -> None:
    assert api.values == {}


@fresh_suite.case
def write(api: Store) -> None:
    api.values["k"] = "v"
    assert api.values == {"k": "v"}


def store_from_scope(scope: ck.FeatureScope) -> Store:
    return Store()


async def store_opened(scope: ck.FeatureScope) -> Store:
    return Store()


async def store_opened_alone() -> Store:
    return Store()


class AsyncFactory:
    async def __call__(self) -> Store:
        return Store()


class MemoryStore(ck.FeatureImplementation[Store]):
    feature = fresh
    coverage = fresh.coverage(unsupported={"write": "read-only"})

    def create(self, scope: ck.FeatureScope) -> Store:
        return Store()


FACTORIES = [Store, store_from_scope, store_opened, store_opened_alone, AsyncFactory()]


class TestOneLineImplementations:
    @pytest.mark.parametrize(
        "factory",
        [*FACTORIES, lambda: Store()],
        ids=["class", "sync-scope", "async-scope", "async-alone", "async-call", "lambda"],
    )
    @pytest.mark.anyio
    async def test_any_factory_runs_as_the_class_would(self, factory: Any) -> None:
        """Sync or async, with the scope or nothing: every case gets a fresh API and passes."""
        implementation = fresh.implementation(factory, name="MemoryStore")
        report = await ck.run_contract(implementation, fresh_suite)
        assert report.implementation == "MemoryStore"
        assert [result.status for result in report.results] == [ck.CaseStatus.PASSED] * 2

    def test_reports_name_it_as_the_class_of_that_name(self) -> None:
        """The report of a one-line implementation equals the report of the class it stands for."""
        one_line = fresh.implementation(
            Store, name="MemoryStore", coverage=fresh.coverage(unsupported={"write": "read-only"})
        )
        by_class = ck.run_contract_sync(MemoryStore(), fresh_suite).to_dict()
        by_factory = ck.run_contract_sync(one_line, fresh_suite).to_dict()
        for report in (by_class, by_factory):
            for result in report["results"]:
                result.pop("duration")
        assert by_factory == by_class
        assert [case.id for case in ck.contract_cases(one_line, fresh_suite)] == ["empty", "write"]

    @pytest.mark.anyio
    async def test_the_scope_it_is_given_runs_its_cleanups(self) -> None:
        """A factory that takes the scope registers cleanups that run after each case."""
        closed: list[str] = []

        def opened(scope: ck.FeatureScope) -> Store:
            scope.defer(lambda: closed.append("closed"))
            return Store()

        await ck.run_contract(fresh.implementation(opened, name="Opened"), fresh_suite)
        assert closed == ["closed", "closed"]

    @pytest.mark.frames
    def test_it_is_defined_where_it_is_called(self) -> None:
        """Its class belongs to the calling module, as a class written there would."""
        implementation = fresh.implementation(Store, name="Outer.MemoryStore")
        assert type(implementation).__module__ == __name__

    @pytest.mark.frames
    def test_called_where_no_module_is_named_it_belongs_to_conformkit(self) -> None:
        """Code run by exec() with globals of its own has no module: the class says conformkit."""
        names: dict[str, Any] = {"fresh": fresh, "Store": Store}
        exec("implementation = fresh.implementation(Store, name='Loose')", names)
        assert type(names["implementation"]).__module__ == "conformkit"

    def test_it_has_the_name_given(self) -> None:
        implementation = fresh.implementation(Store, name="Outer.MemoryStore")
        assert type(implementation).__qualname__ == "Outer.MemoryStore"
        assert type(implementation).__name__ == "MemoryStore"
        assert (
            type(implementation).__doc__ == "An implementation of 'kv.fresh' that Store() creates."
        )
        assert isinstance(implementation, ck.FeatureImplementation)
        assert repr(implementation) == "<Outer.MemoryStore implementing 'kv.fresh'>"
        nested = fresh.implementation(store_opened, name="Outer.Inner.OpenedStore")
        assert type(nested).__qualname__ == "Outer.Inner.OpenedStore"
        assert type(nested).__name__ == "OpenedStore"
        assert repr(nested) == "<Outer.Inner.OpenedStore implementing 'kv.fresh'>"

    @pytest.mark.anyio
    async def test_an_async_factory_is_given_the_scope(self) -> None:
        """An async factory that takes the scope registers cleanups that run after each case."""
        closed: list[str] = []

        async def opened(scope: ck.FeatureScope) -> Store:
            scope.defer(lambda: closed.append("closed"))
            return Store()

        report = await ck.run_contract(fresh.implementation(opened, name="Opened"), fresh_suite)
        assert [result.status for result in report.results] == [ck.CaseStatus.PASSED] * 2
        assert closed == ["closed", "closed"]

    @pytest.mark.anyio
    async def test_a_factory_without_a_signature_is_called_with_nothing(self) -> None:
        """A builtin type has no signature to read: it is called with no arguments."""
        feature = ck.Feature[dict[str, str]]("kv.builtin", cases=("empty",))
        suite = ck.ContractSuite(feature)

        @suite.case
        async def empty(api: dict[str, str]) -> None:
            assert api == {}

        report = await ck.run_contract(feature.implementation(dict, name="Builtin"), suite)
        assert [(result.status, result.reason) for result in report.results] == [
            (ck.CaseStatus.PASSED, None)
        ]

    def test_keeps_the_class_paths_checks(self) -> None:
        """Coverage and claims are checked as the class attributes are, with the same message."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"^Partial\.coverage does not declare case\(s\) 'write' of feature 'kv.fresh'",
        ):
            fresh.implementation(Store, name="Partial", coverage={"empty": ck.Supported()})
        with pytest.raises(ck.ContractDefinitionError, match=r"^Claims\.claims names family 'x'"):
            fresh.implementation(Store, name="Claims", claims={"x": ()})

    @pytest.mark.parametrize(
        ("factory", "name", "message"),
        [
            (Store, "two words", r"needs a name=.*got 'two words'"),
            (Store, "", r"needs a name=.*got ''"),
            ({}, "Dict", r"^Dict: implementation\(\) takes a factory .*got \{\}"),
            (
                lambda scope, extra: Store(),
                "Two",
                r"^Two: the factory \S*<lambda> must take the scope or nothing, but its signature "
                r"is \(scope, extra\)$",
            ),
            (
                Store,
                5,
                r"needs a name=, as a class would have: an identifier like 'MemoryText', "
                r"got 5$",
            ),
            (Store, "Outer..Store", r"needs a name=.*got 'Outer\.\.Store'$"),
        ],
        ids=[
            "spaced-name",
            "empty-name",
            "not-callable",
            "two-arguments",
            "not-a-string",
            "empty-part",
        ],
    )
    def test_rejects_what_cannot_be_an_implementation(
        self, factory: Any, name: str, message: str
    ) -> None:
        """A bad name, a non-callable or a factory that needs two arguments is named at once."""
        with pytest.raises(ck.ContractDefinitionError, match=message):
            fresh.implementation(factory, name=name)

    def test_rejects_a_factory_that_yields(self) -> None:
        """A generator is not a factory, sync or async: cleanups go through scope.defer()."""

        def fixture() -> Iterator[Store]:
            yield Store()

        async def async_fixture() -> AsyncIterator[Store]:
            yield Store()

        for factory in (fixture, async_fixture):
            with pytest.raises(ck.ContractDefinitionError, match="must return the API, not yield"):
                fresh.implementation(factory, name="Fixture")  # type: ignore[arg-type]


class Closing(Store):
    """A Store that holds a resource: it counts the calls of its close()."""

    made: ClassVar[list[Closing]] = []

    def __init__(self) -> None:
        super().__init__()
        self.closed = 0
        Closing.made.append(self)

    def close(self) -> None:
        self.closed += 1


class AsyncClosing(Closing):
    """A Store with an async aclose() next to its close(): aclose() is the one awaited."""

    def __init__(self) -> None:
        super().__init__()
        self.aclosed = 0

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.aclosed += 1


def async_made() -> list[AsyncClosing]:
    return [store for store in Closing.made if isinstance(store, AsyncClosing)]


closing = ck.Feature[Store]("kv.closing", cases=("fails", "waits"))
closing_suite = ck.ContractSuite(closing)
entered = anyio.Event()


@closing_suite.case
def fails(api: Store) -> None:
    raise AssertionError("this case fails")


@closing_suite.case
async def waits(api: Store) -> None:
    entered.set()
    await anyio.sleep_forever()  # until the run is cancelled, or the stage's deadline


class TestOneLineImplementationsDispose:
    """What the factory created is closed when its scope closes: once, whatever the case did."""

    @pytest.fixture(autouse=True)
    def forget(self) -> Iterator[None]:
        Closing.made.clear()
        yield
        Closing.made.clear()

    @pytest.mark.anyio
    async def test_close_is_called_once_for_each_created_store(self) -> None:
        """Each case's store is closed once, after its case, through the sync close()."""
        report = await ck.run_contract(fresh.implementation(Closing, name="Closes"), fresh_suite)
        assert [result.status for result in report.results] == [ck.CaseStatus.PASSED] * 2
        assert [store.closed for store in Closing.made] == [1, 1]

    @pytest.mark.anyio
    async def test_aclose_is_awaited_instead_of_close(self) -> None:
        """A store with aclose() has it awaited once, and its close() is not called."""
        report = await ck.run_contract(
            fresh.implementation(AsyncClosing, name="AsyncCloses"), fresh_suite
        )
        assert [result.status for result in report.results] == [ck.CaseStatus.PASSED] * 2
        assert [(store.aclosed, store.closed) for store in async_made()] == [(1, 0), (1, 0)]

    @pytest.mark.anyio
    async def test_an_async_factory_s_store_is_closed(self) -> None:
        """The store an async factory returns is closed too, after the cleanups it deferred."""
        order: list[str] = []

        class Logged(Closing):
            def close(self) -> None:
                super().close()
                order.append("store closed")

        async def opened(scope: ck.FeatureScope) -> Store:
            scope.defer(lambda: order.append("directory removed"))
            return Logged()

        await ck.run_contract(fresh.implementation(opened, name="Opened"), fresh_suite)
        assert order == ["store closed", "directory removed"] * 2

    @pytest.mark.anyio
    async def test_closed_when_the_case_fails(self) -> None:
        """The store of a case that fails is closed all the same."""
        implementation = closing.implementation(
            AsyncClosing,
            name="AsyncCloses",
            coverage=closing.coverage(unsupported={"waits": "run in the next test"}),
        )
        report = await ck.run_contract(implementation, closing_suite)
        assert report["fails"].status is ck.CaseStatus.FAILED
        assert [(store.aclosed, store.closed) for store in async_made()] == [(1, 0)]

    @pytest.mark.anyio
    async def test_closed_when_the_run_is_cancelled(self) -> None:
        """
        A run cancelled while its case waits still closes that case's store. (The
        case's deadline bounds the test if the cancellation were lost.)
        """
        global entered
        entered = anyio.Event()
        implementation = closing.implementation(
            AsyncClosing,
            name="AsyncCloses",
            coverage=closing.coverage(unsupported={"fails": "run in the previous test"}),
        )
        async with anyio.create_task_group() as group:
            group.start_soon(ck.run_contract, implementation, closing_suite)
            await entered.wait()  # the case runs: its store exists
            group.cancel_scope.cancel()
        assert [(store.aclosed, store.closed) for store in async_made()] == [(1, 0)]

    @pytest.mark.anyio
    async def test_a_store_without_close_is_left_alone(self) -> None:
        """A store with neither close() nor aclose() runs as before: nothing is called."""
        report = await ck.run_contract(fresh.implementation(Store, name="Plain"), fresh_suite)
        assert [result.status for result in report.results] == [ck.CaseStatus.PASSED] * 2

    @pytest.mark.anyio
    async def test_a_store_s_own_getattr_is_not_run_to_look_for_close(self) -> None:
        """A store whose __getattr__ raises for unknown names runs as before."""

        class Strict(Store):
            def __getattr__(self, name: str) -> Any:
                raise AssertionError(f"no attribute {name!r} here")

        report = await ck.run_contract(fresh.implementation(Strict, name="Strict"), fresh_suite)
        assert [result.status for result in report.results] == [ck.CaseStatus.PASSED] * 2
