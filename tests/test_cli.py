"""The command line: ``conformkit demo``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformkit.cli import main


class TestDemo:
    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_runs_the_bundled_contract(self, backend: str) -> None:
        """`conformkit demo` prints each report and a verdict, and exits 0."""
        completed = subprocess.run(
            [sys.executable, "-m", "conformkit", "demo", "--backend", backend],
            capture_output=True,
            text=True,
        )
        assert completed.returncode == 0, completed.stderr
        lines = completed.stdout.splitlines()
        assert lines[0].startswith("conformkit.demo.text × MemoryText: 5 passed in ")
        assert lines[1].startswith(
            "conformkit.demo.text × AppendOnlyText: 4 passed, 1 unsupported in "
        )
        assert lines[2] == "  UNSUPPORTED delete: an append-only log cannot delete"
        assert lines[-1] == "verdict: every contract holds"

    def test_unknown_commands_are_usage_errors(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown command exits 2 with a one-line usage error."""
        with pytest.raises(SystemExit) as caught:
            main(["frobnicate"])
        assert caught.value.code == 2
        assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
