"""The parser: what parsing loads, and the help it gives."""

from __future__ import annotations

import subprocess
import sys

import pytest

import conformkit as ck
from conformkit.cli import main
from conformkit.cli._parser import build_parser


class TestParser:
    """Parsing the command line, before any command runs."""

    def test_help_loads_no_command(self) -> None:
        """`conformkit --help` loads neither the commands, the formats nor their libraries."""
        code = (
            "import sys\n"
            "from conformkit.cli import main\n"
            "try:\n"
            "    main(['--help'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "names = ('conformkit.cli._commands', 'conformkit.cli._matrix', "
            "'conformkit.cli._outcome', 'conformkit.cli._text', 'conformkit.cli._json', "
            "'tomllib', 'importlib.metadata', 'tempfile', 'platform')\n"
            "print(sorted(name for name in names if name in sys.modules))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert done.stdout.splitlines()[-1] == "[]"

    def test_the_timeout_names_its_default(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`run --help` says the default deadline; without --timeout the namespace has none."""
        with pytest.raises(SystemExit) as caught:
            main(["run", "--help"])
        assert caught.value.code == 0
        default = f"(by default the implementation's own, else {ck.DEFAULT_TIMEOUT:g}; 'none')"
        assert default in " ".join(capsys.readouterr().out.split())
        arguments = build_parser().parse_args(["run", "x.py"])
        assert not hasattr(arguments, "timeout")
        assert build_parser().parse_args(["run", "x.py", "--timeout", "none"]).timeout is None
