"""The public surface of the package."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import conformkit as ck
from conformkit import _collect, _util, laws

CORE = Path(ck.__file__).parent
CLI = CORE / "cli"

# What the command line may import from the core's private modules besides the
# public API (conformkit.__all__): names meant for it, none with an underscore.
MEANT_FOR_THE_CLI = {
    # `set_ctrl_c_hook`: the command line bounds how long a run takes to stop after Ctrl-C.
    "conformkit._runner": {"RunPlan", "Execution", "check_backend", "set_ctrl_c_hook"},
    # Collection serves the command line and the pytest plugin alike.
    "conformkit._collect": set(_collect.__all__),
    "conformkit._report": {"Gate"},
    # An exception as text: its one-line reason and its full record, spelled one way.
    "conformkit._explain": {"describe_exception", "error_line", "record_line"},
    "conformkit._importing": {"ImportByNameError", "import_module_named"},
    "conformkit._exceptions": {"UsageError"},
    # `Coverage` is the type of a coverage entry, `suggest` the "did you mean" hint.
    "conformkit._feature": {"Coverage", "suggest"},
    "conformkit._util": set(_util.__all__),
    # The command line stops a run stuck beyond interruption, writing what it judged,
    # and ends without a thread the code under test left running.
    "conformkit._watchdog": {"Watch", "leave_threads_behind", "set_stuck_hook"},
}


class TestPublicNames:
    def test_all_is_sorted_and_complete(self) -> None:
        """__all__ is sorted (constants, classes, functions) and lists every public name."""

        def kind_then_name(name: str) -> tuple[int, str]:
            return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

        assert ck.__all__ == sorted(ck.__all__, key=kind_then_name)
        public = {name for name in dir(ck) if not name.startswith("_")} - {"annotations"}
        modules = {name for name in public if inspect.ismodule(getattr(ck, name))}
        assert public - modules == set(ck.__all__)

    def test_spec_names_are_exported(self) -> None:
        """Every name the specification fixes is importable from conformkit."""
        fixed = {
            "Feature", "FeatureImplementation", "FeatureScope", "Supported", "Unsupported",
            "FeatureUnavailable", "ContractSuite", "open_feature", "Session", "contract_cases",
            "ContractCase", "run_contract", "run_contract_sync", "assert_contract",
            "ContractReport", "CaseResult", "CaseStatus", "ContractFailure",
            "ContractDefinitionError",
        }  # fmt: skip
        assert fixed <= set(ck.__all__)

    def test_laws_are_sorted_and_claim_their_package(self) -> None:
        """conformkit.laws lists its names sorted and shows them as conformkit.laws.Name."""
        from conformkit import laws

        assert laws.__all__ == sorted(laws.__all__, key=lambda name: (name[0].islower(), name))
        for name in laws.__all__:
            value = getattr(laws, name)
            assert value.__module__ in ("conformkit", "conformkit.laws"), name

    def test_exports_claim_the_package_as_their_module(self) -> None:
        """Tracebacks and docs show conformkit.Name, never a private module."""
        for name in ck.__all__:
            value = getattr(ck, name)
            if hasattr(value, "__module__"):
                assert value.__module__ == "conformkit", name

    def test_exceptions_derive_from_the_fitting_standard_types(self) -> None:
        """Each exception is a ConformkitError and the standard type that fits it."""
        import unittest

        assert issubclass(ck.ContractFailure, AssertionError)
        assert issubclass(ck.LawViolation, AssertionError)
        assert issubclass(ck.SuiteAuditFailure, AssertionError)
        assert issubclass(ck.ContractDefinitionError, ValueError)
        assert issubclass(ck.CaseUnsupported, unittest.SkipTest)
        for exception in (
            ck.ContractFailure,
            ck.ContractDefinitionError,
            ck.CaseUnsupported,
            ck.FeatureUnavailable,
            ck.LawViolation,
            ck.SuiteAuditFailure,
        ):
            assert issubclass(exception, ck.ConformkitError)

    def test_core_imports_no_test_framework(self) -> None:
        """Importing conformkit in a fresh interpreter loads neither pytest nor hypothesis."""
        import subprocess
        import sys

        code = (
            "import sys, conformkit\n"
            "[getattr(conformkit, name) for name in conformkit.__all__]  # each on first use\n"
            "print(sorted(m for m in ('pytest', '_pytest', 'hypothesis') if m in sys.modules))"
        )
        output = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert output.stdout.strip() == "[]"


def _imported_names(path: Path, package: str = "conformkit.cli") -> list[tuple[str, str, int]]:
    """(module, name, line) for each name a module of ``package`` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found += [(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
    return found


class TestCommandLineBoundary:
    def test_the_cli_uses_only_names_meant_for_it(self) -> None:
        """conformkit.cli imports from the core its public API and the names meant for it."""
        public = set(ck.__all__)
        offences = []
        for path in sorted(CLI.glob("*.py")):
            for module, name, line in _imported_names(path):
                where = f"{path.name}:{line}: {module}"
                inside = module == "conformkit.cli" or module.startswith("conformkit.cli.")
                if inside or not module.startswith("conformkit"):
                    continue
                if not name:  # `import conformkit._runner` would reach around the rule
                    offences.append(f"{where}: import the names, not the module")
                elif name.startswith("_"):
                    offences.append(f"{where}: imports the private name {name}")
                elif module.split(".")[1].startswith("_") and name not in (
                    public | MEANT_FOR_THE_CLI.get(module, set())
                ):
                    offences.append(f"{where}: {name} is not meant for the command line")
        assert offences == []

    def test_the_pytest_plugin_uses_only_names_meant_for_it(self) -> None:
        """The plugin reaches the core as the command line does, collection included."""
        meant = {
            **MEANT_FOR_THE_CLI,
            "conformkit._runner": {"Backend", "check_backend"},
            "conformkit._testing": {"run_case"},
            # As the command line does, and shows the stack past pytest's capture.
            "conformkit._watchdog": {
                "Watch",
                "leave_threads_behind",
                "print_stuck",
                "set_stuck_hook",
            },
        }
        offences = []
        plugin = CORE / "pytest_plugin.py"
        for module, name, line in _imported_names(plugin, "conformkit"):
            private = any(part.startswith("_") for part in module.split(".")[1:])
            if module.startswith("conformkit") and private and name not in meant.get(module, ()):
                offences.append(f"pytest_plugin.py:{line}: {module}.{name}")
        assert offences == []

    def test_the_core_imports_nothing_of_the_command_line(self) -> None:
        """No module outside conformkit.cli imports it, lazily or for type checkers alone."""
        found: dict[str, list[str]] = {}
        for path in sorted(CORE.rglob("*.py")):
            if CLI in path.parents:
                continue
            package = ".".join(("conformkit", *path.parent.relative_to(CORE).parts))
            for module, name, line in _imported_names(path, package):
                imported = f"{module}.{name}" if module == "conformkit" and name else module
                if imported == "conformkit.cli" or imported.startswith("conformkit.cli."):
                    where = path.relative_to(CORE).as_posix()
                    found.setdefault(where, []).append(f"line {line}: {imported}")
        # `python -m conformkit` is the command line itself: seen, and the only one.
        assert list(found) == ["__main__.py"], found

    def test_the_rule_sees_relative_imports(self) -> None:
        """The check resolves `from .._runner import X` and `from . import _x` as Python does."""
        names = {(module, name) for module, name, _ in _imported_names(CLI / "_commands.py")}
        assert ("conformkit._runner", "Execution") in names
        assert ("conformkit.cli._console", "write") in names
        assert ("conformkit.profiles", "BUNDLED") in names


class TestFinal:
    def test_public_classes_are_final(self) -> None:
        """Every public class is @final, but the base of implementations and the exceptions."""
        meant_for_subclassing = {ck.FeatureImplementation}
        for namespace in (ck, laws):
            for name in namespace.__all__:
                value = getattr(namespace, name)
                if not inspect.isclass(value) or issubclass(value, BaseException):
                    continue
                if value not in meant_for_subclassing:
                    assert getattr(value, "__final__", False), f"{namespace.__name__}.{name}"
