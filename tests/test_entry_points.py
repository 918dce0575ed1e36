"""
One verdict, whatever runs the contract: the hostile corpus of tests/corpus/hostile.py
through every entry point that docs/running.md lists, on asyncio and on trio.

It pins, for every case of every implementation in the corpus (every status, every
kind of failure and reason form of docs/reports.md), the same status from a script
(``run_contract_sync``), ``conformkit run`` (its JSON report), ``pytest --conformkit``
with and without pytest-xdist (its JUnit XML) and ``contract_test_case`` under
unittest (its TestResult), a test runner's outcome read through ``RUNNER_OUTCOME``;
and for every run the same gate outcome (``assert_contract`` raising or not, the exit
status, ``wasSuccessful()``), with the gate options that each entry point has
(``ENTRY_POINTS``, which must match the table of docs/running.md); and a case that
passed only with more time shown slow where the entry point shows it. A status that
``CaseStatus`` gains and the corpus does not produce, or an entry point that the
docs list and this file does not run, fails it.

Every entry point runs in a subprocess with a hard timeout that kills its process
group; they all start at once, from one module-scoped fixture.

Run as a script, this file is the script and the unittest entry points, writing
what they saw as JSON: ``python tests/test_entry_points.py script|unittest BACKEND OUTPUT``.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import types
import unittest
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import pytest

import conformkit as ck
from conformkit._implementation import run_deadline

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus" / "hostile.py"
RUNNING_PAGE = HERE.parent / "docs" / "running.md"
BACKENDS = ("asyncio", "trio")
HARD_TIMEOUT = 180.0
"""Seconds all the entry points may take together before the ones still running count as hung."""

PASSED = ck.CaseStatus.PASSED.value
FAILED = ck.CaseStatus.FAILED.value
UNSUPPORTED = ck.CaseStatus.UNSUPPORTED.value
UNAVAILABLE = ck.CaseStatus.UNAVAILABLE.value

RUNNER_OUTCOME = {PASSED: "pass", FAILED: "fail", UNSUPPORTED: "skip", UNAVAILABLE: "fail"}
"""
How a test runner shows each status: a skip is unsupported, a pass passed, a failure
(or an error) is failed or unavailable (a claimed case that could not be checked).
"""

RUN_OPTIONS = ("reject_vacuous", "probe_unsupported", "check_isolation")
"""The options of a run that change its verdict."""
GATE_OPTIONS = ("require_full", "reject_stale", "require_exercised")
"""The options of the gate."""


@dataclass(frozen=True)
class EntryPoint:
    """
    What an entry point can be asked, and how it judges.

    :ivar options: the run and gate options it takes.
    :ivar whole_report: whether it judges a report as a whole (a report in which no
        case passed fails), or each case alone, as a test runner does.
    :ivar exact: whether it shows each status as itself, or as a test runner's outcome.
    """

    options: frozenset[str]
    whole_report: bool
    exact: bool


EVERY_OPTION = frozenset(RUN_OPTIONS + GATE_OPTIONS)
ENTRY_POINTS = {
    "run_contract_sync()": EntryPoint(EVERY_OPTION, whole_report=True, exact=True),
    "conformkit run": EntryPoint(EVERY_OPTION, whole_report=True, exact=True),
    "pytest --conformkit": EntryPoint(frozenset(), whole_report=False, exact=False),
    "pytest --conformkit -n 2": EntryPoint(frozenset(), whole_report=False, exact=False),
    "contract_test_case()": EntryPoint(frozenset(), whole_report=False, exact=False),
    "contract_test()": EntryPoint(frozenset(), whole_report=False, exact=False),
    "contract_cases()": EntryPoint(frozenset(), whole_report=False, exact=False),
}
"""Every entry point this file runs, by the name the table of docs/running.md gives it."""

FLAG_RUNS: dict[str, tuple[dict[str, bool], dict[str, bool], dict[tuple[str, str], str]]] = {
    "require_full": (
        {"require_full": True},
        {"Sound": True, "Gappy": False, "Shared": True, "Thorough": False, "Narrow": False},
        {},
    ),
    "require_exercised": (
        {"reject_vacuous": True, "require_exercised": True},
        # vacuous fails where it runs; Narrow runs no case that writes.
        {"Sound": False, "Gappy": False, "Shared": False, "Thorough": True, "Narrow": False},
        {("Sound", "vacuous"): FAILED, ("Gappy", "vacuous"): FAILED, ("Shared", "vacuous"): FAILED},
    ),
    "reject_stale": (
        {"probe_unsupported": True, "reject_stale": True},
        # every declared gap passes when probed
        {"Sound": True, "Gappy": False, "Shared": True, "Thorough": False, "Narrow": False},
        {},
    ),
    "check_isolation": (
        {"check_isolation": True},
        {"Sound": True, "Gappy": True, "Shared": False, "Thorough": True, "Narrow": True},
        {("Shared", case): FAILED for case in ("works", "gap", "vacuous")},
    ),
}
"""
The runs of FLAGGED with options: the options, whether each report holds (Void, where
nothing passed, never does), and the statuses the options change.
"""
TARGETS = ("HOLDING", "FAILING")
"""The runs every entry point makes, with no option."""

Outcome: TypeAlias = dict[str, Any]
"""
A run as an entry point saw it: ``holds``, and each report's ``holds`` and ``cases``
(and ``slow``, the cases that passed slow, where the entry point shows it).
"""


# -- the entry points run in-process (in the subprocess) ----------------------------------


CORPUS_MODULE = "conformkit_tests_hostile_corpus"
"""
The corpus's module name where it is loaded by path: not ``hostile``, which a test of
this process (pytester's ``hostile.py`` under ``--dist loadfile``) may name a target.
"""


def load_corpus() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(CORPUS_MODULE, CORPUS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[CORPUS_MODULE] = module
    spec.loader.exec_module(module)
    return module


def pairs(target: Sequence[object]) -> Iterator[tuple[Any, Any]]:
    """Each implementation of a target, with the suite of its feature."""
    suites = [item for item in target if isinstance(item, ck.ContractSuite)]
    for item in target:
        if isinstance(item, ck.FeatureImplementation):
            yield item, next(suite for suite in suites if suite.feature is item.feature)


def as_a_script(backend: str) -> dict[str, Outcome]:
    """``run_contract_sync`` and ``assert_contract``: each target, and FLAGGED with each option."""
    corpus = load_corpus()
    runs: list[tuple[str, Any, dict[str, bool]]] = [
        (name, getattr(corpus, name), {}) for name in TARGETS
    ]
    runs += [(f"FLAGGED {name}", corpus.FLAGGED, run[0]) for name, run in FLAG_RUNS.items()]
    outcomes: dict[str, Outcome] = {}
    for name, target, options in runs:
        reports: dict[str, Any] = {}
        for implementation, suite in pairs(target):
            report = ck.run_contract_sync(
                implementation,
                suite,
                backend=backend,  # type: ignore[arg-type]
                **{key: value for key, value in options.items() if key in RUN_OPTIONS},
            )
            try:
                ck.assert_contract(
                    report, **{key: value for key, value in options.items() if key in GATE_OPTIONS}
                )
            except ck.ContractFailure:
                holds = False
            else:
                holds = True
            reports[report.implementation] = {
                "holds": holds,
                "cases": {result.case_id: result.status.value for result in report.results},
                "slow": list(report.slow),
            }
        outcomes[name] = {
            "holds": all(report["holds"] for report in reports.values()),
            "reports": reports,
        }
    return outcomes


class Recorder(unittest.TestResult):
    """A TestResult that keeps each test's outcome, by test ID."""

    def __init__(self) -> None:
        super().__init__(stream=io.StringIO())
        self.outcomes: dict[str, str] = {}

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self.outcomes[test.id()] = "pass"

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self.outcomes[test.id()] = "fail"

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self.outcomes[test.id()] = "fail"

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self.outcomes[test.id()] = "skip"


def under_unittest(backend: str) -> dict[str, Outcome]:
    """``contract_test_case``: a TestCase per implementation, a TestResult per target."""
    corpus = load_corpus()
    outcomes: dict[str, Outcome] = {}
    for name in TARGETS:
        tests = unittest.TestSuite()
        methods: dict[str, tuple[str, str]] = {}
        for implementation, suite in pairs(getattr(corpus, name)):
            test_case = ck.contract_test_case(implementation, suite, backend=backend)  # type: ignore[arg-type]
            for case in ck.contract_cases(implementation, suite):
                methods[f"{test_case.__qualname__}.test_{case.implementation}_{case.id}"] = (
                    case.implementation,
                    case.id,
                )
            tests.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(test_case))
        result = Recorder()
        tests.run(result)
        reports: dict[str, Any] = {}
        for test_id, outcome in result.outcomes.items():
            implementation, case_id = methods[test_id.partition(".")[2]]
            reports.setdefault(implementation, {"holds": None, "cases": {}})["cases"][case_id] = (
                outcome
            )
        outcomes[name] = {"holds": result.wasSuccessful(), "reports": reports}
    return outcomes


# -- starting them (in pytest) ------------------------------------------------------------


def environment() -> dict[str, str]:
    """A subprocess's environment: this one, less pytest's and xdist's settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "CONFORMKIT_")) and name not in ("PYTHONPATH",)
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def as_a_user_starts_it() -> None:
    """In the child: signals at their defaults, as in a terminal (see tests/cli/test_exits.py)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@dataclass
class Started:
    """An entry point's subprocess, and how to read what it saw once it ends."""

    entry: str
    backend: str
    run: str
    process: subprocess.Popen[str]
    output: Path


def start(args: Sequence[str], cwd: Path) -> subprocess.Popen[str]:
    """Start a process in a session of its own, so that a hang is killed with its children."""
    return subprocess.Popen(
        args,
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
        preexec_fn=as_a_user_starts_it,
    )


def start_all(folder: Path) -> list[Started]:
    python = sys.executable
    # pytest runs in folders of its own, with a configuration that is not this project's:
    # the plugin's in one where it finds no test module, the test modules in another.
    plugin, modules = folder / "plugin", folder / "modules"
    for place in (plugin, modules):
        place.mkdir()
        (place / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    started = []
    for backend in BACKENDS:
        for mode, entry in (
            ("script", "run_contract_sync()"),
            ("unittest", "contract_test_case()"),
        ):
            output = folder / f"{mode}-{backend}.json"
            process = start([python, __file__, mode, backend, str(output)], folder)
            started.append(Started(entry, backend, "*", process, output))
        runs: list[tuple[str, dict[str, bool]]] = [(name, {}) for name in TARGETS]
        runs += [(f"FLAGGED {name}", run[0]) for name, run in FLAG_RUNS.items()]
        for name, options in runs:
            output = folder / f"cli-{backend}-{name.replace(' ', '-')}.json"
            args = [python, "-m", "conformkit", "run", f"{CORPUS}:{name.split()[0]}"]
            args += ["--backend", backend, "--format", "json", "--output", str(output), "-q"]
            args += ["--" + option.replace("_", "-") for option in options]
            started.append(Started("conformkit run", backend, name, start(args, folder), output))
    for entry, workers in (("pytest --conformkit", []), ("pytest --conformkit -n 2", ["-n", "2"])):
        for name in TARGETS:
            output = folder / f"pytest-{len(workers)}-{name}.xml"
            args = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", *workers]
            args += ["--conformkit", f"{CORPUS}:{name}", "--junitxml", str(output)]
            args += [arg for backend in BACKENDS for arg in ("--conformkit-backend", backend)]
            started.append(Started(entry, "both", name, start(args, plugin), output))
    for entry, tests in (("contract_test()", CONTRACT_TEST), ("contract_cases()", PYTEST_LOOP)):
        for name in TARGETS:
            module = modules / f"test_{entry.partition('(')[0]}_{name}.py"
            module.write_text(PAIRS.format(corpus=str(CORPUS), target=name) + tests, "utf-8")
            output = folder / f"{module.stem}.xml"
            args = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", module.name]
            args += ["--junitxml", str(output)]
            started.append(Started(entry, "both", name, start(args, modules), output))
    return started


PAIRS = """
import importlib.util
import sys

import pytest

import conformkit as ck
from conformkit.pytest_plugin import contract_test

spec = importlib.util.spec_from_file_location("hostile", {corpus!r})
hostile = importlib.util.module_from_spec(spec)
sys.modules["hostile"] = hostile
spec.loader.exec_module(hostile)
SUITES = [item for item in hostile.{target} if isinstance(item, ck.ContractSuite)]
PAIRS = [
    (item, next(suite for suite in SUITES if suite.feature is item.feature))
    for item in hostile.{target}
    if isinstance(item, ck.FeatureImplementation)
]
"""
"""The start of a test module: each implementation of a target, with its suite."""
CONTRACT_TEST = """
for number, (implementation, suite) in enumerate(PAIRS):
    globals()[f"test_contract_{number}"] = contract_test(
        implementation, suite, backends=("asyncio", "trio")
    )
"""
"""The rest of a test module of ``contract_test()``, one test function per implementation."""
PYTEST_LOOP = """
@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


CASES = [
    case for implementation, suite in PAIRS for case in ck.contract_cases(implementation, suite)
]


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.implementation}-{case}")
async def test_loop(case):
    await case.run()
"""
"""The rest of a test module that loops over ``contract_cases()``, as docs/running.md shows."""


def read_pytest(process: subprocess.CompletedProcess[str], output: Path) -> dict[str, Outcome]:
    """A pytest run's outcome on each backend, from its exit status and its JUnit XML."""
    if process.returncode not in (0, 1):
        crashed = {"crashed": process.stdout[-3000:] + process.stderr[-3000:]}
        return dict.fromkeys((*BACKENDS, "both"), crashed)
    runs: dict[str, Outcome] = {
        backend: {"holds": process.returncode == 0, "reports": {}}
        for backend in (*BACKENDS, "both")
    }
    for testcase in ElementTree.parse(output).iter("testcase"):
        name, _, parameters = testcase.get("name", "").rstrip("]").partition("[")
        if name.startswith("test_"):  # test_loop[asyncio-Sound-works], or Sound-works-asyncio
            backend = next((part for part in parameters.split("-") if part in BACKENDS), "")
            implementation, case_id = [p for p in parameters.split("-") if p != backend][-2:]
        else:  # the plugin's works[asyncio], in the class corpus.stages.Sound
            implementation = testcase.get("classname", "").rpartition(".")[2]
            case_id, backend = name, parameters
        if backend not in BACKENDS:
            continue  # not a contract's item: a session that ended early records one
        tags = {child.tag for child in testcase}
        outcome = "fail" if tags & {"failure", "error"} else "skip" if "skipped" in tags else "pass"
        report = runs[backend]["reports"].setdefault(implementation, {"holds": None, "cases": {}})
        report["cases"][case_id] = outcome
    return runs


def read_cli(process: subprocess.CompletedProcess[str], output: Path) -> Outcome:
    """A `conformkit run`'s outcome, from its exit status and its JSON report."""
    if process.returncode not in (0, 1):
        return {"crashed": process.stderr[-3000:]}
    data = json.loads(output.read_text("utf-8"))
    return {
        "holds": process.returncode == 0,
        "reports": {
            report["implementation"]: {
                "holds": report["holds"],
                "cases": {result["case_id"]: result["status"] for result in report["results"]},
                "slow": [result["case_id"] for result in report["results"] if result["slow"]],
            }
            for report in data["reports"]
        },
    }


Key: TypeAlias = tuple[str, str, str]
"""An entry point, a backend, a run."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Key, Outcome]:
    """What every entry point saw of every run, each started at once in a subprocess."""
    folder = tmp_path_factory.mktemp("entry_points")
    started = start_all(folder)
    deadline = time.monotonic() + HARD_TIMEOUT
    seen: dict[Key, Outcome] = {}
    for one in started:
        key = (one.entry, one.backend, one.run)
        try:
            stdout, stderr = one.process.communicate(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            os.killpg(one.process.pid, signal.SIGKILL)  # the process and any worker it started
            stdout, stderr = one.process.communicate()
            seen[key] = {"hung": stderr[-3000:]}
            continue
        done = subprocess.CompletedProcess(one.process.args, one.process.returncode, stdout, stderr)
        if one.output.suffix == ".xml":  # a pytest run's JUnit XML
            for backend, outcome in read_pytest(done, one.output).items():
                seen[one.entry, backend, one.run] = outcome
        elif one.entry == "conformkit run":
            seen[key] = read_cli(done, one.output)
        elif done.returncode != 0:
            for run in [*TARGETS, *(f"FLAGGED {name}" for name in FLAG_RUNS)]:
                seen[one.entry, one.backend, run] = {"crashed": stderr[-3000:]}
        else:
            for run, outcome in json.loads(one.output.read_text("utf-8")).items():
                seen[one.entry, one.backend, run] = outcome
    return seen


def seen_by(runs: dict[Key, Outcome], entry: str, backend: str, run: str) -> Outcome:
    """What an entry point saw of a run, once it is known that it ended as it should."""
    outcome = runs.get((entry, backend, run)) or runs[entry, "both", run]
    assert "hung" not in outcome, f"it hung:\n{outcome['hung']}"
    assert "crashed" not in outcome, f"it crashed:\n{outcome['crashed']}"
    return outcome


# -- what they must agree on ----------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> types.ModuleType:
    return load_corpus()


def documented_entry_points() -> dict[str, frozenset[str]]:
    """The table of docs/running.md's "One verdict" section: each entry point, and its options."""
    text = RUNNING_PAGE.read_text(encoding="utf-8")
    section = text.partition("\n## One verdict, whatever runs it\n")[2].partition("\n## ")[0]
    table = {}
    for row in re.findall(r"^\| (.+) \|$", section, re.MULTILINE)[1:]:  # the header first
        cells = [cell.strip() for cell in row.split(" | ")]
        table[re.findall(r"`([^`]+)`", cells[0])[0]] = frozenset(re.findall(r"`(\w+)`", cells[-1]))
    return table


def test_the_docs_list_the_entry_points_this_file_runs() -> None:
    """An entry point, and each option it has, joins this test to be documented."""
    assert documented_entry_points() == {
        name: entry.options for name, entry in ENTRY_POINTS.items()
    }


def test_the_corpus_produces_every_status(corpus: types.ModuleType) -> None:
    """A status that CaseStatus gains must be produced here, and shown by every runner."""
    statuses = {status for cases in corpus.EXPECTED.values() for status in cases.values()}
    assert statuses == {status.value for status in ck.CaseStatus}
    assert set(RUNNER_OUTCOME) == {status.value for status in ck.CaseStatus}
    assert sum(len(cases) for cases in corpus.EXPECTED.values()) >= 30


def test_no_case_meant_to_pass_depends_on_a_short_deadline(corpus: types.ModuleType) -> None:
    """
    A case meant to pass runs under the default guard, which judges no speed, or has
    a deadline of ROOMY at least: none can fail because the machine is loaded.
    """
    short = []
    for name in corpus.TARGETS:
        for implementation, suite in pairs(corpus.TARGETS[name]):
            deadline, source = run_deadline(ck.DEFAULT_TIMEOUT, implementation)
            if source == "guard" or deadline is None:
                continue
            implementation_name = type(implementation).__name__
            for case_id, status in corpus.EXPECTED[implementation_name].items():
                case_deadline = max(suite.own_timeout(case_id) or 0.0, deadline)
                if status == PASSED and case_deadline < corpus.ROOMY:
                    short.append((implementation_name, case_id, case_deadline))
    assert short == []  # (implementation, case, its deadline)


def expected_statuses(corpus: types.ModuleType, run: str) -> dict[str, dict[str, str]]:
    """Each case's status in a run, as the corpus and FLAG_RUNS say."""
    if run in TARGETS:
        names = [pair[0].__class__.__name__ for pair in pairs(getattr(corpus, run))]
        return {name: dict(corpus.EXPECTED[name]) for name in names}
    _options, holds, changed = FLAG_RUNS[run.split()[1]]
    expected = {name: dict(corpus.EXPECTED[name]) for name in [*holds, "Void"]}
    for (name, case_id), status in changed.items():
        expected[name][case_id] = status
    return expected


def expected_holds(entry: EntryPoint, statuses: Mapping[str, str]) -> bool:
    """Whether a report of a run with no option holds for an entry point, given its statuses."""
    if any(status in (FAILED, UNAVAILABLE) for status in statuses.values()):
        return False
    return not entry.whole_report or PASSED in statuses.values()


def runs_of(point: EntryPoint) -> list[str]:
    """The runs an entry point makes: each target, and FLAGGED with each option it takes."""
    flagged = [name for name, run in FLAG_RUNS.items() if set(run[0]) <= point.options]
    return [*TARGETS, *(f"FLAGGED {name}" for name in flagged)]


def each_run() -> Iterator[Any]:
    for entry, point in ENTRY_POINTS.items():
        for backend in BACKENDS:
            for run in runs_of(point):
                yield pytest.param(entry, backend, run, id=f"{entry}-{backend}-{run}")


@pytest.mark.parametrize(("entry", "backend", "run"), list(each_run()))
def test_each_case_has_its_status(
    runs: dict[Key, Outcome], corpus: types.ModuleType, entry: str, backend: str, run: str
) -> None:
    """Every case, each status as the entry point shows it; no case missing, none invented."""
    outcome = seen_by(runs, entry, backend, run)
    expected = expected_statuses(corpus, run)
    if not ENTRY_POINTS[entry].exact:
        expected = {
            name: {case_id: RUNNER_OUTCOME[status] for case_id, status in statuses.items()}
            for name, statuses in expected.items()
        }
    seen = {name: report["cases"] for name, report in outcome["reports"].items()}
    mismatches = {
        (name, case_id): (status, seen.get(name, {}).get(case_id))
        for name, statuses in expected.items()
        for case_id, status in statuses.items()
        if seen.get(name, {}).get(case_id) != status
    }
    assert mismatches == {}  # (implementation, case): (expected, seen)
    assert seen.keys() == expected.keys()


@pytest.mark.parametrize(("entry", "backend", "run"), list(each_run()))
def test_each_run_has_its_gate_outcome(
    runs: dict[Key, Outcome], corpus: types.ModuleType, entry: str, backend: str, run: str
) -> None:
    """
    Each report holds or not, and the run with it, with the options the entry point has:
    a test runner judges each case alone, so a report in which nothing passed holds there.
    """
    point = ENTRY_POINTS[entry]
    outcome = seen_by(runs, entry, backend, run)
    statuses = expected_statuses(corpus, run)
    if run in TARGETS:
        expected = {name: expected_holds(point, cases) for name, cases in statuses.items()}
    else:
        expected = {**FLAG_RUNS[run.split()[1]][1], "Void": False}
    if point.exact:
        assert {name: report["holds"] for name, report in outcome["reports"].items()} == expected
    else:  # a test runner's report holds when none of its tests failed
        seen = {
            name: "fail" not in report["cases"].values()
            for name, report in outcome["reports"].items()
        }
        assert seen == expected
    # pytest's run holds both backends' items: the same reports hold on each.
    assert outcome["holds"] == all(expected.values())


SHOWS_SLOW = ("run_contract_sync()", "conformkit run")
"""The entry points that show a slow pass: ``CaseResult.slow``, the JSON report's ``slow``."""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("entry", SHOWS_SLOW)
def test_a_slow_pass_is_shown_slow(
    runs: dict[Key, Outcome], corpus: types.ModuleType, entry: str, backend: str
) -> None:
    """A case that passed only when run again past the default guard is shown slow."""
    outcome = seen_by(runs, entry, backend, "HOLDING")
    slow = {name: report["slow"] for name, report in outcome["reports"].items() if report["slow"]}
    # Any other case passes in a thousandth of the guard: none of them is slow.
    assert slow == {name: list(cases) for name, cases in corpus.SLOW.items()}


if __name__ == "__main__":
    mode, backend, output = sys.argv[1:]
    seen = as_a_script(backend) if mode == "script" else under_unittest(backend)
    Path(output).write_text(json.dumps(seen), encoding="utf-8")
