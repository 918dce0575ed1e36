"""
The commands: ``run``, ``list``, ``demo`` and ``merge``; the runner of many pairs
with its progress; and the errors that end a command, each on one line.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import traceback
import types
from collections.abc import Callable, Sequence
from typing import Any, final

import anyio

from .._exceptions import ContractDefinitionError, UsageError
from .._feature import Unsupported
from .._runner import Execution, check_backend
from .._scope import DEFAULT_TIMEOUT
from .._util import error_line
from ._baseline import Baseline, apply_baseline, load_baseline, render_baseline, update_baseline
from ._collect import Pair, Shard, collect, collect_modules, parse_shard, select
from ._console import Outputs, ProgressLine, printable, write
from ._json import dumps
from ._matrix import Entry, Matrix, from_json, merge, now, run_information

__all__ = ["Progress", "bundled_modules", "dispatch", "run_pairs"]


def dispatch(arguments: argparse.Namespace) -> int:
    """Run the command the arguments name; return the exit status, reporting errors on stderr."""
    debug: bool = arguments.debug
    command = _COMMANDS[arguments.command]
    try:
        return command(arguments)
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


def _error(error: BaseException, debug: bool, message: str, *, status: int = 2) -> int:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    hint = "" if debug else " (--debug shows the traceback)"
    one_line = " ".join(printable(message).splitlines())
    write(sys.stderr, f"conformkit: error: {one_line}{hint if status != 130 else ''}\n")
    return status


# -- running pairs ---------------------------------------------------------------------


@final
class Progress:
    """How far a run is, for a progress line: cases done of the total, and the pair running."""

    __slots__ = ("done", "entries", "execution", "label", "pair", "total")

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.label = ""
        self.execution: Execution[Any] | None = None
        self.pair: Pair | None = None
        self.entries: list[Entry] = []  # the pairs run so far

    def finished(self) -> int:
        """Cases finished so far, counting those of the pair now running."""
        execution = self.execution
        running = 0 if execution is None else len(execution.finished())
        return self.done + running


async def run_pairs(
    pairs: Sequence[Pair],
    selections: Sequence[tuple[str, ...]],
    *,
    max_concurrency: int = 1,
    show_progress: Callable[[Progress], None] | None = None,
    interval: float = 0.1,
    progress: Progress | None = None,
) -> list[Entry]:
    """
    Run the selected cases of each pair, one pair after another, as ``run_contract`` would.

    :param show_progress: called every ``interval`` seconds while the run lasts.
    :param progress: where to keep how far the run is, if not in one of its own.
    """
    if progress is None:
        progress = Progress(sum(len(cases) for cases in selections))

    async def run() -> list[Entry]:
        entries = progress.entries
        for pair, case_ids in zip(pairs, selections, strict=True):
            execution = Execution(pair.plan, case_ids)
            progress.execution, progress.label = execution, f"{pair.feature_id} × {pair.name}"
            progress.pair = pair
            if case_ids:
                await execution.run(max_concurrency)
            progress.execution = None
            progress.done += len(case_ids)
            entries.append(Entry.of(pair, execution.report()))
        return entries

    if show_progress is None:
        return await run()

    async def tick() -> None:
        while True:
            await anyio.sleep(interval)
            show_progress(progress)

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(tick)
        entries = await run()
        task_group.cancel_scope.cancel()
    return entries


def _backend(name: str) -> str:
    try:
        return check_backend(name)
    except ModuleNotFoundError as error:
        raise UsageError(str(error)) from error


def _verbosity(arguments: argparse.Namespace) -> int:
    return int(arguments.verbose - arguments.quiet)


def _execute(
    arguments: argparse.Namespace,
    pairs: list[Pair],
    selections: list[tuple[str, ...]],
    *,
    targets: Sequence[str],
    shard: Shard | None = None,
    on_stuck: Callable[[Matrix], None] | None = None,
) -> Matrix:
    """
    Run the selected cases of the pairs and gather what happened.

    :param on_stuck: writes what was judged when a stage is stuck beyond what
        can be interrupted; the command then exits with status 2.
    """
    from .._watchdog import Watch, set_stuck_hook

    backend = _backend(arguments.backend)
    show = _verbosity(arguments) >= 0 and sys.stderr.isatty()
    progress = ProgressLine(sys.stderr) if show else None
    started = now()
    state = Progress(sum(len(cases) for cases in selections))
    runner = functools.partial(
        run_pairs,
        pairs,
        selections,
        max_concurrency=arguments.concurrency,
        show_progress=None if progress is None else progress.show,
        progress=state,
    )

    def matrix_of(entries: Sequence[Entry]) -> Matrix:
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

    def stuck(watch: Watch) -> None:
        # In the watchdog's thread, while the run cannot go on: keep what it has
        # judged, fail the stuck case, write it all, and stop the process.
        entries = list(state.entries)
        if state.execution is not None and state.pair is not None:
            entries.append(Entry.of(state.pair, state.execution.stuck_report(watch)))
        try:
            if progress is not None:
                progress.clear()
            if on_stuck is not None:
                on_stuck(matrix_of(entries))
        finally:
            write(
                sys.stderr,
                f"conformkit: error: case {watch.case_id!r} of {state.label} is stuck in "
                f"stage {watch.stage!r} past its {watch.timeout or 0:g}s deadline and could "
                f"not be interrupted; the run was stopped with the results so far\n",
            )
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(2)

    set_stuck_hook(stuck)
    try:
        entries = anyio.run(runner, backend=backend)
    finally:
        set_stuck_hook(None)
        if progress is not None:
            progress.clear()
    return matrix_of(entries)


# -- the commands ----------------------------------------------------------------------


def _run_command(arguments: argparse.Namespace) -> int:
    if not arguments.targets and not arguments.installed:
        raise UsageError("name at least one TARGET, or pass --installed")
    if arguments.update_baseline and not arguments.baseline:
        raise UsageError("--update-baseline needs --baseline FILE: the file to rewrite")
    shard = parse_shard(arguments.shard) if arguments.shard is not None else None
    outputs = Outputs(arguments.outputs, _verbosity(arguments))
    _backend(arguments.backend)
    baseline: Baseline | None = None
    if arguments.baseline is not None:
        baseline = load_baseline(arguments.baseline, missing_ok=arguments.update_baseline)
    extra = [arguments.baseline] if arguments.update_baseline else []
    try:
        baseline_file = outputs.prepare(*extra)
        timeout = getattr(arguments, "timeout", DEFAULT_TIMEOUT)
        pairs = collect(arguments.targets, installed=arguments.installed, timeout=timeout)
        selections = select(pairs, arguments.select, shard)
        matrix = _execute(
            arguments,
            pairs,
            selections,
            targets=arguments.targets,
            shard=shard,
            on_stuck=outputs.write,
        )
        if baseline is not None:
            if arguments.update_baseline:
                update = update_baseline(matrix, baseline)
                baseline = update.baseline
                baseline_file[0].commit(render_baseline(baseline))
                write(sys.stderr, f"conformkit: {update}\n")
            matrix = apply_baseline(matrix, baseline)
        outputs.write(matrix)
    finally:
        outputs.discard()
    return 0 if matrix.holds else 1


def bundled_modules() -> list[types.ModuleType]:
    """The bundled profiles."""
    from ..profiles import BUNDLED

    return [importlib.import_module(f"conformkit.profiles.{name}") for name in BUNDLED]


def _demo_command(arguments: argparse.Namespace) -> int:
    outputs = Outputs(arguments.outputs, _verbosity(arguments))
    _backend(arguments.backend)
    try:
        outputs.prepare()
        modules = bundled_modules()
        timeout = getattr(arguments, "timeout", DEFAULT_TIMEOUT)
        pairs = collect_modules(modules, timeout=timeout)
        selections = [pair.case_ids for pair in pairs]
        names = [module.__name__ for module in modules]
        matrix = _execute(
            arguments,
            pairs,
            selections,
            targets=names,
            on_stuck=functools.partial(outputs.write, matrix_view=True),
        )
        outputs.write(matrix, matrix_view=True)
    finally:
        outputs.discard()
    return 0 if matrix.holds else 1


def _merge_command(arguments: argparse.Namespace) -> int:
    outputs = Outputs(arguments.outputs, _verbosity(arguments))
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
    if arguments.format == "json":
        write(sys.stdout, dumps(_listing(pairs, selections)) + "\n")
        return 0
    narrowed = bool(arguments.select) or shard is not None
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
            selected = set(chosen)
            for case in pair.case_ids:
                coverage = pair.coverage[case]
                if narrowed and case not in selected:
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
    write(sys.stdout, "\n".join(lines) + "\n")
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
        selected = set(chosen)
        cases = []
        for case in pair.case_ids:
            coverage = pair.coverage[case]
            unsupported = isinstance(coverage, Unsupported)
            cases.append(
                {
                    "case_id": case,
                    "coverage": "unsupported" if unsupported else "supported",
                    "reason": coverage.reason if isinstance(coverage, Unsupported) else None,
                    "selected": case in selected,
                }
            )
        listed["implementations"].append(
            {
                "implementation": pair.name,
                "module": pair.module,
                "distribution": None
                if distribution is None
                else {"name": distribution.name, "version": distribution.version},
                "cases": cases,
            }
        )
    return {"format": "conformkit.list", "version": 1, "features": list(features.values())}


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run_command,
    "list": _list_command,
    "demo": _demo_command,
    "merge": _merge_command,
}
