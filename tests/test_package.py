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
    # The run's options, which the command line makes of its arguments.
    "conformkit._options": {"RunOptions"},
    "conformkit._report": {"Gate", "Offence"},
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


def _imported_names(
    path: Path, package: str = "conformkit.cli", *, typing: bool = True
) -> list[tuple[str, str, int]]:
    """
    (module, name, line) for each name a module of ``package`` imports, at module
    level or inside a function; with ``typing``, under ``if TYPE_CHECKING:`` too.
    """
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and not typing and "TYPE_CHECKING" in ast.unparse(node.test):
            children: list[ast.AST] = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found.extend((module, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "", node.lineno) for alias in node.names)
        for child in children:
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
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
            # `make_cases`: contract_cases() with the run's options made, as the plugin makes them.
            "conformkit._runner": {"Backend", "make_cases", "check_backend"},
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


REPORT_MODEL = {
    "conformkit.cli._matrix",
    "conformkit.cli._characters",
}
"""The report's model, and the text cleaning it applies: leaves of the command line."""


def _cli_imports(module: str, *, typing: bool) -> list[tuple[str, int]]:
    """(module, line) for each module of conformkit.cli that ``module`` imports."""
    found = []
    path = CLI / f"{module.rsplit('.', 1)[1]}.py"
    for imported, name, line in _imported_names(path, typing=typing):
        if imported == "conformkit.cli":  # `from . import _outcome`
            found.append((f"{imported}.{name}", line))
        elif imported.startswith("conformkit.cli."):
            found.append((imported, line))
    return sorted(set(found), key=lambda each: each[1])


class TestCommandLineImports:
    def test_the_report_model_imports_nothing_else_of_the_command_line(self) -> None:
        """The report's model imports no module of conformkit.cli but its own, even for types."""
        reached, offences = ["conformkit.cli._matrix"], []
        for module in reached:
            for imported, line in _cli_imports(module, typing=True):
                if imported not in REPORT_MODEL:
                    offences.append(f"{module}:{line}: imports {imported}")
                elif imported not in reached:
                    reached.append(imported)
        assert offences == []

    def test_the_command_line_has_no_import_cycle_at_run_time(self) -> None:
        """No module of conformkit.cli imports, even inside a function, one that imports it back."""
        modules = [f"conformkit.cli.{path.stem}" for path in sorted(CLI.glob("_*.py"))]
        imports = {
            module: {imported for imported, _ in _cli_imports(module, typing=False)}
            for module in modules
        }

        def reached(start: str) -> set[str]:
            seen: set[str] = set()
            stack = [start]
            while stack:
                for imported in imports.get(stack.pop(), ()):
                    if imported not in seen:
                        seen.add(imported)
                        stack.append(imported)
            return seen

        assert sorted(module for module in modules if module in reached(module)) == []


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


CORE = Path(ck.__file__).parent


def _watch_fields() -> set[str]:
    """The attributes of a watch: every slot of the watchdog's watch classes."""
    from conformkit import _watchdog

    return {
        name
        for klass in (_watchdog.Guard, _watchdog.Watch, _watchdog.TaskWatch)
        for base in klass.__mro__
        for name in getattr(base, "__slots__", ())
    }


def _written_attributes(node: ast.AST) -> list[ast.Attribute]:
    """The attributes an assignment, a deletion, a loop or a ``with ... as`` writes."""
    if isinstance(node, ast.Assign):
        targets: list[ast.expr] = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        targets = [node.target]
    elif isinstance(node, ast.withitem):
        targets = [node.optional_vars] if node.optional_vars is not None else []
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    else:
        return []
    written = []
    while targets:
        target = targets.pop()
        if isinstance(target, ast.Tuple | ast.List):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        elif isinstance(target, ast.Attribute):
            written.append(target)
    return written


# Writes of a field that a watch has too, to objects that are not watches.
NOT_WATCHES = {
    "_report.py": {"result.case_id"},  # a CaseResult being filled in, slot by slot
}


def _watch_writes(path: Path, fields: set[str]) -> list[str]:
    """
    Where a module writes a watch's field other than in a method of the watchdog's
    own watch classes: on another object than ``self``, or on ``self`` in a class
    that derives from a watch. ``setattr`` with a field's name counts too.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    own = {"Guard", "Watch", "TaskWatch"} if path.name == "_watchdog.py" else set()
    watches = {"Guard", "Watch", "TaskWatch"}
    offences = []

    def visit(node: ast.AST, klass: str | None, derived: bool) -> None:
        if isinstance(node, ast.ClassDef):
            bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
            derived_here = bool(bases & watches)
            if derived_here:
                watches.add(node.name)
            for child in node.body:
                visit(child, node.name, derived_here)
            return
        if klass in own:
            return  # the watch's own methods
        for attribute in _written_attributes(node):
            on_self = isinstance(attribute.value, ast.Name) and attribute.value.id == "self"
            if ast.unparse(attribute) in NOT_WATCHES.get(path.name, ()):
                continue
            if attribute.attr in fields and (derived or not on_self):
                offences.append(f"{path.name}:{attribute.lineno}: {ast.unparse(attribute)}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in fields
        ):
            offences.append(f"{path.name}:{node.lineno}: setattr(..., {node.args[1].value!r})")
        for inner in ast.iter_child_nodes(node):
            visit(inner, klass, derived)

    visit(tree, None, False)
    return offences


def _private_imports(path: Path, root: Path = CORE.parent) -> list[str]:
    """Where a module imports a private name of another conformkit module (not a module)."""
    # For an __init__.py the dotted name ends in ".__init__", so that a relative import's
    # level counts from the package itself.
    package = ".".join(path.relative_to(root).with_suffix("").parts)
    offences = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package.rsplit(".", node.level)[0] if node.level else ""
        module = ".".join(part for part in (base, node.module or "") if part)
        if not module.startswith("conformkit"):
            continue
        folder = root.joinpath(*module.split("."))
        for alias in node.names:
            name = alias.name
            is_module = (folder / f"{name}.py").exists() or (folder / name).is_dir()
            if name.startswith("_") and not name.startswith("__") and not is_module:
                offences.append(f"{path.relative_to(root)}:{node.lineno}: {module}.{name}")
    return offences


class TestCoreBoundaries:
    def test_only_the_watch_writes_its_fields(self) -> None:
        """Stages arm and disarm through the watch's methods: no other code writes its fields."""
        fields = _watch_fields()
        assert {"stuck_at", "stage", "due", "frame", "coroutine"} <= fields
        paths = sorted(CORE.rglob("*.py"))
        offences = [offence for path in paths for offence in _watch_writes(path, fields)]
        assert offences == []

    def test_the_watch_rule_sees_every_kind_of_write(self, tmp_path: Path) -> None:
        """Assignments, chains, tuples, augmented ones, ``with ... as``, setattr and subclasses."""
        sample = tmp_path / "sample.py"
        sample.write_text(
            "class Lane(Watch):\n"
            "    def arm(self):\n"
            "        self.stage = 'case'\n"
            "def run(lane, other):\n"
            "    lane.stuck_at = other.due = None\n"
            "    lane.frame, x = None, 1\n"
            "    lane.grace += 1\n"
            "    with open() as lane.coroutine: pass\n"
            "    setattr(lane, 'task', None)\n"
            "class Plan:\n"
            "    def __init__(self):\n"
            "        self.timeout = 1\n",
            encoding="utf-8",
        )
        assert len(_watch_writes(sample, _watch_fields())) == 7

    def test_no_core_module_imports_another_s_private_name(self) -> None:
        """The core's modules reach each other through names without an underscore."""
        core = [path for path in sorted(CORE.rglob("*.py")) if "cli" not in path.parts]
        assert [offence for path in core for offence in _private_imports(path)] == []

    def test_the_private_import_rule_resolves_relative_imports(self, tmp_path: Path) -> None:
        """``from ._x import _y`` counts; ``from . import _module`` and public names do not."""
        package = tmp_path / "conformkit"
        (package / "_inner").mkdir(parents=True)
        (package / "_other.py").write_text("", encoding="utf-8")
        (package / "_inner" / "_deep.py").write_text(
            "from .._other import _hidden, shown\n"
            "from . import _sibling\n"
            "from .. import _other\n"
            "from conformkit._other import _also\n",
            encoding="utf-8",
        )
        (package / "_inner" / "_sibling.py").write_text("", encoding="utf-8")
        (package / "_inner" / "__init__.py").write_text(
            "from . import _sibling\nfrom ._sibling import _hidden\n", encoding="utf-8"
        )
        assert _private_imports(package / "_inner" / "__init__.py", tmp_path) == [
            "conformkit/_inner/__init__.py:2: conformkit._inner._sibling._hidden",
        ]
        assert _private_imports(package / "_inner" / "_deep.py", tmp_path) == [
            "conformkit/_inner/_deep.py:1: conformkit._other._hidden",
            "conformkit/_inner/_deep.py:4: conformkit._other._also",
        ]
