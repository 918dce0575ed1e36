"""Collecting for the command line and the pytest plugin: targets, pairs, -k and shards."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import text_contract as _demo
from hypothesis import given
from hypothesis import strategies as st

import conformkit as ck
from conformkit._collect import Pair, Shard, collect, collect_modules, select
from conformkit._exceptions import UsageError

feature = ck.Feature[object]("tests.collect", cases=("a", "b", "c"))
suite = ck.ContractSuite(
    feature, {"a": lambda api: None, "b": lambda api: None, "c": lambda api: None}
)


class First(ck.FeatureImplementation[object]):
    feature = feature
    coverage = feature.coverage()

    def create(self, scope: ck.FeatureScope) -> object:
        return object()


class Second(ck.FeatureImplementation[object]):
    feature = feature
    coverage = feature.coverage(unsupported={"c": "not yet"})

    def create(self, scope: ck.FeatureScope) -> object:
        return object()


class NeedsArguments(ck.FeatureImplementation[object]):
    feature = feature
    coverage = feature.coverage()

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def create(self, scope: ck.FeatureScope) -> object:
        return object()


@pytest.fixture
def module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """An importable module, ``contracts_for_test``, for the test to fill."""
    made = types.ModuleType("contracts_for_test")
    monkeypatch.setitem(sys.modules, made.__name__, made)
    return made


def names(pairs: list[Pair]) -> list[str]:
    return [pair.name for pair in pairs]


class TestTargets:
    """What a target collects, and what it must not."""

    def test_a_module_gives_its_suites_and_implementations(self, module: types.ModuleType) -> None:
        """A module scan takes instances, and constructs the classes no instance stands for."""
        vars(module).update(suite=suite, First=First, Second=Second, second=Second())
        pairs = collect([module.__name__])
        assert names(pairs) == ["First", "Second"]
        assert pairs[1].implementation is module.second
        assert [pair.module for pair in pairs] == [__name__, __name__]

    def test_declared_implementations_are_all_there_is(self, module: types.ModuleType) -> None:
        """A module's `implementations` tuple declares them: other classes are not constructed."""
        vars(module).update(suite=suite, NeedsArguments=NeedsArguments)
        module.implementations = (NeedsArguments("sqlite://"), First())  # type: ignore[attr-defined]
        assert names(collect([module.__name__])) == ["NeedsArguments", "First"]

    def test_a_class_that_needs_arguments_is_named(self, module: types.ModuleType) -> None:
        """A class that cannot construct without arguments is an error, not skipped."""
        vars(module).update(suite=suite, NeedsArguments=NeedsArguments)
        with pytest.raises(UsageError, match=r"NeedsArguments needs arguments to construct"):
            collect([module.__name__])

    def test_an_object_target_pairs_with_the_suite_beside_it(
        self, module: types.ModuleType
    ) -> None:
        """`module:Class` runs that class against the suite of its module."""
        vars(module).update(suite=suite, First=First, Second=Second)
        assert names(collect([f"{module.__name__}:Second"])) == ["Second"]

    def test_the_same_object_twice_runs_once(self, module: types.ModuleType) -> None:
        """An object reached through two targets is one implementation."""
        vars(module).update(suite=suite, First=First)
        targets = [module.__name__, f"{module.__name__}:First", f"{module.__name__}:suite"]
        assert names(collect(targets)) == ["First"]

    def test_two_implementations_with_one_name_are_refused(self, module: types.ModuleType) -> None:
        """Reports name implementations by class: two of one name for a feature cannot both run."""
        vars(module).update(suite=suite, implementations=(First(), First()))
        with pytest.raises(UsageError, match=r"two implementations of feature 'tests.collect'"):
            collect([module.__name__])

    def test_two_suites_for_one_feature_are_refused(self, module: types.ModuleType) -> None:
        """Two suites of one feature: the user must name the one to run."""
        other = ck.ContractSuite(feature, dict(suite._cases))
        vars(module).update(suite=suite, other=other, First=First)
        with pytest.raises(UsageError, match=r"two suites for feature 'tests.collect'"):
            collect([module.__name__])

    def test_two_features_sharing_an_id_are_refused(self, module: types.ModuleType) -> None:
        """Two Feature objects with one ID would make reports ambiguous."""
        twin = ck.Feature[object]("tests.collect", cases=("a",))
        vars(module).update(suite=suite, First=First, twin_suite=ck.ContractSuite(twin))
        with pytest.raises(UsageError, match=r"two different Feature objects share the ID"):
            collect([module.__name__])

    def test_modules_a_module_imports_are_not_scanned(self, module: types.ModuleType) -> None:
        """A module scan does not descend into the modules it imports."""
        vars(module).update(suite=suite, First=First, demo=_demo)
        assert names(collect([module.__name__])) == ["First"]

    def test_the_bundled_shape(self) -> None:
        """collect_modules pairs each module's `suite` with its `implementations`."""
        pairs = collect_modules([_demo])
        assert names(pairs) == ["MemoryText", "AppendOnlyText"]
        assert {pair.suite for pair in pairs} == {_demo.suite}


def make_pairs(implementations: list[tuple[str, str, tuple[str, ...]]]) -> list[Any]:
    """Stand-ins for pairs: select() only reads names, feature IDs and case IDs."""
    return [
        types.SimpleNamespace(name=name, feature_id=feature_id, case_ids=cases)
        for name, feature_id, cases in implementations
    ]


identifier = st.text(alphabet="abcdefgh[]_", min_size=1, max_size=6)
layouts = st.lists(
    st.tuples(identifier, identifier, st.lists(identifier, unique=True, max_size=8).map(tuple)),
    max_size=6,
    unique_by=lambda item: (item[0], item[1]),
)


class TestShards:
    """--shard K/N: a deterministic partition of the (implementation, case) pairs."""

    @given(layouts, st.integers(min_value=1, max_value=7))
    def test_the_shards_partition_the_cases(
        self, layout: list[tuple[str, str, tuple[str, ...]]], count: int
    ) -> None:
        """Every case is in exactly one shard, shards differ in size by one at most."""
        pairs = make_pairs(layout)
        everything = select(pairs, [], None)
        shards = [select(pairs, [], Shard(index, count)) for index in range(1, count + 1)]
        for index, cases in enumerate(everything):
            dealt = [case for shard in shards for case in shard[index]]
            assert sorted(dealt) == sorted(cases)
            for shard in shards:  # each shard keeps the declared order
                assert list(shard[index]) == [case for case in cases if case in shard[index]]
        sizes = [sum(len(cases) for cases in shard) for shard in shards]
        assert max(sizes) - min(sizes) <= 1
        assert shards == [select(pairs, [], Shard(i, count)) for i in range(1, count + 1)]


class TestSelection:
    """-k PATTERN: cases whose ID contains any pattern."""

    def test_substrings_of_case_ids(self) -> None:
        """A pattern is a plain substring: brackets of family members need no escaping."""
        pairs = make_pairs(
            [("A", "f", ("read", "write", "fidelity[status]")), ("B", "f", ("read",))]
        )
        assert select(pairs, ["fidelity[", "wri"], None) == [("write", "fidelity[status]"), ()]

    def test_a_pattern_that_selects_nothing_is_an_error(self) -> None:
        """-k that matches no case at all says so, rather than run nothing and hold."""
        pairs = make_pairs([("A", "f", ("read",))])
        with pytest.raises(UsageError, match=r"-k 'zzz' selects none of the 1 case\(s\)"):
            select(pairs, ["zzz"], None)
