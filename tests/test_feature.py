"""Feature definitions and coverage markers."""

from __future__ import annotations

from typing import Any

import pytest

import conformkit as ck


class TestFeature:
    def test_keeps_its_declaration(self) -> None:
        """A feature keeps its ID, its cases in order, and its two texts."""
        feature = ck.Feature[Any](
            "kv.basic", cases=["read", "write"], description="d", does_not_establish="n"
        )
        assert (feature.id, feature.cases) == ("kv.basic", ("read", "write"))
        assert (feature.description, feature.does_not_establish) == ("d", "n")
        assert "read" in feature
        assert "reed" not in feature
        assert repr(feature) == "Feature('kv.basic', cases=('read', 'write'))"

    def test_its_texts_default_to_empty(self) -> None:
        """Without a description or a statement of what it does not establish, both are ''."""
        feature = ck.Feature[Any]("kv.bare", cases=["read"])
        assert (feature.description, feature.does_not_establish) == ("", "")

    @pytest.mark.parametrize("bad_id", ["", "kv basic", " kv", "kv\t", 3])
    def test_rejects_malformed_ids(self, bad_id: Any) -> None:
        """An empty ID, one with whitespace, or a non-string is rejected, shown with its repr."""
        with pytest.raises(
            ck.ContractDefinitionError, match="^a feature ID must be a non-empty"
        ) as caught:
            ck.Feature[Any](bad_id, cases=("a",))
        assert repr(bad_id) in str(caught.value)

    def test_rejects_no_cases(self) -> None:
        """A feature needs at least one case."""
        with pytest.raises(ck.ContractDefinitionError, match="'kv' declares no cases"):
            ck.Feature[Any]("kv", cases=())

    def test_rejects_a_string_as_cases(self) -> None:
        """cases="read" is a mistake for cases=("read",), not five one-letter cases."""
        with pytest.raises(ck.ContractDefinitionError, match="not the string 'read'"):
            ck.Feature[Any]("kv", cases="read")

    def test_rejects_duplicate_cases(self) -> None:
        """A case named twice is rejected, naming the case."""
        with pytest.raises(ck.ContractDefinitionError, match="declares case 'read' twice"):
            ck.Feature[Any]("kv", cases=("read", "write", "read"))

    @pytest.mark.parametrize("bad_case", ["", "two words", None])
    def test_rejects_malformed_case_names(self, bad_case: Any) -> None:
        """Case names are non-empty strings without whitespace."""
        with pytest.raises(ck.ContractDefinitionError, match="case name of feature 'kv'"):
            ck.Feature[Any]("kv", cases=("read", bad_case))

    @pytest.mark.parametrize("bad_case", ["a[", "a]", "a[0]"])
    def test_rejects_brackets_in_case_names(self, bad_case: str) -> None:
        """Either bracket is refused in a case name: brackets mark family members."""
        with pytest.raises(ck.ContractDefinitionError) as caught:
            ck.Feature[Any]("kv", cases=("read", bad_case))
        assert str(caught.value) == (
            f"case name {bad_case!r} of feature 'kv' may not contain brackets: "
            "they mark family members"
        )

    def test_compares_by_identity(self) -> None:
        """Two features with one ID and the same cases are still two features."""
        one = ck.Feature[Any]("kv", cases=("a",))
        other = ck.Feature[Any]("kv", cases=("a",))
        assert one != other
        assert one == one  # identity is equality


class TestCoverageBuilder:
    feature = ck.Feature[Any]("kv", cases=("read", "write", "ttl"))

    def test_all_supported_by_default(self) -> None:
        """feature.coverage() declares every case supported, in declared order."""
        coverage = self.feature.coverage()
        assert list(coverage) == ["read", "write", "ttl"]
        assert all(value == ck.Supported() for value in coverage.values())

    def test_names_the_exceptions(self) -> None:
        """unsupported= marks just those cases, with their reasons."""
        coverage = self.feature.coverage(unsupported={"ttl": "no clock"})
        assert coverage["ttl"] == ck.Unsupported("no clock")
        assert coverage["read"] == ck.Supported()

    def test_rejects_unknown_cases_with_a_suggestion(self) -> None:
        """A misspelt case is rejected with the closest declared name."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match="coverage names case 'tll'.*no such case; did you mean 'ttl'",
        ):
            self.feature.coverage(unsupported={"tll": "no clock"})

    def test_rejects_empty_reasons(self) -> None:
        """An unsupported case needs a reason."""
        with pytest.raises(ck.ContractDefinitionError, match="non-empty reason"):
            self.feature.coverage(unsupported={"ttl": "  "})


class TestUnsupported:
    @pytest.mark.parametrize("reason", ["", "   ", None])
    def test_requires_a_reason(self, reason: Any) -> None:
        """Unsupported() without a real reason is a definition error."""
        with pytest.raises(ck.ContractDefinitionError, match="non-empty reason"):
            ck.Unsupported(reason)

    def test_markers_are_values(self) -> None:
        """Markers compare by value and are hashable."""
        assert ck.Unsupported("x") == ck.Unsupported("x") != ck.Unsupported("y")
        assert len({ck.Supported(), ck.Supported()}) == 1


class TestWithoutAnAPIType:
    def test_a_feature_without_an_api_type_takes_any_case_function(self) -> None:
        """Feature(...) without [API] declares no API: nothing is judged from one."""
        feature: ck.Feature[Any] = ck.Feature("untyped", cases=("reads",))
        suite = ck.ContractSuite(feature)

        def reads(api: Any) -> None:
            assert api == {}

        suite.case(reads)
        report = ck.run_contract_sync(feature.implementation(dict, name="Untyped"), suite)
        assert [(result.case_id, result.status) for result in report.results] == [
            ("reads", ck.CaseStatus.PASSED)
        ]


class TestSuggestions:
    def test_no_close_name_adds_no_suggestion(self) -> None:
        feature = ck.Feature[Any]("suggest", cases=("read", "write"))
        with pytest.raises(ck.ContractDefinitionError) as raised:
            feature.coverage(unsupported={"zzzzzz": "no"})
        assert str(raised.value) == (
            "coverage names case 'zzzzzz', but feature 'suggest' declares no such case"
        )
