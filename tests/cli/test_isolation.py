"""``conformkit run --check-isolation``: a shared API object fails the gate at concurrency 1."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TARGET = """
from typing import Protocol

import anyio

import conformkit as ck


class Box(Protocol):
    async def get(self) -> int: ...


box = ck.Feature[Box]("tests.cli.box", cases=("first", "second"))
suite = ck.ContractSuite(box)


@suite.case
async def first(api: Box) -> None:
    await anyio.sleep(0.01)
    assert await api.get() == 1


@suite.case
async def second(api: Box) -> None:
    await anyio.sleep(0.01)
    assert await api.get() == 1


class OneBox:
    async def get(self) -> int:
        return 1


SHARED = OneBox()


class SharedBox(ck.FeatureImplementation[Box]):
    feature = box
    coverage = box.coverage()

    def create(self, scope: ck.FeatureScope) -> Box:
        return SHARED
"""


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "shared_box.py").write_text(textwrap.dedent(TARGET))
    return subprocess.run(
        [sys.executable, "-m", "conformkit", "run", "shared_box.py", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,  # a hung run fails here rather than hanging the suite
        check=False,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
class TestCheckIsolation:
    def test_a_shared_object_passes_at_concurrency_1_without_it(
        self, tmp_path: Path, backend: str
    ) -> None:
        """No two scopes are live at once: the gate holds, as before."""
        done = run(tmp_path, "--backend", backend)
        assert done.returncode == 0, done.stdout + done.stderr

    def test_fails_every_case_at_concurrency_1(self, tmp_path: Path, backend: str) -> None:
        """--check-isolation: each case's create stage fails, saying isolation is broken."""
        done = run(tmp_path, "--backend", backend, "--check-isolation", "--format", "json")
        assert done.returncode == 1, done.stderr
        [entry] = json.loads(done.stdout)["reports"]
        reasons = {result["case_id"]: result["reason"] for result in entry["results"]}
        assert set(reasons) == {"first", "second"}
        for case_id, reason in reasons.items():
            assert reason.startswith(
                f"case {case_id!r} failed in create(): TypeError: isolation broken: create() "
                f"returned, for a second API created alongside case {case_id!r} to check "
                f"isolation, the same OneBox object as for case {case_id!r}"
            ), reason

    def test_concurrency_2_sees_it_too(self, tmp_path: Path, backend: str) -> None:
        """At --concurrency 2 the second case is created while the first is live."""
        done = run(tmp_path, "--backend", backend, "--concurrency", "2", "--format", "json")
        assert done.returncode == 1, done.stderr
        [entry] = json.loads(done.stdout)["reports"]
        statuses = {result["case_id"]: result["status"] for result in entry["results"]}
        assert statuses == {"first": "passed", "second": "failed"}
