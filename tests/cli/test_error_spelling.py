"""
One spelling of an exception in every output: its one-line reason where a line
is shown, its full record where everything is.
"""

from __future__ import annotations

import html
import importlib.util
import json
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

import pytest
from test_gates import BACKENDS, conformkit_many, environment, write

import conformkit as ck

STORE = """
class StoreError(Exception):
    pass
"""

CONTRACT = """
import conformkit as ck
from mystore import StoreError


class StoreAPI:
    pass


feature = ck.Feature[StoreAPI]("demo.store", cases=("writes", "reads"))
suite = ck.ContractSuite(feature)


@suite.case
async def writes(api: StoreAPI) -> None:
    error = StoreError("disk full\\nretry later")
    error.add_note("while writing k")
    raise error


@suite.case
async def reads(api: StoreAPI) -> None:
    pass


class MemoryStore(ck.FeatureImplementation[StoreAPI]):
    feature = feature
    coverage = {"writes": ck.Supported(), "reads": ck.Supported()}

    def create(self, scope: ck.FeatureScope) -> StoreAPI:
        return StoreAPI()
"""

LINE = "mystore.StoreError: disk full retry later"
"""The one-line reason: qualified type, the message's lines joined; notes are the record's."""
RECORD = "mystore.StoreError: disk full\nretry later\nwhile writing k\n"
"""How the full record, a traceback, ends: the message as raised, then its notes."""
REASON = f"case 'writes' failed: {LINE} (at contract.py:"
FORMATS = ("text", "json", "junit", "markdown", "html")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write(tmp_path, {"mystore.py": STORE, "contract.py": CONTRACT})


def outputs(folder: Path, backend: str) -> dict[str, str]:
    """What ``conformkit run`` writes in each format, on ``backend``."""
    runs = [
        (("run", "contract.py", "--backend", backend, "--format", kind, "--output", kind), folder)
        for kind in FORMATS
    ]
    for done in conformkit_many(runs):
        assert done.returncode == 1, (done.stdout, done.stderr)  # the gate fails: a case failed
    return {kind: (folder / kind).read_text(encoding="utf-8") for kind in FORMATS}


class TestOneSpelling:
    @pytest.mark.parametrize("backend", BACKENDS)
    def test_every_output_of_the_command_line_spells_it_one_way(
        self, folder: Path, backend: str
    ) -> None:
        """Text, JSON, JUnit, Markdown and HTML show the one line, and the record where full."""
        written = outputs(folder, backend)
        assert f"FAILED writes: {REASON}" in written["text"]
        [result] = [
            result
            for report in json.loads(written["json"])["reports"]
            for result in report["results"]
            if result["case_id"] == "writes"
        ]
        assert result["reason"].startswith(REASON)
        assert result["reason"].endswith(" in writes)")
        assert "\n" not in result["reason"]
        assert result["error"]["type"] == "mystore.StoreError"
        assert result["error"]["message"] == "disk full\nretry later"
        assert result["error"]["traceback"].endswith(RECORD)
        [failure] = ET.fromstring(written["junit"]).iter("failure")
        assert failure.get("message", "").startswith(REASON)
        assert failure.get("type") == "mystore.StoreError"
        assert (failure.text or "").startswith(REASON)
        assert (failure.text or "").endswith(RECORD.rstrip("\n"))
        assert f"**failed**: {REASON}" in written["markdown"]
        assert html.escape(REASON) in written["html"]
        assert html.escape(RECORD, quote=False) in written["html"]

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_the_pytest_plugin_shows_the_record(self, folder: Path, backend: str) -> None:
        """pytest --conformkit fails the case with the record: the message as raised, its note."""
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
             "--conformkit", "contract.py", "--conformkit-backend", backend, "-m", "conformkit"],
            cwd=folder, env=environment(), capture_output=True, text=True, encoding="utf-8",
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 1, (done.stdout, done.stderr)
        shown = [line.removeprefix("E").strip() for line in done.stdout.splitlines()]
        at = shown.index("mystore.StoreError: disk full")
        assert shown[at : at + 3] == RECORD.splitlines(), done.stdout

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_contract_failure_lists_the_one_line(
        self, folder: Path, backend: Literal["asyncio", "trio"], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """ContractFailure lists the case on one line, with its reason's one line."""
        contract = load(folder, monkeypatch)
        report = ck.run_contract_sync(contract.MemoryStore(), contract.suite, backend=backend)
        with pytest.raises(ck.ContractFailure) as raised:  # the case failed
            ck.assert_contract(report)
        offences = str(raised.value).splitlines()[1:]
        assert len(offences) == 1, offences
        assert offences[0].startswith(f"  writes: failed: {REASON}")
        assert offences[0].endswith(" in writes)")


def load(folder: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The contract module of ``folder``, and its store module, imported under their names."""
    modules = {}
    for name in ("mystore", "contract"):
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        modules[name] = module
    return modules["contract"]
