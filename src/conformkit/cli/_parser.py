"""
The command line's arguments, and its entry point.

Parsing needs only :mod:`argparse`: ``conformkit --help`` loads nothing of the
runner, and the commands load what they need once a command has been chosen.
"""

from __future__ import annotations

import argparse

from ._formats import FORMATS

TYPE_CHECKING = False  # as typing's, which `conformkit --help` does not load
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 holds, 1 fails, 2 usage)."""
    arguments = build_parser().parse_args(argv)
    from ._commands import dispatch  # the commands load the runner; --help does not

    return dispatch(arguments)


class _Parser(argparse.ArgumentParser):
    """
    An argument parser whose errors take one line: no usage block above them.

    (Not marked ``typing.final``, which would load :mod:`typing` for ``--help``.)
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _FormatAction(argparse.Action):
    """``--format F``: a new output, to stdout unless an ``--output`` follows."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        outputs: list[list[str | None]] = list(getattr(namespace, self.dest) or [])
        outputs.append([str(values), None])
        setattr(namespace, self.dest, outputs)


class _OutputAction(argparse.Action):
    """``--output FILE``: where the ``--format`` before it goes, or a format of its own."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        outputs: list[list[str | None]] = list(getattr(namespace, self.dest) or [])
        if outputs and outputs[-1][1] is None:
            outputs[-1][1] = str(values)
        else:
            outputs.append([None, str(values)])
        setattr(namespace, self.dest, outputs)


class _VersionAction(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        import importlib.metadata

        try:
            version = importlib.metadata.version("conformkit")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown (not installed)"
        print(f"conformkit {version}")
        parser.exit(0)


class _TimeoutAction(argparse.Action):
    """``--timeout SECONDS``, whose help names the default deadline only when it is shown."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)

    @property
    def help(self) -> str:
        # The default lives with the runner's scopes, which load anyio: worth
        # loading for `conformkit run --help`, not for every parse.
        from .._scope import DEFAULT_TIMEOUT

        return (
            f"deadline of each stage of a case (by default the implementation's own, "
            f"else {DEFAULT_TIMEOUT:g}; 'none')"
        )

    @help.setter
    def help(self, value: str | None) -> None:
        pass  # argparse sets it; the property above says it


def _timeout(text: str) -> float | None:
    from .._util import check_timeout

    if text.strip().lower() == "none":
        return None
    try:
        return check_timeout(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds, or 'none', got {text!r}"
        ) from None


def _stop_timeout(text: str) -> float:
    from .._util import check_timeout

    try:
        seconds = check_timeout(float(text), optional=False)
    except ValueError:
        seconds = None
    if seconds is None:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """
    The parser of every command. Each command's namespace has ``command``, its name;
    without ``--timeout``, it has no ``timeout`` (the runner's default applies).
    """
    parser = _Parser(
        prog="conformkit",
        description="Conformance testing: run contracts against implementations.",
        epilog="Exit status: 0 when the gate holds, 1 when it fails, 2 for a usage error, "
        "130 after Ctrl-C, 143 after SIGTERM.",
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # Each command gets its options from the functions below rather than from
    # `parents=`: every parser argparse builds costs `conformkit --help` time.
    run = commands.add_parser(
        "run",
        help="run the contracts of TARGETs and gate on the outcome",
        description="Run every implementation against every suite of the same feature.",
    )
    _add_debug(run)
    _add_targets(run)
    _add_running(run)
    _add_gate(run, settable=True)
    _add_outputs(run)
    group = run.add_argument_group("baseline")
    group.add_argument(
        "--baseline", metavar="FILE", help="known failing cases (.toml or .json) to tolerate"
    )
    group.add_argument(
        "--update-baseline",
        action="store_true",
        help="rewrite --baseline FILE from this run, keeping the reasons of entries that remain",
    )

    listing = commands.add_parser(
        "list",
        help="show features, cases, implementations and coverage without running anything",
        description="Show the features, cases, implementations and coverage of TARGETs.",
    )
    _add_debug(listing)
    _add_targets(listing)
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.add_argument("-v", "--verbose", action="count", default=0, help="every case")

    demo = commands.add_parser(
        "demo",
        help="run every bundled profile against every bundled implementation",
        description="Run every bundled profile against every bundled implementation.",
    )
    _add_debug(demo)
    _add_running(demo)
    _add_gate(demo, settable=False)
    _add_outputs(demo)

    merging = commands.add_parser(
        "merge",
        help="combine the JSON reports of shards into one report",
        description="Combine JSON reports (of the shards of a run) into one, and gate on it.",
    )
    _add_debug(merging)
    _add_outputs(merging)
    merging.add_argument("reports", nargs="+", metavar="REPORT.json")

    auditing = commands.add_parser(
        "audit",
        help="check that every feature has a suite, and every plugin Protocol a feature",
        description="The suite audit: every feature of PACKAGE has a suite, every Protocol "
        "of --protocols is the API type of a feature, and every exemption is still needed. "
        "Defaults come from [tool.conformkit.audit] in pyproject.toml.",
    )
    _add_debug(auditing)
    auditing.add_argument(
        "features",
        nargs="?",
        metavar="PACKAGE",
        help="the package that defines the features (default: the file's 'features')",
    )
    auditing.add_argument(
        "--suites", metavar="PACKAGE", help="where the suites are (default: PACKAGE)"
    )
    auditing.add_argument(
        "--protocols", metavar="PACKAGE", help="the package whose Protocols need a feature"
    )
    auditing.add_argument(
        "--exempt",
        action="append",
        default=[],
        metavar="ID=REASON",
        help="a feature allowed to have no suite, and why (repeatable)",
    )
    auditing.add_argument(
        "--exempt-protocol",
        dest="exempt_protocols",
        action="append",
        default=[],
        metavar="NAME=REASON",
        help="a Protocol (module.QualName) allowed to have no feature, and why (repeatable)",
    )
    return parser


def _add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error",
    )


def _add_targets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="a module (pkg.contracts), an object in one (pkg.contracts:suite), or a file "
        "(tests/contracts.py, tests/contracts.py:MemoryStore)",
    )
    parser.add_argument(
        "--installed",
        action="store_true",
        help="also run what installed distributions publish in the entry-point group "
        "conformkit.contracts",
    )
    parser.add_argument(
        "-k",
        dest="select",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only the cases whose ID contains PATTERN (repeatable: any of them)",
    )
    parser.add_argument(
        "--shard", metavar="K/N", help="job K of N: a deterministic share of the cases"
    )


def _add_running(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("running")
    group.add_argument(
        "--backend", choices=("asyncio", "trio"), default="asyncio", help="the event loop"
    )
    group.add_argument(
        "--timeout",
        action=_TimeoutAction,
        type=_timeout,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
    )
    group.add_argument(
        "--stop-timeout",
        type=_stop_timeout,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="after SIGTERM or Ctrl-C, how long the cleanups may take before the command "
        "ends at once (default 10)",
    )
    group.add_argument(
        "--concurrency",
        type=_positive_int,
        default=1,
        metavar="N",
        help="how many cases of a pair run at once",
    )
    group.add_argument(
        "--check-isolation",
        action="store_true",
        help="create a second API alongside each case's: a create() that returns the API "
        "of another live scope fails the case, at any --concurrency",
    )


def _add_gate(parser: argparse.ArgumentParser, *, settable: bool) -> None:
    """
    The gate's options and how the cases run for them. Each defaults to
    ``None``: unset, so that ``[tool.conformkit]`` (for ``run``) can set it;
    ``--no-...`` turns off what the file turns on.
    """
    where = " (or [tool.conformkit] in pyproject.toml)" if settable else ""
    group = parser.add_argument_group("gate", f"what a report must show to hold{where}")
    for option, text in (
        ("--require-full", "every case must pass, unsupported too"),
        (
            "--require-exercised",
            "every operation of the API must be called by some case (needs --reject-vacuous)",
        ),
        ("--reject-vacuous", "record the calls of each case; fail a case that made none"),
        ("--probe-unsupported", "run the cases declared unsupported too, marking those that pass"),
        ("--reject-stale", "fail a case declared unsupported that passed when probed"),
    ):
        group.add_argument(option, action=argparse.BooleanOptionalAction, default=None, help=text)


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format",
        action=_FormatAction,
        dest="outputs",
        choices=FORMATS,
        help="text (the default), json, junit, markdown or html; repeatable, each followed "
        "by its --output (stdout without one)",
    )
    group.add_argument(
        "--output",
        "-o",
        action=_OutputAction,
        dest="outputs",
        metavar="FILE",
        help="write the --format before it to FILE (alone, the format follows FILE's suffix: "
        ".txt, .json, .xml, .md, .html)",
    )
    group.add_argument("-q", "--quiet", action="count", default=0, help="say less")
    group.add_argument("-v", "--verbose", action="count", default=0, help="say more")
