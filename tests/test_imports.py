"""
What importing conformkit loads: its names on first use, and the rare paths' modules only on them.

Each test runs a fresh interpreter, since this process has long loaded everything.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import conformkit as ck

INIT = Path(ck.__file__)

RARE = ("json", "difflib", "traceback", "unittest", "pkgutil", "tomllib", "importlib.metadata")
"""Modules that only a rare path of the core needs, each imported by that path."""


def fresh(code: str) -> list[str]:
    """Run ``code`` in a new interpreter; the lines it prints."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def typed_imports() -> dict[str, str]:
    """Each name ``__init__.py`` imports for type checkers, and the module it comes from."""
    found = {}
    for node in ast.walk(ast.parse(INIT.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.update({alias.name: node.module for alias in node.names})
    return found


class TestImportConformkit:
    def test_loads_none_of_its_modules(self) -> None:
        """A fresh `import conformkit` loads no module of the core, nor anyio nor typing."""
        new = fresh(
            """
            import sys
            before = set(sys.modules)
            import conformkit
            print(*sorted(set(sys.modules) - before))
            """
        )
        assert set(new[0].split()) <= {"conformkit", "__future__"}

    def test_every_name_is_there_before_its_first_use(self) -> None:
        """dir() lists every export before any is used; each then comes from its module."""
        lines = fresh(
            """
            import sys, conformkit
            names = {name for name in dir(conformkit) if not name.startswith("_")}
            print(sorted(names - {"annotations"}))  # of `from __future__ import annotations`
            print(sorted(name for name in sys.modules if name.startswith("conformkit.")))
            print(conformkit.Feature is sys.modules["conformkit._feature"].Feature)
            """
        )
        assert lines == [str(sorted(ck.__all__)), "[]", "True"]

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        """A name conformkit does not export raises AttributeError, and imports nothing."""
        with pytest.raises(AttributeError, match="has no attribute 'Feture'"):
            ck.Feture  # type: ignore[attr-defined]  # noqa: B018

    def test_the_lazy_table_is_the_typed_imports(self) -> None:
        """Where each name is imported from at run time is where type checkers see it."""
        typed = typed_imports()
        assert sorted(typed) == sorted(ck.__all__)
        assert typed == ck._SOURCES


class TestRarePaths:
    def test_the_core_loads_no_rare_module(self) -> None:
        """Every export but CaseUnsupported, each used once, loads none of the rare modules."""
        lines = fresh(
            f"""
            import sys, conformkit
            for name in conformkit.__all__:
                if name != "CaseUnsupported":
                    getattr(conformkit, name)
            print(*[name for name in {RARE!r} if name in sys.modules])
            """
        )
        assert lines == [""]

    @pytest.mark.parametrize(
        ("module", "use"),
        [
            pytest.param(
                "difflib",
                """
                try:
                    ck.Feature("imports.text", cases=("read",)).coverage(unsupported={"reed": "r"})
                except ck.ContractDefinitionError as error:
                    assert "did you mean 'read'?" in str(error), error
                """,
                id="a did-you-mean hint",
            ),
            pytest.param(
                "json",
                """
                import os, tempfile
                with tempfile.TemporaryDirectory() as folder:
                    path = os.path.join(folder, "table.json")
                    with open(path, "w") as file:
                        file.write('[["1", 1]]')
                    assert [row.input for row in ck.Examples.from_json(path).rows] == ["1"]
                """,
                id="examples from a file",
            ),
            pytest.param(
                "traceback",
                """
                report = ck.ContractReport("imports.text", "Memory", (), (OSError("disk"),))
                [record] = report.to_dict()["cleanup_errors"]
                assert record["traceback"] == "OSError: disk\\n", record
                """,
                id="an error's full record",
            ),
        ],
    )
    def test_a_rare_module_loads_on_its_path(self, module: str, use: str) -> None:
        """Each deferred module is absent once the core is loaded, and there once its path ran."""
        lines = fresh(
            textwrap.dedent(
                f"""
                import sys, conformkit as ck
                ck.Feature, ck.ContractSuite, ck.FeatureImplementation, ck.run_contract
                ck.assert_contract, ck.audit_suites, ck.ContractReport, ck.Examples
                print({module!r} in sys.modules)
                """
            )
            + textwrap.dedent(use)
            + f"print({module!r} in sys.modules)\n"
        )
        assert lines == ["False", "True"]


class TestCommandLine:
    def test_help_loads_no_runner(self) -> None:
        """`conformkit --help` loads the parser alone: nothing of the core, nor anyio."""
        lines = fresh(
            """
            import sys
            before = set(sys.modules)
            from conformkit.cli import main
            try:
                main(["--help"])
            except SystemExit as exit:
                assert exit.code == 0, exit.code
            print(*sorted(set(sys.modules) - before))
            """
        )
        loaded = lines[-1].split()
        ours = [name for name in loaded if name.split(".")[0] in ("conformkit", "anyio")]
        assert ours == [
            "conformkit",
            "conformkit.cli",
            "conformkit.cli._formats",
            "conformkit.cli._parser",
        ]
