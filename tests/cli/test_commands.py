"""
The command line, run as a user runs it: ``python -m conformkit`` in a subprocess,
for each command, each format and each exit status.

Subprocesses cost a few tenths of a second each, so the tests that need several
independent runs start them together (:func:`conformkit_many`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
import types
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import text_contract as example_contract
import xmlschema

import conformkit as ck
from conformkit import cli, profiles
from conformkit.cli import _commands
from conformkit.cli._markdown import markdown_text

TESTS = Path(__file__).resolve().parent
JUNIT_SCHEMA = TESTS / "junit.xsd"
BACKENDS = ("asyncio", "trio")

CONTRACTS = '''
"""Two features and their implementations, good and bad, for the command line's tests."""

from __future__ import annotations

import os
from typing import Protocol

import anyio
import anyio.lowlevel

import conformkit as ck


class Counter(Protocol):
    async def increment(self) -> int: ...
    async def value(self) -> int: ...


counter = ck.Feature[Counter](
    "tests.counter",
    cases=("starts_at_zero", "increments", "counts_twice", "survives_a_pause"),
    description="A counter that counts up from zero.",
    does_not_establish="Anything about concurrent increments.",
)
suite = ck.ContractSuite(counter)


@suite.case
async def starts_at_zero(api: Counter) -> None:
    value = await api.value()
    if value != 0:
        raise AssertionError(f"a new counter reads {value}")


@suite.case
async def increments(api: Counter) -> None:
    await api.increment()
    value = await api.value()
    if value != 1:
        raise AssertionError(f"incremented once, read back {value}")


@suite.case
async def counts_twice(api: Counter) -> None:
    await api.increment()
    await api.increment()
    value = await api.value()
    if value != 2:
        raise AssertionError(f"incremented twice, read back {value}")


@suite.case
async def survives_a_pause(api: Counter) -> None:
    await api.increment()
    await anyio.sleep(float(os.environ.get("PAUSE", "0")))
    value = await api.value()
    if value != 1:
        raise AssertionError(f"incremented once and paused, read back {value}")


class CounterAPI:
    def __init__(self, step: int = 1) -> None:
        self.count = 0
        self.step = step

    async def increment(self) -> int:
        self.count += self.step
        return self.count

    async def value(self) -> int:
        return self.count


class MemoryCounter(ck.FeatureImplementation[Counter]):
    feature = counter
    coverage = counter.coverage()

    def create(self, scope: ck.FeatureScope) -> Counter:
        return CounterAPI()


class FrozenCounter(ck.FeatureImplementation[Counter]):
    """Declares a gap, honestly."""

    feature = counter
    coverage = counter.coverage(unsupported={"survives_a_pause": "a frozen counter cannot wait"})

    async def create(self, scope: ck.FeatureScope) -> Counter:
        await anyio.lowlevel.checkpoint()
        return CounterAPI()


class DoubleCounter(ck.FeatureImplementation[Counter]):
    """Counts in twos, unless COUNTER_FIXED is set: a known bug for a baseline."""

    feature = counter
    coverage = counter.coverage()

    def create(self, scope: ck.FeatureScope) -> Counter:
        return CounterAPI(1 if os.environ.get("COUNTER_FIXED") else 2)


class Greeter(Protocol):
    def greet(self, language: str) -> str: ...


greeting = ck.Feature[Greeter](
    "tests.greeting",
    cases=("says_hello",),
    families={"language": ("en", "fr", "de")},
    description="Greets in a language.",
)
greeting_suite = ck.ContractSuite(greeting)

HELLO = {"en": "Hello", "fr": "Bonjour", "de": "Hallo"}


@greeting_suite.case
def says_hello(api: Greeter) -> None:
    assert api.greet("en") == "Hello"


@greeting_suite.family
def language(api: Greeter, language: str) -> None:
    greeting = api.greet(language)
    assert greeting == HELLO[language], f"greeted {greeting!r} in {language!r}"


class TableGreeter:
    def greet(self, language: str) -> str:
        return HELLO[language]


class PoliteGreeter(ck.FeatureImplementation[Greeter]):
    feature = greeting
    coverage = greeting.coverage()

    def create(self, scope: ck.FeatureScope) -> Greeter:
        return TableGreeter()


class EnglishGreeter(ck.FeatureImplementation[Greeter]):
    feature = greeting
    coverage = greeting.coverage()
    claims = {"language": ("en",)}

    def create(self, scope: ck.FeatureScope) -> Greeter:
        return TableGreeter()


class RemoteGreeter(ck.FeatureImplementation[Greeter]):
    feature = greeting
    coverage = greeting.coverage()

    def create(self, scope: ck.FeatureScope) -> Greeter:
        raise ck.FeatureUnavailable("no greeting server: set GREETER_URL")
'''

HOSTILE = '''
"""Strings that XML, terminals and encoders choke on, in reasons, messages and case IDs."""

from __future__ import annotations

import conformkit as ck

NASTY = (
    "bell\\x07 escape\\x1b[31m nul\\x00 cdata]]> <tag a=\\"1\\"> & 'quote' "
    "lone\\ud800 ffff\\uffff"
)
LONG = "long " * 20_000

hostile = ck.Feature[object]("tests.hostile", cases=("plain", "tag<&>\\"'", "bell\\x07", "long"))
suite = ck.ContractSuite(hostile)


@suite.case
def plain(api: object) -> None:
    if api == "hostile":
        raise AssertionError(NASTY)


@suite.case("tag<&>\\"'")
def cdata(api: object) -> None:
    if api == "hostile":
        raise ValueError("]]>]]]]><![CDATA[" + NASTY)


@suite.case("bell\\x07")
def bell(api: object) -> None:
    if api == "hostile":
        raise RuntimeError(NASTY.encode("utf-8", "surrogatepass").decode("latin-1"))


@suite.case
def long(api: object) -> None:
    if api == "hostile":
        raise AssertionError(LONG + NASTY)


class Quiet(ck.FeatureImplementation[object]):
    feature = hostile
    coverage = hostile.coverage(unsupported={"long": "too long for " + NASTY})

    def create(self, scope: ck.FeatureScope) -> object:
        return "quiet"


class Hostile(ck.FeatureImplementation[object]):
    feature = hostile
    coverage = hostile.coverage()

    def create(self, scope: ck.FeatureScope) -> object:
        def fail() -> None:
            raise OSError(NASTY)

        scope.defer(fail)
        return "hostile"


class Unreachable(ck.FeatureImplementation[object]):
    feature = hostile
    coverage = hostile.coverage()

    def create(self, scope: ck.FeatureScope) -> object:
        raise ck.FeatureUnavailable(NASTY)
'''

COUNTER_IMPLEMENTATIONS = ("MemoryCounter", "FrozenCounter", "DoubleCounter")
GREETING_IMPLEMENTATIONS = ("PoliteGreeter", "EnglishGreeter", "RemoteGreeter")


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The subprocess's environment: this one, less pytest's and colour settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYTEST_")
        and name not in ("NO_COLOR", "FORCE_COLOR", "COUNTER_FIXED", "PAUSE", "PYTHONPATH")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Command:
    """One run of ``python -m conformkit ARGS`` in ``cwd``."""

    args: Sequence[str]
    cwd: Path
    env: Mapping[str, str] | None = None


def conformkit_many(commands: Sequence[Command]) -> list[subprocess.CompletedProcess[str]]:
    """Run the commands at once; return their outcomes in order."""
    processes = [
        (
            command,
            subprocess.Popen(
                [sys.executable, "-m", "conformkit", *command.args],
                cwd=command.cwd,
                env=environment(command.env),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            ),
        )
        for command in commands
    ]
    done = []
    for _, process in processes:
        stdout, stderr = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return done


def conformkit(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m conformkit ARGS`` in ``cwd`` and wait for it."""
    [done] = conformkit_many([Command(args, cwd, env)])
    return done


def without_timings(report: Any) -> Any:
    """A JSON report without what differs between two runs of the same cases: times."""
    if isinstance(report, dict):
        data = {key: without_timings(value) for key, value in report.items() if key != "duration"}
        if "run" in data:
            data["run"] = {
                key: value
                for key, value in data["run"].items()
                if key not in ("started", "finished", "shard")
            }
        return data
    if isinstance(report, list):
        return [without_timings(item) for item in report]
    return report


def statuses(report: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """Each case's status, by (implementation, feature ID), from a JSON report."""
    return {
        (entry["implementation"], entry["feature_id"]): {
            result["case_id"]: result["status"] for result in entry["results"]
        }
        for entry in report["reports"]
    }


def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(JUNIT_SCHEMA))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding contracts.py and hostile.py, shared by the tests that only read it."""
    folder = tmp_path_factory.mktemp("workspace")
    (folder / "contracts.py").write_text(CONTRACTS, encoding="utf-8")
    (folder / "hostile.py").write_text(HOSTILE, encoding="utf-8")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder of one's own, holding contracts.py, for tests that write files."""
    (tmp_path / "contracts.py").write_text(CONTRACTS, encoding="utf-8")
    return tmp_path


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> list[subprocess.CompletedProcess[str]]:
    cwd = tmp_path_factory.mktemp("demo")
    return conformkit_many(
        [Command(["demo", "--backend", backend], cwd) for backend in BACKENDS]
        + [
            Command(["demo", "--format", "markdown"], cwd),
            Command(["demo", "--format", "html"], cwd),
            # A console that cannot show the marks: plain ASCII ones instead.
            Command(["demo"], cwd, {"PYTHONIOENCODING": "ascii", "LC_ALL": "C", "LANG": "C"}),
            Command(["demo", "--format", "json"], cwd),
        ]
    )


DEMO_MARKDOWN, DEMO_HTML, DEMO_ASCII = -4, -3, -2
LEGEND = "legend: ✓ passed  ✗ failed  – unsupported (-v says why)  ! unavailable"


def grid_blocks(text: str) -> dict[str, list[str]]:
    """The text's grids: each feature's lines, up to the blank line that ends its rows."""
    blocks: dict[str, list[str]] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines) and not lines[index].startswith("legend: "):
        feature = lines[index]
        end = lines.index("", lines.index("", index) + 1)
        blocks[feature] = lines[index + 1 : end]
        index = end + 1
    return blocks


class ForgetfulAPI(example_contract.MemoryTextAPI):
    async def write(self, key: str, value: str) -> None:
        pass  # forgets every write


class Forgetful(example_contract.MemoryText):
    def create(self, scope: ck.FeatureScope) -> example_contract.TextAPI:
        return ForgetfulAPI()


def bundle_example(
    monkeypatch: pytest.MonkeyPatch, implementations: tuple[object, ...]
) -> types.ModuleType:
    """Make the example contract the only bundled profile, with these implementations."""
    profile = types.ModuleType("conformkit.profiles.example_for_test")
    profile.suite = example_contract.suite  # type: ignore[attr-defined]
    profile.implementations = implementations  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, profile.__name__, profile)
    monkeypatch.setattr(profiles, "BUNDLED", ("example_for_test",))
    return profile


class TestDemo:
    """``conformkit demo``: the bundled profiles against the bundled implementations."""

    @pytest.mark.parametrize("index", range(len(BACKENDS)), ids=BACKENDS)
    def test_prints_a_grid_per_profile_and_holds(
        self, demo_runs: list[subprocess.CompletedProcess[str]], index: int
    ) -> None:
        """A grid per profile: its implementations numbered, its cases down, a mark each."""
        run = demo_runs[index]
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stderr == ""
        blocks = grid_blocks(run.stdout)
        modules = _commands.bundled_modules()
        assert list(blocks) == [module.suite.feature.id for module in modules]
        for module in modules:
            lines = blocks[module.suite.feature.id]
            names = [type(implementation).__qualname__ for implementation in module.implementations]
            key, rows = lines[: len(names)], lines[len(names) + 1 :]
            for number, (line, name) in enumerate(zip(key, names, strict=True), start=1):
                assert re.fullmatch(rf"  {number}  {name} +\d+ passed(, \d+ unsupported)?", line)
            numbers = "".join(f"{number:>3}" for number in range(1, len(names) + 1))
            assert re.fullmatch(rf"  case +{numbers}", rows[0]), rows[0]
            cases = module.suite.feature.cases
            assert len(rows) - 1 >= len(cases)  # families add their members
            seen = []
            for row in rows[1:]:
                case, *marks = row.split()
                seen.append(case)
                assert len(marks) == len(names), row
                assert set(marks) <= {"✓", "–"}, row
            assert len(set(seen)) == len(seen)
        lines = run.stdout.splitlines()
        assert LEGEND in lines
        assert lines[-2] == "verdict: every contract holds"
        assert lines[-1].startswith("next steps: 'conformkit list conformkit.profiles.mapping -v'")
        assert "docs/index.md" in lines[-1]
        # The unsupported cases' reasons are asked for with -v: no block repeats the grid.
        assert "UNSUPPORTED" not in run.stdout
        assert "cases that did not pass:" not in lines

    def test_the_grid_on_screen(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """One bundled example: its grid, the legend, a summary, the verdict, the next steps."""
        bundle_example(monkeypatch, example_contract.implementations)
        assert cli.main(["demo", "--backend", "trio"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[:12] == [
            "example.text",
            "  1  MemoryText      3 passed",
            "  2  AppendOnlyText  2 passed, 1 unsupported",
            "",
            "  case              1  2",
            "  missing           ✓  ✓",
            "  read_your_writes  ✓  ✓",
            "  delete            ✓  –",
            "",
            LEGEND,
            "",
            lines[11],
        ]
        assert lines[11].startswith("2 reports, 6 cases: 5 passed, 1 unsupported in ")
        assert lines[12:] == [
            "verdict: every contract holds",
            "next steps: 'conformkit list conformkit.profiles.example_for_test -v' shows a "
            "contract's cases and gaps; read docs/index.md (the terms: docs/glossary.md)",
        ]

    def test_verbose_gives_the_reasons(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """-v: after the grid, each unsupported case with its reason, under a heading."""
        bundle_example(monkeypatch, example_contract.implementations)
        assert cli.main(["demo", "-v"]) == 0
        lines = capsys.readouterr().out.splitlines()
        start = lines.index("cases that did not pass:")
        assert lines[start + 1].startswith("example.text × AppendOnlyText: 2 passed, 1 unsupported")
        assert lines[start + 2] == "  UNSUPPORTED delete: an append-only log cannot delete"
        assert lines[start + 3].startswith("2 reports, 6 cases")
        assert not any(line.lstrip().startswith("PASSED") for line in lines)
        assert cli.main(["demo", "-vv"]) == 0
        assert "  PASSED missing in " in capsys.readouterr().out

    def test_a_failure_shows_in_the_grid_and_below_it(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A failed case: ✗ in its cell, the report marked, its reason below; exit 1."""
        bundle_example(monkeypatch, (example_contract.MemoryText(), Forgetful()))
        assert cli.main(["demo"]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert lines[2] == "  2  Forgetful   2 passed, 1 failed (does not hold)"
        assert lines[5:8] == [
            "  missing           ✓  ✓",
            "  read_your_writes  ✓  ✗",
            "  delete            ✓  ✓",
        ]
        start = lines.index("cases that did not pass:")
        assert lines[start + 1].startswith("example.text × Forgetful: 2 passed, 1 failed in ")
        assert lines[start + 2] == (
            "  FAILED read_your_writes: case 'read_your_writes' failed: AssertionError: "
            "wrote 'value', read back None (at text_contract.py:45 in read_your_writes)"
        )
        assert lines[-2] == "verdict: FAILED (1 of 2 reports does not hold)"

    def test_plain_marks_where_the_console_cannot_show_them(
        self, demo_runs: list[subprocess.CompletedProcess[str]]
    ) -> None:
        """An ASCII console (LC_ALL=C, PYTHONIOENCODING=ascii): + X - ! marks, no crash."""
        run = demo_runs[DEMO_ASCII]
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""
        assert run.stdout.isascii()
        lines = run.stdout.splitlines()
        assert "legend: + passed  X failed  - unsupported (-v says why)  ! unavailable" in lines
        assert "  read_your_writes                    +  +  +" in lines
        assert "  stored_value_is_a_copy              -  +  +" in lines
        assert lines[-2] == "verdict: every contract holds"

    def test_markdown_has_a_table_per_profile(
        self, demo_runs: list[subprocess.CompletedProcess[str]]
    ) -> None:
        """--format markdown: each profile's table has its own implementations' columns only."""
        run = demo_runs[DEMO_MARKDOWN]
        assert run.returncode == 0, run.stderr
        text = run.stdout
        for module in _commands.bundled_modules():
            feature_id = module.suite.feature.id
            section = text.split(f"### {markdown_text(feature_id)}\n\n", 1)[1].split("\n\n", 1)[0]
            header, rule, totals, *rows = section.splitlines()
            names = [type(implementation).__qualname__ for implementation in module.implementations]
            assert header == "| case | " + " | ".join(names) + " |"
            assert rule == "|---" + "|:-:" * len(names) + "|"
            assert totals.startswith("| **all cases** | ")
            for row in rows:
                cells = row.strip("|").split(" | ")
                assert len(cells) == 1 + len(names), row
                assert set(cell.strip() for cell in cells[1:]) <= {"✓", "–"}, row
        assert "—" not in text  # no empty cell of another profile's
        assert "✓ passed · ✗ failed · – unsupported (reasons below) · \\! unavailable" in text

    def test_html_has_a_table_per_profile(
        self, demo_runs: list[subprocess.CompletedProcess[str]]
    ) -> None:
        """--format html: each profile's table has its own implementations' columns only."""
        run = demo_runs[DEMO_HTML]
        assert run.returncode == 0, run.stderr
        root = ET.fromstring(run.stdout.removeprefix("<!DOCTYPE html>"))
        tables = root.findall(".//table")
        modules = _commands.bundled_modules()
        assert len(tables) == len(modules)
        for table, module in zip(tables, modules, strict=True):
            heads = ["".join(th.itertext()) for th in table.findall("thead/tr/th")]
            names = [type(implementation).__qualname__ for implementation in module.implementations]
            assert heads == ["case", *names]
            for row in table.findall("tbody/tr"):
                assert len(row) == 1 + len(names)

    def test_writes_the_json_report(
        self, demo_runs: list[subprocess.CompletedProcess[str]]
    ) -> None:
        """`conformkit demo --format json` writes the report, one entry per pair."""
        run = demo_runs[-1]
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["verdict"] == "holds"
        modules = _commands.bundled_modules()
        assert len(report["reports"]) == sum(len(module.implementations) for module in modules)
        assert report["run"]["targets"] == [module.__name__ for module in modules]

    def test_runs_each_bundled_module(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The demo runs the modules BUNDLED names, each one's suite against its implementations."""
        profile = bundle_example(monkeypatch, example_contract.implementations[:1])
        assert _commands.bundled_modules() == [profile]

    def test_unknown_commands_are_usage_errors(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown command exits 2 with a one-line usage error."""
        with pytest.raises(SystemExit) as caught:
            cli.main(["frobnicate"])
        assert caught.value.code == 2
        error = capsys.readouterr().err
        assert "invalid choice: 'frobnicate'" in error
        assert len(error.splitlines()) == 1


@pytest.fixture(scope="module")
def run_outcomes(workspace: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    commands = {
        "file": ["run", "contracts.py", "--format", "json"],
        "trio": ["run", "contracts.py", "--format", "json", "--backend", "trio"],
        "object": ["run", "contracts.py:MemoryCounter", "contracts.py:PoliteGreeter"],
        "module": ["run", "contracts:MemoryCounter", "--require-full"],
        "suite": ["run", "contracts:greeting_suite", "-q"],
        "full": ["run", "contracts.py:FrozenCounter", "--require-full"],
        "gap": ["run", "contracts.py:FrozenCounter", "-v"],
        "select": ["run", "contracts.py", "-k", "language[", "-k", "zero", "--format", "json"],
        "concurrent": ["run", "contracts.py:MemoryCounter", "--concurrency", "4"],
    }
    done = conformkit_many([Command(args, workspace) for args in commands.values()])
    return dict(zip(commands, done, strict=True))


class TestRun:
    """``conformkit run``: collecting targets, running them, the exit status."""

    @pytest.mark.parametrize("name", ["file", "trio"])
    def test_runs_every_implementation_against_its_suite(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]], name: str
    ) -> None:
        """A file target runs each implementation against its feature's suite, on both backends."""
        run = run_outcomes[name]
        assert run.returncode == 1, run.stderr  # DoubleCounter fails, RemoteGreeter is unavailable
        report = json.loads(run.stdout)
        assert report["run"]["backend"] == ("trio" if name == "trio" else "asyncio")
        assert [(entry["implementation"], entry["feature_id"]) for entry in report["reports"]] == [
            *((name, "tests.counter") for name in COUNTER_IMPLEMENTATIONS),
            *((name, "tests.greeting") for name in GREETING_IMPLEMENTATIONS),
        ]
        found = statuses(report)
        assert found["MemoryCounter", "tests.counter"] == dict.fromkeys(
            ("starts_at_zero", "increments", "counts_twice", "survives_a_pause"), "passed"
        )
        assert found["FrozenCounter", "tests.counter"]["survives_a_pause"] == "unsupported"
        assert found["DoubleCounter", "tests.counter"] == {
            "starts_at_zero": "passed",
            "increments": "failed",
            "counts_twice": "failed",
            "survives_a_pause": "failed",
        }
        assert found["EnglishGreeter", "tests.greeting"] == {
            "says_hello": "passed",
            "language[en]": "passed",
        }
        assert set(found["RemoteGreeter", "tests.greeting"].values()) == {"unavailable"}
        holds = {entry["implementation"]: entry["holds"] for entry in report["reports"]}
        assert holds == {
            "MemoryCounter": True,
            "FrozenCounter": True,
            "DoubleCounter": False,
            "PoliteGreeter": True,
            "EnglishGreeter": True,
            "RemoteGreeter": False,
        }
        assert report["verdict"] == "fails"

    def test_an_object_target_runs_against_the_suite_beside_it(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """`file.py:Implementation` runs that implementation against the suite in its module."""
        run = run_outcomes["object"]
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert lines[0].startswith("tests.counter × MemoryCounter: 4 passed in ")
        assert lines[1].startswith("tests.greeting × PoliteGreeter: 4 passed in ")
        assert lines[2].startswith("2 reports, 8 cases: 8 passed in ")
        assert lines[3] == "verdict: every contract holds"

    def test_a_module_target_holds_with_require_full(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """A module:object target imports by name; all cases passing holds --require-full."""
        run = run_outcomes["module"]
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines()[-1] == "verdict: every contract holds"

    def test_a_suite_target_runs_the_implementations_beside_it(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """`module:suite` runs the implementations beside the suite; -q shows what fails."""
        run = run_outcomes["suite"]
        assert run.returncode == 1
        lines = run.stdout.splitlines()
        # Under -q, only RemoteGreeter: the implementations that hold are not shown.
        assert lines[0].startswith("tests.greeting × RemoteGreeter: 4 unavailable in ")
        assert [line.split(":")[0] for line in lines[1:5]] == [
            "  UNAVAILABLE says_hello",
            "  UNAVAILABLE language[en]",
            "  UNAVAILABLE language[fr]",
            "  UNAVAILABLE language[de]",
        ]
        assert lines[5:] == [
            "  NO CASE PASSED: a report that proves nothing cannot hold",
            "verdict: FAILED (1 of 3 reports does not hold)",
        ]

    def test_a_declared_gap_holds_unless_full_coverage_is_required(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """An unsupported case holds the gate, and fails it under --require-full."""
        gap, full = run_outcomes["gap"], run_outcomes["full"]
        assert gap.returncode == 0, gap.stderr
        assert "  UNSUPPORTED survives_a_pause: a frozen counter cannot wait" in gap.stdout
        assert "  PASSED starts_at_zero in " in gap.stdout  # -v shows passing cases
        assert full.returncode == 1, full.stderr
        assert (
            "  UNSUPPORTED (--require-full) survives_a_pause: a frozen counter cannot wait"
            in full.stdout
        )
        assert full.stdout.splitlines()[-1] == "verdict: FAILED (1 of 1 report does not hold)"

    def test_k_selects_cases_by_id(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """-k PATTERN runs only the cases whose ID contains a pattern; the rest are not run."""
        run = run_outcomes["select"]
        report = json.loads(run.stdout)
        assert report["run"]["select"] == ["language[", "zero"]
        found = statuses(report)
        assert found["MemoryCounter", "tests.counter"] == {"starts_at_zero": "passed"}
        assert found["PoliteGreeter", "tests.greeting"] == {
            "language[en]": "passed",
            "language[fr]": "passed",
            "language[de]": "passed",
        }
        assert run.returncode == 1  # RemoteGreeter's language[en] is still unavailable
        for entry in report["reports"]:
            assert len(entry["planned"]) > len(entry["results"])

    def test_concurrency_keeps_the_declared_order(
        self, run_outcomes: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """--concurrency N runs cases at once; the report keeps the feature's order."""
        run = run_outcomes["concurrent"]
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("tests.counter × MemoryCounter: 4 passed in ")

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_timeout_fails_a_slow_case(self, workspace: Path, backend: str) -> None:
        """--timeout SECONDS bounds each stage; an overrun fails the case, naming the stage."""
        run = conformkit(
            "run",
            "contracts.py:MemoryCounter",
            "--timeout",
            "1",  # waited out; its grace of 1 s lets a loaded machine end the cancelled case
            "--backend",
            backend,
            cwd=workspace,
            env={"PAUSE": "5"},
        )
        assert run.returncode == 1, run.stderr
        assert (
            "  FAILED survives_a_pause: feature 'tests.counter', case 'survives_a_pause': "
            "stage 'case' exceeded the 1s deadline"
        ) in run.stdout


@pytest.fixture(scope="module")
def format_outputs(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, subprocess.CompletedProcess[str]]]:
    folder = tmp_path_factory.mktemp("outputs")
    to_files = [
        "run",
        str(workspace / "contracts.py"),
        "--format", "junit", "--output", str(folder / "report.xml"),
        "--format", "json", "--output", str(folder / "report.json"),
        "--format", "markdown", "--output", str(folder / "report.md"),
        "--format", "html", "-o", str(folder / "report.html"),
        "--output", str(folder / "report.txt"),
    ]  # fmt: skip
    commands = {"files": to_files}
    for format in ("text", "json", "junit", "markdown", "html"):
        commands[format] = ["run", "contracts.py", "--format", format]
    done = conformkit_many([Command(args, workspace) for args in commands.values()])
    return folder, dict(zip(commands, done, strict=True))


class TestFormats:
    """--format and --output: every format, to stdout and to files, from one run."""

    def test_files_match_what_stdout_shows(
        self, format_outputs: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
    ) -> None:
        """Each --format writes its --output; with every format in files, stdout gets the text."""
        folder, runs = format_outputs
        run = runs["files"]
        assert run.returncode == 1, run.stderr
        assert run.stdout.splitlines()[-1].startswith("verdict: FAILED")
        assert sorted(path.name for path in folder.iterdir()) == [
            "report.html",
            "report.json",
            "report.md",
            "report.txt",
            "report.xml",
        ]
        assert json.loads((folder / "report.json").read_text("utf-8"))["verdict"] == "fails"
        assert (folder / "report.txt").read_text("utf-8").splitlines()[-1] == (
            run.stdout.splitlines()[-1]
        )
        for format, suffix in (("markdown", "md"), ("html", "html")):
            written = (folder / f"report.{suffix}").read_text("utf-8")
            assert _without_times(written) == _without_times(runs[format].stdout)

    def test_text_lists_each_pair_and_each_case_that_did_not_pass(
        self, format_outputs: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
    ) -> None:
        """text: a line per pair with counts, a line per case that did not pass, the verdict."""
        run = format_outputs[1]["text"]
        assert run.returncode == 1
        lines = run.stdout.splitlines()
        assert "\x1b[" not in run.stdout  # no colour when stdout is not a terminal
        assert re.fullmatch(
            r"tests\.counter × DoubleCounter: 1 passed, 3 failed in \d+\.\d\ds \(does not hold\)",
            lines[3],
        )
        assert re.fullmatch(
            r"  FAILED increments: case 'increments' failed: AssertionError: "
            r"incremented once, read back 2 \(at contracts\.py:\d+ in increments\)",
            lines[4],
        )
        assert re.fullmatch(
            r"6 reports, 22 cases: 14 passed, 3 failed, 1 unsupported, 4 unavailable "
            r"in \d+\.\d\ds",
            lines[-2],
        )
        assert lines[-1] == "verdict: FAILED (2 of 6 reports do not hold)"

    def test_json_follows_the_documented_schema(
        self, format_outputs: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
    ) -> None:
        """json: the keys of docs/report-format.md, in their documented order."""
        report = json.loads(format_outputs[1]["json"].stdout)
        assert list(report) == [
            "format",
            "version",
            "verdict",
            "run",
            "counts",
            "reports",
            "baseline",
        ]
        assert (report["format"], report["version"]) == ("conformkit.report", 1)
        assert list(report["run"]) == [
            "conformkit", "python", "platform", "backend", "started", "finished",
            "targets", "installed", "require_full", "select", "shard", "stopped",
            "reject_stale", "require_exercised", "reject_vacuous", "probe_unsupported",
        ]  # fmt: skip
        entry = report["reports"][2]
        assert list(entry) == [
            "feature_id", "implementation", "module", "distribution", "holds", "counts",
            "duration", "planned", "results", "cleanup_errors", "unexercised",
        ]  # fmt: skip
        assert (entry["implementation"], entry["module"], entry["distribution"]) == (
            "DoubleCounter",
            "contracts",
            None,
        )
        result = entry["results"][1]
        assert list(result) == [
            "case_id", "status", "reason", "duration", "error", "cleanup_errors", "baseline",
            "stale", "slow",
        ]  # fmt: skip
        assert (result["stale"], entry["unexercised"]) == (False, None)  # nothing was probed
        assert result["slow"] is False  # it did not overrun the default deadline
        assert result["error"]["type"] == "AssertionError"
        assert result["error"]["message"] == "incremented once, read back 2"
        assert report["counts"] == {"passed": 14, "failed": 3, "unsupported": 1, "unavailable": 4}
        assert report["baseline"] is None

    def test_junit_is_valid_and_maps_each_status(
        self, format_outputs: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
    ) -> None:
        """junit: a suite per pair; unsupported skips, failed fails, unavailable errs."""
        text = format_outputs[1]["junit"].stdout
        junit_schema().validate(text)
        root = ET.fromstring(text)
        suites = {suite.get("name"): suite for suite in root}
        double = suites["tests.counter × DoubleCounter"]
        assert (double.get("tests"), double.get("failures"), double.get("errors")) == (
            "4",
            "3",
            "0",
        )
        [failure] = double.findall("testcase[@name='increments']/failure")
        assert failure.get("type") == "AssertionError"
        assert "Traceback" in (failure.text or "")
        [skipped] = suites["tests.counter × FrozenCounter"].findall("testcase/skipped")
        assert skipped.get("message") == "a frozen counter cannot wait"
        remote = suites["tests.greeting × RemoteGreeter"]
        assert len(remote.findall("testcase/error")) == 4
        assert remote.findall("testcase[@name='(gate)']/failure")  # no case passed
        assert root.get("tests") == str(sum(int(suite.get("tests", "0")) for suite in root))

    def test_markdown_is_the_matrix(
        self, format_outputs: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
    ) -> None:
        """markdown: a table per feature, its cases down, its own implementations across."""
        text = format_outputs[1]["markdown"].stdout
        lines = text.splitlines()
        assert lines[0] == "## ❌ conformkit: FAILED (2 of 6 reports do not hold)"
        start = lines.index("### tests.counter")
        assert lines[start + 2 : start + 9] == [
            "| case | MemoryCounter | FrozenCounter | DoubleCounter |",
            "|---|:-:|:-:|:-:|",
            "| **all cases** | 🟢 4 passed | 🟡 3 passed, 1 unsupported | 🔴 1 passed, 3 failed |",
            "| starts\\_at\\_zero | ✓ | ✓ | ✓ |",
            "| increments | ✓ | ✓ | ✗ |",
            "| counts\\_twice | ✓ | ✓ | ✗ |",
            "| survives\\_a\\_pause | ✓ | – | ✗ |",
        ]
        greetings = lines.index("### tests.greeting")
        header = "| case | " + " | ".join(GREETING_IMPLEMENTATIONS) + " |"
        assert lines[greetings + 2] == header
        assert "—" not in text  # no cell for a feature an implementation does not have
        assert "### tests.counter × DoubleCounter" in lines

    def test_html_is_one_self_contained_page(
        self, format_outputs: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
    ) -> None:
        """html: well-formed, no script or external asset, a table per feature, cells that open."""
        text = format_outputs[1]["html"].stdout
        assert text.startswith("<!DOCTYPE html>")
        root = ET.fromstring(text.removeprefix("<!DOCTYPE html>"))
        assert not root.findall(".//script")
        assert not root.findall(".//link")
        assert not re.search(r"(src|href)=", text)
        counters, greetings = root.findall(".//table")
        heads = ["".join(th.itertext()) for th in counters.findall("thead/tr/th")]
        assert heads == ["case", *COUNTER_IMPLEMENTATIONS]
        heads = ["".join(th.itertext()) for th in greetings.findall("thead/tr/th")]
        assert heads == ["case", *GREETING_IMPLEMENTATIONS]
        totals, *rows = counters.findall("tbody/tr")
        double = totals.findall("td")[heads.index("PoliteGreeter") + 1]  # the third column
        assert double.get("class") == "fails"
        assert double.text == "1 passed, 3 failed"
        marks = {
            row.findtext("th/code"): [(td.get("class"), "".join(td.itertext())) for td in row[1:]]
            for row in rows
        }
        assert marks["starts_at_zero"] == [("mark passed", "✓")] * 3
        assert marks["increments"][2][0] == "mark failed"
        assert marks["survives_a_pause"][1] == (
            "mark gap",
            "–survives_a_pause unsupported: a frozen counter cannot wait",
        )
        failed = rows[1].findall("td")[2]
        details = failed.find("details")
        assert details is not None
        assert details.get("open") is None  # a reason is there when asked for
        assert details.findtext("summary") == "✗"
        [item] = details.findall("ul/li")
        assert (item.findtext("code"), item.get("class")) == ("increments", "failed")
        # EnglishGreeter claims one language of three: the other two are not its cases.
        greeters = {
            row.findtext("th/code"): [td.get("class") for td in row[1:]]
            for row in greetings.findall("tbody/tr")[1:]
        }
        assert greeters["language[fr]"] == ["mark passed", "mark none", "mark error"]
        assert greeters["language[en]"] == ["mark passed", "mark passed", "mark error"]
        # Every case that did not pass, and RemoteGreeter's "no case passed", listed below.
        below = root.findall(".//body/ul/li")
        assert len(below) == 22 - 14 + 1
        assert any("no case passed" in "".join(item.itertext()).lower() for item in below)


def _without_times(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00", "TIME", text)
    return re.sub(r"\d+\.\d+s", "0s", text)


@pytest.fixture(scope="module")
def hostile_runs(workspace: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    formats = ("text", "json", "junit", "markdown", "html")
    done = conformkit_many(
        [Command(["run", "hostile.py", "--format", format], workspace) for format in formats]
    )
    return dict(zip(formats, done, strict=True))


class TestHostileStrings:
    """Control characters, ``]]>``, lone surrogates and huge messages, in every format."""

    def test_junit_stays_valid(
        self, hostile_runs: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """The JUnit XML is valid against the schema, whatever the reasons and case IDs hold."""
        run = hostile_runs["junit"]
        assert run.returncode == 1, run.stderr
        junit_schema().validate(run.stdout)
        root = ET.fromstring(run.stdout)
        names = [case.get("name") for case in root.iter("testcase")]
        assert "tag<&>\"'" in names
        assert "bell\\x07" in names
        for element in root.iter():
            for value in [element.text or "", *element.attrib.values()]:
                assert "\x1b" not in value
                assert "\x00" not in value
                assert len(value) <= 100_200
            if element.tag in ("failure", "error", "skipped") and "message" in element.attrib:
                assert len(element.get("message", "")) <= 1000
        hostile = [suite for suite in root if suite.get("name") == "tests.hostile × Hostile"]
        assert [len(suite.findall("testcase/failure")) for suite in hostile] == [5]
        assert hostile[0].findall("testcase[@name='(gate)']/failure")  # no case passed
        [long] = [case for case in hostile[0] if case.get("name") == "long"]
        assert "more characters cut" in (long.findtext("failure") or "")
        unreachable = [s for s in root if s.get("name") == "tests.hostile × Unreachable"]
        assert len(unreachable[0].findall("testcase/error")) == 4
        assert "cdata]]&gt;" in run.stdout
        assert "]]>" not in run.stdout

    def test_other_formats_stay_readable(
        self, hostile_runs: dict[str, subprocess.CompletedProcess[str]]
    ) -> None:
        """Text, Markdown and HTML show control characters as escapes; JSON keeps them escaped."""
        for format in ("text", "markdown", "html"):
            out = hostile_runs[format].stdout
            assert hostile_runs[format].returncode == 1, hostile_runs[format].stderr
            for control in ("\x1b", "\x00", "\x07"):
                assert control not in out, format
            assert "\\x1b" in out, format
        ET.fromstring(hostile_runs["html"].stdout.removeprefix("<!DOCTYPE html>"))
        report = json.loads(hostile_runs["json"].stdout)
        [hostile] = [entry for entry in report["reports"] if entry["implementation"] == "Hostile"]
        assert "\x1b[31m" in hostile["results"][0]["error"]["message"]
        assert "\ufffd" in hostile["results"][0]["error"]["message"]  # the lone surrogate
        assert hostile["results"][0]["cleanup_errors"][0]["type"] == "OSError"


class TestInstalled:
    """--installed: what distributions publish under the entry-point group conformkit.contracts."""

    @staticmethod
    def distribution(site: Path, name: str, version: str, entry_points: str) -> None:
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
        )
        (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")

    def test_reports_name_the_distribution(self, tmp_path: Path) -> None:
        """An installed plugin's implementations run; the report names its distribution, version."""
        site = tmp_path / "site"
        (site / "fakeplugin").mkdir(parents=True)
        (site / "fakeplugin" / "__init__.py").write_text("", encoding="utf-8")
        (site / "fakeplugin" / "contracts.py").write_text(CONTRACTS, encoding="utf-8")
        self.distribution(
            site,
            "fakeplugin",
            "1.2.3",
            "[conformkit.contracts]\ncounters = fakeplugin.contracts:MemoryCounter\n",
        )
        env = {"PYTHONPATH": str(site)}
        json_run, list_run = conformkit_many(
            [
                Command(["run", "--installed", "--format", "json"], tmp_path, env),
                Command(["list", "--installed"], tmp_path, env),
            ]
        )
        assert json_run.returncode == 0, json_run.stderr
        [entry] = json.loads(json_run.stdout)["reports"]
        assert entry["implementation"] == "MemoryCounter"
        assert entry["module"] == "fakeplugin.contracts"
        assert entry["distribution"] == {"name": "fakeplugin", "version": "1.2.3"}
        assert json.loads(json_run.stdout)["run"]["installed"] is True
        assert list_run.returncode == 0, list_run.stderr
        assert (
            "  MemoryCounter (fakeplugin.contracts, from fakeplugin 1.2.3): 4 of 4 cases supported"
            in list_run.stdout.splitlines()
        )

    def test_a_broken_entry_point_is_a_usage_error(self, tmp_path: Path) -> None:
        """An entry point that cannot load exits 2, naming it and its distribution."""
        site = tmp_path / "site"
        site.mkdir()
        self.distribution(
            site, "brokenplugin", "0.1", "[conformkit.contracts]\nbroken = brokenplugin.gone\n"
        )
        run = conformkit("run", "--installed", cwd=tmp_path, env={"PYTHONPATH": str(site)})
        assert run.returncode == 2
        assert run.stderr.splitlines() == [
            "conformkit: error: entry point 'broken' (brokenplugin.gone) of brokenplugin 0.1 "
            "cannot be loaded: ModuleNotFoundError: No module named 'brokenplugin' "
            "(--debug shows the traceback)"
        ]

    def test_no_entry_points_is_a_usage_error(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--installed with nothing installed in the group exits 2 and says so."""
        import importlib.metadata

        monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
        assert cli.main(["run", "--installed"]) == 2
        assert capsys.readouterr().err == (
            "conformkit: error: --installed: no installed distribution publishes entry points "
            "in the group 'conformkit.contracts' (--debug shows the traceback)\n"
        )


@pytest.fixture(scope="module")
def list_runs(workspace: Path) -> list[subprocess.CompletedProcess[str]]:
    return conformkit_many(
        [
            Command(["list", "contracts.py"], workspace, {"PAUSE": "60"}),
            Command(["list", "contracts.py", "--format", "json"], workspace),
            Command(["list", "contracts.py", "--shard", "2/3", "-k", "language"], workspace),
        ]
    )


class TestList:
    """``conformkit list``: features, cases, implementations and coverage; nothing runs."""

    def test_text(self, list_runs: list[subprocess.CompletedProcess[str]]) -> None:
        """Each feature with its cases, each implementation with its coverage and gaps."""
        run = list_runs[0]
        assert run.returncode == 0, run.stderr  # nothing ran: PAUSE=60 would have shown
        lines = run.stdout.splitlines()
        assert lines[:7] == [
            "tests.counter: A counter that counts up from zero.",
            "  does not establish: Anything about concurrent increments.",
            "  cases: starts_at_zero, increments, counts_twice, survives_a_pause",
            "  MemoryCounter (contracts): 4 of 4 cases supported",
            "  FrozenCounter (contracts): 3 of 4 cases supported",
            "    unsupported survives_a_pause: a frozen counter cannot wait",
            "  DoubleCounter (contracts): 4 of 4 cases supported",
        ]
        assert "  family language: en, fr, de" in lines
        assert "  EnglishGreeter (contracts): 2 of 2 cases supported" in lines
        assert lines[-1] == "2 features, 6 implementations, 22 cases"

    def test_json(self, list_runs: list[subprocess.CompletedProcess[str]]) -> None:
        """--format json: the same, as data."""
        listing = json.loads(list_runs[1].stdout)
        assert listing["format"] == "conformkit.list"
        [counter, greeting] = listing["features"]
        assert greeting["families"] == {"language": ["en", "fr", "de"]}
        frozen = counter["implementations"][1]
        assert frozen["implementation"] == "FrozenCounter"
        assert frozen["cases"][3] == {
            "case_id": "survives_a_pause",
            "coverage": "unsupported",
            "reason": "a frozen counter cannot wait",
            "selected": True,
        }

    def test_shows_what_a_shard_would_run(
        self, list_runs: list[subprocess.CompletedProcess[str]]
    ) -> None:
        """With -k and --shard, list shows the cases a job would run."""
        run = list_runs[2]
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines()[-1] == "2 features, 6 implementations, 2 cases selected"


class TestShardsAndMerge:
    """--shard K/N partitions the cases; merge recombines the shards' reports."""

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_merged_shards_equal_the_unsharded_run(self, project: Path, backend: str) -> None:
        """N jobs run each (implementation, case) pair once; their merge is the unsharded report."""
        shards = 3
        commands = [
            Command(["run", "contracts.py", "--backend", backend, "-o", "full.json", "-q"], project)
        ] + [
            Command(
                [
                    *("run", "contracts.py", "--backend", backend, "--shard", f"{k}/{shards}"),
                    *("--format", "json", "--output", f"shard-{k}.json", "-q"),
                ],
                project,
            )
            for k in range(1, shards + 1)
        ]
        for run in conformkit_many(commands):
            assert run.returncode == 1, run.stderr  # every job sees a failing case
        full = json.loads((project / "full.json").read_text("utf-8"))
        parts = [json.loads((project / f"shard-{k}.json").read_text("utf-8")) for k in (1, 2, 3)]
        seen: list[tuple[str, str, str]] = []
        for part in parts:
            cases = [
                (entry["implementation"], entry["feature_id"], result["case_id"])
                for entry in part["reports"]
                for result in entry["results"]
            ]
            assert 7 <= len(cases) <= 8  # 22 cases dealt out to 3 jobs
            seen += cases
        assert len(seen) == len(set(seen)) == 22
        merge = conformkit(
            "merge", "shard-3.json", "shard-1.json", "shard-2.json", "-o", "merged.json", "-q",
            cwd=project,
        )  # fmt: skip
        assert merge.returncode == 1, merge.stderr
        assert merge.stdout.splitlines()[-1] == "verdict: FAILED (2 of 6 reports do not hold)"
        merged = json.loads((project / "merged.json").read_text("utf-8"))
        assert merged["run"]["shard"] is None
        assert without_timings(merged) == without_timings(full)

    def test_merge_renders_any_format_and_rejects_bad_sets(self, project: Path) -> None:
        """merge writes every format; a missing shard, an overlap or a non-report exits 2."""
        prepare = conformkit_many(
            [
                Command(["run", "contracts.py", "--shard", f"{k}/2", "-o", f"{k}.json"], project)
                for k in (1, 2)
            ]
        )
        assert [run.returncode for run in prepare] == [1, 1]
        (project / "not-a-report.json").write_text('{"hello": 1}', encoding="utf-8")
        markdown, missing, overlap, junk = conformkit_many(
            [
                Command(["merge", "1.json", "2.json", "--format", "markdown"], project),
                Command(["merge", "1.json"], project),
                Command(["merge", "1.json", "2.json", "1.json"], project),
                Command(["merge", "1.json", "not-a-report.json"], project),
            ]
        )
        assert markdown.returncode == 1
        assert markdown.stdout.startswith("## ❌ conformkit: FAILED (2 of 6 reports do not hold)")
        for run in (missing, overlap, junk):
            assert run.returncode == 2
            assert len(run.stderr.splitlines()) == 1, run.stderr
            assert "Traceback" not in run.stderr
        assert "merge the reports of every shard (found shard(s) 1/2)" in missing.stderr
        assert "the reports overlap" in overlap.stderr
        assert "not-a-report.json is not a conformkit report" in junk.stderr

    def test_a_shard_with_only_unsupported_cases_holds(self, project: Path) -> None:
        """A shard cannot judge "no case passed": only the merged report can."""
        (project / "gaps.py").write_text(
            textwrap.dedent(
                """
                import conformkit as ck

                gaps = ck.Feature[object]("tests.gaps", cases=("a", "b"))
                suite = ck.ContractSuite(gaps, {"a": lambda api: None, "b": lambda api: None})


                class Gappy(ck.FeatureImplementation[object]):
                    feature = gaps
                    coverage = gaps.coverage(unsupported={"b": "not yet"})

                    def create(self, scope: ck.FeatureScope) -> object:
                        return object()
                """
            ),
            encoding="utf-8",
        )
        first, second = conformkit_many(
            [
                Command(["run", "gaps.py", "--shard", f"{k}/2", "-o", f"gaps-{k}.json"], project)
                for k in (1, 2)
            ]
        )
        assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
        merged = conformkit("merge", "gaps-1.json", "gaps-2.json", cwd=project)
        assert merged.returncode == 0, merged.stderr
        assert merged.stdout.startswith("tests.gaps × Gappy: 1 passed, 1 unsupported in ")

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_case_raising_its_own_cancellation_is_failed_at_any_concurrency(
        self, project: Path, backend: str
    ) -> None:
        """The case that raised CancelledError is reported failed; it never vanishes."""
        (project / "case_cancelled.py").write_text(
            textwrap.dedent(
                """
                import anyio
                import conformkit as ck

                stray = ck.Feature[object]("tests.stray", cases=("a", "cancelled", "c"))


                async def cancelled(api: object) -> None:
                    with anyio.CancelScope() as scope:
                        scope.cancel()
                        try:
                            await anyio.sleep_forever()
                        except anyio.get_cancelled_exc_class() as exc:
                            stale = exc
                            raise
                    raise stale


                suite = ck.ContractSuite(
                    stray, {"a": lambda api: None, "cancelled": cancelled, "c": lambda api: None}
                )


                class Stray(ck.FeatureImplementation[object]):
                    feature = stray
                    coverage = stray.coverage()

                    def create(self, scope: ck.FeatureScope) -> object:
                        return object()
                """
            ),
            encoding="utf-8",
        )
        runs = conformkit_many(
            [
                Command(
                    ["run", "case_cancelled.py", "--backend", backend, "--concurrency", str(n)],
                    project,
                )
                for n in (1, 2, 8)
            ]
        )
        for run in runs:
            assert run.returncode == 1, run.stdout + run.stderr
            assert "tests.stray × Stray: 2 passed, 1 failed" in run.stdout, run.stdout
            assert "raised with no cancellation under way" in run.stdout


class TestBaseline:
    """--baseline and --update-baseline: known gaps that can only shrink."""

    def test_round_trip(self, project: Path) -> None:
        """Update writes the failures, which then hold; a fix passes unexpectedly, then goes."""
        created = conformkit(
            "run", "contracts.py", "--baseline", "known.toml", "--update-baseline", cwd=project
        )
        assert created.returncode == 0, created.stdout + created.stderr
        assert created.stderr == "conformkit: baseline known.toml: 0 kept, 7 added, 0 removed\n"
        data = tomllib.loads((project / "known.toml").read_text("utf-8"))
        assert data["version"] == 1
        assert sorted(data["implementations"]) == ["DoubleCounter", "RemoteGreeter"]
        assert list(data["implementations"]["DoubleCounter"]["tests.counter"]) == [
            "increments",
            "counts_twice",
            "survives_a_pause",
        ]
        # A person explains one entry, and the explanation must survive updates.
        text = (project / "known.toml").read_text("utf-8")
        text = re.sub(
            r'(?m)^"language\[fr\]" = .*$', '"language[fr]" = "needs a server, #12"', text
        )
        (project / "known.toml").write_text(text, encoding="utf-8")

        held, fixed = conformkit_many(
            [
                Command(
                    ["run", "contracts.py", "--baseline", "known.toml", "-o", "a.json"], project
                ),
                Command(
                    ["run", "contracts.py", "--baseline", "known.toml", "-o", "b.json"],
                    project,
                    {"COUNTER_FIXED": "1"},
                ),
            ]
        )
        assert held.returncode == 0, held.stdout
        assert "  FAILED increments (known: case 'increments' failed: " in held.stdout
        assert held.stdout.splitlines()[-1] == "verdict: every contract holds"
        report = json.loads((project / "a.json").read_text("utf-8"))
        [remote] = [
            entry for entry in report["reports"] if entry["implementation"] == "RemoteGreeter"
        ]
        assert remote["results"][2]["baseline"] == {
            "outcome": "known",
            "reason": "needs a server, #12",
        }
        assert report["baseline"] == {"path": "known.toml", "stale": []}

        assert fixed.returncode == 1
        assert (
            "  UNEXPECTED PASS increments: the baseline lists it as failing (case 'increments' "
            "failed: AssertionError: incremented once, read back 2"
        ) in fixed.stdout
        assert fixed.stdout.splitlines()[-1] == "verdict: FAILED (1 of 6 reports does not hold)"
        report = json.loads((project / "b.json").read_text("utf-8"))
        [double] = [
            entry for entry in report["reports"] if entry["implementation"] == "DoubleCounter"
        ]
        assert double["results"][1]["baseline"]["outcome"] == "unexpected-pass"

        updated = conformkit(
            "run", "contracts.py", "--baseline", "known.toml", "--update-baseline",
            cwd=project, env={"COUNTER_FIXED": "1"},
        )  # fmt: skip
        assert updated.returncode == 0, updated.stdout
        assert updated.stderr == "conformkit: baseline known.toml: 4 kept, 0 added, 3 removed\n"
        data = tomllib.loads((project / "known.toml").read_text("utf-8"))
        assert data["implementations"] == {
            "RemoteGreeter": {
                "tests.greeting": {
                    "says_hello": data["implementations"]["RemoteGreeter"]["tests.greeting"][
                        "says_hello"
                    ],
                    "language[en]": data["implementations"]["RemoteGreeter"]["tests.greeting"][
                        "language[en]"
                    ],
                    "language[fr]": "needs a server, #12",
                    "language[de]": data["implementations"]["RemoteGreeter"]["tests.greeting"][
                        "language[de]"
                    ],
                }
            }
        }
        regressed = conformkit("run", "contracts.py", "--baseline", "known.toml", cwd=project)
        assert regressed.returncode == 1  # the bug is back, and no longer in the baseline

    def test_stale_entries_fail_until_removed(self, project: Path) -> None:
        """An entry for a case or an implementation that is gone fails the gate (JSON baseline)."""
        created = conformkit(
            "run", "contracts.py", "--baseline", "known.json", "--update-baseline", cwd=project
        )
        assert created.returncode == 0, created.stdout
        data = json.loads((project / "known.json").read_text("utf-8"))
        data["implementations"]["GoneCounter"] = {"tests.counter": {"increments": "retired"}}
        data["implementations"]["DoubleCounter"]["tests.counter"]["decrements"] = "never was"
        (project / "known.json").write_text(json.dumps(data), encoding="utf-8")
        run = conformkit(
            "run", "contracts.py", "--baseline", "known.json", "--format", "junit",
            "-o", "report.xml", cwd=project,
        )  # fmt: skip
        assert run.returncode == 1
        lines = run.stdout.splitlines()
        assert any(
            line.startswith(
                "STALE baseline entry tests.counter × GoneCounter × increments: no implementation "
                "'GoneCounter' of feature 'tests.counter' ran"
            )
            for line in lines
        )
        assert (
            "STALE baseline entry tests.counter × DoubleCounter × decrements: DoubleCounter has "
            "no case 'decrements'; did you mean 'increments'?; remove it"
        ) in lines
        assert lines[-1] == "verdict: FAILED (2 stale baseline entries)"
        xml = (project / "report.xml").read_text("utf-8")
        junit_schema().validate(xml)
        [baseline] = [s for s in ET.fromstring(xml) if s.get("name") == "conformkit baseline"]
        assert baseline.get("failures") == "2"
        updated = conformkit(
            "run", "contracts.py", "--baseline", "known.json", "--update-baseline", cwd=project
        )
        assert updated.returncode == 0
        assert updated.stderr == "conformkit: baseline known.json: 7 kept, 0 added, 2 removed\n"
        assert "GoneCounter" not in (project / "known.json").read_text("utf-8")


BAD_INPUTS: dict[str, tuple[list[str], str]] = {
    "unknown module": (
        ["run", "no_such_module"],
        "cannot import 'no_such_module': no module named 'no_such_module'",
    ),
    "missing attribute": (
        ["run", "contracts:NoSuchCounter"],
        "target 'contracts:NoSuchCounter': module 'contracts' has no attribute 'NoSuchCounter'",
    ),
    "syntax error": (["run", "broken.py"], "cannot import 'broken.py': SyntaxError: "),
    "no such file": (
        ["run", "missing/contracts.py"],
        "target 'missing/contracts.py': no such file",
    ),
    "nothing in it": (
        ["run", "empty.py"],
        "target 'empty.py' holds no contract suite or feature implementation",
    ),
    "not a contract": (["run", "contracts:HELLO"], "contracts:HELLO is dict {'de': 'Hallo', "),
    "no implementation": (
        ["run", "lonely.py"],
        "the suite of feature 'tests.lonely' (lonely.suite) has no implementation",
    ),
    "definition error": (
        ["run", "mismatch.py"],
        "suite of feature 'tests.mismatch' has no function for case(s) 'b'",
    ),
    "shard out of range": (
        ["run", "contracts.py", "--shard", "3/2"],
        "--shard K/N needs 1 <= K <= N, got '3/2'",
    ),
    "shard malformed": (["run", "contracts.py", "--shard", "half"], "--shard takes K/N"),
    "malformed baseline": (
        ["run", "contracts.py", "--baseline", "bad.toml"],
        "baseline 'bad.toml' is not valid TOML: ",
    ),
    "baseline version": (
        ["run", "contracts.py", "--baseline", "old.json"],
        "baseline 'old.json' must say version = 1, got 0",
    ),
    "baseline version true": (
        ["run", "contracts.py", "--baseline", "true.toml"],
        "baseline 'true.toml' must say version = 1, got True",
    ),
    "update without baseline": (
        ["run", "contracts.py", "--update-baseline"],
        "--update-baseline needs --baseline FILE",
    ),
    "unwritable output": (
        ["run", "contracts.py", "-o", "no/such/dir/r.json"],
        "cannot write 'no/such/dir/r.json': no such directory",
    ),
    "output is a directory": (
        ["run", "contracts.py", "--format", "json", "-o", "."],
        "cannot write '.': it is a directory",
    ),
    "two stdout formats": (
        ["run", "contracts.py", "--format", "json", "--format", "junit"],
        "--format json and junit would both write to stdout",
    ),
    "unknown suffix": (
        ["run", "contracts.py", "-o", "report.pdf"],
        "cannot tell the format of --output 'report.pdf'",
    ),
    "k selects nothing": (
        ["run", "contracts.py", "-k", "nothing-like-this"],
        "-k 'nothing-like-this' selects none of the 22 case(s) collected",
    ),
    "no targets": (["run"], "name at least one TARGET, or pass --installed"),
    "bad timeout": (
        ["run", "contracts.py", "--timeout", "-1"],
        "argument --timeout: expected a positive number of seconds",
    ),
    "unknown report": (
        ["merge", "nowhere.json"],
        "cannot read report 'nowhere.json': No such file or directory",
    ),
}


@pytest.fixture(scope="module")
def bad_input_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("bad")
    (folder / "contracts.py").write_text(CONTRACTS, encoding="utf-8")
    (folder / "broken.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
    (folder / "empty.py").write_text("HELLO = 1\n", encoding="utf-8")
    (folder / "bad.toml").write_text("version = [1,\n", encoding="utf-8")
    (folder / "old.json").write_text('{"version": 0}', encoding="utf-8")
    (folder / "true.toml").write_text("version = true\n", encoding="utf-8")
    (folder / "lonely.py").write_text(
        "import conformkit as ck\n"
        "lonely = ck.Feature[object]('tests.lonely', cases=('a',))\n"
        "suite = ck.ContractSuite(lonely, {'a': lambda api: None})\n",
        encoding="utf-8",
    )
    (folder / "mismatch.py").write_text(
        "import conformkit as ck\n"
        "feature = ck.Feature[object]('tests.mismatch', cases=('a', 'b'))\n"
        "suite = ck.ContractSuite(feature, {'a': lambda api: None})\n"
        "class Impl(ck.FeatureImplementation[object]):\n"
        "    feature = feature\n"
        "    coverage = feature.coverage()\n"
        "    def create(self, scope): return object()\n",
        encoding="utf-8",
    )
    done = conformkit_many([Command(args, folder) for args, _ in BAD_INPUTS.values()])
    return dict(zip(BAD_INPUTS, done, strict=True))


class TestBadInput:
    """Each bad input: exit 2, one line on stderr naming the problem, no traceback."""

    @pytest.mark.parametrize("name", list(BAD_INPUTS))
    def test_one_line_and_exit_2(
        self, bad_input_runs: dict[str, subprocess.CompletedProcess[str]], name: str
    ) -> None:
        """The message names what is wrong; there is no traceback, and nothing on stdout."""
        run = bad_input_runs[name]
        expected = BAD_INPUTS[name][1]
        assert run.returncode == 2, run.stdout + run.stderr
        assert run.stdout == ""
        lines = run.stderr.splitlines()
        assert len(lines) == 1, run.stderr
        assert "Traceback" not in run.stderr
        assert lines[0].startswith("conformkit"), lines[0]
        assert expected in lines[0], lines[0]

    def test_debug_shows_the_traceback(self, workspace: Path) -> None:
        """--debug adds the traceback, then the same one-line message."""
        run = conformkit("run", "no_such_module", "--debug", cwd=workspace)
        assert run.returncode == 2
        assert run.stderr.startswith("Traceback (most recent call last):")
        assert run.stderr.splitlines()[-1] == (
            "conformkit: error: cannot import 'no_such_module': no module named 'no_such_module'"
        )

    def test_help_exits_0(self, workspace: Path) -> None:
        """--help on the command and on each subcommand exits 0."""
        runs = conformkit_many(
            [
                Command([*command, "--help"], workspace)
                for command in ([], ["run"], ["list"], ["demo"], ["merge"])
            ]
        )
        for run in runs:
            assert run.returncode == 0, run.stderr
            assert run.stdout.startswith("usage: conformkit")


class TestOutputFiles:
    """Nothing is written half-way: an output file is complete or untouched."""

    def test_a_failed_run_leaves_files_untouched(self, project: Path) -> None:
        """A usage error after the outputs were prepared leaves old files, and no temporary file."""
        (project / "report.json").write_text("old report", encoding="utf-8")
        (project / "known.toml").write_text("version = 1\n", encoding="utf-8")
        run = conformkit(
            "run", "contracts.py", "no_such_module", "-o", "report.json",
            "--baseline", "known.toml", "--update-baseline", cwd=project,
        )  # fmt: skip
        assert run.returncode == 2
        assert (project / "report.json").read_text("utf-8") == "old report"
        assert (project / "known.toml").read_text("utf-8") == "version = 1\n"
        assert sorted(path.name for path in project.iterdir()) == [
            "contracts.py",
            "known.toml",
            "report.json",
        ]

    def test_a_complete_run_replaces_files_keeping_their_mode(self, project: Path) -> None:
        """A run replaces an existing output whole, with the mode the old file had."""
        target = project / "report.json"
        target.write_text("old report", encoding="utf-8")
        target.chmod(0o640)
        run = conformkit("run", "contracts.py", "-o", "report.json", cwd=project)
        assert run.returncode == 1
        assert json.loads(target.read_text("utf-8"))["format"] == "conformkit.report"
        if os.name == "posix":
            assert target.stat().st_mode & 0o777 == 0o640
        assert sorted(path.name for path in project.iterdir()) == ["contracts.py", "report.json"]

    def test_a_reader_that_goes_away_does_not_change_the_verdict(self, workspace: Path) -> None:
        """`conformkit run ... | head`: a closed stdout is no error; the status is the gate's."""
        process = subprocess.Popen(
            [sys.executable, "-m", "conformkit", "run", "contracts.py"],
            cwd=workspace,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        process.stdout.close()  # long before the run has anything to say
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 1  # DoubleCounter fails
        assert stderr == b""


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
class TestTerminal:
    """On a terminal: colour, unless NO_COLOR; a progress line on a long run."""

    @staticmethod
    def on_terminal(
        args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
    ) -> tuple[int, str]:
        """Run with stdout and stderr on a pseudo-terminal; return the status and what it showed."""
        import pty

        controller, terminal = pty.openpty()
        process = subprocess.Popen(
            [sys.executable, "-m", "conformkit", *args],
            cwd=cwd,
            env=environment(env),
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        shown = bytearray()
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal closed with the process
                break
            if not chunk:
                break
            shown += chunk
        os.close(controller)
        return process.wait(timeout=60), shown.decode("utf-8")

    def test_colour_progress_and_no_color(self, workspace: Path) -> None:
        """Colours on a terminal, none with NO_COLOR; a long run shows a progress line, erased."""
        target = "contracts.py:MemoryCounter"
        status, shown = self.on_terminal(["run", target], workspace, {"PAUSE": "0.8"})
        assert status == 0
        assert "\x1b[32mevery contract holds\x1b[0m" in shown
        assert re.search(
            r"\rconformkit: \d/4 cases, \d\.\ds: tests\.counter × MemoryCounter", shown
        )
        status, shown = self.on_terminal(["run", target], workspace, {"NO_COLOR": "1"})
        assert status == 0
        assert not re.search(r"\x1b\[[0-9;]*m", shown)
        assert "verdict: every contract holds" in shown
