"""The parser: what parsing loads, and the help it gives."""

from __future__ import annotations

import subprocess
import sys

import pytest

import conformkit as ck
from conformkit._collect import Shard
from conformkit._exceptions import UsageError
from conformkit.cli import main
from conformkit.cli._commands import parse_shard
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


class TestShard:
    """--shard K/N: job K of N, counting from 1."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3 / 3 ", Shard(3, 3))],
    )
    def test_parse(self, text: str, expected: Shard) -> None:
        """K/N parses with 1 <= K <= N."""
        assert parse_shard(text) == expected

    @pytest.mark.parametrize("text", ["3/2", "0/2", "1/0", "1", "a/b", "-1/2", "1/2/3"])
    def test_bad_shards_are_refused(self, text: str) -> None:
        """Anything else is a usage error that quotes the value."""
        with pytest.raises(UsageError, match=r"--shard"):
            parse_shard(text)


class TestVersion:
    """``conformkit --version``."""

    def test_prints_the_installed_version(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--version prints the distribution's version on stdout and exits 0, running nothing."""
        import importlib.metadata

        with pytest.raises(SystemExit) as caught:
            main(["--version"])
        assert caught.value.code == 0
        out, err = capsys.readouterr()
        assert out == f"conformkit {importlib.metadata.version('conformkit')}\n"
        assert err == ""

    def test_without_the_distribution(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Run from a source tree that was never installed, it says so rather than failing."""
        import importlib.metadata

        def missing(name: str) -> str:
            raise importlib.metadata.PackageNotFoundError(name)

        monkeypatch.setattr(importlib.metadata, "version", missing)
        with pytest.raises(SystemExit) as caught:
            main(["--version"])
        assert caught.value.code == 0
        assert capsys.readouterr().out == "conformkit unknown (not installed)\n"

    def test_is_in_the_help(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The top-level help lists --version."""
        with pytest.raises(SystemExit):
            main(["--help"])
        assert "--version" in capsys.readouterr().out
