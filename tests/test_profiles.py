"""The bundled profiles as a whole: every one registered, passing, and documented."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import conformkit as ck
import conformkit.profiles
from conformkit.profiles import BUNDLED

PAGE = Path(__file__).resolve().parent.parent / "docs" / "profiles.md"
PROFILES = [importlib.import_module(f"conformkit.profiles.{name}") for name in BUNDLED]
SECTIONS = [
    "API and errors",
    "case names",
    "feature and suite",
    "cases",
    "reference stores",
    "implementations",
]


def documented_cases(module: ModuleType) -> list[str]:
    """The case IDs listed in the profile's section of docs/profiles.md."""
    name = module.__name__.rpartition(".")[2]
    sections = re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    [section] = [text for text in sections if text.startswith(f"`{name}`")]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def layout_source(module: ModuleType) -> str:
    """
    A profile's source in layout order: the module's own, or for a package split by job,
    its private submodules in the order of their names (``_api``, ``_cases``, ``_reference``).
    """
    path = Path(module.__file__ or "")
    if path.name != "__init__.py":
        return inspect.getsource(module)
    parts = sorted(path.parent.glob("_*.py"))
    return "".join(part.read_text(encoding="utf-8") for part in parts if part != path)


def failure_page(module: ModuleType) -> str:
    """Where a profile's reasons point: its module's pointer, or its package's cases'."""
    if not hasattr(module, "_SEE"):
        module = importlib.import_module(f"{module.__name__}._cases")
    # Cases split over several modules share the pointer, spelt without an underscore.
    pointer = getattr(module, "_SEE", None) or module.SEE
    where: str = pointer.where
    return where


class TestBundled:
    def test_every_profile_module_is_bundled(self) -> None:
        """BUNDLED names every profile module in the package, so the demo runs them all."""
        folder = Path(importlib.import_module("conformkit.profiles").__file__ or "").parent
        modules = [path.stem for path in folder.glob("*.py")]
        packages = [path.parent.name for path in folder.glob("*/__init__.py")]
        public = sorted(name for name in modules + packages if not name.startswith("_"))
        assert sorted(BUNDLED) == public

    @pytest.mark.parametrize("module", PROFILES, ids=lambda module: module.__name__)
    def test_each_profile_has_the_common_shape(self, module: ModuleType) -> None:
        """Each profile exposes feature, suite and implementations of that feature."""
        assert isinstance(module.feature, ck.Feature)
        assert module.suite.feature is module.feature
        assert module.implementations
        for implementation in module.implementations:
            assert implementation.feature is module.feature

    @pytest.mark.parametrize("module", PROFILES, ids=lambda module: module.__name__)
    def test_the_page_lists_every_case_once_in_order(self, module: ModuleType) -> None:
        """docs/profiles.md has one line per case (one per family), in declared order."""
        expected = [
            *module.feature.cases,
            *(f"{family}[<field>]" for family in module.feature.families),
        ]
        assert documented_cases(module) == expected


class TestModules:
    """Each profile module, and the package, says what it exports and keeps one layout."""

    @pytest.mark.parametrize("module", PROFILES, ids=lambda module: module.__name__)
    def test_sections_come_in_the_common_order(self, module: ModuleType) -> None:
        """Every profile module has the same section headers, in the same order."""
        headers = re.findall(r"^# -{20,} (.+)$", layout_source(module), flags=re.MULTILINE)
        assert headers == SECTIONS

    @pytest.mark.parametrize("module", PROFILES, ids=lambda module: module.__name__)
    def test_exported_classes_claim_the_profile_as_their_module(self, module: ModuleType) -> None:
        """A profile's classes show as conformkit.profiles.<name>.Class, wherever defined."""
        classes = [getattr(module, name) for name in module.__all__]
        elsewhere = {
            cls.__qualname__: cls.__module__
            for cls in classes
            if isinstance(cls, type) and cls.__module__ != module.__name__
        }
        assert elsewhere == {}


ROOT = PAGE.parent.parent


def slug(heading: str) -> str:
    """The anchor MkDocs gives a heading: lower case, words joined by '-'."""
    words = re.sub(r"[^\w\s-]", "", heading.lower()).split()
    return "-".join(words)


class TestFailureModes:
    """Every failure points at a page section that explains it, and the section exists."""

    @pytest.mark.parametrize("module", PROFILES, ids=lambda module: module.__name__)
    def test_the_pointer_names_a_section_listing_every_case(self, module: ModuleType) -> None:
        """The page has the heading the reasons point at, and its table names every case."""
        where = failure_page(module)
        page, anchor = where.split("#")
        text = (ROOT / page).read_text(encoding="utf-8")
        sections = re.split(r"^#{2,3} ", text, flags=re.MULTILINE)
        [section] = [part for part in sections if slug(part.splitlines()[0]) == anchor]
        assert "| symptom | likely cause | case | fix |" in section
        named = set(re.findall(r"`([a-z_]+(?:\[<field>\])?)`", section))
        expected = {
            *module.feature.cases,
            *(f"{family}[<field>]" for family in module.feature.families),
        }
        assert expected <= named, sorted(expected - named)
