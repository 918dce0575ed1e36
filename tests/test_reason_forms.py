"""The reason forms that docs/reports.md shows are the ones a run gives."""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import conformkit as ck
from test_runner import stale_cancellation

REPORTS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "reports.md"


class TextAPI:
    async def read(self) -> None:
        return None

    def size(self) -> int:
        return 0


CASES = ("overrun", "stuck", "group", "bare", "none", "unawaited", "stray", "exits", "cleanup")
feature = ck.Feature[TextAPI]("example.text", cases=CASES)
suite = ck.ContractSuite(feature)


@suite.case
def overrun(api: TextAPI) -> None:
    time.sleep(0.3)  # blocks the event loop past the 0.1s deadline


@suite.case
async def stuck(api: TextAPI) -> None:
    await anyio.sleep(10)


@suite.case
async def group(api: TextAPI) -> None:
    async def boom() -> None:
        raise ValueError("bad key")

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(boom)
        task_group.start_soon(boom)


# The bare assert, in a module of its own: pytest rewrites the asserts of test
# modules, and the documented reason is the one without pytest.
BARE = """
async def bare(api):
    got, expected = "a", "b"
    assert got == expected
"""


def load_bare(folder: Path) -> Any:
    path = folder / "contract.py"
    path.write_text(BARE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("reason_forms_contract", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bare


@suite.case
async def none(api: TextAPI) -> None:
    await api.read()


@suite.case
def unawaited(api: TextAPI) -> None:
    api.read()  # type: ignore[unused-coroutine]  # the defect whose reason is documented


@suite.case
async def stray(api: TextAPI) -> None:
    raise await stale_cancellation()


@suite.case
async def exits(api: TextAPI) -> None:
    sys.exit(0)


@suite.case
async def cleanup(api: TextAPI) -> None:
    pass


class Hostile(ck.FeatureImplementation[TextAPI]):
    feature = feature
    coverage = feature.coverage()

    def __init__(self) -> None:
        self.order = iter(CASES)

    def create(self, scope: ck.FeatureScope) -> Any:
        case = next(self.order)  # cases run one at a time, in order
        if case == "none":
            return None

        def deny() -> None:
            raise PermissionError("denied")

        if case == "cleanup":
            scope.defer(deny)
        return TextAPI()


def documented_reasons() -> list[str]:
    """The example reason of each row of the reasons table, in backticks."""
    text = REPORTS_PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| [^|]+ \| (.*) \|$", text, re.MULTILINE)
    return [example for row in rows for example in re.findall(r"`((?:case|feature) '[^`]+)`", row)]


def shape(reason: str) -> str:
    """A reason with the place and the elided parts left out, to compare with the page."""
    reason = re.sub(r" \((?:at|cancelled in) [^)]*\)", "", reason)
    reason = re.sub(r"; interrupted in [^)]*", "", reason)  # a sleep the watchdog cut short
    reason = re.sub(r"\d+(?:\.\d+)?s\b", "Ns", reason)
    reason = reason.replace("failed: Cancelled raised", "failed: CancelledError raised")  # trio
    return reason.split("...")[0].rstrip()


@pytest.fixture(scope="module")
def full_suite(tmp_path_factory: pytest.TempPathFactory) -> ck.ContractSuite[TextAPI]:
    """
    The module's cases and the bare one, in a suite of their own: pytest sets a module's
    fixture up again when a run (mutmut's, of chosen test IDs) leaves the module and
    comes back, and the module's own suite takes each case only once.
    """
    bare = load_bare(tmp_path_factory.mktemp("bare"))
    others = (overrun, stuck, group, none, unawaited, stray, exits, cleanup)
    return ck.ContractSuite(feature, {"bare": bare, **{case.__name__: case for case in others}})


@pytest.mark.anyio
async def test_every_documented_reason_is_what_a_run_gives(
    full_suite: ck.ContractSuite[TextAPI],
) -> None:
    report = await ck.run_contract(Hostile(), full_suite, timeout=0.1)
    given = {result.case_id: shape(result.reason or "") for result in report.results}
    documented = [shape(example) for example in documented_reasons()]
    for case_id in CASES:
        matches = [doc for doc in documented if f"case '{case_id}'" in doc]
        assert matches, f"docs/reports.md shows no reason for a case like {case_id!r}"
        for doc in matches:
            assert given[case_id].startswith(doc), (case_id, given[case_id], doc)
