"""
The public surface: what every public module exports, under which module name, and which
exported classes stay open.

In the manner of trio's ``test_exports.py``: the modules are found by walking the
package, so a new public module is checked without being listed here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from typing import final

import pytest

import conformkit
import conformkit.laws


def _public_module_names() -> Iterator[str]:
    """``conformkit`` and every module under it whose dotted name has no private part."""
    yield conformkit.__name__
    for info in pkgutil.walk_packages(conformkit.__path__, f"{conformkit.__name__}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield info.name


def _is_submodule(module: types.ModuleType, value: object) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__.startswith(f"{module.__name__}.")


def _is_final(cls: type) -> bool:
    """Whether ``cls`` is marked ``@typing.final``, which sets ``__final__`` on it."""
    return cls.__dict__.get("__final__", False) is True


class TestAll:
    def test_the_walk_finds_the_public_modules(self) -> None:
        """The walk sees the known public modules and no private or __main__ module."""
        names = set(_public_module_names())
        assert {"conformkit", "conformkit.laws", "conformkit.cli", "conformkit.profiles"} <= names
        assert not any(name.rpartition(".")[2].startswith("_") for name in names)

    @pytest.mark.parametrize("name", list(_public_module_names()))
    def test_all_lists_exactly_the_public_names(self, name: str) -> None:
        """
        ``__all__`` exists, names only what the module has, and is exactly the public
        names the module defines or re-exports (``from ._x import Name as Name``): no
        imported helper such as ``os`` or ``Any`` is in it, and nothing defined is left out.
        """
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        assert isinstance(exported, list | tuple), f"{name} has no __all__"
        assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
        assert [entry for entry in exported if not hasattr(module, entry)] == []
        assert [entry for entry in exported if _is_submodule(module, getattr(module, entry))] == []
        public = {entry for entry in _own_names(module) if not entry.startswith("_")}
        assert sorted(public - set(exported)) == [], f"public in {name} but not in __all__"
        assert sorted(set(exported) - public) == [], f"in {name}.__all__ but not its own"


def _own_names(module: types.ModuleType) -> set[str]:
    """
    The names a module binds at its top level by ``def``, ``class`` or assignment,
    and those it re-exports by the explicit ``import x as x`` form (PEP 484), also
    under a top-level ``if`` such as ``if TYPE_CHECKING:``; less those it deletes
    again (``del TYPE_CHECKING``).
    """
    names: set[str] = set()
    deleted: set[str] = set()
    nodes = list(ast.parse(inspect.getsource(module)).body)
    for node in nodes:
        if isinstance(node, ast.If):  # ``if TYPE_CHECKING:`` and the like
            nodes.extend(node.body + node.orelse)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(
                target.id
                for each in targets
                for target in ast.walk(each)
                if isinstance(target, ast.Name)
            )
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names.update(alias.name for alias in node.names if alias.asname == alias.name)
        elif isinstance(node, ast.Delete):
            deleted.update(target.id for target in node.targets if isinstance(target, ast.Name))
    names.discard("__all__")
    return names - deleted


OPEN_TO_SUBCLASSING: dict[type, str] = {
    conformkit.FeatureImplementation: "the abstract base every implementation subclasses",
    conformkit.ConformkitError: "the base class of every conformkit exception",
    conformkit.FeatureUnavailable: "create() raises it, or a subclass naming the absent facility",
    conformkit.LawViolation: "a project's own laws raise it, or a subclass naming the law",
}
"""The exported classes meant to be subclassed, each with the reason; every other is @final."""

FINAL_CHECKED = (conformkit, conformkit.laws)
"""The modules whose exported classes must be ``@final`` unless listed above."""


class TestFinal:
    def test_the_check_tells_final_from_open(self) -> None:
        """The check sees @final on a class, and not on its base or on a plain class."""

        class Open:
            pass

        @final
        class Closed(Open):
            pass

        assert _is_final(Closed)
        assert not _is_final(Open)
        assert not _is_final(object)

    @pytest.mark.parametrize("module", FINAL_CHECKED, ids=lambda module: module.__name__)
    def test_exported_classes_are_final_unless_meant_to_be_subclassed(
        self, module: types.ModuleType
    ) -> None:
        """An exported class is @final unless it is on the list of classes open by design."""
        # getattr, not the module's __dict__: conformkit imports each name on first use.
        values = [getattr(module, name) for name in module.__all__]
        classes = [value for value in values if isinstance(value, type)]
        assert classes, f"{module.__name__} exports no class to check"
        left_open = [
            cls.__qualname__
            for cls in classes
            if cls not in OPEN_TO_SUBCLASSING and not _is_final(cls)
        ]
        assert left_open == [], f"mark these @final or list why they are open: {left_open}"

    def test_the_open_list_holds_only_open_exported_classes(self) -> None:
        """Each class kept open is exported, is not @final, and has its reason."""
        exported = {
            id(getattr(module, name)) for module in FINAL_CHECKED for name in module.__all__
        }
        for cls, reason in OPEN_TO_SUBCLASSING.items():
            assert id(cls) in exported, cls
            assert not _is_final(cls), f"{cls.__qualname__} is @final: remove it from the list"
            assert reason.strip(), cls


class TestModuleNames:
    def test_exports_name_a_public_module_however_they_were_first_reached(self) -> None:
        """
        Each export that conformkit defines shows a public module as its ``__module__``
        (``conformkit`` for the core's names), in a fresh interpreter that imports
        every private module first, before any public name is looked up: tracebacks,
        reprs and docs never show a private path.
        """
        code = """
            import importlib, pkgutil, conformkit
            walk = pkgutil.walk_packages(conformkit.__path__, "conformkit.")
            found = [info.name for info in walk]
            private = [n for n in found if any(p.startswith("_") for p in n.split(".")[1:])]
            for name in sorted(private):
                if not name.endswith(".__main__"):  # which would run the command line
                    importlib.import_module(name)
            for name in ["conformkit", *sorted(set(found) - set(private))]:
                module = importlib.import_module(name)
                for entry in module.__all__:
                    owner = getattr(getattr(module, entry), "__module__", None)
                    print(name, entry, repr(owner))
        """
        command = [sys.executable, "-c", textwrap.dedent(code)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        exports = {
            (name, entry): ast.literal_eval(owner)
            for name, entry, owner in (line.split(" ", 2) for line in done.stdout.splitlines())
        }
        # The core's names, DEFAULT_TIMEOUT included (a float of a type of conformkit's).
        core = {entry: owner for (name, entry), owner in exports.items() if name == "conformkit"}
        assert core == dict.fromkeys(conformkit.__all__, "conformkit")
        wrong = [
            f"{name}.{entry} shows {owner}"
            for (name, entry), owner in exports.items()
            if isinstance(owner, str)
            and owner.startswith("conformkit.")  # not typing's aliases, say
            and any(part.startswith("_") for part in owner.split("."))
        ]
        assert wrong == []
