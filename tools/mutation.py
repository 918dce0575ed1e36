"""
Mutation testing of conformkit's core: the score per module, and every surviving mutant.

    pip install -e '.[test,mutation]'
    python tools/mutation.py                    # every core module, one after another
    python tools/mutation.py --module _scope    # one module (repeat the option for more)
    python tools/mutation.py --report           # print the scores of the last runs again
    python tools/mutation.py --check            # the stale equivalents, in seconds, no run
    python tools/mutation.py --module execution --resume   # go on where a run ended
    python tools/mutation.py --module execution \\
        --mutants 'conformkit._runner.execution.xǁExecutionǁrun__*'
                                                # one function's mutants alone, run and counted
    python tools/mutation.py --operators extra --module _scope \
        --mutants 'conformkit._scope.x_open_feature__*' --tests tests/test_scope.py
                                                # the mutants mutmut does not make

mutmut (configured in pyproject.toml, ``[tool.mutmut]``) changes one thing at a time
in a core module (a comparison, a constant, a removed statement, an ``await``...)
and runs the tests that reach the changed function. A mutant the tests do not notice
survives. Some survivors change nothing observable (an equivalent mutant); each is
listed in tools/mutation-equivalents.toml with a one-line reason, and left out of
the score.

An entry names the change, never the mutant's name or number, which move with the
code: the qualified name of the function changed (``Execution._stretch``;
``<module>`` for a module's top level and class bodies), found in whichever module
it is; the line as it is and as the mutant makes it (stripped; several, one per
line, when a mutant changes several); and, when the function holds that line more
than once, which of its mutants making that change it is (``occurrence``, in source
order). Moving a function unchanged, within its module or to another, keeps its
entries. Changing the line, or renaming the function, makes the entry stale:
``--check`` reads every entry against the package's sources and names each stale
one in a second or so, without mutmut or a mutant run, so it can follow any
refactor; a run's report also names an entry whose mutant the tests now kill, or
that its function's mutants no longer make. A stale entry is reviewed again: its
reason may not hold for the new code. (``occurrence`` counts the lines that read
alike: when an earlier one of them changes, a later one's entry names the next such
line without going stale.)

Each module is mutated in a copy of the working tree of its own, under
``.mutation/<module>/``, whose ``[tool.mutmut]`` names that module alone and the
in-process test files that exercise it (``TESTS`` below): the whole suite, with its
subprocess tests, would take hours per module on two cores. A kill by those tests is
a kill by the whole suite, so each score is a lower bound. A mutant may run 3 times as
long as its tests did, plus 10 s, before mutmut counts it as a timeout: mutmut's own
limit, 15 times plus 1 s, let a hung mutant hold a worker for minutes. Within that, a
test that runs 30 s ends the run as failed (``MUTANT_HANG_LIMIT`` in tests/conftest.py):
a mutant that hangs its first test does not wait out the limit of all of them. mutmut's
limit is wall time, in a worker beside the others, so its timeout counts as a kill only
once confirmed: the mutant runs again against the same tests, in a plain pytest of its
own, and must fail or outlast 3 times their unmutated time plus 30 s, side by side and
then once more alone. So must a mutant whose pytest mutmut saw interrupted (a SIGINT
handler's mutant that lets Ctrl-C through). Tests of traceback and caller frames,
which mutmut's trampolines change, are marked ``frames`` and skipped there.
The copies stay, so that ``--report`` and ``cd .mutation/_scope && mutmut show NAME``
work after the run.

mutmut credits a test with a function only when the pytest process itself calls
it: never a test whose call happens in a fresh interpreter (``SUBPROCESS_TESTS``),
and the watchdog thread's one long call only for the test that started it. So each
mutant that mutmut leaves alive then runs in the *wide check*: those files (and, for
a mutant no test reached or one of an ``__init__``, which may run at import, the
module's own), with the copy's mutated sources first on the path of every
interpreter, the fresh ones included. A kill counts once the mutant fails again,
run alone: first the tests that failed (each passing alone unmutated), then, if
they pass, the whole selection. Until then it is kept as a kill seen side by side,
which a run stopped before confirms next time. Its verdicts are kept in the copy's
``wide.json``, with the hash of the mutated function and of the selection's files:
a mutant is checked again when its function changes, a survivor also when the
tests do.

``--resume`` keeps a module's results and brings the copy up to date with the
working tree: mutmut runs only the mutants not yet checked and those of the
functions changed since, and the survivors again once the module's tests changed;
the wide check only the mutants it has not judged on their function's present code.

The score of a module is killed / (mutants - equivalent). Mutants that no test
reaches count as survivors. A run takes tens of minutes per module on two cores: it
is not part of ``.ci/run``.

mutmut 3 never removes an ``await`` or a statement, and never mutates a module's top
level or a decorated function. ``--operators extra`` runs those mutants instead, made
by tools/extra_mutants.py, in a copy of its own under ``.mutation/<module>.extra/``,
one after another against the module's tests (or ``--tests``), each verdict kept
with the hash of the mutated source and of the tests; they are reported, and listed
as equivalent, as mutmut's are.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "tools" / "mutation-equivalents.toml"
SCRATCH = ROOT / ".mutation"
RUNNER_TESTS = [
    "tests/test_runner.py",
    "tests/test_runner_lifecycle.py",
    "tests/test_found_unsupported.py",
    "tests/test_shape.py",
    "tests/test_unittest_cases.py",
    "tests/test_race.py",
    "tests/test_recording.py",
    "tests/test_probe.py",
    "tests/test_cancellation_law.py",
    "tests/test_background_task_names.py",
    "tests/test_lifecycle_properties.py",
    "tests/test_families.py",
    "tests/test_implementation.py",
    "tests/test_scope_no_deadline.py",
    "tests/test_reason_forms.py",
    "tests/test_case_tracebacks.py",
    "tests/test_exports.py",
]
# The in-process tests that exercise each core module (subprocess and docs tests left out,
# but for tests/test_exports.py's check of the exports' module names, made at import).
TESTS: dict[str, list[str]] = {
    "_feature": [
        "tests/test_feature.py",
        "tests/test_families.py",
        "tests/test_examples_dir.py",
        "tests/test_implementation.py",
        "tests/test_suite.py",
        "tests/test_exports.py",
    ],
    "_implementation": [
        "tests/test_implementation.py",
        "tests/test_families.py",
        "tests/test_feature.py",
        "tests/test_suite.py",
        "tests/test_runner.py",
        "tests/test_exports.py",
    ],
    "_suite": [
        "tests/test_suite.py",
        "tests/test_families.py",
        "tests/test_feature.py",
        "tests/test_exports.py",
    ],
    "_scope": [
        "tests/test_scope.py",
        "tests/test_scope_no_deadline.py",
        "tests/test_background_task_names.py",
        "tests/test_runner.py",
        "tests/test_runner_lifecycle.py",
        "tests/test_shape.py",
        "tests/test_exports.py",
    ],
    # The runner package's modules, each mutated alone, are exercised by the same tests.
    **dict.fromkeys(
        (
            "execution",
            "interrupts",
            "isolation",
            "lanes",
            "plan",
            "public",
            "results",
            "sync_cases",
        ),
        RUNNER_TESTS,
    ),
    "_watchdog": ["tests/test_watchdog.py", "tests/test_runner.py"],
    "_report": [
        "tests/test_report.py",
        "tests/test_runner.py",
        "tests/test_probe.py",
        "tests/test_recording.py",
        "tests/cli/test_outcome.py",
        "tests/cli/test_matrix.py",
        "tests/cli/test_gates.py",
        "tests/test_exports.py",
    ],
    # Not mutated by mutmut (see [tool.mutmut]); by the extra operators alone.
    "_shape": ["tests/test_shape.py", "tests/test_runner.py"],
}
# The wide check: mutmut credits a test with a function only when the pytest
# process itself calls it. A call in a fresh interpreter (a subprocess test) is
# never credited, nor are the watchdog thread's calls but for the test that
# started it. So each mutant mutmut leaves alive is run again against these
# files, with the copy's mutated sources first on every interpreter's path: a
# fresh interpreter imports the mutant too.
SUBPROCESS_TESTS = ["tests/test_watchdog.py", "tests/test_faults.py"]
# Tests beyond those that reach a module where mutmut cannot see: the runs of
# these files reach the watchdog's thread, whose calls mutmut credits to the test
# that started it.
WIDE_EXTRA: dict[str, list[str]] = {
    "_watchdog": ["tests/test_runner_lifecycle.py", "tests/test_runner.py"],
}
WIDE_FILE = "wide.json"
# A test that failed, in pytest's short summary, or hung (tests/conftest.py's line).
# An ID may hold spaces (a parameter's): the summary's message follows " - ".
FAILED_TEST = re.compile(r"(?m)^(?:FAILED|ERROR) (.+?)(?: - .*)?$|^(\S+::.+?) hung: ")
# A kill seen side by side, kept as such until it is confirmed alone.
SIDE_BY_SIDE = " side by side"
# What mutmut reported that counts only once a plain pytest run confirms it.
CONFIRMED_AGAIN = ("timeout", "interrupted")
UNCONFIRMED = tuple(f"{status}, not confirmed" for status in CONFIRMED_AGAIN)
TARGET = 0.95
MUTMUT_MARK = "__mutmut_"  # in the name of every mutant mutmut makes
KILLED = {
    "killed",
    "killed when run again",
    "timeout when run again",
    "caught by type check",
    "segfault",
    "killed by the wide check",
    "timeout by the wide check",
}
STATUS = {
    0: "survived",
    1: "killed",
    # pytest interrupted: a mutant of the SIGINT handler may let Ctrl-C through,
    # which a plain pytest run of its tests confirms (confirm_timeouts).
    2: "interrupted",
    3: "killed",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
    37: "caught by type check",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    -9: "segfault",
    -11: "segfault",
}


@dataclass(frozen=True)
class Key:
    """
    What an equivalent is listed by: the change a mutant makes, and where, in terms
    that survive moving the code unchanged (to another line, or another module).
    """

    operators: str
    """Whose mutant it is: ``"mutmut"`` or ``"extra"``."""
    function: str
    """The qualified name of the function changed: ``"Execution._stretch"``, ``"suggest"``,
    or ``"<module>"`` for the code of a module's top level and class bodies."""
    line: str
    """The line (or lines, one per line of the text) as in the source, stripped."""
    mutated: str
    """The line (or lines) as the mutant makes them, stripped."""
    occurrence: int = 1
    """Which of the function's mutants making that same change: 2 for the second, in
    source order, when the function holds the line more than once."""

    def __str__(self) -> str:
        which = f" (occurrence {self.occurrence})" if self.occurrence > 1 else ""
        return f"{self.function}: {self.line!r} made {self.mutated!r}{which}"


@dataclass(frozen=True)
class Equivalent:
    key: Key
    reason: str


def source_paths() -> list[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [ROOT / path for path in config["tool"]["mutmut"]["source_paths"]]


def equivalents(ledger: Path | None = None) -> dict[Key, Equivalent]:
    """The entries of ``ledger`` (tools/mutation-equivalents.toml by default), by key."""
    ledger = ledger or EQUIVALENTS
    if not ledger.exists():
        return {}
    data = tomllib.loads(ledger.read_text(encoding="utf-8"))
    found: dict[Key, Equivalent] = {}
    for entry in data.get("equivalent", []):
        missing = {"function", "line", "mutated", "reason"} - set(entry)
        if missing:
            sys.exit(f"{ledger.name}: an entry lacks {', '.join(sorted(missing))}: {entry!r}")
        key = Key(
            entry.get("operators", "mutmut"),
            entry["function"],
            entry["line"],
            entry["mutated"],
            entry.get("occurrence", 1),
        )
        if key in found:
            sys.exit(f"{ledger.name}: an entry is listed twice: {entry!r}")
        found[key] = Equivalent(key, entry["reason"])
    return found


def function_name(mutant: str) -> str:
    """
    The qualified name of the function a mutant of either tool changes:
    ``conformkit._runner.xǁExecutionǁrun__mutmut_7`` changes ``Execution.run``.
    """
    unit = re.sub(r"__(mutmut_\d+|extra_[a-z]+_\d+)$", "", mutant).rpartition(".")[2]
    if unit.startswith("xǁ"):
        return unit[2:].replace("ǁ", ".")
    return unit.removeprefix("x_")


def change_of(before: str, after: str) -> tuple[str, str]:
    """
    The lines that differ between two texts (all those between the first and the
    last that differ, which a mutant's change spans): as they were, and as they are,
    stripped.
    """
    old, new = before.splitlines(), after.splitlines()
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    was = "\n".join(line.strip() for line in old[start : len(old) - end])
    made = "\n".join(line.strip() for line in new[start : len(new) - end])
    return was, made


def keys_from(texts: Iterable[tuple[str, str, str]]) -> dict[str, Key]:
    """
    The key of each mutant, from its name and the text it changes (its function's,
    or its module's), before and after: an equivalent is listed by it.
    """

    def in_order(text: tuple[str, str, str]) -> tuple[str, int]:
        stem, _, number = text[0].rpartition("_")
        return stem, int(number)

    keys: dict[str, Key] = {}
    made: dict[Key, int] = {}
    for name, before, after in sorted(texts, key=in_order):
        operators = "mutmut" if MUTMUT_MARK in name else "extra"
        key = Key(operators, function_name(name), *change_of(before, after))
        made[key] = made.get(key, 0) + 1
        keys[name] = dataclasses.replace(key, occurrence=made[key])
    return keys


def mutmut_keys(path: Path) -> dict[str, Key]:
    """
    The key of each of mutmut's mutants of the module at ``path``, from the copy it
    was mutated in: its function before and after, read off the mutated module with
    mutmut's index of where each function is in it.
    """
    relative = path.relative_to(ROOT)
    mutated = scratch(path) / "mutants" / relative
    index = json.loads(mutated.with_name(path.name + ".spans").read_text(encoding="utf-8"))
    if index.get("version") != 1:
        sys.exit(f"{relative}.spans: not mutmut 3.8's index; pip install -e '.[mutation]'")
    lines = mutated.read_text(encoding="utf-8").splitlines()
    spans: dict[str, list[int]] = index["spans"]
    module = ".".join(relative.with_suffix("").parts).removeprefix("src.")  # as mutmut names it

    def text(name: str) -> str:
        """A generated function, named as in the source: a change to its ``def`` reads so."""
        start, end = spans[name]
        defined_as = function_name(name.replace("__mutmut_orig", "__mutmut_0")).rpartition(".")[2]
        return "\n".join(lines[start - 1 : end]).replace(name, defined_as, 1)

    texts = [
        (f"{module}.{name}", text(f"{name.rpartition(MUTMUT_MARK)[0]}__mutmut_orig"), text(name))
        for name in spans
        if MUTMUT_MARK in name and not name.endswith("__mutmut_orig")
    ]
    return keys_from(texts)


def listed(path: Path, mutants: Iterable[str]) -> set[str]:
    """The mutants among ``mutants``, mutmut's of the module at ``path``, listed as equivalent."""
    known = equivalents()
    keys = mutmut_keys(path)
    return {mutant for mutant in mutants if keys.get(mutant) in known}


def defined(source: str) -> dict[str, list[list[str]]]:
    """
    The lines of each function and method of a module, stripped, by qualified name;
    under ``"<module>"``, the lines of its top level and class bodies.
    """
    tree = ast.parse(source)
    lines = [line.strip() for line in source.splitlines()]
    found: dict[str, list[list[str]]] = {}
    inside: set[int] = set()

    def walk(body: list[ast.stmt], qualified: str) -> None:
        for statement in body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                end = statement.end_lineno or statement.lineno
                found.setdefault(qualified + statement.name, []).append(
                    lines[statement.lineno - 1 : end]
                )
                inside.update(range(statement.lineno - 1, end))
            elif isinstance(statement, ast.ClassDef):
                walk(statement.body, f"{qualified}{statement.name}.")

    walk(tree.body, "")
    found["<module>"] = [[line for number, line in enumerate(lines) if number not in inside]]
    return found


def check(ledger: Path, sources: Iterable[Path]) -> list[str]:
    """
    Each stale entry of ``ledger``, read against the modules at ``sources`` without
    running a mutant: its function is found in none of them, or none holds the line
    it names (as many times as its ``occurrence`` says).
    """
    functions: dict[str, list[list[str]]] = {}
    for source in sources:
        for name, bodies in defined(source.read_text(encoding="utf-8")).items():
            functions.setdefault(name, []).extend(bodies)

    def held(bodies: list[list[str]], wanted: list[str]) -> int:
        """How many times the function of these bodies (one per module) holds the lines."""
        return max(
            (
                sum(body[at : at + len(wanted)] == wanted for at in range(len(body)))
                for body in bodies
            ),
            default=0,
        )

    stale: list[str] = []
    for key in equivalents(ledger):
        wanted = key.line.split("\n")
        times = held(functions.get(key.function, []), wanted)
        if times >= key.occurrence:
            continue
        if key.function not in functions:
            gone = f"no function {key.function!r} any more"
        elif not times:
            gone = f"no such line in {key.function} any more"
        else:
            gone = f"{key.function} holds that line {times} time(s) only"
        elsewhere = [
            name
            for name, bodies in functions.items()
            if name not in (key.function, "<module>") and held(bodies, wanted) >= key.occurrence
        ]
        if elsewhere:  # a renamed function, or the line moved to another
            gone += f"; the line is in {', '.join(sorted(elsewhere))}"
        stale.append(f"{key}: {gone}")
    return stale


def scratch(path: Path) -> Path:
    """The copy of the working tree in which the module at ``path`` is mutated."""
    return SCRATCH / path.stem


def copy_tree(copy: Path) -> None:
    """A fresh copy of the working tree at ``copy``: the files git tracks or does not ignore."""
    shutil.rmtree(copy, ignore_errors=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)


def prepare(path: Path, *, resume: bool = False) -> Path:
    """
    A fresh copy of the working tree (the files git tracks or does not ignore), with
    ``[tool.mutmut]`` narrowed to the module at ``path`` and to the tests in ``TESTS``.

    :param resume: keep the results of the copy there was: mutmut's record and
        mutants of the module, its record of the tests, and the wide check's.
        mutmut then makes the module's mutants again only if its source changed,
        and runs again only those of the functions that changed.
    """
    module = path.stem
    if module not in TESTS:
        sys.exit(f"tools/mutation.py: no tests are listed for {module} in TESTS")
    copy = scratch(path)
    relative = path.relative_to(ROOT)
    kept = [
        Path("mutants") / relative,
        Path("mutants") / relative.with_name(path.name + ".meta"),
        Path("mutants") / relative.with_name(path.name + ".spans"),
        Path("mutants") / "mutmut-stats.json",
        Path(WIDE_FILE),
    ]
    aside = SCRATCH / f".{module}.kept"
    shutil.rmtree(aside, ignore_errors=True)
    if resume:
        for result in kept:
            if (copy / result).exists():
                (aside / result).parent.mkdir(parents=True, exist_ok=True)
                shutil.move(copy / result, aside / result)  # keeps its mtime
    copy_tree(copy)
    config = copy / "pyproject.toml"
    text = config.read_text(encoding="utf-8")
    narrowed = f"""source_paths = ["{path.relative_to(ROOT).as_posix()}"]
pytest_add_cli_args_test_selection = {json.dumps(TESTS[module])}
timeout_multiplier = 3.0
timeout_constant = 10.0
"""
    # Replace the committed values (each key once, possibly spanning lines).
    keys = (
        "source_paths",
        "pytest_add_cli_args_test_selection",
        "timeout_multiplier",
        "timeout_constant",
    )
    for key in keys:
        text = re.sub(rf"(?ms)^{key} = (\[.*?\]|\S+)\n", "", text, count=1)
    text = text.replace("[tool.mutmut]\n", "[tool.mutmut]\n" + narrowed, 1)
    # mutmut runs the tests in its own process: no pytest-xdist workers.
    text = re.sub(r',\s*"(-n|--dist)",\s*"[^"]*"', "", text)
    config.write_text(text, encoding="utf-8")
    if aside.exists():
        for result in kept:
            if (aside / result).exists():
                (copy / result).parent.mkdir(parents=True, exist_ok=True)
                shutil.move(aside / result, copy / result)
        shutil.rmtree(aside)
    return copy


def results(path: Path, only: Sequence[str] = ()) -> Iterator[tuple[str, str]]:
    """
    Each mutant of a source file with its status, from mutmut's record of the last
    run; with ``only``, the mutants whose names match one of its patterns alone.
    """
    data = json.loads(meta_of(path).read_text(encoding="utf-8"))
    wide = read_record(scratch(path))
    verdicts: dict[str, list[str]] = wide.get("mutants", {})
    timeouts: dict[str, list[str]] = wide.get("timeouts", {})
    hashes: dict[str, str] = data.get("hash_by_function_name", {})
    for mutant, code in sorted(data["exit_code_by_key"].items()):
        if not selected(mutant, only):
            continue
        status = STATUS.get(code, "not checked" if code is None else "suspicious")
        if status in CONFIRMED_AGAIN:
            again = timeouts.get(mutant)
            if again is None or again[1] != hashes.get(function_of(mutant)):
                status = f"{status}, not confirmed"
            elif again[0] != "survived":
                status = f"{again[0]} when run again"
            else:
                status = "survived"  # mutmut's timeout was the machine's load
        verdict = verdicts.get(mutant)
        if (
            status in ("survived", "no tests")
            and verdict is not None
            and verdict[1] == hashes.get(function_of(mutant))
            and verdict[0] in ("killed", "timeout")
        ):
            status = f"{verdict[0]} by the wide check"
        yield mutant, status


def selected(mutant: str, only: Sequence[str]) -> bool:
    """Whether ``--mutants`` leaves ``mutant`` in: it matches one of ``only``, or none is given."""
    return not only or any(fnmatch.fnmatchcase(mutant, pattern) for pattern in only)


def read_record(copy: Path) -> dict[str, Any]:
    """The copy's ``wide.json``: the verdicts this script keeps beside mutmut's."""
    record = copy / WIDE_FILE
    if not record.exists():
        return {}
    data: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    return data


def meta_of(path: Path) -> Path:
    """mutmut's record of the last run on the module at ``path``."""
    relative = path.relative_to(ROOT)
    meta = scratch(path) / "mutants" / relative.with_name(path.name + ".meta")
    if not meta.exists():
        sys.exit(f"no results for {relative}: run tools/mutation.py --module {path.stem} first")
    return meta


def function_of(mutant: str) -> str:
    """The mutated function's key in mutmut's record: ``xǁClassǁmethod`` or ``x_function``."""
    return mutant.rpartition("__mutmut_")[0].split(".")[-1]


def wide_selection(module: str, status: str) -> list[str]:
    """
    The files of a mutant's wide check. mutmut ran a survivor against each
    in-process test that called its function, so it runs against what mutmut
    cannot see alone. A mutant no test reached, or one of an ``__init__`` (which
    may run at import, before mutmut turns the mutant on: a module's singleton),
    runs against the module's own tests as well.
    """
    files = [*SUBPROCESS_TESTS, *WIDE_EXTRA.get(module, [])]
    if status in ("no tests", "at import"):
        files += TESTS[module]
    return list(dict.fromkeys(files))


def time_limit(copy: Path, files: list[str], what: str) -> float:
    """How long a mutant may run ``files``: 3 times what the unmutated code takes, plus 30 s."""
    verdict, baseline, _ = run_wide("", copy, files, None)
    if verdict != "survived":
        sys.exit(f"{what} fail on the unmutated code")
    limit = 3 * baseline + 30
    print(f"   unmutated: passed in {baseline:.0f} s; a mutant may take {limit:.0f} s")
    return limit


def run_wide(
    mutant: str, copy: Path, files: list[str], limit: float | None, *, found: bool = True
) -> tuple[str, float, list[str]]:
    """
    Run ``files`` with ``mutant`` active (``""``: none): its status, the seconds it
    took, and the IDs of the tests that failed or hung, as pytest's summary and
    tests/conftest.py's hang limit name them. ``found=False``: the tests may not
    be found (an ID read off a summary), and then the status is ``"not run"``.
    """
    import extra_mutants as extra  # beside this file, on the path of a script run

    mutated = copy / "mutants"
    status, text, elapsed = extra.run_pytest(
        mutated, mutated / "src", files, limit, {"MUTANT_UNDER_TEST": mutant}
    )
    failed = [match[1] or match[2] for match in FAILED_TEST.finditer(text)]
    if status is None:
        return "timeout", elapsed, failed
    if status == 0:
        return "survived", elapsed, []
    if status in (1, 3):  # tests failed; or pytest failed showing a failure
        return "killed", elapsed, failed
    if status == 2 and mutant and "KeyboardInterrupt" in text:
        return "killed", elapsed, []  # a mutant of the SIGINT handler that lets Ctrl-C through
    if status in (4, 5) and not found:  # usage error, or no tests collected
        return "not run", elapsed, []
    tail = text.strip().splitlines()[-1:]
    sys.exit(f"the wide check of {mutant or 'the unmutated code'} could not run: {tail}")


def widen(path: Path, max_children: int, only: Sequence[str] = ()) -> None:
    """
    Run each mutant that mutmut left alive (and no equivalent lists) against its
    wide selection, each kill again alone; keep the verdicts in the copy's
    ``wide.json``, with the mutated function's hash and the selection's: a later
    run checks again the mutants of changed functions, and the survivors once the
    tests changed. A kill seen side by side is kept as such, with the tests that
    failed, and counts only once confirmed alone: a run stopped in between
    confirms it next time.
    """
    copy = scratch(path)
    record = copy / WIDE_FILE
    data = read_record(copy)
    verdicts: dict[str, list[str]] = data.setdefault("mutants", {})
    hashes = function_hashes(path)
    kinds = ("survived", "no tests", "at import")
    selections = {kind: wide_selection(path.stem, kind) for kind in kinds}
    tests = {status: selection_hash(copy, files) for status, files in selections.items()}
    sound: dict[str, bool] = {}  # whether a test passes alone, unmutated
    limits: dict[tuple[str, ...], float] = {}

    def standing(mutant: str, status: str) -> str:
        """
        What the record holds of the mutant's present code: ``"judged"``, a kill
        to confirm alone (``SIDE_BY_SIDE``), or ``""``: it runs.
        """
        verdict, function, *rest = verdicts.get(mutant, ["", ""])
        if function != hashes.get(function_of(mutant)):
            return ""
        same_tests = rest[:1] == [tests[status]]
        if verdict.endswith(SIDE_BY_SIDE):
            return SIDE_BY_SIDE if same_tests else ""
        return "judged" if verdict != "survived" or same_tests else ""

    left: list[tuple[str, str]] = []
    alive = [(m, status) for m, status in results(path, only) if status in ("survived", "no tests")]
    known = listed(path, (mutant for mutant, _ in alive))
    for mutant, status in alive:
        if mutant in known:
            continue
        kind = "at import" if function_of(mutant).endswith("ǁ__init__") else status
        if standing(mutant, kind) != "judged":
            left.append((mutant, kind))
    for status, files in selections.items():
        pending = [mutant for mutant, left_status in left if left_status == status]
        if not pending:
            continue
        print(f"== wide check of {len(pending)} mutant(s) of {path.stem}: {' '.join(files)}")
        # The kinds' selections are often the same files: their time is measured once.
        key = tuple(sorted(files))
        if key not in limits:
            limits[key] = time_limit(copy, files, f"the wide selection of {path.stem}: {files}")
        limit = limits[key]

        def check(
            mutant: str, files: list[str] = files, limit: float = limit
        ) -> tuple[str, str, list[str]]:
            verdict, _, failed = run_wide(mutant, copy, files, limit)
            return mutant, verdict, failed

        def keep(
            mutant: str, verdict: str, failed: Sequence[str] = (), selection: str = tests[status]
        ) -> None:
            verdicts[mutant] = [verdict, hashes.get(function_of(mutant), ""), selection, *failed]
            record.write_text(json.dumps(data, indent=1), encoding="utf-8")

        def confirm(mutant: str, files: list[str] = files, limit: float = limit) -> str:
            """
            Run a kill seen side by side again, alone: the tests that failed first,
            if each passes alone unmutated; then, unless they fail, the whole selection.
            """
            failed = verdicts[mutant][3:]
            for test in failed:
                if test not in sound:
                    sound[test] = run_wide("", copy, [test], None, found=False)[0] == "survived"
            if failed and all(sound[test] for test in failed):
                verdict = run_wide(mutant, copy, failed, limit)[0]
                if verdict != "survived":
                    return verdict
            return check(mutant, files, limit)[1]

        killed = [mutant for mutant in pending if standing(mutant, status) == SIDE_BY_SIDE]
        fresh = [mutant for mutant in pending if mutant not in killed]
        with ThreadPoolExecutor(max_workers=max_children) as pool:
            for number, (mutant, verdict, failed) in enumerate(pool.map(check, fresh), 1):
                if verdict == "survived":
                    keep(mutant, verdict)
                else:
                    keep(mutant, verdict + SIDE_BY_SIDE, failed)
                    killed.append(mutant)
                print(f"   {number}/{len(fresh)} {verdict:<9}{mutant}", flush=True)
        # Run side by side, the scenarios' deadlines load the machine enough to fail
        # a sound run now and then: a kill counts only if the mutant fails again alone.
        for number, mutant in enumerate(killed, 1):
            verdict = confirm(mutant)
            keep(mutant, verdict)
            print(f"   confirmed alone {number}/{len(killed)} {verdict:<9}{mutant}", flush=True)


def rerun_survivors(
    path: Path,
    command: list[str],
    environment: dict[str, str],
    *,
    resume: bool,
    only: Sequence[str] = (),
) -> None:
    """
    mutmut runs a mutant again only once its function changes, not its tests: so
    once the module's tests changed since the survivors last ran (or, resuming, if
    that is not known), mutmut runs each survivor again by name, against its tests
    as they are now.
    """
    copy = scratch(path)
    record = copy / WIDE_FILE
    data = read_record(copy)
    tests = selection_hash(copy, TESTS[path.stem])
    ran_with = data.get("survivors_ran_with")
    if ran_with != tests and (ran_with is not None or resume):
        alive = [m for m, status in results(path, only) if status in ("survived", "no tests")]
        known = listed(path, alive)
        names = [mutant for mutant in alive if mutant not in known]
        if names:
            print(f"== {len(names)} survivor(s) of {path.stem} run again: the tests changed")
            if subprocess.run([*command, *names], cwd=copy, env=environment).returncode:
                sys.exit(f"tools/mutation.py: mutmut failed on {path.stem}'s survivors")
        data = read_record(copy)
    data["survivors_ran_with"] = tests
    record.write_text(json.dumps(data, indent=1), encoding="utf-8")


def confirm_timeouts(path: Path, max_children: int, only: Sequence[str] = ()) -> None:
    """
    Run each mutant that mutmut timed out, or whose pytest was interrupted,
    again, against the tests mutmut ran it with, in a plain pytest of its own with
    a limit of 3 times their unmutated time plus 30 s; each kill once more alone.
    mutmut's limit is wall time, in a worker beside the others: on a loaded
    machine, tests that wait on deadlines (the watchdog's) outlast it unmutated,
    and a timeout counts only once confirmed. An interrupted pytest counts once a
    plain run ends with ``KeyboardInterrupt`` too (see :func:`run_wide`).
    The verdicts go to ``timeouts`` in the copy's ``wide.json``, with the mutated
    function's hash.
    """
    copy = scratch(path)
    record = copy / WIDE_FILE
    data = read_record(copy)
    verdicts: dict[str, list[str]] = data.setdefault("timeouts", {})
    hashes = function_hashes(path)
    stats = json.loads((copy / "mutants" / "mutmut-stats.json").read_text(encoding="utf-8"))
    tests_of: dict[str, list[str]] = stats["tests_by_mangled_function_name"]
    unconfirmed = [mutant for mutant, status in results(path, only) if status in UNCONFIRMED]
    known = listed(path, unconfirmed)
    pending: dict[str, list[str]] = {}  # by the mutated function's mangled name
    for mutant in unconfirmed:
        if mutant not in known:
            pending.setdefault(mutant.rpartition("__mutmut_")[0], []).append(mutant)

    def keep(mutant: str, verdict: str) -> None:
        verdicts[mutant] = [verdict, hashes.get(function_of(mutant), "")]
        record.write_text(json.dumps(data, indent=1), encoding="utf-8")

    for function, mutants in sorted(pending.items()):
        tests = sorted(tests_of.get(function, []))
        print(f"== {len(mutants)} unconfirmed kill(s) of {function} again: {len(tests)} test(s)")
        limit = time_limit(copy, tests, f"the tests of {function}")

        def check(mutant: str, tests: list[str] = tests, limit: float = limit) -> str:
            return run_wide(mutant, copy, tests, limit)[0]

        with ThreadPoolExecutor(max_workers=max_children) as pool:
            first = list(zip(mutants, pool.map(check, mutants), strict=True))
        for mutant, verdict in first:
            if verdict != "survived":
                verdict = check(mutant)  # alone: a kill made side by side may be the load's
            keep(mutant, verdict)
            print(f"   {verdict:<9}{mutant}", flush=True)


def selection_hash(copy: Path, files: list[str]) -> str:
    """
    The hash of the selection's files, in any order, and of the conftest they all
    run with: a survivor is checked again once it changes.
    """
    digest = hashlib.sha256()
    for name in [*sorted(files), "tests/conftest.py"]:
        digest.update((copy / "mutants" / name).read_bytes())
    return digest.hexdigest()[:12]


def function_hashes(path: Path) -> dict[str, str]:
    data = json.loads(meta_of(path).read_text(encoding="utf-8"))
    hashes: dict[str, str] = data.get("hash_by_function_name", {})
    return hashes


def diff(mutant: str, copy: Path) -> str:
    shown = subprocess.run(
        ["mutmut", "show", mutant], cwd=copy, capture_output=True, text=True, check=False
    )
    return shown.stdout


def report(
    paths: list[Path],
    only: Sequence[str] = (),
    *,
    results_of: Callable[[Path, Sequence[str]], Iterable[tuple[str, str]]] = results,
    patch_of: Callable[[str, Path], str] | None = None,
    keys_of: Callable[[Path], dict[str, Key]] = mutmut_keys,
    ledger: Path | None = None,
) -> int:
    """
    Print the score of each module and every survivor's diff; return 1 when a module
    is under the target or an equivalent listed is stale: the tests kill its mutant,
    or its function's mutants no longer make its change.

    :param results_of: each mutant of a module with its status: mutmut's by default.
    :param patch_of: a survivor's diff; by default, as ``mutmut show`` gives it.
    :param keys_of: the key of every mutant of a module: mutmut's by default.
    :param ledger: the equivalents: tools/mutation-equivalents.toml by default.
    """
    if patch_of is None:
        patch_of = lambda mutant, path: diff(mutant, scratch(path))  # noqa: E731
    known = equivalents(ledger)
    if only:
        print(f"only the mutants matching {' or '.join(only)}")
    stale: list[str] = []
    failing = False
    print(f"{'module':<22}{'mutants':>9}{'killed':>8}{'equiv.':>8}{'survived':>10}{'score':>8}")
    survivors: list[tuple[str, str, str]] = []
    for path in paths:
        total = killed = equivalent = 0
        keys = keys_of(path)
        reported: set[tuple[str, str]] = set()  # (operators, function)
        for mutant, status in results_of(path, only):
            total += 1
            key = keys.get(mutant)
            if key is not None:
                reported.add((key.operators, key.function))
            if status in KILLED:
                killed += 1
                if key in known:
                    stale.append(f"{key}: listed as equivalent, but the tests kill {mutant}")
                continue
            if key in known:
                equivalent += 1
                continue
            survivors.append((mutant, status, patch_of(mutant, path)))
        made = set(keys.values())
        stale.extend(
            f"{key}: no mutant of {key.function} makes this change any more"
            for key in known
            if (key.operators, key.function) in reported and key not in made
        )
        judged = total - equivalent
        score = killed / judged if judged else 1.0
        failing |= score < TARGET
        print(
            f"{path.stem:<22}{total:>9}{killed:>8}{equivalent:>8}{judged - killed:>10}{score:>8.1%}"
        )
    for mutant, status, patch in survivors:
        print(f"\n{patch.strip() or f'# {mutant}: {status}'}")  # mutmut's diff names it
    for line in stale:
        print(f"stale equivalent: {line}")
    unchecked = sum(status == "not checked" for _, status, _ in survivors)
    if unchecked:
        print(f"\n{unchecked} mutant(s) not checked yet: run tools/mutation.py again")
    print(f"\ntarget: every module at {TARGET:.0%} or more, equivalent mutants excluded")
    return 1 if failing or stale else 0


def extra_scratch(path: Path) -> Path:
    """Where the extra mutants of the module at ``path`` run, and their verdicts are kept."""
    return SCRATCH / f"{path.stem}.extra"


def extra_mutants(path: Path, only: Sequence[str]) -> list[Any]:
    """The extra mutants of the module at ``path`` that ``only`` selects."""
    import extra_mutants as extra  # beside this file, on the path of a script run

    made = extra.mutants_of(path.read_text(encoding="utf-8"), path.stem)
    return [mutant for mutant in made if selected(mutant.name, only)]


def extra_key(mutant: Any, tests: Sequence[str]) -> str:
    """What a verdict holds for: the mutated source, and the tests it ran against."""
    digest = hashlib.sha256(mutant.source.encode())
    for name in [*sorted(tests), "tests/conftest.py"]:
        digest.update(name.encode())
        digest.update((ROOT / name.partition("::")[0]).read_bytes())  # a file, or a test in it
    return digest.hexdigest()[:12]


def run_extra(path: Path, only: Sequence[str], tests: Sequence[str]) -> None:
    """
    Run the extra mutants of the module at ``path`` not yet judged on their present
    code and ``tests``, each against ``tests``, in a copy of the working tree; keep
    the verdicts in ``extra.json`` beside it.
    """
    import extra_mutants as extra

    place = extra_scratch(path)
    record = place / "extra.json"
    data: dict[str, Any] = {}
    if record.exists():
        data = json.loads(record.read_text(encoding="utf-8"))
    verdicts: dict[str, list[str]] = data.setdefault("mutants", {})
    mutants = extra_mutants(path, only)
    pending = [m for m in mutants if verdicts.get(m.name, ["", ""])[1] != extra_key(m, tests)]
    print(f"== {len(pending)} of {len(mutants)} extra mutant(s) of {path.stem} to run")
    if not pending:
        return
    tree = place / "tree"
    copy_tree(tree)
    relative = path.relative_to(ROOT).as_posix()
    checked = extra.check(tree, relative, pending, tests)
    for number, (mutant, verdict) in enumerate(checked, 1):
        verdicts[mutant.name] = [verdict, extra_key(mutant, tests)]
        record.write_text(json.dumps(data, indent=1), encoding="utf-8")
        print(f"   {number}/{len(pending)} {verdict:<9}{mutant.name}", flush=True)


def report_extra(
    paths: list[Path], only: Sequence[str] = (), tests: Sequence[str] | None = None
) -> int:
    """
    :func:`report` of the extra mutants: one not judged on its present code and
    tests (``tests``, or its module's in ``TESTS``) is not checked.
    """
    import extra_mutants as extra

    made: dict[str, Any] = {}

    def results_of(path: Path, only: Sequence[str]) -> Iterator[tuple[str, str]]:
        record = extra_scratch(path) / "extra.json"
        data = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
        verdicts: dict[str, list[str]] = data.get("mutants", {})
        for mutant in extra_mutants(path, only):
            made[mutant.name] = mutant
            verdict, key = verdicts.get(mutant.name, ["not checked", ""])
            selection = tests or TESTS[path.stem]
            yield mutant.name, verdict if key == extra_key(mutant, selection) else "not checked"

    def patch_of(name: str, path: Path) -> str:
        relative = path.relative_to(ROOT).as_posix()
        patch: str = made[name].diff(path.read_text(encoding="utf-8"), relative)
        return patch

    def keys_of(path: Path) -> dict[str, Key]:
        source = path.read_text(encoding="utf-8")
        every = extra.mutants_of(source, path.stem)
        return keys_from((mutant.name, source, mutant.source) for mutant in every)

    return report(paths, only, results_of=results_of, patch_of=patch_of, keys_of=keys_of)


def check_equivalents() -> int:
    """
    Print each stale entry of tools/mutation-equivalents.toml, read against every
    module of the package; return 1 if there is one.
    """
    package = ROOT / "src" / "conformkit"
    stale = check(EQUIVALENTS, sorted(package.rglob("*.py")))
    for line in stale:
        print(f"stale equivalent: {line}")
    count = len(equivalents())
    print(f"{count - len(stale)} of {count} equivalents found in {package.relative_to(ROOT)}")
    return 1 if stale else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="only report the last runs")
    parser.add_argument(
        "--check",
        action="store_true",
        help="only report the stale equivalents, read against the sources: no mutant runs",
    )
    parser.add_argument(
        "--module", action="append", metavar="NAME", help="a core module, e.g. _scope (repeatable)"
    )
    parser.add_argument("--max-children", type=int, help="mutmut's worker count")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the module's results: run only the mutants not yet checked, and those "
        "of the functions changed since",
    )
    parser.add_argument(
        "--mutants",
        action="append",
        metavar="PATTERN",
        help="run and count only the mutants whose names match (repeatable), e.g. "
        "'conformkit._runner.execution.xǁExecutionǁrun__mutmut_*' after a change to it",
    )
    parser.add_argument(
        "--operators",
        choices=("mutmut", "extra"),
        default="mutmut",
        help="whose mutants: mutmut's, or the extra ones it does not make (removed await, "
        "removed statement, constant replaced; see tools/extra_mutants.py)",
    )
    parser.add_argument(
        "--tests",
        action="append",
        metavar="FILE",
        help="with --operators extra: run these test files or IDs (repeatable) instead of "
        "the module's selection in TESTS, e.g. the tests that exercise a function",
    )
    arguments = parser.parse_args()
    if arguments.check:
        return check_equivalents()
    only: list[str] = arguments.mutants or []
    paths = source_paths()
    if arguments.operators == "extra":
        # Any module with its tests listed, those mutmut is not run on included.
        listed_modules = {path.stem for path in paths}
        paths += [
            ROOT / "src" / "conformkit" / f"{name}.py"
            for name in TESTS
            if name not in listed_modules
        ]
    if arguments.module:
        by_name = {path.stem: path for path in paths}
        unknown = [name for name in arguments.module if name not in by_name]
        if unknown:
            parser.error(f"not a core module: {', '.join(unknown)} (one of {', '.join(by_name)})")
        paths = [by_name[name] for name in arguments.module]
    if arguments.operators == "extra":
        if not arguments.report:
            for path in paths:
                run_extra(path, only, arguments.tests or TESTS[path.stem])
        return report_extra(paths, only, arguments.tests)
    if not arguments.report:
        if shutil.which("mutmut") is None:
            parser.error("mutmut is not installed: pip install -e '.[test,mutation]'")
        command = ["mutmut", "run"]
        if arguments.max_children:
            command += ["--max-children", str(arguments.max_children)]
        environment = {**os.environ, "CONFORMKIT_MUTATION": "1"}  # see tests/conftest.py
        for path in paths:
            print(f"== mutating {path.relative_to(ROOT)} in {scratch(path).relative_to(ROOT)}")
            copy = prepare(path, resume=arguments.resume)
            if subprocess.run([*command, *only], cwd=copy, env=environment).returncode:
                sys.exit(f"tools/mutation.py: mutmut failed on {path.stem}; see above")
            rerun_survivors(path, command, environment, resume=arguments.resume, only=only)
            confirm_timeouts(path, arguments.max_children or 1, only)
            widen(path, arguments.max_children or 1, only)
    return report(paths, only)


if __name__ == "__main__":
    sys.exit(main())
