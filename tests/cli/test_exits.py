"""
What the command line does when a run does not go to its end, and with the files it
writes: a target that exits on import, a case that raises a BaseException, Ctrl-C
and SIGTERM mid-run, outputs that collide, that cannot all be written, whose names
are long or not UTF-8, or that are not regular files.

Each runs ``python -m conformkit`` in a subprocess with a hard timeout, as a user
runs it, except where a failure must be injected in-process.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import text_contract

BACKENDS = ("asyncio", "trio")
TIMEOUT = 120
"""Seconds a subprocess may take before the test fails instead of hanging CI."""

STOPS = '''
"""Three cases; the middle one does what STOP says. Each cleanup leaves a mark."""

import os
import sys

import anyio

import conformkit as ck

stops = ck.Feature[object]("tests.stops", cases=("first", "second", "third"))
suite = ck.ContractSuite(stops)
STOP = os.environ.get("STOP", "")


class Custom(BaseException):
    """Neither an Exception nor an interrupt."""


@suite.case
def first(api: object) -> None:
    pass


@suite.case
async def second(api: object) -> None:
    if STOP == "hang":
        sys.stderr.write("inside the case\\n")
        sys.stderr.flush()
        await anyio.sleep_forever()
    elif STOP == "SystemExit":
        sys.exit(0)
    elif STOP == "GeneratorExit":
        raise GeneratorExit
    elif STOP == "Custom":
        raise Custom("a custom BaseException")
    elif STOP == "KeyboardInterrupt":
        raise KeyboardInterrupt


@suite.case
def third(api: object) -> None:
    pass


class Stops(ck.FeatureImplementation[object]):
    feature = stops
    coverage = stops.coverage()

    def create(self, scope: ck.FeatureScope) -> object:
        def mark() -> None:
            with open("cleaned.txt", "a", encoding="utf-8") as file:
                file.write("cleaned\\n")

        scope.defer(mark)
        return object()
'''


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The subprocess's environment: this one, less pytest's and colour settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYTEST_")
        and name not in ("NO_COLOR", "FORCE_COLOR", "PYTHONPATH", "STOP")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra or {})
    return env


def start(
    args: Sequence[str | bytes], cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "conformkit", *args],
        cwd=cwd,
        env=environment(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def conformkit(
    *args: str | bytes, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m conformkit ARGS`` in ``cwd`` and wait for it."""
    return finish(start(args, cwd, env))


def one_error_line(run: subprocess.CompletedProcess[str], *expected: str) -> str:
    """The run's stderr is one line, with no traceback, holding every expected text."""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("conformkit: error: "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def temporary_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def with_example(folder: Path) -> Path:
    """The folder, with the docs' example contract in it, for a subprocess to import."""
    shutil.copy(text_contract.__file__, folder)
    return folder


def report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def judged(data: Mapping[str, Any]) -> list[str]:
    return [result["case_id"] for entry in data["reports"] for result in entry["results"]]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "stops.py").write_text(STOPS, encoding="utf-8")
    return tmp_path


class TestTargetsThatExit:
    """A target that calls sys.exit() on import is a bad target: status 2, one line."""

    @pytest.mark.parametrize("command", ["run", "list"])
    @pytest.mark.parametrize("code", ["0", "3", ""])
    def test_sys_exit_on_import(self, tmp_path: Path, command: str, code: str) -> None:
        """sys.exit(0), sys.exit(3), sys.exit(): never 0, never the module's status."""
        (tmp_path / "leaves.py").write_text(f"import sys\nsys.exit({code})\n", encoding="utf-8")
        (tmp_path / "leaving.py").write_text(f"import sys\nsys.exit({code})\n", encoding="utf-8")
        by_file = conformkit(command, "leaves.py", cwd=tmp_path)
        by_name = conformkit(command, "leaving", cwd=tmp_path)
        shown = repr(int(code)) if code else "None"
        for run, target in ((by_file, "leaves.py"), (by_name, "leaving")):
            assert run.returncode == 2, run.stdout + run.stderr
            assert run.stdout == ""
            one_error_line(run, f"cannot import {target!r}", f"sys.exit({shown})")

    def test_a_target_parsing_its_arguments_sees_none_of_conformkits(self, tmp_path: Path) -> None:
        """A script that parses sys.argv on import gets only its own name: it runs."""
        (tmp_path / "script.py").write_text(
            textwrap.dedent(
                """
                import argparse
                import sys

                ARGV = list(sys.argv)
                argparse.ArgumentParser().parse_args()  # exits 2 on conformkit's arguments

                from stops import *
                """
            ),
            encoding="utf-8",
        )
        (tmp_path / "stops.py").write_text(STOPS, encoding="utf-8")
        run = conformkit("run", "script.py", "-q", "--format", "json", cwd=tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stderr == ""
        assert judged(json.loads(run.stdout)) == ["first", "second", "third"]


def setting(path: str, key: str, value: object) -> Any:
    """Set ``key`` of the dict at dotted ``path`` of a report to ``value``."""

    def change(data: dict[str, Any]) -> None:
        place: Any = data
        for part in path.split(".") if path else ():
            place = place[int(part)] if part.isdigit() else place[part]
        place[key] = value

    return change


class TestMalformedReports:
    """merge reads each field by type and range: a malformed report is refused, status 2."""

    @pytest.mark.parametrize(
        ("change", "place"),
        [
            (setting("", "version", True), "schema version True"),
            (setting("reports.0.results.0", "duration", math.nan), "results[0].duration"),
            (setting("reports.0.results.0", "duration", math.inf), "results[0].duration"),
            (setting("reports.0.results.1", "duration", -5), "results[1].duration"),
            (setting("reports.0.results.1", "duration", 10**400), "results[1].duration"),
            (setting("run.shard", "count", 0), "run.shard.count"),
            (setting("run.shard", "index", True), "run.shard.index"),
            (setting("run.shard", "index", 3), "run.shard.index"),
        ],
        ids=["version true", "NaN", "Infinity", "negative", "huge", "no shards", "bool", "3/2"],
    )
    def test_refused_naming_the_file_and_the_place(
        self, folder: Path, change: Any, place: str
    ) -> None:
        """One line naming the file and the field; no merged output is written."""
        done = conformkit("run", "stops.py", "--shard", "1/2", "-o", "1.json", cwd=folder)
        assert done.returncode == 0, done.stderr
        data = report(folder / "1.json")
        change(data)
        # json.dumps writes NaN and Infinity, as the reports that merge must refuse do.
        (folder / "broken.json").write_text(json.dumps(data), encoding="utf-8")
        run = conformkit("merge", "broken.json", "-o", "merged.json", cwd=folder)
        assert run.returncode == 2, run.stdout + run.stderr
        one_error_line(run, "broken.json", place)
        assert not (folder / "merged.json").exists()
