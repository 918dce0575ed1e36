"""Case families: parametrized cases and example tables, claimed per implementation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import conformkit as ck

Record = dict[str, Any]
FIELDS = ("status", "history", "metadata")

store = ck.Feature[Record]("test.families", cases=("basic",), families={"fidelity": FIELDS})
suite = ck.ContractSuite(store)
seen: list[str] = []


@suite.case
async def basic(api: Record) -> None:
    api["basic"] = True


@suite.family
async def fidelity(api: Record, field: str) -> None:
    seen.append(field)
    api[field] = "value"
    if api.get(field) != "value" or field in api.get("drops", ()):
        raise AssertionError(f"field {field!r} was not kept")


def implementation(
    claims: dict[str, Any] | None = None,
    coverage: Mapping[str, ck.Supported | ck.Unsupported] | None = None,
    drops: tuple[str, ...] = (),
) -> ck.FeatureImplementation[Record]:
    """An implementation of ``store`` with these declarations, checked at class creation."""
    namespace: dict[str, Any] = {
        "feature": store,
        "coverage": store.coverage() if coverage is None else coverage,
        "create": lambda self, scope: {"drops": drops},
    }
    if claims is not None:
        namespace["claims"] = claims
    made: type[ck.FeatureImplementation[Record]] = type(
        "Store", (ck.FeatureImplementation,), namespace
    )
    return made()


def ids(report: ck.ContractReport) -> list[str]:
    return [result.case_id for result in report.results]


class TestExpansion:
    def test_members_follow_the_plain_cases_in_declared_order(self) -> None:
        """Each claimed parameter is a case of its own, ``family[param]``, after the cases."""
        seen.clear()
        report = ck.run_contract_sync(implementation(), suite)
        assert ids(report) == [
            "basic",
            "fidelity[status]",
            "fidelity[history]",
            "fidelity[metadata]",
        ]
        assert seen == list(FIELDS)
        ck.assert_contract(report, require_full=True)

    def test_only_claimed_members_exist(self) -> None:
        """An implementation gets cases for the parameters it claims, in declared order."""
        report = ck.run_contract_sync(
            implementation(claims={"fidelity": ("metadata", "status")}), suite
        )
        assert ids(report) == ["basic", "fidelity[status]", "fidelity[metadata]"]

    def test_claiming_nothing_is_not_a_gap(self) -> None:
        """An empty claim yields no cases of the family, and the gate still holds."""
        report = ck.run_contract_sync(implementation(claims={"fidelity": ()}), suite)
        assert ids(report) == ["basic"]
        ck.assert_contract(report, require_full=True)

    def test_each_member_is_judged_alone(self) -> None:
        """A member that fails fails alone, named by its own ID, with the parameter's story."""
        report = ck.run_contract_sync(implementation(drops=("history",)), suite)
        assert report["fidelity[history]"].status is ck.CaseStatus.FAILED
        assert "field 'history' was not kept" in (report["fidelity[history]"].reason or "")
        assert report["fidelity[status]"].status is ck.CaseStatus.PASSED
        with pytest.raises(ck.ContractFailure, match=r"fidelity\[history\]: failed"):
            ck.assert_contract(report)

    def test_loops_get_one_case_per_member(self) -> None:
        """contract_cases yields a ContractCase per claimed member, with the member ID."""
        cases = ck.contract_cases(implementation(claims={"fidelity": ("history",)}), suite)
        assert [case.id for case in cases] == ["basic", "fidelity[history]"]

    @pytest.mark.anyio
    async def test_a_member_runs_in_a_loop(self) -> None:
        """A member's ContractCase runs its family function with its parameter."""
        seen.clear()
        [_, member] = ck.contract_cases(implementation(claims={"fidelity": ("history",)}), suite)
        await member.run()
        assert seen == ["history"]


class TestCoverage:
    def test_a_whole_family_can_be_unsupported(self) -> None:
        """Coverage naming the family covers every claimed member."""
        report = ck.run_contract_sync(
            implementation(coverage=store.coverage(unsupported={"fidelity": "no columns"})), suite
        )
        assert [(r.case_id, r.status.value, r.reason) for r in report.results[1:]] == [
            (f"fidelity[{field}]", "unsupported", "no columns") for field in FIELDS
        ]

    def test_single_members_can_be_unsupported(self) -> None:
        """A member's own entry overrides the family's."""
        coverage = store.coverage(unsupported_members={"fidelity[history]": "no history table"})
        report = ck.run_contract_sync(implementation(coverage=coverage), suite)
        assert report["fidelity[history]"].status is ck.CaseStatus.UNSUPPORTED
        assert report["fidelity[history]"].reason == "no history table"
        assert report["fidelity[status]"].status is ck.CaseStatus.PASSED

    def test_members_can_be_declared_one_by_one(self) -> None:
        """Without a family entry, every claimed member needs its own."""
        coverage = {"basic": ck.Supported(), "fidelity[status]": ck.Supported()}
        report = ck.run_contract_sync(
            implementation(claims={"fidelity": ("status",)}, coverage=coverage), suite
        )
        assert ids(report) == ["basic", "fidelity[status]"]

    def test_an_undeclared_member_is_named(self) -> None:
        """A claimed member left out of coverage fails at class creation, named."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"'fidelity\[history\]' of feature 'test.families'; declare each Supported\(\) "
            r"or Unsupported\(reason\) \(or a family as a whole, under its name\)$",
        ):
            implementation(
                claims={"fidelity": ("status", "history")},
                coverage={"basic": ck.Supported(), "fidelity[status]": ck.Supported()},
            )

    def test_an_unknown_member_is_rejected_with_a_hint(self) -> None:
        """A member ID with an undeclared parameter is a definition error."""
        with pytest.raises(
            ck.ContractDefinitionError, match="no parameter 'histroy'; did you mean 'history'"
        ):
            store.coverage(unsupported_members={"fidelity[histroy]": "typo"})

    def test_a_member_of_an_unknown_family_names_who_declared_it(self) -> None:
        """A member ID of a family the feature lacks is refused as an unknown case."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"^coverage names case 'fidelty\[status\]', but feature 'test.families' declares",
        ):
            store.coverage(unsupported_members={"fidelty[status]": "typo"})

    def test_unsupported_members_takes_member_ids_only(self) -> None:
        """A plain case name in unsupported_members is refused."""
        with pytest.raises(ck.ContractDefinitionError, match="family member IDs"):
            store.coverage(unsupported_members={"basic": "not a member"})


class TestClaims:
    def test_unknown_family(self) -> None:
        """Claiming a family the feature lacks is rejected with a suggestion."""
        with pytest.raises(
            ck.ContractDefinitionError, match="no such family; did you mean 'fidelity'"
        ):
            implementation(claims={"fidelty": ()})

    def test_unknown_parameter(self) -> None:
        """Claiming an undeclared parameter is rejected with a suggestion."""
        with pytest.raises(
            ck.ContractDefinitionError, match="no such parameter; did you mean 'status'"
        ):
            implementation(claims={"fidelity": ("stats",)})

    def test_a_bad_claim_names_the_implementation_class(self) -> None:
        """The message of a bad claim starts with the class that made it."""
        with pytest.raises(ck.ContractDefinitionError, match=r"^Store\.claims names family"):
            implementation(claims={"fidelty": ()})
        with pytest.raises(
            ck.ContractDefinitionError, match=r"^Store\.claims\['fidelity'\] claims"
        ):
            implementation(claims={"fidelity": ("histroy",)})

    def test_a_string_is_not_a_claim(self) -> None:
        """claims={"fidelity": "status"} is a mistake for a one-item tuple."""
        with pytest.raises(ck.ContractDefinitionError, match="not the string 'status'"):
            implementation(claims={"fidelity": "status"})

    def test_claims_must_be_a_mapping(self) -> None:
        """A list of parameters is not a claim."""
        with pytest.raises(ck.ContractDefinitionError, match="must map family names"):
            implementation(claims=["status"])  # type: ignore[arg-type]


class TestDefinitions:
    def test_family_functions_take_a_parameter(self) -> None:
        """A family registered as a plain case, or a case as a family, is refused."""
        other = ck.ContractSuite(store)
        with pytest.raises(ck.ContractDefinitionError, match="is a family .* @suite.family"):
            other.case("fidelity")(basic)
        with pytest.raises(ck.ContractDefinitionError, match="is a case .* @suite.case"):
            other.family("basic")(fidelity)

    def test_a_suite_needs_the_family_function(self) -> None:
        """A run without a family's function fails before anything runs, naming it."""
        partial = ck.ContractSuite(store, {"basic": basic})
        with pytest.raises(ck.ContractDefinitionError, match="no function for case.*'fidelity'"):
            ck.run_contract_sync(implementation(), partial)

    @pytest.mark.parametrize(
        ("families", "message"),
        [
            ({"fidelity": "status"}, "collection of parameter names"),
            ({"fidelity": ("a", "a")}, "^family 'fidelity' of feature 'test.bad' declares par"),
            ({"fidelity": ck.Examples([(1, 1), (2, 2)], ids=["a", "a"])}, "parameter 'a' twice"),
            ({"fidelity": ("a b",)}, "without whitespace or brackets"),
            ({"fidelity": ("a[0]",)}, "without whitespace or brackets"),
            ({"fidelity": ("",)}, "without whitespace or brackets, got ''"),
            ({"fidelity": (3,)}, "without whitespace or brackets, got 3"),
            ({"basic": ("a",)}, "declares case 'basic' twice"),
            ({"two words": ("a",)}, "^a family name of feature 'test.bad' must be a non-empty"),
        ],
    )
    def test_malformed_families(self, families: dict[str, Any], message: str) -> None:
        """Bad parameters and clashing names fail when the feature is made."""
        with pytest.raises(ck.ContractDefinitionError, match=message):
            ck.Feature[Record]("test.bad", cases=("basic",), families=families)

    def test_the_repr_lists_the_families(self) -> None:
        """A feature with families names them after its cases; one without leaves them out."""
        assert repr(store) == "Feature('test.families', cases=('basic',), families=['fidelity'])"
        assert "families" not in repr(ck.Feature[Record]("test.plain", cases=("basic",)))

    def test_repeated_example_ids_name_the_family(self) -> None:
        """Two rows of a table with one ID are refused, naming the family and the feature."""
        table = ck.Examples([(1, 1), (2, 2)], ids=["a", "a"])
        with pytest.raises(
            ck.ContractDefinitionError,
            match="^family 'parse' of feature 'test.bad' declares parameter 'a' twice$",
        ):
            ck.Feature[Record]("test.bad", cases=(), families={"parse": table})

    def test_any_other_character_may_name_a_parameter(self) -> None:
        """Only whitespace and brackets are reserved: other punctuation and letters are kept."""
        names = ("X", "a-b", "é", "x.y:z", "1")
        feature = ck.Feature[Record]("test.names", cases=(), families={"f": names})
        assert list(feature.families["f"]) == list(names)

    def test_a_feature_of_families_alone(self) -> None:
        """A feature may consist of families only."""
        feature = ck.Feature[Record]("test.only", cases=(), families={"f": ("x",)})
        assert feature.cases == ()
        assert "f" in feature


parse = ck.Feature[Any](
    "test.examples",
    cases=(),
    families={
        "parse": ck.Examples([("1", 1), ("-2", -2), ("x", None)], ids=["one", "minus", "junk"])
    },
)
parse_suite = ck.ContractSuite(parse)


@parse_suite.family("parse")
def _parse(api: Any, example: ck.Example) -> None:
    try:
        value: int | None = int(example.input)
    except ValueError:
        value = None
    if value != example.expected:
        raise AssertionError(f"{example.input!r} parsed as {value!r}")


class Parser(ck.FeatureImplementation[Any]):
    feature = parse
    coverage = parse.coverage()

    def create(self, scope: ck.FeatureScope) -> Any:
        return None


class TestExamples:
    def test_each_row_is_a_case(self) -> None:
        """An example table expands to a case per row, the row passed to the function."""
        report = ck.run_contract_sync(Parser(), parse_suite)
        assert ids(report) == ["parse[one]", "parse[minus]", "parse[junk]"]
        ck.assert_contract(report, require_full=True)

    def test_ids_rename_example_rows_and_keep_their_data(self) -> None:
        """ids= names Example rows too; each row keeps its input and expected value."""
        table = ck.Examples([ck.Example("old", "1", 1), ("2", 2)], ids=["one", "two"])
        assert table.rows == (ck.Example("one", "1", 1), ck.Example("two", "2", 2))

    def test_rows_are_named_by_position_by_default(self) -> None:
        """Without ids, the rows are 0, 1, 2..."""
        table = ck.Examples([("a", 1), ck.Example("named", "b", 2)])
        assert [row.id for row in table.rows] == ["0", "named"]

    def test_loaded_from_json(self, tmp_path: Path) -> None:
        """A JSON file of pairs or objects makes a table."""
        path = tmp_path / "examples.json"
        path.write_text(
            json.dumps(
                [
                    ["1", 1],
                    {"id": "neg", "input": "-3", "expected": -3},
                    {"input": 4, "expected": 4},
                ]
            )
        )
        table = ck.Examples.from_json(path)
        assert table.rows == (
            ck.Example("0", "1", 1),
            ck.Example("neg", "-3", -3),
            ck.Example("2", 4, 4),
        )

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("{", "cannot load examples from"),
            ('{"a": 1}', "must hold a JSON list, got dict"),
            ("[[1, 2, 3]]", "item 0: expected"),
            ('[{"input": 1}]', "item 0: expected"),
        ],
    )
    def test_bad_json_names_the_file(self, tmp_path: Path, content: str, message: str) -> None:
        """Malformed example files fail with the file's path and what is wrong."""
        path = tmp_path / "bad.json"
        path.write_text(content)
        with pytest.raises(ck.ContractDefinitionError, match=message) as caught:
            ck.Examples.from_json(path)
        assert str(path) in str(caught.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file is a definition error naming it."""
        with pytest.raises(ck.ContractDefinitionError, match="cannot load examples"):
            ck.Examples.from_json(tmp_path / "absent.json")

    def test_bad_rows(self) -> None:
        """A row that is not a pair, and ids of the wrong length, are refused."""
        with pytest.raises(ck.ContractDefinitionError, match="row 0 must be an"):
            ck.Examples([("only one",)])  # type: ignore[list-item]
        with pytest.raises(ck.ContractDefinitionError, match="2 row.*1 ID"):
            ck.Examples([(1, 1), (2, 2)], ids=["a"])


class TestParameters:
    def test_a_family_of_names_passes_each_name(self) -> None:
        """Each member of a family declared by names gets its own name as its parameter."""
        feature = ck.Feature[dict[str, str]](
            "params.names", cases=(), families={"keeps": ("a", "b")}
        )
        suite = ck.ContractSuite(feature)
        seen: list[object] = []

        @suite.family
        async def keeps(api: dict[str, str], field: str) -> None:
            seen.append(field)

        report = ck.run_contract_sync(feature.implementation(dict, name="Memory"), suite)
        assert [(result.case_id, result.status) for result in report.results] == [
            ("keeps[a]", ck.CaseStatus.PASSED),
            ("keeps[b]", ck.CaseStatus.PASSED),
        ]
        assert seen == ["a", "b"]
