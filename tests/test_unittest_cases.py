"""contract_test_case(): a contract as a unittest TestCase, a test method per case."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path
from typing import Literal

import pytest

import conformkit as ck

Backend = Literal["asyncio", "trio"]


class Store:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}


store = ck.Feature[Store]("unit.store", cases=("missing", "read_your_writes", "debug_off"))
suite = ck.ContractSuite(store)


@suite.case
async def missing(api: Store) -> None:
    assert api.values.get("absent") is None


@suite.case
async def read_your_writes(api: Store) -> None:
    api.values["key"] = "value"
    assert api.values.get("key") == "value"


@suite.case
async def debug_off(api: Store) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # trio
    assert not loop.get_debug(), "asyncio's debug mode is on"


def broken(api: Store) -> None:
    raise AssertionError("read back None")


# The same suite, but for a read_your_writes that always fails.
failing = ck.ContractSuite(
    store, {"missing": missing, "read_your_writes": broken, "debug_off": debug_off}
)


implementations = (
    store.implementation(Store, name="MemoryStore"),
    store.implementation(
        Store, name="AppendOnly", coverage=store.coverage(unsupported={"missing": "no reads"})
    ),
)


def run(test_case: type[unittest.TestCase], *patterns: str) -> unittest.TestResult:
    loader = unittest.TestLoader()
    loader.testNamePatterns = [f"*{pattern}*" for pattern in patterns] or None
    tests = loader.loadTestsFromTestCase(test_case)
    return unittest.TextTestRunner(stream=io.StringIO()).run(tests)


def method_names(test_case: type[unittest.TestCase]) -> list[str]:
    return list(unittest.TestLoader().getTestCaseNames(test_case))


class TestMethods:
    def test_one_method_per_implementation_and_case(self) -> None:
        """Each case of each implementation is a test method of its own, named after both."""
        test_case = ck.contract_test_case(implementations, suite)
        assert sorted(method_names(test_case)) == sorted(
            f"test_{implementation}_{case}"
            for implementation in ("MemoryStore", "AppendOnly")
            for case in ("missing", "read_your_writes", "debug_off")
        )
        assert unittest.TestLoader().loadTestsFromTestCase(test_case).countTestCases() == 6

    def test_named_after_the_feature_in_the_calling_module(self) -> None:
        """The class is TestUnitStore by default, or as named; it belongs to the caller's module."""
        default = ck.contract_test_case(implementations, suite)
        named = ck.contract_test_case(implementations[0], suite, name="TestMemory")
        assert (default.__name__, default.__qualname__) == ("TestUnitStore", "TestUnitStore")
        assert named.__qualname__ == "TestMemory"
        assert default.__module__ == named.__module__ == __name__
        test = named("test_MemoryStore_missing")
        assert test.id() == f"{__name__}.TestMemory.test_MemoryStore_missing"

    def test_family_members_make_methods_unittest_can_load_by_name(self) -> None:
        """A member's ID keeps its brackets; its dots, which unittest reads as a path, become _."""
        codec = ck.Feature[object]("unit.codec", cases=(), families={"parse": ("one", "two.2")})
        codec_suite = ck.ContractSuite(codec, {"parse": lambda api, param: None})
        test_case = ck.contract_test_case(codec.implementation(object, name="Codec"), codec_suite)
        assert method_names(test_case) == ["test_Codec_parse[one]", "test_Codec_parse[two_2]"]

    def test_selection_counts_cases_one_by_one(self) -> None:
        """-k (testNamePatterns) selects single cases."""
        test_case = ck.contract_test_case(implementations, suite)
        result = run(test_case, "MemoryStore")
        assert result.testsRun == 3
        result = run(test_case, "read_your_writes")
        assert result.testsRun == 2


class TestRuns:
    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_verdicts_are_unittest_outcomes(self, backend: Backend) -> None:
        """Passes pass, an unsupported case is a skip with its reason, a failure fails alone."""
        failing = ck.ContractSuite(
            store, {**{name: suite[name] for name in suite}, "read_your_writes": broken}
        )
        test_case = ck.contract_test_case(implementations, failing, backend=backend)
        result = run(test_case)
        assert result.testsRun == 6
        assert [(test.id().rpartition(".")[2], reason) for test, reason in result.skipped] == [
            ("test_AppendOnly_missing", "no reads")
        ]
        assert sorted(test.id().rpartition(".")[2] for test, _ in result.failures) == [
            "test_AppendOnly_read_your_writes",
            "test_MemoryStore_read_your_writes",
        ]
        assert result.errors == []

    @pytest.mark.frames
    def test_a_failure_starts_at_the_case(self) -> None:
        """The traceback shows the case's frames, not the event loop or the runner around them."""
        failing = ck.ContractSuite(
            store, {**{name: suite[name] for name in suite}, "read_your_writes": broken}
        )
        result = run(ck.contract_test_case(implementations[0], failing), "read_your_writes")
        [(_, text)] = result.failures
        assert text.splitlines() == [
            "Traceback (most recent call last):",
            f'  File "{__file__}", line {broken.__code__.co_firstlineno + 1}, in broken',
            '    raise AssertionError("read back None")',
            "AssertionError: read back None",
        ]

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_sys_exit_in_the_code_under_test_fails_its_test_alone(self, backend: Backend) -> None:
        """A case whose code calls sys.exit(0) fails its own test; the other tests still run."""

        def exits() -> Store:
            raise SystemExit(0)

        test_case = ck.contract_test_case(
            [store.implementation(exits, name="Exits"), implementations[0]], suite, backend=backend
        )
        result = run(test_case)
        assert result.testsRun == 6
        assert sorted(test.id().rpartition(".")[2] for test, _ in result.failures) == [
            "test_Exits_debug_off",
            "test_Exits_missing",
            "test_Exits_read_your_writes",
        ]
        assert all("SystemExit: 0" in text for _, text in result.failures)
        assert result.errors == []

    def test_asyncio_debug_mode_is_off(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The cases run with asyncio's debug mode off, even when the environment asks for it."""
        monkeypatch.setenv("PYTHONASYNCIODEBUG", "1")
        result = run(ck.contract_test_case(implementations, suite), "debug_off")
        assert (result.testsRun, result.failures, result.errors) == (2, [], [])

    def test_discovery_and_the_command_line_count_each_case(self, tmp_path: Path) -> None:
        """`python -m unittest -v` lists each case; `-k` runs one."""
        (tmp_path / "test_text.py").write_text(
            textwrap.dedent(
                """
                import conformkit as ck
                from text_contract import implementations, suite

                TestText = ck.contract_test_case(implementations, suite)
                """
            )
        )
        examples = Path(__file__).parent.parent / "docs" / "examples"
        (tmp_path / "text_contract.py").write_text((examples / "text_contract.py").read_text())
        command = [sys.executable, "-m", "unittest", "-v"]
        every = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
        )
        assert every.returncode == 0, every.stderr
        lines = every.stderr.splitlines()
        assert "Ran 6 tests in " in "\n".join(lines)
        assert lines[-1] == "OK (skipped=1)"
        assert (
            "test_AppendOnlyText_delete (test_text.TestExampleText.test_AppendOnlyText_delete)"
            " ... skipped 'an append-only log cannot delete'"
        ) in lines
        one = subprocess.run(
            [*command, "-k", "MemoryText_missing"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert one.returncode == 0, one.stderr
        assert "Ran 1 test in " in one.stderr


class TestMistakes:
    def test_two_implementations_of_one_name(self) -> None:
        """Two implementations that would make the same methods are refused, naming both."""
        twins = (store.implementation(Store, name="Twin"), store.implementation(Store, name="Twin"))
        with pytest.raises(ck.ContractDefinitionError, match=r"Twin × missing and Twin × missing"):
            ck.contract_test_case(twins, suite)

    def test_no_implementation(self) -> None:
        with pytest.raises(ck.ContractDefinitionError, match="no implementation of 'unit.store'"):
            ck.contract_test_case([], suite)

    def test_a_name_that_is_not_an_identifier(self) -> None:
        with pytest.raises(ck.ContractDefinitionError, match="got 'Test Store'"):
            ck.contract_test_case(implementations, suite, name="Test Store")

    def test_an_unknown_backend(self) -> None:
        with pytest.raises(ValueError, match="got 'curio'"):
            ck.contract_test_case(implementations, suite, backend="curio")  # type: ignore[arg-type]

    def test_a_definition_error_is_raised_when_built(self) -> None:
        """A broken contract fails when the class is built, as contract_cases() would."""
        incomplete = ck.ContractSuite(store, {"missing": missing})
        with pytest.raises(ck.ContractDefinitionError, match="read_your_writes"):
            ck.contract_test_case(implementations, incomplete)
