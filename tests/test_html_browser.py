"""
The HTML report in a real browser: headless Chromium loads it, with no console
error, and shows a grid of 5 implementations by 40 cases readably.

Chromium is driven over the DevTools protocol through a pipe
(``--remote-debugging-pipe``: JSON messages, each ended by a NUL byte, on file
descriptors 3 and 4), so the check needs no package beyond the browser. Without
a browser the tests are skipped, saying why; ``.ci/run`` installs Debian's
``chromium`` when it can.

Run as a script to refresh the docs' image of the report:

    python tests/test_html_browser.py docs/img/html-report.png
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest

import conformkit as ck
from conformkit.cli._html import render_html
from conformkit.cli._matrix import CaseRecord, Entry, Matrix, RunInfo

CHROMIUM_NAMES: Final = ("chromium", "chromium-browser", "google-chrome")
DEADLINE: Final = 60.0
"""Seconds the browser has for everything one test asks of it."""
FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-pipe",
)

RUN = RunInfo(
    "0.1.0",
    "CPython 3.12.0",
    "Linux",
    "asyncio",
    "2026-01-01T00:00:00.000+00:00",
    "2026-01-01T00:00:01.500+00:00",
)


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


_MOVE_FDS: Final = """\
import fcntl, os, sys
read, write = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3])
os.dup2(read, 3)
os.dup2(write, 4)
os.execv(sys.argv[3], sys.argv[3:])
"""


class BrowserError(Exception):
    """The browser answered a command with an error, or not in time."""


class Browser:
    """Headless Chromium, one page, driven over the DevTools protocol through a pipe."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        self.log = profile.parent / "chromium.log"
        # The browser reads commands on fd 3 and writes answers and events on fd 4: a
        # small Python program moves the pipe's ends there, whatever their numbers here.
        command = [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
        with open(self.log, "wb") as log:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _MOVE_FDS,
                    str(to_browser_read),
                    str(from_browser_write),
                    *command,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(to_browser_read, from_browser_write),
            )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._from_browser, selectors.EVENT_READ)
        self._buffer = b""
        self._ids = itertools.count(1)
        self._deadline = time.monotonic() + DEADLINE
        self.events: list[dict[str, Any]] = []
        self._session = ""

    def open_page(self) -> None:
        """Attach to the page the browser opened with, and listen to its console."""
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        attached = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its answer, keeping the events that come meanwhile."""
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if self._session and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._next()
            if answer.get("id") == number:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, method: str) -> dict[str, Any]:
        """Wait for an event, keeping the others."""
        for event in self.events:
            if event["method"] == method:
                return event
        while True:
            message = self._next()
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return message

    def _next(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self._deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise BrowserError(f"the browser did not answer within {DEADLINE:g}s")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError(f"the browser closed its pipe; see {self.log}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def close(self) -> None:
        self._selector.close()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._process.kill()
        self._process.wait(timeout=30)


def console_errors(events: list[dict[str, Any]]) -> list[str]:
    """The console's errors and warnings, the uncaught exceptions and the failed loads."""
    errors = []
    for event in events:
        params = event.get("params", {})
        if event["method"] == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning"):
            errors.append(" ".join(str(arg.get("value", "")) for arg in params["args"]))
        elif event["method"] == "Runtime.exceptionThrown":
            errors.append(params["exceptionDetails"].get("text", "exception"))
        elif event["method"] == "Log.entryAdded" and params["entry"]["level"] in (
            "error",
            "warning",
        ):
            errors.append(params["entry"]["text"])
    return errors


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        reason = (
            "no Chromium to check the HTML report in: install Debian's 'chromium' package "
            "(.ci/run does, as root)"
        )
        print(f"SKIPPED: {reason}", file=sys.stderr)
        pytest.skip(reason)
    opened = Browser(executable, tmp_path / "profile")
    try:
        opened.open_page()
        yield opened
    finally:
        opened.close()


def wide_matrix(implementations: int = 5, cases: int = 40) -> Matrix:
    """A run of many implementations of one feature, each mark and outcome among its cells."""
    case_ids = tuple(
        f"family_of_cases[{number}]" if number % 7 == 0 else f"behaviour_number_{number}_holds"
        for number in range(cases)
    )
    names = [
        "MemoryStoreImplementation",
        "SqliteStoreImplementation",
        "LocalDirectoryStoreImplementation",
        "RemoteObjectStoreImplementation",
        "AppendOnlyLogStoreImplementation",
    ][:implementations]
    entries = []
    for column, name in enumerate(names):
        results = []
        for row, case in enumerate(case_ids):
            record = CaseRecord(case, ck.CaseStatus.PASSED, None, 0.001 * row)
            if column == 3 and row % 9 == 4:
                record = replace(
                    record,
                    status=ck.CaseStatus.FAILED,
                    reason=f"case {case!r} failed: AssertionError: wrote 'value', read back None",
                )
            elif column == 4 and row % 5 == 2:
                record = replace(
                    record,
                    status=ck.CaseStatus.UNSUPPORTED,
                    reason="an append-only log cannot delete",
                )
            elif column == 2 and row == 11:
                record = replace(
                    record,
                    status=ck.CaseStatus.UNAVAILABLE,
                    reason="set EXAMPLE_URL to a test server",
                )
            results.append(record)
        entries.append(Entry("example.store", name, "stores", None, case_ids, tuple(results)))
    other = Entry(
        "example.other",
        "OtherImplementation",
        "others",
        None,
        ("first", "second"),
        (
            CaseRecord("first", ck.CaseStatus.PASSED, None, 0.0),
            CaseRecord("second", ck.CaseStatus.PASSED, None, 0.0),
        ),
    )
    return Matrix(RUN, (*entries, other))


LAYOUT: Final = """(() => {
  const grid = document.querySelector("table.grid");
  const heads = [...grid.querySelectorAll("thead th")];
  const rows = grid.querySelectorAll("tbody tr");
  const marks = [...grid.querySelectorAll("td.mark")];
  return JSON.stringify({
    pageWidth: document.documentElement.scrollWidth,
    viewWidth: window.innerWidth,
    gridWidth: grid.getBoundingClientRect().width,
    clippedHeads: heads.filter((th) => th.scrollWidth > th.clientWidth).length,
    heads: heads.map((th) => th.textContent),
    rows: rows.length,
    tables: document.querySelectorAll("table.grid").length,
    columnsPerTable: [...document.querySelectorAll("table.grid")].map(
      (t) => t.querySelectorAll("thead th").length),
    smallestFont: Math.min(...[...grid.querySelectorAll("th, td")].map(
      (c) => parseFloat(getComputedStyle(c).fontSize))),
    emptyMarks: marks.filter((td) => td.innerText.trim() === "").length,
    tallestRow: Math.max(...[...rows].map((r) => r.getBoundingClientRect().height)),
  });
})()"""


def load(browser: Browser, page: Path, width: int = 1280, height: int = 900) -> None:
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        width=width,
        height=height,
        deviceScaleFactor=1,
        mobile=False,
    )
    browser.send("Page.navigate", url=page.as_uri())
    browser.wait_for("Page.loadEventFired")


def screenshot(browser: Browser, path: Path, *, full_page: bool) -> None:
    options: dict[str, Any] = {"format": "png"}
    if full_page:
        metrics = browser.send("Page.getLayoutMetrics")["cssContentSize"]
        options["clip"] = {
            "x": 0,
            "y": 0,
            "width": metrics["width"],
            "height": metrics["height"],
            "scale": 1,
        }
        options["captureBeyondViewport"] = True
    data = browser.send("Page.captureScreenshot", **options)["data"]
    path.write_bytes(base64.b64decode(data))


class TestHtmlReportInABrowser:
    def test_loads_without_console_errors_and_shows_a_readable_grid(
        self, browser: Browser, tmp_path: Path
    ) -> None:
        """5 implementations by 40 cases: no console error, no overflow, every name whole."""
        page = tmp_path / "report.html"
        page.write_text(render_html(wide_matrix()), encoding="utf-8")
        load(browser, page)
        layout = json.loads(browser.send("Runtime.evaluate", expression=LAYOUT)["result"]["value"])
        shot = tmp_path / "report.png"
        screenshot(browser, shot, full_page=True)
        assert console_errors(browser.events) == []
        assert shot.read_bytes().startswith(b"\x89PNG")
        assert layout["tables"] == 2  # a grid per feature
        assert layout["columnsPerTable"] == [6, 2]  # no column of another feature's
        assert layout["rows"] == 41  # the counts, then the 40 cases
        assert layout["pageWidth"] <= layout["viewWidth"], layout  # no sideways scrolling
        assert layout["clippedHeads"] == 0, layout  # every implementation's name whole
        assert layout["smallestFont"] >= 12, layout
        assert layout["emptyMarks"] == 0, layout
        assert layout["tallestRow"] < 80, layout  # rows stay one line: the grid reads down

    def test_a_console_error_is_seen(self, browser: Browser, tmp_path: Path) -> None:
        """The check can fail: a page that logs an error is caught."""
        page = tmp_path / "broken.html"
        page.write_text(
            "<!DOCTYPE html><html><body><script>console.error('boom')</script>"
            '<img src="missing.png"/></body></html>',
            encoding="utf-8",
        )
        load(browser, page)
        browser.send("Runtime.evaluate", expression="1")  # let the events arrive
        assert "boom" in console_errors(browser.events)


def main(argv: list[str]) -> int:
    """Write a screenshot of the demo's HTML report, as the docs show it."""
    if len(argv) != 1:
        print("usage: python tests/test_html_browser.py OUTPUT.png", file=sys.stderr)
        return 2
    executable = find_chromium()
    if executable is None:
        print("no Chromium: install Debian's 'chromium' package", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "demo.html"
        subprocess.run(
            [sys.executable, "-m", "conformkit", "demo", "--format", "html", "-o", str(page)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        browser = Browser(executable, Path(folder) / "profile")
        try:
            browser.open_page()
            load(browser, page, width=1000, height=900)
            # Open the first cell with a reason, as a reader would select it.
            browser.send(
                "Runtime.evaluate",
                expression='document.querySelector("td.mark details").open = true',
            )
            screenshot(browser, Path(argv[0]), full_page=False)
            errors = console_errors(browser.events)
        finally:
            browser.close()
    if errors:
        print(f"console errors: {errors}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
