"""
What ``create`` returned: the API type's shape, and isolation between live scopes.

Each broken implementation below fails exactly the cases listed, at stage
``create``, with the reason given; the correct ones pass every case.
"""

from __future__ import annotations

import abc
import functools
import gc
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import anyio
import anyio.lowlevel
import pytest

import conformkit as ck

pytestmark = pytest.mark.anyio

T_co = TypeVar("T_co", covariant=True)


class TextAPI(Protocol):
    name: str

    @property
    def size(self) -> int: ...

    async def read(self, key: str) -> str | None: ...

    async def write(self, key: str, value: str) -> None: ...


CASES = ("reads", "writes", "sizes")
text = ck.Feature[TextAPI]("tests.shape.text", cases=CASES)
suite = ck.ContractSuite(text)


@suite.case
async def reads(api: TextAPI) -> None:
    assert await api.read("absent") is None


@suite.case
async def writes(api: TextAPI) -> None:
    await api.write("k", "v")
    assert await api.read("k") == "v"


@suite.case
async def sizes(api: TextAPI) -> None:
    assert api.size == 0
    assert await api.read("absent") is None


class MemoryText:
    """A correct TextAPI: ``name`` is set on each object, the rest is on the class."""

    def __init__(self) -> None:
        self.name = "memory"
        self.values: dict[str, str] = {}

    @property
    def size(self) -> int:
        return len(self.values) if self.values.get("k") != "v" else 0

    async def read(self, key: str) -> str | None:
        return self.values.get(key)

    async def write(self, key: str, value: str) -> None:
        self.values[key] = value


def implementation(make: Callable[[], object]) -> ck.FeatureImplementation[TextAPI]:
    """An implementation of ``text`` whose ``create`` returns ``make()``."""

    class Made(ck.FeatureImplementation[TextAPI]):
        feature = text
        coverage = text.coverage()

        def create(self, scope: ck.FeatureScope) -> TextAPI:
            return make()  # type: ignore[return-value]

    return Made()


# -- correct shapes -----------------------------------------------------------------------


class ReturnsAwaitables(MemoryText):
    """Sync methods that say they return an awaitable: they do."""

    def read(self, key: str) -> Awaitable[str | None]:  # type: ignore[override]
        return super().read(key)


def passing_through(function: Callable[..., Any]) -> Callable[..., Any]:
    """A sync decorator around an async function: calling it returns the coroutine."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return wrapper


class Decorated(MemoryText):
    read = passing_through(MemoryText.read)


class Delegating:
    """Every member found through ``__getattr__``, as a proxy has them."""

    def __init__(self) -> None:
        self._inner = MemoryText()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class OwnMethods:
    """Methods set on the object, not its class."""

    def __init__(self) -> None:
        inner = MemoryText()
        self.name = inner.name
        self.size = 0
        self.read = inner.read
        self.write = inner.write


def _recorded() -> object:
    from conformkit._recording import CallRecorder

    return CallRecorder().wrap(MemoryText())


CORRECT = [
    pytest.param(MemoryText, id="plain"),
    pytest.param(ReturnsAwaitables, id="sync-returning-awaitable"),
    pytest.param(Decorated, id="sync-decorator-over-async"),
    pytest.param(Delegating, id="getattr-proxy"),
    pytest.param(OwnMethods, id="methods-on-the-object"),
    pytest.param(_recorded, id="recording-proxy"),
]


class TestCorrectShapes:
    """An object with every declared member, async where declared so, passes."""

    @pytest.mark.parametrize("make", CORRECT)
    @pytest.mark.parametrize("reject_vacuous", [False, True])
    async def test_passes(self, make: Callable[[], object], reject_vacuous: bool) -> None:
        """Each case passes, with or without the recording proxy around the API."""
        report = await ck.run_contract(implementation(make), suite, reject_vacuous=reject_vacuous)
        assert [(r.case_id, r.status) for r in report.results] == [
            (case, ck.CaseStatus.PASSED) for case in CASES
        ]


# -- broken shapes -------------------------------------------------------------------------


class LacksWrite:
    name = "lacks write"
    size = 0

    async def read(self, key: str) -> str | None:
        return None


class SyncRead(MemoryText):
    def read(self, key: str) -> str | None:  # type: ignore[override]
        return self.values.get(key)


class UnannotatedSyncRead(MemoryText):
    def read(self, key):  # type: ignore[no-untyped-def]
        return self.values.get(key)


class NoSize:
    def __init__(self) -> None:
        self.name = "no size"

    async def read(self, key: str) -> str | None:
        return None

    async def write(self, key: str, value: str) -> None:
        pass


class Nameless(MemoryText):
    def __init__(self) -> None:
        self.values = {}


def issue_example() -> object:
    """The issue's own: lacks ``write()``, and ``read()`` is sync."""

    class MemoryText:
        name = "x"
        size = 0

        def read(self, key: str) -> str | None:
            return None

    return MemoryText()


ALL_FAIL = frozenset(CASES)

BROKEN = [
    pytest.param(
        LacksWrite, "create() returned LacksWrite, which lacks write()", id="lacks-method"
    ),
    pytest.param(
        SyncRead,
        "create() returned SyncRead, whose read() is sync but TextAPI.read is async",
        id="sync-where-async",
    ),
    pytest.param(
        UnannotatedSyncRead,
        "create() returned UnannotatedSyncRead, whose read() is sync but TextAPI.read is async",
        id="unannotated-sync",
    ),
    pytest.param(NoSize, "create() returned NoSize, which lacks size", id="lacks-property"),
    pytest.param(Nameless, "create() returned Nameless, which lacks name", id="lacks-attribute"),
    pytest.param(
        issue_example,
        "create() returned MemoryText, which lacks write() and whose read() is sync but "
        "TextAPI.read is async",
        id="two-problems",
    ),
    pytest.param(
        lambda: None,
        "create() returned None (a forgotten return?), not a TextAPI",
        id="none",
    ),
]


class TestBrokenShapes:
    """Each wrong shape fails every case at create, with one reason naming every problem."""

    @pytest.mark.parametrize(("make", "says"), BROKEN)
    @pytest.mark.parametrize("max_concurrency", [1, 8])
    async def test_fails_every_case_at_create(
        self, make: Callable[[], object], says: str, max_concurrency: int
    ) -> None:
        """Cases that never touch the missing member fail too: before they run."""
        report = await ck.run_contract(implementation(make), suite, max_concurrency=max_concurrency)
        failed = {r.case_id for r in report.results if r.status is ck.CaseStatus.FAILED}
        assert failed == ALL_FAIL
        for result in report.results:
            assert result.reason == f"case {result.case_id!r} failed in create(): TypeError: {says}"

    @pytest.mark.parametrize(("make", "says"), BROKEN)
    async def test_case_run_raises_the_reason(self, make: Callable[[], object], says: str) -> None:
        """contract_cases: the case raises the TypeError that says what is wrong."""
        case = ck.contract_cases(implementation(make), suite)[0]
        with pytest.raises(TypeError) as caught:
            await case.run()
        assert str(caught.value) == says

    async def test_the_rollback_runs(self) -> None:
        """What create registered is cleaned up when its object is refused."""
        ran: list[str] = []

        class Registers(ck.FeatureImplementation[TextAPI]):
            feature = text
            coverage = text.coverage()

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                scope.defer(lambda: ran.append("cleanup"))
                return LacksWrite()  # type: ignore[return-value]

        report = await ck.run_contract(Registers(), suite)
        assert ran == ["cleanup"] * len(CASES)
        assert not report.results[0].cleanup_errors


class TestWhatIsNotChecked:
    """API types that say nothing checkable leave the object alone."""

    async def test_a_plain_class_is_not_checked(self) -> None:
        """A plain class API type: no member check; cases that touch nothing pass."""

        class Plain:
            def read(self) -> int:
                return 1

        plain = ck.Feature[Plain]("tests.shape.plain", cases=("touches_nothing",))

        class Other(ck.FeatureImplementation[Plain]):
            feature = plain
            coverage = plain.coverage()

            def create(self, scope: ck.FeatureScope) -> Plain:
                return object()  # type: ignore[return-value]

        report = await ck.run_contract(
            Other(), ck.ContractSuite(plain, {"touches_nothing": lambda api: None})
        )
        assert report.results[0].status is ck.CaseStatus.PASSED

    @pytest.mark.parametrize("declared", ["none", "optional", "any", "untyped"])
    async def test_none_where_the_type_admits_it(self, declared: str) -> None:
        """Feature[None], Feature[X | None], Feature[Any] and Feature(...) accept None."""
        api: Any = {
            "none": None,
            "optional": TextAPI | None,
            "any": Any,
        }.get(declared)
        declared_feature: ck.Feature[Any] = (
            ck.Feature("tests.shape.untyped", cases=("a",))
            if declared == "untyped"
            else ck.Feature[api]("tests.shape.none", cases=("a",))
        )

        class ReturnsNone(ck.FeatureImplementation[Any]):
            feature = declared_feature
            coverage = declared_feature.coverage()

            def create(self, scope: ck.FeatureScope) -> Any:
                return None

        feature = declared_feature
        report = await ck.run_contract(
            ReturnsNone(), ck.ContractSuite(feature, {"a": lambda _: None})
        )
        assert report.results[0].status is ck.CaseStatus.PASSED


# -- generic Protocols and ABCs ---------------------------------------------------------


class Store(Protocol[T_co]):
    async def get(self) -> T_co: ...


class IntStore:
    async def get(self) -> int:
        return 1


class SyncStore:
    def get(self) -> int:
        return 1


class AbstractText(abc.ABC):
    @abc.abstractmethod
    async def read(self, key: str) -> str | None: ...

    def helper(self) -> str:
        return "a concrete method comes with subclassing"


class SubclassedText(AbstractText):
    async def read(self, key: str) -> str | None:
        return None


class SyncOverride(AbstractText):
    def read(self, key: str) -> str | None:  # type: ignore[override]
        return None


class DuckText:
    async def read(self, key: str) -> str | None:
        return None


class NotText:
    pass


def one_case(api_type: Any, make: Callable[[], object]) -> ck.ContractReport:
    feature: ck.Feature[Any] = ck.Feature[api_type]("tests.shape.one", cases=("a",))
    declared_feature = feature

    class Made(ck.FeatureImplementation[Any]):
        feature = declared_feature
        coverage = declared_feature.coverage()

        def create(self, scope: ck.FeatureScope) -> Any:
            return make()

    async def a(api: Any) -> None:
        await anyio.lowlevel.checkpoint()

    return ck.run_contract_sync(Made(), ck.ContractSuite(feature, {"a": a}))


@pytest.mark.parametrize(
    ("api_type", "make", "says"),
    [
        pytest.param(Store[int], IntStore, None, id="generic-protocol"),
        pytest.param(
            Store[int],
            SyncStore,
            "create() returned SyncStore, whose get() is sync but Store.get is async",
            id="generic-protocol-sync",
        ),
        pytest.param(AbstractText, SubclassedText, None, id="abc-subclass"),
        pytest.param(AbstractText, DuckText, None, id="abc-duck"),
        pytest.param(
            AbstractText,
            SyncOverride,
            "create() returned SyncOverride, whose read() is sync but AbstractText.read is async",
            id="abc-sync-override",
        ),
        pytest.param(
            AbstractText, NotText, "create() returned NotText, which lacks read()", id="abc-lacks"
        ),
    ],
)
def test_generic_protocols_and_abcs(
    api_type: Any, make: Callable[[], object], says: str | None
) -> None:
    """A generic Protocol is checked as its class; an ABC by its abstract members."""
    [result] = one_case(api_type, make).results
    if says is None:
        assert result.status is ck.CaseStatus.PASSED, result.reason
    else:
        assert result.reason == f"case 'a' failed in create(): TypeError: {says}"


# -- isolation ---------------------------------------------------------------------------

MANY = tuple(f"c{index}" for index in range(8))
many = ck.Feature[TextAPI]("tests.shape.many", cases=MANY)


async def holds_its_api(api: TextAPI) -> None:
    """A case that lets other cases run while its API is live."""
    await anyio.sleep(0.01)
    assert await api.read("absent") is None


many_suite = ck.ContractSuite(many, dict.fromkeys(MANY, holds_its_api))
SHARED = MemoryText()


class Shared(ck.FeatureImplementation[TextAPI]):
    """Every scope gets the one object."""

    feature = many
    coverage = many.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return SHARED


class Fresh(ck.FeatureImplementation[TextAPI]):
    feature = many
    coverage = many.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryText()


def shared_reason(case_id: str, owner: str) -> str:
    return (
        f"case {case_id!r} failed in create(): TypeError: isolation broken: create() returned "
        f"the same MemoryText object as for case {owner!r}, whose scope is still live; each call "
        f"of create() must return an API of its own"
    )


def failed_cases(report: ck.ContractReport) -> dict[str, str | None]:
    return {r.case_id: r.reason for r in report.results if r.status is ck.CaseStatus.FAILED}


def second_creates_do(act: Callable[[ck.FeatureScope], None]) -> ck.FeatureImplementation[TextAPI]:
    """An implementation whose every second create(), the isolation check's, calls ``act`` first."""

    class SecondCreates(ck.FeatureImplementation[TextAPI]):
        feature = text
        coverage = text.coverage()
        calls = 0

        def create(self, scope: ck.FeatureScope) -> TextAPI:
            SecondCreates.calls += 1
            if SecondCreates.calls % 2 == 0:
                act(scope)
            return MemoryText()

    return SecondCreates()


def defer_failing_cleanup(scope: ck.FeatureScope) -> None:
    def fails() -> None:
        raise OSError("cannot remove the file")

    scope.defer(fails)


NOTED_BY_THE_CHECK = [
    "raised by create() for a second API created alongside case 'reads' to check isolation"
]
"""The note on an error of the second create() that check_isolation makes for case 'reads'."""


class TestSharedAPI:
    """An object that is still the API of a live scope fails the create stage."""

    @pytest.mark.parametrize("max_concurrency", [2, 8])
    async def test_fails_every_case_that_overlaps(self, max_concurrency: int) -> None:
        """The first case holds the shared object; every case created meanwhile fails."""
        report = await ck.run_contract(Shared(), many_suite, max_concurrency=max_concurrency)
        assert failed_cases(report) == {case: shared_reason(case, "c0") for case in MANY[1:]}

    async def test_goes_unseen_at_concurrency_1(self) -> None:
        """No two scopes are live at once: nothing to see without check_isolation."""
        report = await ck.run_contract(Shared(), many_suite)
        assert failed_cases(report) == {}

    @pytest.mark.parametrize("max_concurrency", [1, 2, 8])
    async def test_check_isolation_fails_every_case(self, max_concurrency: int) -> None:
        """check_isolation: a second create() per case sees the shared object at once."""
        report = await ck.run_contract(
            Shared(), many_suite, max_concurrency=max_concurrency, check_isolation=True
        )
        failed = failed_cases(report)
        assert set(failed) == set(MANY)
        for case, reason in failed.items():
            assert reason is not None
            assert "failed in create(): TypeError: isolation broken: create() returned" in reason
            if max_concurrency == 1:
                assert reason == (
                    f"case {case!r} failed in create(): TypeError: isolation broken: create() "
                    f"returned, for a second API created alongside case {case!r} to check "
                    f"isolation, the same MemoryText object as for case {case!r}, whose scope "
                    f"is still live; each call of create() must return an API of its own"
                )

    @pytest.mark.parametrize("max_concurrency", [1, 2, 8])
    @pytest.mark.parametrize("check_isolation", [False, True])
    async def test_fresh_objects_pass(self, max_concurrency: int, check_isolation: bool) -> None:
        """A create that returns a new object each time passes, freed ids reused or not."""
        report = await ck.run_contract(
            Fresh(), many_suite, max_concurrency=max_concurrency, check_isolation=check_isolation
        )
        assert failed_cases(report) == {}

    async def test_check_isolation_disposes_of_the_second_api(self) -> None:
        """The second API's cleanups run within the create stage, before the case."""
        events: list[str] = []

        class Logged(ck.FeatureImplementation[TextAPI]):
            feature = text
            coverage = text.coverage()

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                number = len([e for e in events if e.startswith("create")])
                events.append(f"create {number}")
                scope.defer(lambda: events.append(f"cleanup {number}"))
                return MemoryText()

        async def logs(api: TextAPI) -> None:
            events.append("case")

        one = ck.ContractSuite(text, dict.fromkeys(CASES, logs))
        report = await ck.run_contract(Logged(), one, check_isolation=True)
        assert failed_cases(report) == {}
        assert events[:5] == ["create 0", "create 1", "cleanup 1", "case", "cleanup 0"]

    async def test_check_isolation_reports_the_second_creates_failure(self) -> None:
        """A create that fails while another API is live fails the case, saying when."""

        class Exclusive(ck.FeatureImplementation[TextAPI]):
            feature = text
            coverage = text.coverage()
            live = 0

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                if Exclusive.live:
                    raise RuntimeError("locked by another session")
                Exclusive.live += 1

                def release() -> None:
                    Exclusive.live -= 1

                scope.defer(release)
                return MemoryText()

        report = await ck.run_contract(Exclusive(), suite, check_isolation=True)
        result = report.results[0]
        assert result.reason is not None
        assert result.reason.startswith(
            "case 'reads' failed in create(): RuntimeError: locked by another session"
        )
        assert result.error is not None
        assert result.error.__notes__ == NOTED_BY_THE_CHECK

    @pytest.mark.parametrize("kind", [SystemExit, GeneratorExit])
    async def test_check_isolation_notes_the_second_creates_base_exception(
        self, kind: type[BaseException]
    ) -> None:
        """A BaseException other than Ctrl-C from the second create keeps the note saying so."""

        def exits(scope: ck.FeatureScope) -> None:
            raise kind("exit from create")

        report = await ck.run_contract(second_creates_do(exits), suite, check_isolation=True)
        assert set(failed_cases(report)) == set(CASES)
        result = report["reads"]
        assert result.reason is not None
        assert result.reason.startswith(
            f"case 'reads' failed in create(): {kind.__name__}: exit from create"
        ), result.reason
        assert isinstance(result.error, kind)
        assert result.error.__notes__ == NOTED_BY_THE_CHECK

    async def test_check_isolation_lets_the_second_creates_ctrl_c_stop_the_run(self) -> None:
        """KeyboardInterrupt from the second create stops the run, bare, once cleanups ran."""
        ran: list[str] = []

        class InterruptedSecond(ck.FeatureImplementation[TextAPI]):
            feature = text
            coverage = text.coverage()
            calls = 0

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                InterruptedSecond.calls += 1
                scope.defer(lambda: ran.append(f"cleanup {InterruptedSecond.calls}"))
                if InterruptedSecond.calls == 2:
                    raise KeyboardInterrupt
                return MemoryText()

        with pytest.raises(KeyboardInterrupt) as caught:
            await ck.run_contract(InterruptedSecond(), suite, check_isolation=True)
        assert ran == ["cleanup 2", "cleanup 2"]  # the second API's, then the case's
        assert not getattr(caught.value, "__notes__", [])  # Ctrl-C, never create()'s doing
        assert InterruptedSecond.calls == 2  # no case created after it

    async def test_check_isolation_awaits_an_async_create(self) -> None:
        """An async create: the second API is awaited, checked and disposed of like the first."""
        events: list[str] = []

        class AsyncLogged(ck.FeatureImplementation[TextAPI]):
            feature = text
            coverage = text.coverage()

            async def create(self, scope: ck.FeatureScope) -> TextAPI:
                await anyio.lowlevel.checkpoint()
                number = len([e for e in events if e.startswith("create")])
                events.append(f"create {number}")
                scope.defer(lambda: events.append(f"cleanup {number}"))
                return MemoryText()

        report = await ck.run_contract(AsyncLogged(), suite, check_isolation=True)
        assert failed_cases(report) == {}
        assert events[:4] == ["create 0", "create 1", "cleanup 1", "cleanup 0"]

    async def test_check_isolation_reports_the_second_create_and_its_cleanup_failing(
        self,
    ) -> None:
        """A second create that fails, and whose rollback fails too, fails the case with both."""

        def fails_twice(scope: ck.FeatureScope) -> None:
            defer_failing_cleanup(scope)
            raise RuntimeError("locked by another session")

        report = await ck.run_contract(second_creates_do(fails_twice), suite, check_isolation=True)
        assert set(failed_cases(report)) == set(CASES)
        error = report["reads"].error
        assert isinstance(error, ExceptionGroup)
        assert error.message == (
            "a second API created alongside case 'reads' to check isolation failed, "
            "and so did 1 cleanup(s)"
        )
        assert [str(each) for each in error.exceptions] == [
            "locked by another session",
            "cannot remove the file",
        ]

    async def test_check_isolation_through_case_run(self) -> None:
        """contract_cases(check_isolation=True): case.run() raises the isolation TypeError."""
        [case, *_] = ck.contract_cases(Shared(), many_suite, check_isolation=True)
        with pytest.raises(
            TypeError, match=r"^isolation broken: create\(\) returned, for a second"
        ):
            await case.run()

    async def test_check_isolation_reports_the_second_apis_cleanup_failure(self) -> None:
        """A cleanup of the second API that fails fails the case at create, saying whose."""
        failing_cleanup = second_creates_do(defer_failing_cleanup)
        report = await ck.run_contract(failing_cleanup, suite, check_isolation=True)
        assert set(failed_cases(report)) == set(CASES)
        result = report["reads"]
        assert result.reason is not None
        assert result.reason.startswith(
            "case 'reads' failed in create(): OSError: cannot remove the file"
        ), result.reason
        assert isinstance(result.error, ExceptionGroup)
        assert result.error.message == (
            "1 cleanup(s) of a second API created alongside case 'reads' to check isolation failed"
        )

    async def test_recorded_shared_object(self) -> None:
        """With reject_vacuous, the recording proxy hides nothing: the object is compared."""
        report = await ck.run_contract(Shared(), many_suite, max_concurrency=2, reject_vacuous=True)
        assert failed_cases(report) == {case: shared_reason(case, "c0") for case in MANY[1:]}

    @pytest.mark.parametrize("how", ["run_contract", "contract_cases", "open_feature"])
    async def test_keeps_no_api_alive(self, how: str) -> None:
        """Once its scope is closed, no API object is kept, while the run lives on."""
        made: list[weakref.ref[MemoryText]] = []

        class Tracked(ck.FeatureImplementation[TextAPI]):
            feature = many
            coverage = many.coverage()
            # No deadlines: the watchdog thread, which looks at each lane now and
            # then, is not involved.
            timeout = None

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                api = MemoryText()
                made.append(weakref.ref(api))
                return api

        cases = ck.contract_cases(Tracked(), many_suite, check_isolation=True)
        if how == "run_contract":
            report = await ck.run_contract(
                Tracked(), many_suite, max_concurrency=4, check_isolation=True
            )
            assert failed_cases(report) == {}
        elif how == "contract_cases":
            for case in cases:  # the cases, and the run they share, stay alive
                await case.run()
        else:
            for _ in MANY:
                async with ck.open_feature(Tracked()):
                    pass
        gc.collect()
        assert len(made) == len(MANY) * (1 if how == "open_feature" else 2)
        assert [ref() for ref in made] == [None] * len(made)

    @pytest.mark.parametrize("how", ["run_contract", "contract_cases", "open_feature"])
    async def test_keeps_no_closed_scope_alive(self, how: str) -> None:
        """
        Once closed, a scope is let go by the check, the second API's of
        check_isolation too, while the run (or the feature's sessions) lives on.
        """
        # A scope cannot be weakly referred to: its closing event, which the scope
        # alone holds, stands for it.
        scopes: list[weakref.ref[anyio.Event]] = []
        alive_in_case: list[int] = []

        class Tracked(ck.FeatureImplementation[TextAPI]):
            feature = many
            coverage = many.coverage()
            timeout = None  # no watchdog thread, which looks at each lane now and then

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                scopes.append(weakref.ref(scope.closing))
                return MemoryText()

        async def counts(api: TextAPI) -> None:
            gc.collect()
            alive_in_case.append(sum(ref() is not None for ref in scopes))

        counting = ck.ContractSuite(many, dict.fromkeys(MANY, counts))
        if how == "run_contract":
            report = await ck.run_contract(Tracked(), counting, check_isolation=True)
            assert failed_cases(report) == {}
            assert alive_in_case == [1] * len(MANY)  # the running case's own scope alone
        elif how == "contract_cases":
            cases = ck.contract_cases(Tracked(), counting, check_isolation=True)
            for case in cases:  # the cases, and the run they share, stay alive
                await case.run()
            assert alive_in_case == [1] * len(MANY)
        else:
            for _ in MANY:
                async with ck.open_feature(Tracked()):
                    pass
        gc.collect()
        assert len(scopes) == len(MANY) * (1 if how == "open_feature" else 2)
        assert [ref() for ref in scopes] == [None] * len(scopes)

    async def test_concurrent_case_runs(self) -> None:
        """Two case.run() of one contract_cases at once: the second created fails."""
        cases = ck.contract_cases(Shared(), many_suite)
        errors: list[BaseException] = []

        async def run(case: ck.ContractCase[TextAPI]) -> None:
            try:
                await case.run()
            except TypeError as error:
                errors.append(error)

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(run, cases[0])
            task_group.start_soon(run, cases[1])
        [error] = errors
        assert str(error).startswith("isolation broken: create() returned the same MemoryText")

    async def test_open_feature_sessions(self) -> None:
        """A second live session of the feature with the same API is refused, rolled back."""
        ran: list[str] = []

        class SharedSession(ck.FeatureImplementation[TextAPI]):
            feature = many
            coverage = many.coverage()

            def create(self, scope: ck.FeatureScope) -> TextAPI:
                scope.defer(lambda: ran.append("cleanup"))
                return SHARED

        async with ck.open_feature(SharedSession()) as first:
            assert first.api is SHARED
            with pytest.raises(TypeError) as caught:
                async with ck.open_feature(SharedSession()):
                    pass  # pragma: no cover - refused on entry
            assert ran == ["cleanup"]
        assert ran == ["cleanup", "cleanup"]
        assert str(caught.value) == (
            "isolation broken: create() returned the same MemoryText object as for an "
            "open_feature session, whose scope is still live; each call of create() must "
            "return an API of its own"
        )
        # One after the other, the sessions share nothing live: accepted.
        async with ck.open_feature(SharedSession()):
            pass

    async def test_open_feature_checks_the_shape(self) -> None:
        """open_feature refuses an object of the wrong shape, as the runners do."""
        with pytest.raises(
            TypeError, match=r"^create\(\) returned LacksWrite, which lacks write\(\)$"
        ):
            async with ck.open_feature(implementation(LacksWrite)):
                pass  # pragma: no cover - refused on entry

    async def test_immutable_values_may_be_shared(self) -> None:
        """Two live scopes may share an immutable value: it carries no state."""
        values = ck.Feature[str]("tests.shape.values", cases=MANY)

        class Constant(ck.FeatureImplementation[str]):
            feature = values
            coverage = values.coverage()

            def create(self, scope: ck.FeatureScope) -> str:
                return "constant"

        async def holds(api: str) -> None:
            await anyio.sleep(0.01)

        report = await ck.run_contract(
            Constant(),
            ck.ContractSuite(values, dict.fromkeys(MANY, holds)),
            max_concurrency=4,
            check_isolation=True,
        )
        assert failed_cases(report) == {}
