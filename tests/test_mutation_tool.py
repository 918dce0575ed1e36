"""
The pure parts of tools/mutation.py: the tests a run names as failed, the mutants
a pattern selects, the report; and tools/extra_mutants.py, on a tiny module of its
own: the mutants it makes, and its verdicts (never the real suite).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def load(name: str) -> ModuleType:
    """A module of tools/, loaded from its file under a name of its own."""
    spec = importlib.util.spec_from_file_location(f"conformkit_{name}", TOOLS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return load("mutation")


@pytest.fixture(scope="module")
def extra() -> ModuleType:
    return load("extra_mutants")


def test_failed_tests_are_read_off_the_summary_and_the_hang_line(tool: ModuleType) -> None:
    output = "\n".join(
        [
            "tests/test_a.py ..F",
            "=========================== short test summary info ============================",
            "FAILED tests/test_faults.py::test_fault[asyncio-a cleanup disposes of itself]",
            "FAILED tests/test_a.py::TestX::test_y[trio-1] - AssertionError: a - b",
            "ERROR tests/test_b.py",
            "tests/test_c.py::test_z[trio-a b] hung: 30s passed",
            "1 failed, 97 passed in 27.54s",
        ]
    )
    found = [match[1] or match[2] for match in tool.FAILED_TEST.finditer(output)]
    assert found == [
        "tests/test_faults.py::test_fault[asyncio-a cleanup disposes of itself]",
        "tests/test_a.py::TestX::test_y[trio-1]",
        "tests/test_b.py",
        "tests/test_c.py::test_z[trio-a b]",
    ]


def test_a_pattern_selects_the_mutants_of_one_function(tool: ModuleType) -> None:
    pattern = "conformkit._runner.xǁExecutionǁrun__*"
    assert tool.selected("conformkit._runner.xǁExecutionǁrun__mutmut_7", [pattern])
    assert not tool.selected("conformkit._runner.xǁExecutionǁrun_sync__mutmut_7", [pattern])
    assert not tool.selected("conformkit._scope.x_create_api__mutmut_1", [pattern])
    assert tool.selected("conformkit._scope.x_create_api__mutmut_1", [])  # no pattern: every one


TINY = textwrap.dedent(
    '''
    """A tiny module."""

    LIMIT = 3


    async def fetch(source: object) -> int:
        """Fetch once, and log it."""
        value = await source.get("key")
        source.log(f"got {value}")
        return value + LIMIT


    class Box:
        size = 2

        def grow(self, by: int = 1) -> None:
            self.size += by
    '''
)


def test_extra_mutants_remove_awaits_and_statements_and_replace_constants(
    extra: ModuleType,
) -> None:
    """Each mutant is named after its function as mutmut names it; docstrings,
    annotations and f-string parts are left alone; the top level is mutated too."""
    made = {mutant.name: mutant.line for mutant in extra.mutants_of(TINY, "_tiny")}
    assert made == {
        "conformkit._tiny.<module>__extra_statement_1": "pass  # removed: LIMIT = 3",
        "conformkit._tiny.<module>__extra_constant_1": "LIMIT = 0",
        "conformkit._tiny.<module>__extra_statement_2": "pass  # removed: size = 2",
        "conformkit._tiny.<module>__extra_constant_2": "size = 0",
        "conformkit._tiny.x_fetch__extra_statement_1": (
            'pass  # removed: value = await source.get("key")'
        ),
        "conformkit._tiny.x_fetch__extra_await_1": 'value = source.get("key")',
        "conformkit._tiny.x_fetch__extra_constant_1": 'value = await source.get("")',
        "conformkit._tiny.x_fetch__extra_statement_2": (
            'pass  # removed: source.log(f"got {value}")'
        ),
        "conformkit._tiny.x_fetch__extra_statement_3": "pass  # removed: return value + LIMIT",
        "conformkit._tiny.xǁBoxǁgrow__extra_constant_1": "def grow(self, by: int = 0) -> None:",
        "conformkit._tiny.xǁBoxǁgrow__extra_statement_1": "pass  # removed: self.size += by",
    }


def test_an_extra_mutant_changes_one_thing_and_its_diff_shows_it(extra: ModuleType) -> None:
    [mutant] = [
        m for m in extra.mutants_of(TINY, "_tiny") if m.name.endswith("x_fetch__extra_await_1")
    ]
    assert [line for line in mutant.source.splitlines() if line not in TINY.splitlines()] == [
        '    value = source.get("key")'
    ]
    patch = mutant.diff(TINY, "src/_tiny.py")
    assert patch.startswith("# conformkit._tiny.x_fetch__extra_await_1\n--- src/_tiny.py\n")
    assert '-    value = await source.get("key")\n+    value = source.get("key")\n' in patch
    assert mutant.line == 'value = source.get("key")'  # as the report reads it off the diff


def test_extra_mutants_are_killed_or_survive_against_the_tests(
    extra: ModuleType, tmp_path: Path
) -> None:
    """Each mutant runs against the tests in the tree, the module put back afterwards."""
    module = textwrap.dedent(
        """
        def double(value: int) -> int:
            print("doubling")
            return value * 2
        """
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "tiny.py").write_text(module, encoding="utf-8")
    (tmp_path / "test_tiny.py").write_text(
        "import tiny\n\ndef test_double() -> None:\n    assert tiny.double(2) == 4\n",
        encoding="utf-8",
    )
    # Two of its four mutants: each run of pytest takes a second or more.
    mutants = [m for m in extra.mutants_of(module, "tiny") if "statement" in m.name]
    verdicts = {
        mutant.name: verdict
        for mutant, verdict in extra.check(tmp_path, "src/tiny.py", mutants, ["test_tiny.py"])
    }
    assert verdicts == {
        "conformkit.tiny.x_double__extra_statement_1": "survived",  # the print: nothing checks it
        "conformkit.tiny.x_double__extra_statement_2": "killed",  # the return
    }
    assert (tmp_path / "src" / "tiny.py").read_text(encoding="utf-8") == module


def test_tests_that_outlast_the_limit_time_out(extra: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "test_hangs.py").write_text(
        "import threading\n\ndef test_hangs() -> None:\n    threading.Event().wait()\n",
        encoding="utf-8",
    )
    verdict, _ = extra.run_tests(tmp_path, ["test_hangs.py"], 0.5)
    assert verdict == "timeout"


def test_extra_mutants_are_reported_as_mutmut_s(
    tool: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same table and survivors' diffs as mutmut's report; under the target, it fails."""

    def results_of(path: Path, only: Sequence[str]) -> Iterator[tuple[str, str]]:
        yield "conformkit._tiny.x_f__extra_await_1", "killed"
        yield "conformkit._tiny.x_f__extra_statement_1", "survived"

    def patch_of(mutant: str, path: Path) -> str:
        return f"# {mutant}\n-    await f()\n+    f()\n"

    code = tool.report(
        [Path("src/_tiny.py")], results_of=results_of, patch_of=patch_of, keys_of=lambda path: {}
    )
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[:2] == [
        "module                  mutants  killed  equiv.  survived   score",
        "_tiny                         2       1       0         1   50.0%",
    ]
    assert "# conformkit._tiny.x_f__extra_statement_1\n-    await f()\n+    f()" in out
    assert "x_f__extra_await_1" not in out  # a kill shows no diff


# The equivalents' ledger: keyed by the change, not by the mutant's number.

STORE = textwrap.dedent(
    '''
    """A module whose function a refactor moves."""


    async def fetch(source: object) -> int:
        value = await source.get("key")
        if value is None:
            return 0
        return value + 1
    '''
)
LEDGER = textwrap.dedent(
    """
    [[equivalent]]
    operators = "extra"
    function = "fetch"
    line = 'value = await source.get("key")'
    mutated = 'value = source.get("key")'
    reason = "the source's get is synchronous"
    """
)


def keys(tool: ModuleType, extra: ModuleType, source: str, module: str) -> dict[str, Any]:
    """The key of each extra mutant of a module, by the mutant's name."""
    made = extra.mutants_of(source, module)
    found: dict[str, Any] = tool.keys_from((m.name, source, m.source) for m in made)
    return found


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


class TestLedger:
    """An equivalent is listed by its function, its line and the change; not by a number."""

    def moved(self, tmp_path: Path) -> tuple[Path, Path]:
        """``fetch`` moved unchanged, 30 lines down, into another module."""
        before = write(tmp_path / "_store.py", '"""Nothing left here."""\n')
        padding = "".join(f"LIMIT_{number} = {number}\n" for number in range(30))
        after = write(tmp_path / "_fetching.py", padding + STORE)
        return before, after

    def test_moving_a_function_unchanged_leaves_no_entry_stale(
        self, tool: ModuleType, tmp_path: Path
    ) -> None:
        ledger = write(tmp_path / "equivalents.toml", LEDGER)
        original = write(tmp_path / "store.py", STORE)
        assert tool.check(ledger, [original]) == []
        original.unlink()
        assert tool.check(ledger, self.moved(tmp_path)) == []

    def test_the_moved_function_s_mutant_is_still_counted_equivalent(
        self,
        tool: ModuleType,
        extra: ModuleType,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Its name changes with the module (mutmut's numbers with any change before it);
        its key does not, and the report leaves it out of the score as before."""
        ledger = write(tmp_path / "equivalents.toml", LEDGER)
        _, after = self.moved(tmp_path)
        source = after.read_text(encoding="utf-8")
        by_name = keys(tool, extra, source, "_fetching")
        assert set(by_name.values()) >= set(tool.equivalents(ledger))

        def results_of(path: Path, only: Sequence[str]) -> Iterator[tuple[str, str]]:
            for name in by_name:
                yield name, "survived" if "x_fetch__extra_await" in name else "killed"

        code = tool.report(
            [after],
            results_of=results_of,
            patch_of=lambda mutant, path: f"# {mutant}\n",
            keys_of=lambda path: by_name,
            ledger=ledger,
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert "stale" not in out
        total = len(by_name)
        assert out.splitlines()[1].split() == [
        "_fetching", str(total), str(total - 1), "1", "0", "100.0%"
    ]  # fmt: skip

    def test_changing_the_mutated_line_makes_its_entry_stale_by_name(
        self, tool: ModuleType, tmp_path: Path
    ) -> None:
        ledger = write(tmp_path / "equivalents.toml", LEDGER)
        changed = STORE.replace('source.get("key")', 'source.get("other key")')
        assert tool.check(ledger, [write(tmp_path / "store.py", changed)]) == [
            "fetch: 'value = await source.get(\"key\")' made 'value = source.get(\"key\")': "
            "no such line in fetch any more"
        ]

    def test_a_renamed_function_makes_its_entries_stale_naming_where_the_line_is(
        self, tool: ModuleType, tmp_path: Path
    ) -> None:
        ledger = write(tmp_path / "equivalents.toml", LEDGER)
        renamed = write(tmp_path / "store.py", STORE.replace("def fetch(", "def get_one("))
        [stale] = tool.check(ledger, [renamed])
        assert stale.endswith(": no function 'fetch' any more; the line is in get_one")

    def test_the_report_names_an_entry_whose_change_is_made_no_more(
        self,
        tool: ModuleType,
        extra: ModuleType,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Its function's mutants ran, and none makes its change: it fails, naming the entry."""
        ledger = write(tmp_path / "equivalents.toml", LEDGER)
        changed = STORE.replace('source.get("key")', 'source.get("other key")')
        by_name = keys(tool, extra, changed, "_store")
        code = tool.report(
            [tmp_path / "_store.py"],
            results_of=lambda path, only: ((name, "killed") for name in by_name),
            keys_of=lambda path: by_name,
            ledger=ledger,
        )
        out = capsys.readouterr().out
        assert code == 1
        assert (
            "stale equivalent: fetch: 'value = await source.get(\"key\")' made "
            "'value = source.get(\"key\")': no mutant of fetch makes this change any more"
        ) in out.splitlines()

    def test_the_report_names_an_entry_whose_mutant_the_tests_kill(
        self,
        tool: ModuleType,
        extra: ModuleType,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        ledger = write(tmp_path / "equivalents.toml", LEDGER)
        by_name = keys(tool, extra, STORE, "_store")
        code = tool.report(
            [tmp_path / "_store.py"],
            results_of=lambda path, only: ((name, "killed") for name in by_name),
            keys_of=lambda path: by_name,
            ledger=ledger,
        )
        out = capsys.readouterr().out
        assert code == 1
        assert (
            "stale equivalent: fetch: 'value = await source.get(\"key\")' made "
            "'value = source.get(\"key\")': listed as equivalent, but the tests kill "
            "conformkit._store.x_fetch__extra_await_1"
        ) in out.splitlines()

    def test_a_line_held_twice_is_told_apart_by_its_occurrence(
        self, tool: ModuleType, extra: ModuleType, tmp_path: Path
    ) -> None:
        """The second ``return 0`` has an entry; the first's mutant is not covered by it."""
        twice = STORE.replace("return value + 1", "return 0")
        by_name = keys(tool, extra, twice, "_store")
        emptied = {
            name: key.occurrence
            for name, key in by_name.items()
            if key.line == "return 0" and key.mutated == "pass  # removed: return 0"
        }
        assert emptied == {
            "conformkit._store.x_fetch__extra_statement_2": 1,
            "conformkit._store.x_fetch__extra_statement_3": 2,
        }
        ledger = write(
            tmp_path / "equivalents.toml",
            textwrap.dedent(
                """
                [[equivalent]]
                operators = "extra"
                function = "fetch"
                line = "return 0"
                mutated = "pass  # removed: return 0"
                occurrence = 2
                reason = "..."
                """
            ),
        )
        [listed] = tool.equivalents(ledger)
        assert listed == by_name["conformkit._store.x_fetch__extra_statement_3"]
        assert listed != by_name["conformkit._store.x_fetch__extra_statement_2"]
        assert tool.check(ledger, [write(tmp_path / "store.py", twice)]) == []
        [stale] = tool.check(ledger, [write(tmp_path / "store.py", STORE)])
        assert stale == (
            "fetch: 'return 0' made 'pass  # removed: return 0' (occurrence 2): "
            "fetch holds that line 1 time(s) only"
        )


def test_a_mutant_s_key_names_its_function_as_python_does(tool: ModuleType) -> None:
    assert tool.function_name("conformkit._runner.xǁExecutionǁrun__mutmut_7") == "Execution.run"
    assert tool.function_name("conformkit._feature.x_suggest__mutmut_12") == "suggest"
    assert tool.function_name("conformkit._runner.x__watch__extra_statement_4") == "_watch"
    assert tool.function_name("conformkit._runner._plan.x_plan__mutmut_1") == "plan"
    assert tool.function_name("conformkit._scope.<module>__extra_constant_2") == "<module>"


def test_a_multi_line_change_is_keyed_by_every_line_it_changes(tool: ModuleType) -> None:
    before = "def f(a, b):\n    return (\n        a\n        or b\n    )\n"
    after = "def f(a, b):\n    return (\n        a and b\n    )\n"
    assert tool.change_of(before, after) == ("a\nor b", "a and b")


def test_mutmut_s_mutants_are_keyed_off_its_mutated_module(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each mutant against its function's unmutated copy, both found by mutmut's index
    and named as in the source, as ``mutmut show`` names them."""
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "SCRATCH", tmp_path / ".mutation")
    mutated = tmp_path / ".mutation" / "_tiny" / "mutants" / "src" / "conformkit" / "_tiny.py"
    mutated.parent.mkdir(parents=True)
    functions = {
        "xǁBoxǁgrow__mutmut_orig": "    def xǁBoxǁgrow__mutmut_orig(self, by=1):\n        pass",
        "xǁBoxǁgrow__mutmut_1": "    def xǁBoxǁgrow__mutmut_1(self, by=2):\n        pass",
        "x_f__mutmut_orig": "def x_f__mutmut_orig(a):\n    a += 1\n    return a + 1",
        "x_f__mutmut_1": "def x_f__mutmut_1(a):\n    a += 1\n    return a - 1",
        "x_f__mutmut_2": "def x_f__mutmut_2(a):\n    a -= 1\n    return a + 1",
    }
    lines = ["import something  # mutmut's trampolines"]
    spans: dict[str, list[int]] = {}
    for name, text in functions.items():
        spans[name] = [len(lines) + 1, len(lines) + len(text.splitlines())]
        lines.extend(text.splitlines())
    write(mutated, "\n".join(lines) + "\n")
    write(mutated.with_name("_tiny.py.spans"), json.dumps({"version": 1, "spans": spans}))
    keys = tool.mutmut_keys(tmp_path / "src" / "conformkit" / "_tiny.py")
    assert {name: (key.function, key.line, key.mutated) for name, key in keys.items()} == {
        "conformkit._tiny.xǁBoxǁgrow__mutmut_1": (
            "Box.grow", "def grow(self, by=1):", "def grow(self, by=2):"
        ),
        "conformkit._tiny.x_f__mutmut_1": ("f", "return a + 1", "return a - 1"),
        "conformkit._tiny.x_f__mutmut_2": ("f", "a += 1", "a -= 1"),
    }  # fmt: skip
