"""
The pure parts of tools/mutation.py: the tests a run names as failed, and the
mutants a pattern selects.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "tools" / "mutation.py"
    spec = importlib.util.spec_from_file_location("conformkit_mutation_tool", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_failed_tests_are_read_off_the_summary_and_the_hang_line(tool: ModuleType) -> None:
    output = "\n".join(
        [
            "tests/test_a.py ..F",
            "=========================== short test summary info ============================",
            "FAILED tests/test_faults.py::test_fault[asyncio-a cleanup disposes of itself]",
            "FAILED tests/test_a.py::TestX::test_y[trio-1] - AssertionError: a - b",
            "ERROR tests/test_b.py",
            "tests/test_c.py::test_z[trio-a b] hung: 30s passed",
            "1 failed, 97 passed in 27.54s",
        ]
    )
    found = [match[1] or match[2] for match in tool.FAILED_TEST.finditer(output)]
    assert found == [
        "tests/test_faults.py::test_fault[asyncio-a cleanup disposes of itself]",
        "tests/test_a.py::TestX::test_y[trio-1]",
        "tests/test_b.py",
        "tests/test_c.py::test_z[trio-a b]",
    ]


def test_a_pattern_selects_the_mutants_of_one_function(tool: ModuleType) -> None:
    pattern = "conformkit._runner.xǁExecutionǁrun__*"
    assert tool.selected("conformkit._runner.xǁExecutionǁrun__mutmut_7", [pattern])
    assert not tool.selected("conformkit._runner.xǁExecutionǁrun_sync__mutmut_7", [pattern])
    assert not tool.selected("conformkit._scope.x_create_api__mutmut_1", [pattern])
    assert tool.selected("conformkit._scope.x_create_api__mutmut_1", [])  # no pattern: every one
