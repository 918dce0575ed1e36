"""
How ``conformkit run`` ends after SIGTERM and Ctrl-C whatever the code under test
does, what it leaves in its outputs, and where it writes.

Each scenario runs ``python -m conformkit run`` in a subprocess of its own process
group, signalled once the code under test says on stderr that it is where the
scenario wants it; a hard timeout kills the group, so a scenario that hangs fails
instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from test_exits import (
    BACKENDS,
    judged,
    one_error_line,
    report,
    start,
    temporary_files,
    wait_to_hear,
)

from conformkit import cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

HARD_TIMEOUT = 120.0
"""Seconds a scenario's process group may take before it is killed and the test fails."""

HOSTILE = '''
"""Three cases; the middle one, or its cleanup, misbehaves as STOP says."""

import io
import os
import sys
import threading

import anyio

import conformkit as ck

hostile = ck.Feature[object]("tests.hostile", cases=("first", "second", "third"))
suite = ck.ContractSuite(hostile)
STOP = os.environ.get("STOP", "")
REAL_STDERR = sys.stderr


def say(text: str) -> None:
    """Tell the test where the run is, on the stderr the process started with."""
    REAL_STDERR.write(text + "\\n")
    REAL_STDERR.flush()


async def deaf() -> None:
    """Wait forever, swallowing every cancellation and interrupt."""
    while True:
        try:
            await anyio.sleep_forever()
        except BaseException:
            pass


@suite.case
def first(api: object) -> None:
    pass


@suite.case
async def second(api: object) -> None:
    if STOP == "streams":
        sys.stdout = io.StringIO()
        sys.stderr = io.StringIO()
        return
    if STOP == "streams-hang":
        sys.stdout = io.StringIO()
        sys.stderr = io.StringIO()
    say("inside the case")
    if STOP in ("hang", "deaf-cleanup", "shielded-cleanup", "streams-hang"):
        await anyio.sleep_forever()
    elif STOP == "deaf":
        await deaf()
    elif STOP == "thread":
        await anyio.to_thread.run_sync(threading.Event().wait)


@suite.case
def third(api: object) -> None:
    pass


class Hostile(ck.FeatureImplementation[object]):
    feature = hostile
    coverage = hostile.coverage()

    def create(self, scope: ck.FeatureScope) -> object:
        def mark() -> None:
            with open("cleaned.txt", "a", encoding="utf-8") as file:
                file.write("cleaned\\n")

        scope.defer(mark)
        if STOP in ("deaf-cleanup", "shielded-cleanup"):

            async def endless_cleanup() -> None:
                if not os.path.exists("cleaned.txt"):
                    return  # the first case's
                say("inside the cleanup")
                with anyio.CancelScope(shield=True):
                    if STOP == "deaf-cleanup":
                        await deaf()
                    await anyio.sleep_forever()

            scope.defer(endless_cleanup)
        return object()
'''

PREVIOUS = "previous report"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "hostile.py").write_text(HOSTILE, encoding="utf-8")
    (tmp_path / "report.json").write_text(PREVIOUS, encoding="utf-8")
    return tmp_path


class Run:
    """A ``conformkit run`` in its own process group, killed whole if it outlives the test."""

    def __init__(self, folder: Path, args: Sequence[str], stop: str) -> None:
        self.process = start(["run", "hostile.py", *args], folder, {"STOP": stop}, process_group=0)
        self.deadline = time.monotonic() + HARD_TIMEOUT

    def wait_for(self, line: str) -> None:
        """Wait until the code under test says ``line`` on stderr."""
        wait_to_hear(self.process, line, max(self.deadline - time.monotonic(), 0))

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def signalled(
        self, first: int, *later: int, cleanup: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """
        Send ``first`` once the run is inside the case; with ``cleanup`` or ``later``,
        wait until it is inside the endless cleanup and send each of ``later``; and
        wait for the run to end.
        """
        self.wait_for("inside the case")
        self.signal(first)
        if cleanup or later:
            self.wait_for("inside the cleanup")
        for number in later:
            self.signal(number)
        return self.finish()

    def finish(self) -> subprocess.CompletedProcess[str]:
        try:
            stdout, stderr = self.process.communicate(
                timeout=max(self.deadline - time.monotonic(), 1)
            )
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("the run did not end: its process group was killed")
        return subprocess.CompletedProcess(
            self.process.args, self.process.returncode, stdout, stderr
        )

    def kill(self) -> None:
        """Kill what is left of its process group, and close its pipes."""
        with contextlib.suppress(ProcessLookupError):  # the group has ended
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate()


@pytest.fixture
def runs() -> Iterator[list[Run]]:
    """The runs a test starts; any still running at its end is killed, with its group."""
    started: list[Run] = []
    yield started
    for run in started:
        run.kill()


def hostile_run(runs: list[Run], folder: Path, backend: str, stop: str, *extra: str) -> Run:
    run = Run(
        folder,
        ["--backend", backend, "-o", "report.json", "--format", "junit", "-o", "junit.xml", *extra],
        stop,
    )
    runs.append(run)
    return run


def ended(done: subprocess.CompletedProcess[str], status: int, *expected: str) -> None:
    """The run ended with ``status``, its stderr the command's one line holding every text."""
    assert done.returncode == status, done.stdout + done.stderr
    one_error_line(done, *expected)


def untouched(folder: Path) -> None:
    """Every output file is as it was, and no temporary file is left."""
    assert (folder / "report.json").read_text("utf-8") == PREVIOUS
    assert not (folder / "junit.xml").exists()
    assert temporary_files(folder) == []


@pytest.mark.parametrize("backend", BACKENDS)
class TestSigterm:
    """SIGTERM ends the command line: status 143, one line, every output as it was."""

    def test_a_stage_stuck_after_sigterm_leaves_the_outputs_as_they_were(
        self, folder: Path, backend: str, runs: list[Run]
    ) -> None:
        """A case deaf to its interrupt is stuck: the run still ends 143, writing no output."""
        run = hostile_run(runs, folder, backend, "deaf", "--timeout", "0.2")
        ended(run.signalled(signal.SIGTERM), 143, "terminated (SIGTERM) after 1 of 3 cases")
        untouched(folder)

    def test_the_stop_timeout_ends_cleanups_that_never_end(
        self, folder: Path, backend: str, runs: list[Run]
    ) -> None:
        """A cleanup deaf to every interrupt, no deadline: the stop timeout ends the run."""
        run = hostile_run(
            runs, folder, backend, "deaf-cleanup", "--timeout", "none", "--stop-timeout", "0.2"
        )
        ended(
            run.signalled(signal.SIGTERM, cleanup=True),
            143,
            "terminated (SIGTERM) after 1 of 3 cases",
            "the cleanups did not end within the 0.2s stop timeout",
        )
        untouched(folder)

    @pytest.mark.parametrize("cleanup", ["deaf-cleanup", "shielded-cleanup"])
    def test_a_second_sigterm_ends_the_run_at_once(
        self, folder: Path, backend: str, runs: list[Run], cleanup: str
    ) -> None:
        """
        A second SIGTERM while a cleanup never ends (deaf to interrupts, or waiting
        in a shielded scope): 143 at once, one line, nothing written.
        """
        run = hostile_run(runs, folder, backend, cleanup, "--timeout", "none")
        ended(
            run.signalled(signal.SIGTERM, signal.SIGTERM),
            143,
            "terminated (SIGTERM) after 1 of 3 cases",
            "a second SIGTERM stopped the cleanups",
        )
        untouched(folder)

    def test_a_case_awaiting_a_thread_that_never_returns(
        self, folder: Path, backend: str, runs: list[Run]
    ) -> None:
        """Nothing interrupts the wait, nor the thread: the stop timeout ends the process."""
        run = hostile_run(
            runs, folder, backend, "thread", "--timeout", "none", "--stop-timeout", "0.2"
        )
        ended(run.signalled(signal.SIGTERM), 143, "terminated (SIGTERM) after 1 of 3 cases")
        untouched(folder)

    def test_the_line_goes_to_the_stderr_the_command_started_with(
        self, folder: Path, backend: str, runs: list[Run]
    ) -> None:
        """A case that replaced sys.stderr does not swallow the command's last line."""
        run = hostile_run(runs, folder, backend, "streams-hang", "--timeout", "none")
        ended(run.signalled(signal.SIGTERM), 143, "terminated (SIGTERM) after 1 of 3 cases")
        untouched(folder)


def holds_the_cases_judged(folder: Path, *cases: str) -> dict[str, Any]:
    """The report was written, holds exactly the cases judged, and fails; no temporary file."""
    data = report(folder / "report.json")
    assert data["verdict"] == "fails"
    assert judged(data) == list(cases)
    assert (folder / "junit.xml").exists()
    assert temporary_files(folder) == []
    return data


@pytest.mark.parametrize("backend", BACKENDS)
class TestCtrlC:
    """Ctrl-C ends the command line: status 130, one line, the outputs hold the cases judged."""

    def test_a_stage_stuck_after_ctrl_c(self, folder: Path, backend: str, runs: list[Run]) -> None:
        """A case deaf to its interrupt is stuck: the run ends 130, the stuck case judged."""
        run = hostile_run(runs, folder, backend, "deaf", "--timeout", "0.2")
        ended(
            run.signalled(signal.SIGINT),
            130,
            "interrupted after",
            "the outputs hold the cases judged",
        )
        holds_the_cases_judged(folder, "first", "second")

    def test_the_stop_timeout_ends_cleanups_that_never_end(
        self, folder: Path, backend: str, runs: list[Run]
    ) -> None:
        """A cleanup deaf to every interrupt, no deadline: the stop timeout ends the run."""
        run = hostile_run(
            runs, folder, backend, "deaf-cleanup", "--timeout", "none", "--stop-timeout", "0.2"
        )
        done = run.signalled(signal.SIGINT, cleanup=True)
        ended(
            done,
            130,
            "interrupted after 1 of 3 cases",
            "the cleanups did not end within the 0.2s stop timeout",
        )
        data = holds_the_cases_judged(folder, "first")
        assert data["run"]["stopped"] == "interrupted (Ctrl-C)"
        assert "verdict: FAILED" in done.stdout

    @pytest.mark.parametrize("cleanup", ["deaf-cleanup", "shielded-cleanup"])
    def test_a_second_ctrl_c_ends_the_run_at_once(
        self, folder: Path, backend: str, runs: list[Run], cleanup: str
    ) -> None:
        """
        A second Ctrl-C while a cleanup never ends (deaf to interrupts, or waiting
        in a shielded scope): 130 at once, one line, the outputs of what was judged.
        """
        run = hostile_run(runs, folder, backend, cleanup, "--timeout", "none")
        ended(
            run.signalled(signal.SIGINT, signal.SIGINT),
            130,
            "interrupted after 1 of 3 cases",
            "a second Ctrl-C stopped the cleanups",
        )
        holds_the_cases_judged(folder, "first")

    def test_sigterm_after_ctrl_c_ends_the_run_at_once(
        self, folder: Path, backend: str, runs: list[Run]
    ) -> None:
        """SIGTERM while the cleanups after Ctrl-C never end: 143 at once, nothing written."""
        run = hostile_run(runs, folder, backend, "deaf-cleanup", "--timeout", "none")
        ended(
            run.signalled(signal.SIGINT, signal.SIGTERM),
            143,
            "terminated (SIGTERM) after 1 of 3 cases",
            "SIGTERM after Ctrl-C stopped the cleanups",
        )
        untouched(folder)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_case_that_replaces_the_streams_silences_nothing(
    folder: Path, backend: str, runs: list[Run]
) -> None:
    """The summary goes to the stdout the command started with, whatever a case put there."""
    run = hostile_run(runs, folder, backend, "streams")
    done = run.finish()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: every contract holds" in done.stdout, done.stdout
    assert done.stderr == ""
    assert report(folder / "report.json")["verdict"] == "holds"


@pytest.mark.parametrize(
    ("number", "handler", "status", "line"),
    [
        (signal.SIGTERM, signal.SIG_DFL, 143, "terminated (SIGTERM); every output file is written"),
        (signal.SIGINT, signal.default_int_handler, 130, "interrupted"),
    ],
    ids=["SIGTERM", "SIGINT"],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_signal_between_two_renames_leaves_every_output_whole(
    tmp_path: Path,
    backend: str,
    number: int,
    handler: Any,
    status: int,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """
    CPython runs a signal's handler in the main thread at any instruction, even
    while that thread blocks the signal, as soon as another thread (the watchdog,
    a worker) received it: the outputs must still be all old or all new.
    """
    first, second = tmp_path / "report.json", tmp_path / "junit.xml"
    for path in (first, second):
        path.write_text("previous", encoding="utf-8")
    replace = os.replace
    renamed: list[str] = []

    def signalled_replace(source: str, destination: str) -> None:
        replace(source, destination)
        renamed.append(destination)
        if len(renamed) == 1:  # as if another thread had received the signal just now
            handle = signal.getsignal(number)
            assert callable(handle)
            handle(number, None)

    monkeypatch.setattr(os, "replace", signalled_replace)
    # As in a terminal: a test run started in the background may ignore signals.
    previous = signal.signal(number, handler)
    try:
        exit_status = cli.main(
            [
                *("run", "text_contract", "-q", "--backend", backend),
                *("-o", str(first), "--format", "junit", "-o", str(second)),
            ]
        )
    finally:
        signal.signal(number, previous)
    assert exit_status == status
    assert len(renamed) == 2
    assert report(first)["verdict"] == "holds"
    assert second.read_text("utf-8").startswith("<?xml")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["junit.xml", "report.json"]
    assert capsys.readouterr().err == f"conformkit: error: {line}\n"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "none", "soon"])
def test_a_stop_timeout_is_a_positive_number_of_seconds(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before anything runs, on one line naming the value."""
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "text_contract", "--stop-timeout", value])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert f"expected a positive number of seconds, got {value!r}" in lines[0]
