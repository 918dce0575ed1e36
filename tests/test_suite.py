"""Contract suites: registering case functions."""

from __future__ import annotations

from typing import Any

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
