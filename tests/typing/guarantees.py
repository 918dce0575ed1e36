"""
The static guarantees of SPEC §5, each pinned by a positive and a negative line.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest. A negative line is a mistake that must fail type checking; its
``# type: ignore[code]`` names the exact error, so if a guarantee silently
disappears, the ignore becomes unused and mypy fails the build.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Literal, Protocol, assert_type

import conformkit as ck

# -- a contract whose case names are a Literal type ------------------------------


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...
    async def write(self, key: str, value: str) -> None: ...


class MemoryTextAPI:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def read(self, key: str) -> str | None:
        return self.values.get(key)

    async def write(self, key: str, value: str) -> None:
        self.values[key] = value


TextCase = Literal["missing", "read_your_writes"]

text = ck.Feature[TextAPI, TextCase]("typing.text", cases=("missing", "read_your_writes"))
suite = ck.ContractSuite(text)
assert_type(suite, ck.ContractSuite[TextAPI, TextCase])


class MemoryText(ck.FeatureImplementation[TextAPI, TextCase]):
    feature = text
    coverage = text.coverage(unsupported={"read_your_writes": "a demo"})

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


# -- two contracts whose case names are plain strings, with different API types --

plain_text = ck.Feature[TextAPI]("typing.plain_text", cases=("missing",))
plain_text_suite = ck.ContractSuite(plain_text)
assert_type(plain_text_suite, ck.ContractSuite[TextAPI, str])

numbers = ck.Feature[int]("typing.numbers", cases=("positive",))
number_suite = ck.ContractSuite(numbers)
assert_type(number_suite, ck.ContractSuite[int, str])


class PlainText(ck.FeatureImplementation[TextAPI]):
    feature = plain_text
    coverage = plain_text.coverage()

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


class Numbers(ck.FeatureImplementation[int]):
    feature = numbers
    coverage = numbers.coverage()

    def create(self, scope: ck.FeatureScope) -> int:
        return 1


# -- open_feature(impl) yields a Session whose api has the implementation's API type


async def check_open_feature() -> None:
    async with ck.open_feature(MemoryText()) as session:
        assert_type(session, ck.Session[TextAPI])
        assert_type(session.api, TextAPI)
        assert_type(await session.api.read("key"), str | None)
        api: int = session.api  # type: ignore[assignment]

    async with ck.open_feature(Numbers(), timeout=None) as number_session:
        assert_type(number_session.api, int)

    # A caller cannot choose an unrelated type for the session either.
    chosen: ck.Session[int]
    async with ck.open_feature(MemoryText()) as chosen:  # type: ignore[assignment]
        pass


# -- create must return the feature's API type ------------------------------------


class ConcreteCreate(ck.FeatureImplementation[TextAPI]):
    """A subtype of the API type is fine: return types are covariant."""

    feature = plain_text
    coverage = plain_text.coverage()

    def create(self, scope: ck.FeatureScope) -> MemoryTextAPI:
        return MemoryTextAPI()


class AsyncCreate(ck.FeatureImplementation[TextAPI]):
    feature = plain_text
    coverage = plain_text.coverage()

    async def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


class WrongCreate(ck.FeatureImplementation[TextAPI]):
    feature = plain_text
    coverage = plain_text.coverage()

    def create(self, scope: ck.FeatureScope) -> int:  # type: ignore[override]
        return 1


class WrongAsyncCreate(ck.FeatureImplementation[TextAPI]):
    feature = plain_text
    coverage = plain_text.coverage()

    async def create(self, scope: ck.FeatureScope) -> int:  # type: ignore[override]
        return 1


class WrongFeature(ck.FeatureImplementation[int]):
    """The feature attribute ties the class's API type to the feature's."""

    feature = plain_text  # type: ignore[assignment]
    coverage = plain_text.coverage()

    def create(self, scope: ck.FeatureScope) -> int:
        return 1


# -- a case callable must accept the feature's API type ---------------------------


async def good_case(api: TextAPI) -> None:
    await api.read("key")


def good_sync_case(api: TextAPI) -> None:
    pass


async def wide_case(api: object) -> None:
    """A parameter wider than the API type is fine: parameters are contravariant."""


async def int_case(api: int) -> None:
    pass


async def narrow_case(api: MemoryTextAPI) -> None:
    """Narrower than the API type: the case would rely on one implementation."""


def returns_value(api: TextAPI) -> int:
    """A case signals failure by raising, not by returning a value."""
    return 1


def check_case_parameters() -> None:
    suite.case(good_case)
    suite.case(good_sync_case)
    suite.case(wide_case)
    suite.case("missing")(good_case)
    ck.ContractSuite(text, {"missing": good_case, "read_your_writes": good_sync_case})
    ck.ContractSuite(plain_text, {"missing": wide_case})

    suite.case(int_case)  # type: ignore[arg-type]
    suite.case("missing")(int_case)  # type: ignore[arg-type]
    ck.ContractSuite(text, {"missing": int_case})  # type: ignore[dict-item]
    plain_text_suite.case(int_case)  # type: ignore[arg-type]
    ck.ContractSuite(plain_text, {"missing": int_case})  # type: ignore[dict-item]
    suite.case(narrow_case)  # type: ignore[arg-type]
    suite.case(returns_value)  # type: ignore[type-var]

    # A case's own deadline: a number of seconds, with its name or alone.
    suite.case("missing", timeout=30)(good_case)
    suite.case(timeout=30.0)(good_case)
    suite.case("missing", timeout=30)(int_case)  # type: ignore[arg-type]
    suite.case(timeout=30)(int_case)  # type: ignore[arg-type]
    suite.case("missing", timeout="30")  # type: ignore[call-overload]
    suite.case(good_case, timeout=30)  # type: ignore[call-overload]


@suite.case
async def missing(api: TextAPI) -> None:
    assert await api.read("absent") is None


@suite.case("read_your_writes")
async def _read_your_writes(api: TextAPI) -> None:
    await api.write("key", "value")


async def decorated_cases_keep_their_type(api: TextAPI) -> None:
    assert_type(missing, Callable[[TextAPI], Coroutine[Any, Any, None]])
    await missing(api)
    await _read_your_writes(api)


@plain_text_suite.case  # type: ignore[arg-type]
async def wrong_api(api: int) -> None:
    pass


@suite.case("missing")  # type: ignore[arg-type]
async def wrong_api_named(api: int) -> None:
    pass


# -- a suite for one API type cannot run against an implementation of another -----


async def check_pairing() -> None:
    assert_type(await ck.run_contract(PlainText(), plain_text_suite), ck.ContractReport)
    assert_type(ck.run_contract_sync(PlainText(), plain_text_suite), ck.ContractReport)
    assert_type(ck.contract_cases(PlainText(), plain_text_suite), list[ck.ContractCase[TextAPI]])
    assert_type(ck.contract_cases(Numbers(), number_suite), list[ck.ContractCase[int]])

    # Both features name their cases with plain strings: only the API types differ.
    await ck.run_contract(PlainText(), number_suite)  # type: ignore[misc]
    ck.run_contract_sync(Numbers(), plain_text_suite)  # type: ignore[misc]
    ck.contract_cases(PlainText(), number_suite)  # type: ignore[misc]


# -- Literal case names reject invented names in coverage and suites --------------


class FullCoverage(ck.FeatureImplementation[TextAPI, TextCase]):
    feature = text
    coverage = {"missing": ck.Supported(), "read_your_writes": ck.Unsupported("a demo")}

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


class InventedCoverage(ck.FeatureImplementation[TextAPI, TextCase]):
    feature = text
    coverage = {
        "missing": ck.Supported(),
        "invented": ck.Supported(),  # type: ignore[dict-item]
    }

    def create(self, scope: ck.FeatureScope) -> TextAPI:
        return MemoryTextAPI()


def check_case_names() -> None:
    assert_type(text.cases, tuple[TextCase, ...])
    assert_type(
        text.coverage(unsupported={"missing": "a demo"}),
        dict[TextCase, ck.Supported | ck.Unsupported],
    )
    text.coverage(unsupported={"invented": "a demo"})  # type: ignore[dict-item]

    suite.case("read_your_writes")
    suite.case("invented")  # type: ignore[call-overload]
    suite.case("invented", timeout=30)  # type: ignore[call-overload]

    ck.ContractSuite(text, {"missing": good_case})
    ck.ContractSuite(text, {"invented": good_case})  # type: ignore[dict-item]

    ck.Feature[TextAPI, TextCase]("typing.text", cases=("missing", "invented"))  # type: ignore[arg-type]

    # Without a Literal type any string is a case name, checked only at run time.
    plain_text.coverage(unsupported={"invented": "a demo"})
    plain_text_suite.case("invented")
