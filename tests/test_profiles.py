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


class TestBundled:
    def test_every_profile_module_is_bundled(self) -> None:
        """BUNDLED names every profile module in the package, so the demo runs them all."""
        folder = Path(importlib.import_module("conformkit.profiles").__file__ or "").parent
        modules = sorted(path.stem for path in folder.glob("*.py") if not path.stem.startswith("_"))
        assert sorted(BUNDLED) == modules

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
        headers = re.findall(r"^# -{20,} (.+)$", inspect.getsource(module), flags=re.MULTILINE)
        assert headers == SECTIONS


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
        where = module._SEE.where
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
