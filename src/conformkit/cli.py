"""
The ``conformkit`` command line: ``run``, ``list``, ``demo`` and ``merge``.

Exit status: 0 when the gate holds, 1 when it fails, 2 for a usage or definition
error, which is reported on one line of stderr (``--debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import shutil
import sys
import tempfile
import traceback
import types
from collections.abc import Sequence
from time import monotonic
from typing import Any, Final, NoReturn, TextIO, final

import anyio

from ._baseline import Baseline, apply_baseline, load_baseline, render_baseline, update_baseline
from ._collect import (
    Pair,
    collect,
    collect_modules,
    parse_shard,
    select,
)
from ._exceptions import ContractDefinitionError, UsageError
from ._feature import Unsupported
from ._formats import FORMATS, SUFFIXES, printable, render
from ._matrix import Matrix, Progress, from_json, merge, now, run_information, run_pairs
from ._runner import check_backend
from ._scope import DEFAULT_TIMEOUT
from ._util import check_timeout, error_line

__all__ = ["main"]

_PROGRESS_AFTER: Final = 0.5
"""Seconds a run lasts before a terminal gets a progress line."""


# -- the parser ----------------------------------------------------------------------


@final
class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors take one line: no usage block above them."""

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


def _timeout(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None
    try:
        return check_timeout(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds, or 'none', got {text!r}"
        ) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="conformkit",
        description="Conformance testing: run contracts against implementations.",
        epilog="Exit status: 0 when the gate holds, 1 when it fails, 2 for a usage error.",
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")

    common = _Parser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error",
    )

    outputs = _Parser(add_help=False)
    group = outputs.add_argument_group("output")
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

    running = _Parser(add_help=False)
    group = running.add_argument_group("running")
    group.add_argument(
        "--backend", choices=("asyncio", "trio"), default="asyncio", help="the event loop"
    )
    group.add_argument(
        "--timeout",
        type=_timeout,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"deadline of each stage of a case ({DEFAULT_TIMEOUT:g} by default; 'none')",
    )
    group.add_argument(
        "--concurrency",
        type=_positive_int,
        default=1,
        metavar="N",
        help="how many cases of a pair run at once",
    )
    group.add_argument(
        "--require-full", action="store_true", help="every case must pass, unsupported too"
    )

    targets = _Parser(add_help=False)
    targets.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="a module (pkg.contracts), an object in one (pkg.contracts:suite), or a file "
        "(tests/contracts.py, tests/contracts.py:MemoryStore)",
    )
    targets.add_argument(
        "--installed",
        action="store_true",
        help="also run what installed distributions publish in the entry-point group "
        "conformkit.contracts",
    )
    targets.add_argument(
        "-k",
        dest="select",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only the cases whose ID contains PATTERN (repeatable: any of them)",
    )
    targets.add_argument(
        "--shard", metavar="K/N", help="job K of N: a deterministic share of the cases"
    )

    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        parents=[common, targets, running, outputs],
        help="run the contracts of TARGETs and gate on the outcome",
        description="Run every implementation against every suite of the same feature.",
    )
    group = run.add_argument_group("baseline")
    group.add_argument(
        "--baseline", metavar="FILE", help="known failing cases (.toml or .json) to tolerate"
    )
    group.add_argument(
        "--update-baseline",
        action="store_true",
        help="rewrite --baseline FILE from this run, keeping the reasons of entries that remain",
    )
    run.set_defaults(handler=_run_command)

    listing = commands.add_parser(
        "list",
        parents=[common, targets],
        help="show features, cases, implementations and coverage without running anything",
        description="Show the features, cases, implementations and coverage of TARGETs.",
    )
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.add_argument("-v", "--verbose", action="count", default=0, help="every case")
    listing.set_defaults(handler=_list_command)

    demo = commands.add_parser(
        "demo",
        parents=[common, running, outputs],
        help="run every bundled profile against every bundled implementation",
        description="Run every bundled profile against every bundled implementation.",
    )
    demo.set_defaults(handler=_demo_command)

    merging = commands.add_parser(
        "merge",
        parents=[common, outputs],
        help="combine the JSON reports of shards into one report",
        description="Combine JSON reports (of the shards of a run) into one, and gate on it.",
    )
    merging.add_argument("reports", nargs="+", metavar="REPORT.json")
    merging.set_defaults(handler=_merge_command)
    return parser


# -- entry point ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 holds, 1 fails, 2 usage)."""
    arguments = _parser().parse_args(argv)
    debug: bool = arguments.debug
    try:
        status: int = arguments.handler(arguments)
    except (UsageError, ContractDefinitionError) as error:
        return _error(error, debug, str(error))
    except KeyboardInterrupt as error:
        return _error(error, debug, "interrupted", status=130)
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is not None:
            return _error(group, debug, "interrupted", status=130)
        return _error(group, debug, f"unexpected {error_line(group)}")
    except Exception as error:
        return _error(error, debug, f"unexpected {error_line(error)}")
    return status


def _error(error: BaseException, debug: bool, message: str, *, status: int = 2) -> int:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    hint = "" if debug else " (--debug shows the traceback)"
    one_line = " ".join(printable(message).splitlines())
    _write(sys.stderr, f"conformkit: error: {one_line}{hint if status != 130 else ''}\n")
    return status


def _write(stream: TextIO, text: str) -> None:
    """Write to a console whatever its encoding: what it cannot show, it gets escaped."""
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            encoding = stream.encoding or "utf-8"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        stream.flush()
    except BrokenPipeError:
        # The reader has gone (`conformkit run ... | head`): it wants no more text,
        # but the exit status still gives the verdict. Later writes go nowhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


# -- outputs -------------------------------------------------------------------------


@final
class _Destination:
    """
    A file to write atomically: a temporary file beside it, created up front so an
    unwritable path fails before anything runs, then renamed over it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        if os.path.isdir(path):
            raise UsageError(f"cannot write {path!r}: it is a directory")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise UsageError(f"cannot write {path!r}: no such directory {directory!r}")
        try:
            fd, self.temporary = tempfile.mkstemp(
                dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
            )
        except OSError as error:
            raise UsageError(f"cannot write {path!r}: {error.strerror or error}") from error
        os.close(fd)
        self.done = False

    def commit(self, text: str) -> None:
        try:
            with open(self.temporary, "w", encoding="utf-8", newline="\n") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(self.temporary, _mode_for(self.path))
            os.replace(self.temporary, self.path)
        except OSError as error:
            self.discard()
            raise UsageError(f"cannot write {self.path!r}: {error.strerror or error}") from error
        self.done = True

    def discard(self) -> None:
        if not self.done:
            self.done = True
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temporary)


def _mode_for(path: str) -> int:
    """The mode of the file being replaced, or what a new file gets under the umask."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@final
class _Outputs:
    """The formats a command writes, and where: files, and at most one on stdout."""

    def __init__(self, requested: list[list[str | None]] | None, verbosity: int) -> None:
        self.verbosity = verbosity
        pairs: list[tuple[str, str | None]] = []
        for format, path in requested or []:
            if format is None:
                assert path is not None  # an --output without a --format before it
                format = SUFFIXES.get(os.path.splitext(path)[1].lower())
                if format is None:
                    raise UsageError(
                        f"cannot tell the format of --output {path!r} from its suffix; "
                        f"put --format FORMAT before it"
                    )
            pairs.append((format, path))
        on_stdout = [format for format, path in pairs if path is None]
        if len(on_stdout) > 1:
            raise UsageError(
                f"--format {' and '.join(on_stdout)} would both write to stdout; "
                f"give all but one an --output FILE"
            )
        paths = [path for _, path in pairs if path is not None]
        for path in paths:
            if paths.count(path) > 1:
                raise UsageError(f"--output {path!r} is given twice")
        # With every format going to files, stdout still gets the text summary.
        self.stdout = on_stdout[0] if on_stdout else "text"
        self.files = [(format, path) for format, path in pairs if path is not None]
        self.destinations: list[_Destination] = []

    def prepare(self, *extra: str) -> list[_Destination]:
        """Create the temporary files now, so that an unwritable path fails before the run."""
        try:
            for path in [path for _, path in self.files] + list(extra):
                self.destinations.append(_Destination(path))
        except BaseException:
            self.discard()
            raise
        return self.destinations[len(self.files) :]

    def write(self, matrix: Matrix, *, matrix_view: bool = False) -> None:
        """Write every file, then the format for stdout."""
        for (format, _), destination in zip(self.files, self.destinations, strict=False):
            destination.commit(render(format, matrix, verbosity=self.verbosity))
        colour = self.stdout == "text" and _colour(sys.stdout)
        text = render(
            self.stdout,
            matrix,
            verbosity=self.verbosity,
            colour=colour,
            matrix_view=matrix_view,
            width=shutil.get_terminal_size().columns,
        )
        _write(sys.stdout, text)

    def discard(self) -> None:
        for destination in self.destinations:
            destination.discard()


def _colour(stream: TextIO) -> bool:
    """Colour for a terminal, unless NO_COLOR (https://no-color.org) or TERM=dumb says not."""
    isatty = getattr(stream, "isatty", None)
    return (
        isatty is not None
        and isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM") != "dumb"
    )


@final
class _ProgressLine:
    """A line on a terminal's stderr saying how far a long run is, erased when it ends."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = monotonic()
        self.text = ""
        self.width = 0

    def show(self, progress: Progress) -> None:
        elapsed = monotonic() - self.started
        if elapsed < _PROGRESS_AFTER:
            return
        text = (
            f"conformkit: {progress.finished()}/{progress.total} cases, "
            f"{elapsed:.1f}s: {printable(progress.label)}"
        )
        limit = max(shutil.get_terminal_size().columns - 1, 20)
        text = text[:limit]
        if text != self.text:
            self._put(text.ljust(self.width))
            self.text, self.width = text, len(text)

    def clear(self) -> None:
        if self.width:
            self._put(" " * self.width)
            self.stream.write("\r")
            self.stream.flush()
            self.width = 0

    def _put(self, text: str) -> None:
        try:
            _write(self.stream, "\r" + text)
        except OSError:
            self.width = 0  # a closed terminal ends the progress line, not the run


# -- commands ------------------------------------------------------------------------


def _backend(name: str) -> str:
    try:
        return check_backend(name)
    except ModuleNotFoundError as error:
        raise UsageError(str(error)) from error


def _execute(
    arguments: argparse.Namespace,
    pairs: list[Pair],
    selections: list[tuple[str, ...]],
    *,
    targets: Sequence[str],
    shard: Any = None,
) -> Matrix:
    """Run the selected cases of the pairs and gather what happened."""
    backend = _backend(arguments.backend)
    verbosity = arguments.verbose - arguments.quiet
    progress = _ProgressLine(sys.stderr) if verbosity >= 0 and sys.stderr.isatty() else None
    started = now()
    runner = functools.partial(
        run_pairs,
        pairs,
        selections,
        max_concurrency=arguments.concurrency,
        show_progress=None if progress is None else progress.show,
    )
    try:
        entries = anyio.run(runner, backend=backend)
    finally:
        if progress is not None:
            progress.clear()
    info = run_information(
        backend,
        started,
        now(),
        targets=targets,
        installed=getattr(arguments, "installed", False),
        require_full=arguments.require_full,
        select=getattr(arguments, "select", ()),
        shard=shard,
    )
    return Matrix(info, tuple(entries))


def _run_command(arguments: argparse.Namespace) -> int:
    if not arguments.targets and not arguments.installed:
        raise UsageError("name at least one TARGET, or pass --installed")
    if arguments.update_baseline and not arguments.baseline:
        raise UsageError("--update-baseline needs --baseline FILE: the file to rewrite")
    shard = parse_shard(arguments.shard) if arguments.shard is not None else None
    outputs = _Outputs(arguments.outputs, arguments.verbose - arguments.quiet)
    _backend(arguments.backend)
    baseline: Baseline | None = None
    if arguments.baseline is not None:
        baseline = load_baseline(arguments.baseline, missing_ok=arguments.update_baseline)
    extra = [arguments.baseline] if arguments.update_baseline else []
    try:
        baseline_file = outputs.prepare(*extra)
        pairs = collect(arguments.targets, installed=arguments.installed, timeout=arguments.timeout)
        selections = select(pairs, arguments.select, shard)
        matrix = _execute(arguments, pairs, selections, targets=arguments.targets, shard=shard)
        if baseline is not None:
            if arguments.update_baseline:
                update = update_baseline(matrix, baseline)
                baseline = update.baseline
                baseline_file[0].commit(render_baseline(baseline))
                _write(sys.stderr, f"conformkit: {update}\n")
            matrix = apply_baseline(matrix, baseline)
        outputs.write(matrix)
    finally:
        outputs.discard()
    return 0 if matrix.holds else 1


def _bundled_modules() -> list[types.ModuleType]:
    """The bundled profiles."""
    from .profiles import BUNDLED

    return [importlib.import_module(f"conformkit.profiles.{name}") for name in BUNDLED]


def _demo_command(arguments: argparse.Namespace) -> int:
    outputs = _Outputs(arguments.outputs, arguments.verbose - arguments.quiet)
    _backend(arguments.backend)
    try:
        outputs.prepare()
        modules = _bundled_modules()
        pairs = collect_modules(modules, timeout=arguments.timeout)
        selections = [pair.case_ids for pair in pairs]
        names = [module.__name__ for module in modules]
        matrix = _execute(arguments, pairs, selections, targets=names)
        outputs.write(matrix, matrix_view=True)
    finally:
        outputs.discard()
    return 0 if matrix.holds else 1


def _merge_command(arguments: argparse.Namespace) -> int:
    outputs = _Outputs(arguments.outputs, arguments.verbose - arguments.quiet)
    reports: list[tuple[Matrix, str]] = []
    for path in arguments.reports:
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except OSError as error:
            raise UsageError(f"cannot read report {path!r}: {error.strerror or error}") from error
        except ValueError as error:
            raise UsageError(f"report {path!r} is not valid JSON: {error}") from error
        reports.append((from_json(data, path), path))
    try:
        outputs.prepare()
        matrix = merge(reports)
        outputs.write(matrix)
    finally:
        outputs.discard()
    return 0 if matrix.holds else 1


def _list_command(arguments: argparse.Namespace) -> int:
    if not arguments.targets and not arguments.installed:
        raise UsageError("name at least one TARGET, or pass --installed")
    shard = parse_shard(arguments.shard) if arguments.shard is not None else None
    pairs = collect(arguments.targets, installed=arguments.installed)
    selections = select(pairs, arguments.select, shard)
    narrowed = bool(arguments.select) or shard is not None
    if arguments.format == "json":
        _write(sys.stdout, json.dumps(_listing(pairs, selections), indent=2, ensure_ascii=False))
        _write(sys.stdout, "\n")
        return 0
    lines: list[str] = []
    by_feature: dict[str, list[tuple[Pair, tuple[str, ...]]]] = {}
    for pair, chosen in zip(pairs, selections, strict=True):
        by_feature.setdefault(pair.feature_id, []).append((pair, chosen))
    for feature_id, members in by_feature.items():
        feature = members[0][0].feature
        description = f": {feature.description}" if feature.description else ""
        lines.append(printable(f"{feature_id}{description}"))
        if feature.does_not_establish:
            lines.append(printable(f"  does not establish: {feature.does_not_establish}"))
        lines.append(printable(f"  cases: {', '.join(feature.cases)}"))
        for family, params in feature.families.items():
            lines.append(printable(f"  family {family}: {', '.join(params)}"))
        for pair, chosen in members:
            supported = sum(
                not isinstance(pair.coverage[case], Unsupported) for case in pair.case_ids
            )
            where = pair.module
            if pair.distribution is not None:
                where += f", from {pair.distribution.name} {pair.distribution.version}"
            line = f"  {pair.name} ({where}): {supported} of {len(pair.case_ids)} cases supported"
            if narrowed:
                line += f", {len(chosen)} selected"
            lines.append(printable(line))
            for case in pair.case_ids:
                coverage = pair.coverage[case]
                if narrowed and case not in chosen:
                    continue
                if isinstance(coverage, Unsupported):
                    lines.append(printable(f"    unsupported {case}: {coverage.reason}"))
                elif arguments.verbose or narrowed:
                    lines.append(printable(f"    supported {case}"))
    features = len(by_feature)
    cases = sum(len(chosen) for chosen in selections)
    lines.append(
        f"{features} feature{'s' if features != 1 else ''}, {len(pairs)} "
        f"implementation{'s' if len(pairs) != 1 else ''}, "
        f"{cases} case{'s' if cases != 1 else ''}{' selected' if narrowed else ''}"
    )
    _write(sys.stdout, "\n".join(lines) + "\n")
    return 0


def _listing(pairs: list[Pair], selections: list[tuple[str, ...]]) -> dict[str, Any]:
    features: dict[str, dict[str, Any]] = {}
    for pair, chosen in zip(pairs, selections, strict=True):
        feature = pair.feature
        listed = features.setdefault(
            pair.feature_id,
            {
                "feature_id": feature.id,
                "description": feature.description,
                "does_not_establish": feature.does_not_establish,
                "cases": list(feature.cases),
                "families": {name: list(params) for name, params in feature.families.items()},
                "implementations": [],
            },
        )
        distribution = pair.distribution
        listed["implementations"].append(
            {
                "implementation": pair.name,
                "module": pair.module,
                "distribution": None
                if distribution is None
                else {"name": distribution.name, "version": distribution.version},
                "cases": [
                    {
                        "case_id": case,
                        "coverage": "unsupported"
                        if isinstance(pair.coverage[case], Unsupported)
                        else "supported",
                        "reason": getattr(pair.coverage[case], "reason", None),
                        "selected": case in chosen,
                    }
                    for case in pair.case_ids
                ],
            }
        )
    return {"format": "conformkit.list", "version": 1, "features": list(features.values())}


if __name__ == "__main__":
    sys.exit(main())
