"""
Mutation testing of conformkit's core: the score per module, and every surviving mutant.

    pip install -e '.[test,mutation]'
    python tools/mutation.py               # mutate, run the tests, print the scores
    python tools/mutation.py --report      # print the scores of the last run again

mutmut (configured in pyproject.toml, ``[tool.mutmut]``) changes one thing at a time
in the core modules (a comparison, a constant, a removed statement, an ``await``...)
and runs the tests that reach the changed function. A mutant the tests do not notice
survives. Some survivors change nothing observable (an equivalent mutant); each is
listed in tools/mutation-equivalents.toml with the mutated line and a one-line
reason, and left out of the score. An entry whose mutant no longer exists, or whose
line no longer matches, is reported as stale, so the list cannot rot silently.

The score of a module is killed / (mutants - equivalent). Mutants that no test
reaches count as survivors. The run takes tens of minutes on two cores: it is not
part of ``.ci/run``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "tools" / "mutation-equivalents.toml"
TARGET = 0.95
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
STATUS = {
    0: "survived",
    1: "killed",
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
class Equivalent:
    mutant: str
    line: str
    reason: str


def source_paths() -> list[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [ROOT / path for path in config["tool"]["mutmut"]["source_paths"]]


def equivalents() -> dict[str, Equivalent]:
    if not EQUIVALENTS.exists():
        return {}
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    found: dict[str, Equivalent] = {}
    for entry in data.get("equivalent", []):
        missing = {"mutant", "line", "reason"} - set(entry)
        if missing:
            sys.exit(f"{EQUIVALENTS.name}: an entry lacks {', '.join(sorted(missing))}: {entry}")
        found[entry["mutant"]] = Equivalent(entry["mutant"], entry["line"], entry["reason"])
    return found


def results(path: Path) -> Iterator[tuple[str, str]]:
    """Each mutant of a source file with its status, from mutmut's record of the last run."""
    meta = ROOT / "mutants" / path.relative_to(ROOT).with_name(path.name + ".meta")
    if not meta.exists():
        sys.exit(f"no results for {path.relative_to(ROOT)}: run tools/mutation.py first")
    data = json.loads(meta.read_text(encoding="utf-8"))
    for mutant, code in sorted(data["exit_code_by_key"].items()):
        yield mutant, STATUS.get(code, "not checked" if code is None else "suspicious")


def diff(mutant: str) -> str:
    shown = subprocess.run(
        ["mutmut", "show", mutant], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return shown.stdout


def mutated_line(patch: str) -> str:
    """The first line the mutant adds, without the ``+`` and indentation."""
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            return line[1:].strip()
    return ""


def report() -> int:
    known = equivalents()
    seen: set[str] = set()
    stale: list[str] = []
    failing = False
    print(f"{'module':<22}{'mutants':>9}{'killed':>8}{'equiv.':>8}{'survived':>10}{'score':>8}")
    survivors: list[tuple[str, str, str]] = []
    for path in source_paths():
        total = killed = equivalent = 0
        for mutant, status in results(path):
            total += 1
            if status in KILLED:
                killed += 1
                if mutant in known:
                    stale.append(f"{mutant}: listed as equivalent, but the tests kill it")
                    seen.add(mutant)
                continue
            patch = diff(mutant)
            if mutant in known:
                seen.add(mutant)
                if known[mutant].line != mutated_line(patch):
                    stale.append(
                        f"{mutant}: the listed line {known[mutant].line!r} is now "
                        f"{mutated_line(patch)!r}; review it again"
                    )
                else:
                    equivalent += 1
                    continue
            survivors.append((mutant, status, patch))
        judged = total - equivalent
        score = killed / judged if judged else 1.0
        failing |= score < TARGET
        print(
            f"{path.stem:<22}{total:>9}{killed:>8}{equivalent:>8}{judged - killed:>10}{score:>8.1%}"
        )
    stale.extend(f"{name}: no such mutant any more" for name in sorted(set(known) - seen))
    for mutant, status, patch in survivors:
        print(f"\n{patch.strip() or f'# {mutant}: {status}'}")  # mutmut's diff names it
    for line in stale:
        print(f"stale equivalent: {line}")
    unchecked = sum(status == "not checked" for _, status, _ in survivors)
    if unchecked:
        print(f"\n{unchecked} mutant(s) not checked yet: run tools/mutation.py again")
    print(f"\ntarget: every module at {TARGET:.0%} or more, equivalent mutants excluded")
    return 1 if failing or stale else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="only report the last run")
    parser.add_argument("--max-children", type=int, help="mutmut's worker count")
    arguments = parser.parse_args()
    if not arguments.report:
        command = ["mutmut", "run"]
        if arguments.max_children:
            command += ["--max-children", str(arguments.max_children)]
        environment = {**os.environ, "CONFORMKIT_MUTATION": "1"}  # see tests/conftest.py
        subprocess.run(command, cwd=ROOT, env=environment, check=False)
    return report()


if __name__ == "__main__":
    sys.exit(main())
