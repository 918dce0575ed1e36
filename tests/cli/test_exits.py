"""
What the command line does when a run does not go to its end, and with the files it
writes: a target that exits on import, a case that raises a BaseException, Ctrl-C
and SIGTERM mid-run, outputs that collide, that cannot all be written, whose names
are long or not UTF-8, or that are not regular files.

Each runs ``python -m conformkit`` in a subprocess with a hard timeout, as a user
runs it, except where a failure must be injected in-process.
"""

from __future__ import annotations

import errno
import json
import math
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import text_contract
import xmlschema

from conformkit import cli

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


def as_a_user_starts_it() -> None:
    """
    In the child, before it runs Python: Ctrl-C and SIGTERM at their defaults, as
    in a terminal. A test run started as a background job inherits SIGINT
    ignored (and may have signals blocked), and the tests that send them would
    then wait for what was never delivered.
    """
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start(
    args: Sequence[str | bytes],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    process_group: int | None = None,
) -> subprocess.Popen[str]:
    """Start ``python -m conformkit ARGS`` in ``cwd``, in ``process_group`` if given."""
    return subprocess.Popen(
        [sys.executable, "-m", "conformkit", *args],
        cwd=cwd,
        env=environment(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        preexec_fn=None if sys.platform == "win32" else as_a_user_starts_it,
        process_group=process_group,
    )


def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def wait_to_hear(process: subprocess.Popen[str], line: str, timeout: float = TIMEOUT) -> None:
    """Wait until ``process`` says ``line`` on stderr; kill it, failing, if it is silent."""
    assert process.stderr is not None
    ready, _, _ = select.select([process.stderr], [], [], timeout)
    if not ready:
        process.kill()
        pytest.fail(f"the run never said {line!r}")
    said = process.stderr.readline()
    assert said == line + "\n", said


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


class TestCollidingOutputs:
    """Two outputs naming one file, or an output naming an input: refused before any run."""

    @pytest.fixture
    def project(self, folder: Path) -> Path:
        (folder / "marked.py").write_text(
            'open("imported.txt", "w").close()\nfrom stops import *\n', encoding="utf-8"
        )
        (folder / "report.json").write_text("previous report", encoding="utf-8")
        (folder / "known.toml").write_text("version = 1\n", encoding="utf-8")
        (folder / "sub").mkdir()
        (folder / "link.json").symlink_to("report.json")
        return folder

    @pytest.mark.parametrize(
        ("outputs", "message"),
        [
            (
                ["-o", "report.json", "--format", "junit", "-o", "./report.json"],
                "--output 'report.json' and --output './report.json' name the same file",
            ),
            (
                ["-o", "new.json", "--format", "html", "-o", "sub/../new.json"],
                "--output 'new.json' and --output 'sub/../new.json' name the same file",
            ),
            (
                ["-o", "report.json", "--format", "junit", "-o", "link.json"],
                "--output 'report.json' and --output 'link.json' name the same file",
            ),
            (
                [
                    *("--baseline", "known.toml", "--update-baseline"),
                    *("--format", "json", "-o", "known.toml"),
                ],
                "--output 'known.toml' and --baseline 'known.toml' (which --update-baseline "
                "rewrites) name the same file",
            ),
            (
                ["--baseline", "known.toml", "--format", "json", "-o", "./known.toml"],
                "--output './known.toml' names the baseline 'known.toml', which this command reads",
            ),
            (
                ["--format", "json", "-o", "marked.py"],
                "--output 'marked.py' names the target 'marked.py', which this command reads",
            ),
        ],
        ids=[
            "two spellings",
            "new file",
            "symbolic link",
            "updated baseline",
            "read baseline",
            "target",
        ],
    )
    def test_refused_before_anything_runs(
        self, project: Path, outputs: list[str], message: str
    ) -> None:
        """Status 2, one line; the target was not even imported, and every file is as it was."""
        run = conformkit("run", "marked.py", *outputs, cwd=project)
        assert run.returncode == 2, run.stdout + run.stderr
        one_error_line(run, message)
        assert not (project / "imported.txt").exists()
        assert (project / "report.json").read_text("utf-8") == "previous report"
        assert (project / "known.toml").read_text("utf-8") == "version = 1\n"
        assert not (project / "new.json").exists()
        assert (project / "link.json").is_symlink()
        assert (project / "marked.py").read_text("utf-8").endswith("from stops import *\n")
        assert temporary_files(project) == []

    def test_merge_refuses_to_write_over_a_report_it_reads(self, folder: Path) -> None:
        """`merge 1.json 2.json -o 1.json` would lose a shard's report."""
        for k in (1, 2):
            done = conformkit("run", "stops.py", "--shard", f"{k}/2", "-o", f"{k}.json", cwd=folder)
            assert done.returncode == 0, done.stderr
        first = (folder / "1.json").read_text("utf-8")
        run = conformkit("merge", "1.json", "2.json", "-o", "1.json", cwd=folder)
        assert run.returncode == 2
        one_error_line(run, "--output '1.json' names the report '1.json', which this command reads")
        assert (folder / "1.json").read_text("utf-8") == first


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


class TestSignals:
    """SIGTERM is the first Ctrl-C: cleanups run, files stay whole, nothing is left behind."""

    @pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
    @pytest.mark.parametrize("backend", BACKENDS)
    def test_sigterm_in_a_hung_case(self, folder: Path, backend: str) -> None:
        """Status 143, one line; the cleanups ran; the outputs and the baseline are as they were."""
        (folder / "report.json").write_text("previous report", encoding="utf-8")
        (folder / "known.toml").write_text("version = 1\n", encoding="utf-8")
        process = start(
            [
                *("run", "stops.py", "--backend", backend, "--timeout", "none"),
                *("-o", "report.json", "--format", "junit", "-o", "junit.xml"),
                *("--baseline", "known.toml", "--update-baseline"),
            ],
            folder,
            {"STOP": "hang"},
        )
        wait_to_hear(process, "inside the case")
        process.send_signal(signal.SIGTERM)
        run = finish(process)
        assert run.returncode == 143, run.stdout + run.stderr
        one_error_line(run, "terminated (SIGTERM) after 1 of 3 cases")
        assert (folder / "cleaned.txt").read_text("utf-8").split() == ["cleaned"] * 2
        assert (folder / "report.json").read_text("utf-8") == "previous report"
        assert (folder / "known.toml").read_text("utf-8") == "version = 1\n"
        assert not (folder / "junit.xml").exists()
        assert temporary_files(folder) == []

    @pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
    @pytest.mark.parametrize("backend", BACKENDS)
    def test_ctrl_c_in_a_hung_case_keeps_what_was_judged(self, folder: Path, backend: str) -> None:
        """Status 130, one line; the cleanups ran; the report holds the case judged, and fails."""
        (folder / "report.json").write_text("previous report", encoding="utf-8")
        process = start(
            ["run", "stops.py", "--backend", backend, "--timeout", "none", "-o", "report.json"],
            folder,
            {"STOP": "hang"},
        )
        wait_to_hear(process, "inside the case")
        process.send_signal(signal.SIGINT)
        run = finish(process)
        assert run.returncode == 130, run.stdout + run.stderr
        one_error_line(run, "interrupted after 1 of 3 cases")
        assert (folder / "cleaned.txt").read_text("utf-8").split() == ["cleaned"] * 2
        data = report(folder / "report.json")
        assert (data["verdict"], data["run"]["stopped"]) == ("fails", "interrupted (Ctrl-C)")
        assert judged(data) == ["first"]
        assert data["reports"][0]["planned"] == ["first", "second", "third"]
        assert "verdict: FAILED (the run stopped early: interrupted (Ctrl-C))" in run.stdout
        assert temporary_files(folder) == []


class TestBaseExceptionsInCases:
    """A case's BaseException never ends the command with a traceback and no report."""

    @pytest.mark.parametrize("backend", BACKENDS)
    @pytest.mark.parametrize("stop", ["SystemExit", "GeneratorExit", "Custom"])
    def test_the_report_is_written_and_the_gate_fails(
        self, folder: Path, backend: str, stop: str
    ) -> None:
        """
        The case is failed and the run goes on (status 1), or the run stops with what
        it judged written and one line (status 2); never status 0, never a traceback.
        """
        run = conformkit(
            "run", "stops.py", "--backend", backend, "-o", "report.json", "-q",
            cwd=folder, env={"STOP": stop},
        )  # fmt: skip
        assert run.returncode in (1, 2), run.stdout + run.stderr
        assert "Traceback" not in run.stderr
        assert len(run.stderr.splitlines()) == (run.returncode == 2)
        data = report(folder / "report.json")
        assert data["verdict"] == "fails"
        assert judged(data)[0] == "first"
        assert "cleaned.txt" in os.listdir(folder)

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_a_keyboard_interrupt_stops_the_run_and_keeps_what_was_judged(
        self, folder: Path, backend: str
    ) -> None:
        """Status 130, one line; the report says the run stopped, and holds the first case."""
        run = conformkit(
            "run", "stops.py", "--backend", backend, "-o", "report.json", "--format", "junit",
            "-o", "junit.xml", cwd=folder, env={"STOP": "KeyboardInterrupt"},
        )  # fmt: skip
        assert run.returncode == 130, run.stdout + run.stderr
        one_error_line(run, "interrupted after 1 of 3 cases; the outputs hold the cases judged")
        data = report(folder / "report.json")
        assert (data["verdict"], data["run"]["stopped"]) == ("fails", "interrupted (Ctrl-C)")
        assert judged(data) == ["first"]
        junit = (folder / "junit.xml").read_text("utf-8")
        xmlschema.XMLSchema(str(Path(__file__).with_name("junit.xsd"))).validate(junit)
        assert 'type="stopped"' in junit
        assert "the run stopped early: interrupted (Ctrl-C)" in junit


class TestAllOrNothing:
    """Every output is written to its temporary file before any is renamed into place."""

    def test_a_full_disk_on_the_second_output_leaves_every_file_as_it_was(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The second file cannot be written: status 2, and no file, the first included, changed."""
        first, second = tmp_path / "report.json", tmp_path / "junit.xml"
        baseline = tmp_path / "known.toml"
        for path in (first, second):
            path.write_text("previous", encoding="utf-8")
        baseline.write_text("version = 1\n", encoding="utf-8")
        written: list[int] = []
        fsync = os.fsync

        def full_disk(fd: int) -> None:
            written.append(fd)
            if len(written) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fsync(fd)

        monkeypatch.setattr(os, "fsync", full_disk)
        status = cli.main(
            [
                *("run", "text_contract", "-q", "--require-full"),
                *("--baseline", str(baseline), "--update-baseline"),
                *("-o", str(first), "--format", "junit", "-o", str(second)),
            ]
        )
        assert status == 2
        assert len(written) == 2
        assert first.read_text("utf-8") == second.read_text("utf-8") == "previous"
        assert baseline.read_text("utf-8") == "version = 1\n"
        assert sorted(path.name for path in tmp_path.iterdir()) == [
            "junit.xml",
            "known.toml",
            "report.json",
        ]


class TestPaths:
    """Long names, names that are not UTF-8, and paths that are not regular files."""

    @pytest.mark.parametrize("length", [245, 250, 255])
    def test_long_output_names(self, tmp_path: Path, length: int) -> None:
        """A name as long as the file system takes is written; no temporary file is left."""
        path = tmp_path / ("r" * (length - len(".json")) + ".json")
        assert cli.main(["run", "text_contract", "-q", "-o", str(path)]) == 0
        assert report(path)["verdict"] == "holds"
        assert [child.name for child in tmp_path.iterdir()] == [path.name]

    @pytest.mark.skipif(sys.platform != "linux", reason="needs names that are not UTF-8")
    def test_paths_that_are_not_utf_8(self, folder: Path) -> None:
        """A target and a baseline named with byte 0xff: the report is written, U+FFFD for it."""
        target, baseline = b"caf\xff.py", b"known\xff.toml"
        (folder / os.fsdecode(target)).write_text(STOPS, encoding="utf-8")
        (folder / os.fsdecode(baseline)).write_text("version = 1\n", encoding="utf-8")
        for format, name in (("json", "report.json"), ("junit", "junit.xml"), ("html", "m.html")):
            run = conformkit(
                "run", target, "--baseline", baseline, "--format", format, "-o", name,
                cwd=folder,
            )  # fmt: skip
            assert run.returncode == 0, run.stdout + run.stderr
        data = report(folder / "report.json")
        assert data["run"]["targets"] == ["caf\ufffd.py"]
        assert data["baseline"]["path"] == "known\ufffd.toml"
        assert (folder / "m.html").read_text("utf-8").startswith("<!DOCTYPE html>")

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
    def test_a_fifo_is_written_in_place(self, tmp_path: Path) -> None:
        """-o FIFO: the report goes through the FIFO, which stays a FIFO."""
        fifo = tmp_path / "report.json"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            process = start(
                ["run", "text_contract", "-q", "--format", "json", "-o", "report.json"],
                with_example(tmp_path),
            )
            received = bytearray()
            while True:  # until the writer has gone and everything it wrote was read
                ready, _, _ = select.select([reader], [], [], 0.05)
                chunk = os.read(reader, 65536) if ready else b""
                received += chunk
                if not chunk and process.poll() is not None:
                    break
            run = finish(process)
        finally:
            os.close(reader)
        assert run.returncode == 0, run.stdout + run.stderr
        assert stat.S_ISFIFO(fifo.lstat().st_mode)
        assert json.loads(received)["verdict"] == "holds"
        assert temporary_files(tmp_path) == []

    @pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
    def test_a_character_device_is_written_in_place(self, tmp_path: Path) -> None:
        """-o LINK, a link to /dev/null: written through, and the link stays a link."""
        link = tmp_path / "discarded.json"
        link.symlink_to("/dev/null")
        run = conformkit(
            "run", "text_contract", "-q", "-o", "discarded.json", cwd=with_example(tmp_path)
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert link.is_symlink()
        assert os.readlink(link) == "/dev/null"
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
        assert temporary_files(tmp_path) == []

    @pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
    def test_dev_stdout_is_stdout(self, tmp_path: Path) -> None:
        """-o /dev/stdout (here through a link to it): the format goes to stdout, as without -o."""
        (tmp_path / "out.json").symlink_to("/dev/stdout")
        run = conformkit(
            "run", "text_contract", "--format", "json", "-o", "out.json", cwd=with_example(tmp_path)
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert json.loads(run.stdout)["verdict"] == "holds"
        assert (tmp_path / "out.json").is_symlink()
