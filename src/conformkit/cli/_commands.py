"""
The commands: ``run``, ``list``, ``demo``, ``merge`` and ``audit``; the runner of many pairs
with its progress; and the errors that end a command, each on one line.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import re
import sys
import traceback
import types
from collections.abc import Callable, Sequence
from typing import Any, Final, final

import anyio

from .._collect import Pair, PlanOptions, Shard, collect, collect_modules, select
from .._exceptions import ContractDefinitionError, UsageError
from .._explain import error_line
from .._feature import Unsupported
from .._runner import Execution, check_backend
from .._scope import DEFAULT_TIMEOUT
from ._baseline import Baseline, apply_baseline, load_baseline, render_baseline, update_baseline
from ._characters import printable
from ._console import ProgressLine, Streams, write
from ._interrupt import (
    DEFAULT_STOP_TIMEOUT,
    INTERRUPTED,
    TERMINATED,
    Termination,
    terminated,
    terminating,
    termination,
)
from ._json import dumps, from_json
from ._matrix import Entry, Matrix, RunInfo, now, run_information
from ._merge import merge
from ._outputs import Outputs

__all__ = ["Progress", "bundled_modules", "dispatch", "parse_shard", "run_pairs"]


def dispatch(arguments: argparse.Namespace) -> int:
    """Run the command the arguments name; return the exit status, reporting errors on stderr."""
    import threading

    from .._watchdog import leave_threads_behind

    running = set(threading.enumerate())
    status = _dispatch(arguments)
    leave_threads_behind(running, status)
    return status


def _dispatch(arguments: argparse.Namespace) -> int:
    debug: bool = arguments.debug
    command = _COMMANDS[arguments.command]
    with terminating(getattr(arguments, "stop_timeout", DEFAULT_STOP_TIMEOUT)) as termination:
        try:
            return command(arguments)
        except RunStopped as stop:
            return _error(stop.__cause__ or stop, debug, str(stop), status=stop.status)
        except (UsageError, ContractDefinitionError) as error:
            return _error(error, debug, str(error))
        except KeyboardInterrupt as error:
            return _interrupted(error, debug, termination)
        except BaseExceptionGroup as group:
            if group.subgroup(KeyboardInterrupt) is not None:
                return _interrupted(group, debug, termination)
            return _error(group, debug, f"unexpected {error_line(group)}")
        except Exception as error:
            return _error(error, debug, f"unexpected {error_line(error)}")


def _interrupted(error: BaseException, debug: bool, termination: Termination) -> int:
    if termination.received:
        outputs = "written" if termination.committed else "as it was"
        message = f"terminated (SIGTERM); every output file is {outputs}"
        return _error(error, debug, message, status=TERMINATED)
    return _error(error, debug, "interrupted", status=INTERRUPTED)


def _error(error: BaseException, debug: bool, message: str, *, status: int = 2) -> int:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    quiet = debug or status in (INTERRUPTED, TERMINATED)
    hint = "" if quiet else " (--debug shows the traceback)"
    one_line = " ".join(printable(message).splitlines())
    write(sys.stderr, f"conformkit: error: {one_line}{hint}\n")
    return status


@final
class RunStopped(Exception):
    """
    A run that stopped before it judged every case: Ctrl-C, SIGTERM, or an
    exception that escaped the runner. Its message is the command's last line.

    :ivar status: the exit status: 130 for Ctrl-C, 143 for SIGTERM, else 2.
    :ivar reason: why the run stopped, as the report says it.
    """

    def __init__(self, message: str, status: int, reason: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


# -- running pairs ---------------------------------------------------------------------


@final
class Progress:
    """
    How far a run is: cases done of the total, the pair running, for a progress
    line; and the entries of the pairs done, so that a run that stops early
    keeps what it judged.
    """

    __slots__ = ("done", "entries", "execution", "label", "running", "total")

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.label = ""
        self.execution: Execution[Any] | None = None
        self.entries: list[Entry] = []
        # The index of the pair whose execution is running: an interrupt may come
        # between the moment its entry is kept and the moment this is reset.
        self.running = 0

    def finished(self) -> int:
        """Cases finished so far, counting those of the pair now running."""
        execution = self.execution
        running = 0 if execution is None else len(execution.finished())
        return self.done + running

    def judged(self, pairs: Sequence[Pair]) -> list[Entry]:
        """
        An entry for every pair, as far as the run went: those done whole, the one
        running with the cases it finished, and the rest with none.
        """
        entries = list(self.entries)
        execution = self.execution
        if execution is not None and self.running == len(entries) < len(pairs):
            entries.append(
                Entry.partial(pairs[len(entries)], execution.finished(), execution.late_errors())
            )
        entries += [Entry.partial(pair) for pair in pairs[len(entries) :]]
        return entries


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
    :param progress: where the run keeps how far it is, and the entries done: all
        that a run that stops early has judged (see :meth:`Progress.judged`).
    """
    if progress is None:
        progress = Progress(sum(len(cases) for cases in selections))
    entries = progress.entries

    async def run() -> list[Entry]:
        for index, (pair, case_ids) in enumerate(zip(pairs, selections, strict=True)):
            execution = Execution(pair.plan, case_ids)
            progress.running = index
            progress.execution, progress.label = execution, f"{pair.feature_id} × {pair.name}"
            if case_ids:
                await execution.run(max_concurrency)
            entries.append(Entry.of(pair, execution.report()))
            progress.execution = None
            progress.done += len(case_ids)
        return list(entries)

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


_SHARD: Final = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*")


def parse_shard(text: str) -> Shard:
    """
    Parse ``--shard K/N`` into the core's :class:`Shard`.

    The commands call it, not argparse, so that its error is a usage error of one line.

    :raises UsageError: unless ``1 <= K <= N``.
    """
    match = _SHARD.fullmatch(text)
    if match is None:
        raise UsageError(f"--shard takes K/N, job K of N counting from 1, got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard K/N needs 1 <= K <= N, got {text!r}")
    return Shard(index, count)


def _backend(name: str) -> str:
    try:
        return check_backend(name)
    except ModuleNotFoundError as error:
        raise UsageError(str(error)) from error


def _plan_options(arguments: argparse.Namespace) -> PlanOptions:
    return PlanOptions(
        timeout=getattr(arguments, "timeout", DEFAULT_TIMEOUT),
        reject_vacuous=arguments.reject_vacuous,
        probe_unsupported=arguments.probe_unsupported,
        check_isolation=arguments.check_isolation,
    )


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
) -> tuple[Matrix, RunStopped | None]:
    """
    Run the selected cases of the pairs and gather what happened.

    :param on_stuck: writes what was judged when a stage is stuck beyond what can
        be interrupted; the process then exits with status 2 (after Ctrl-C, 130;
        after SIGTERM nothing is written, 143). After Ctrl-C, it also writes what
        was judged when the stop ends at once (see :class:`Termination`).
    :return: the run, and why it stopped early, if it did: then the run holds the
        cases judged until then, and says it stopped.
    """
    from .._runner import set_ctrl_c_hook
    from .._watchdog import Watch, set_stuck_hook

    backend = _backend(arguments.backend)
    streams = Streams()
    write_outputs = on_stuck
    if on_stuck is not None:
        on_stuck = _unless_stopping(on_stuck)
    show = _verbosity(arguments) >= 0 and sys.stderr.isatty()
    line = ProgressLine(sys.stderr) if show else None
    started = now()
    progress = Progress(sum(len(cases) for cases in selections))
    runner = functools.partial(
        run_pairs,
        pairs,
        selections,
        max_concurrency=arguments.concurrency,
        show_progress=None
        if line is None
        else lambda progress: line.show(progress.finished(), progress.total, progress.label),
        progress=progress,
    )

    def information(stopped: str | None) -> RunInfo:
        return run_information(
            backend,
            started,
            now(),
            targets=targets,
            installed=getattr(arguments, "installed", False),
            require_full=arguments.require_full,
            select=getattr(arguments, "select", ()),
            shard=shard,
            stopped=stopped,
            reject_stale=arguments.reject_stale,
            require_exercised=arguments.require_exercised,
            reject_vacuous=arguments.reject_vacuous,
            probe_unsupported=arguments.probe_unsupported,
        )

    def stuck(watch: Watch) -> None:
        # In the watchdog's thread, while the run cannot go on: keep what it has
        # judged, fail the stuck case, write it all, and end the process.
        streams.restore()
        entries = progress.judged(pairs)
        execution = progress.execution
        if execution is not None and progress.running < len(entries):
            entries[progress.running] = Entry.of(
                pairs[progress.running], execution.stuck_report(watch)
            )
        if watch.task is None:
            reason = (
                f"case {watch.case_id!r} of {progress.label} is stuck in stage {watch.stage!r} "
                f"past its {watch.timeout or 0:g}s deadline and could not be interrupted"
            )
        else:
            reason = (
                f"case {watch.case_id!r} of {progress.label}: background task {watch.task!r} "
                f"did not stop within {watch.timeout or 0:g}s of being cancelled and could "
                f"not be interrupted"
            )
        try:
            if line is not None:
                line.clear()
            if on_stuck is not None:
                on_stuck(Matrix(information(reason), tuple(entries)))
        finally:
            write(sys.stderr, f"conformkit: error: {reason}; the run was stopped\n")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(2)

    def after() -> str:
        judged = sum(len(entry.results) for entry in progress.judged(pairs))
        return _after(judged, progress.total)

    def write_judged() -> None:
        if write_outputs is not None:
            entries = tuple(progress.judged(pairs))
            write_outputs(Matrix(information("interrupted (Ctrl-C)"), entries))

    stop: RunStopped | None = None
    current = termination()
    if current is not None:
        current.describe = after
        current.write_judged = write_judged
        set_ctrl_c_hook(current.press)
    set_stuck_hook(stuck)
    try:
        entries = anyio.run(runner, backend=backend)
    except (UsageError, ContractDefinitionError):
        raise  # a definition error: nothing to judge
    except BaseException as error:  # Ctrl-C, SIGTERM, or what escaped the runner
        entries = progress.judged(pairs)
        judged = sum(len(entry.results) for entry in entries)
        stop = _stopped(error, judged, progress.total, progress.label)
        stop.__cause__ = error
    finally:
        set_stuck_hook(None)
        set_ctrl_c_hook(None)
        if current is not None:
            current.write_judged = None  # the command writes them from now on
        streams.restore()  # a case may have replaced them: the command writes to its own
        if line is not None:
            line.clear()
    return Matrix(information(None if stop is None else stop.reason), tuple(entries)), stop


def _stopped(error: BaseException, judged: int, total: int, running: str) -> RunStopped:
    """Why a run stopped early, for its report and for the command's last line."""
    after = _after(judged, total).lstrip()
    interrupted = isinstance(error, KeyboardInterrupt) or (
        isinstance(error, BaseExceptionGroup) and error.subgroup(KeyboardInterrupt) is not None
    )
    if interrupted and terminated():
        message = f"terminated (SIGTERM) {after}; every output file is as it was"
        return RunStopped(message, TERMINATED, "terminated (SIGTERM)")
    kept = "the outputs hold the cases judged"
    if interrupted:
        return RunStopped(f"interrupted {after}; {kept}", INTERRUPTED, "interrupted (Ctrl-C)")
    reason = error_line(error) + (f", raised while running {running}" if running else "")
    return RunStopped(f"the run stopped {after}: {reason}; {kept}", 2, reason)


def _after(judged: int, total: int) -> str:
    return f" after {judged} of {total} case{'s' if total != 1 else ''}"


def _unless_stopping(write: Callable[[Matrix], None]) -> Callable[[Matrix], None]:
    """
    What writes the outputs of a run whose stage is stuck: after SIGTERM, nothing
    is written, and the process ends as terminated (143); after Ctrl-C, they are
    written, and it ends as interrupted (130).
    """

    def written(matrix: Matrix) -> None:
        current = termination()
        if current is not None and current.received:
            current.end(matrix.run.stopped or "a stage is stuck")
        write(matrix)
        if current is not None and current.interrupted:
            current.end(matrix.run.stopped or "a stage is stuck")

    return written


# -- the commands ----------------------------------------------------------------------


def _run_command(arguments: argparse.Namespace) -> int:
    from .._collect import target_file
    from ._config import apply_gate, find_settings

    if not arguments.targets and not arguments.installed:
        raise UsageError("name at least one TARGET, or pass --installed")
    apply_gate(arguments, find_settings())
    if arguments.update_baseline and not arguments.baseline:
        raise UsageError("--update-baseline needs --baseline FILE: the file to rewrite")
    shard = parse_shard(arguments.shard) if arguments.shard is not None else None
    outputs = Outputs(arguments.outputs, _verbosity(arguments))
    _discard_when_ended(outputs)
    _backend(arguments.backend)
    baseline: Baseline | None = None
    if arguments.baseline is not None:
        baseline = load_baseline(arguments.baseline, missing_ok=arguments.update_baseline)
    # No output may replace a file the run reads or rewrites.
    rewritten = f"--baseline {arguments.baseline!r} (which --update-baseline rewrites)"
    extra = [(rewritten, arguments.baseline)] if arguments.update_baseline else []
    reads = [("baseline", arguments.baseline)] if baseline is not None and not extra else []
    reads += [("target", path) for path in map(target_file, arguments.targets) if path]
    try:
        outputs.prepare(*extra, reads=reads)
        pairs = collect(
            arguments.targets,
            installed=arguments.installed,
            **_plan_options(arguments),
        )
        selections = select(pairs, arguments.select, shard)
        matrix, stop = _execute(
            arguments,
            pairs,
            selections,
            targets=arguments.targets,
            shard=shard,
            on_stuck=outputs.write,
        )
        _keep_files(stop)
        update = None
        rewrite: list[str] = []
        if baseline is not None:
            if arguments.update_baseline and stop is None:
                update = update_baseline(matrix, baseline)
                baseline = update.baseline
                rewrite.append(render_baseline(baseline))
            matrix = apply_baseline(matrix, baseline)
        # The baseline and the outputs are written together: all of them, or none.
        outputs.write(matrix, extra=rewrite)
        if update is not None:
            write(sys.stderr, f"conformkit: {update}\n")
    finally:
        outputs.discard()
    if stop is not None:
        raise stop
    return 0 if matrix.holds else 1


def _discard_when_ended(outputs: Outputs) -> None:
    """A process ended at once after SIGTERM leaves no temporary file behind."""
    current = termination()
    if current is not None:
        current.at_end.append(outputs.discard)


def _keep_files(stop: RunStopped | None) -> None:
    """After SIGTERM, every output file is left as it was: the run ends here."""
    if stop is not None and stop.status == TERMINATED:
        raise stop


def bundled_modules() -> list[types.ModuleType]:
    """The bundled profiles."""
    from ..profiles import BUNDLED

    return [importlib.import_module(f"conformkit.profiles.{name}") for name in BUNDLED]


def _installed_bundled_modules() -> list[types.ModuleType]:
    """The bundled profiles whose optional extra, if they need one, is installed."""
    from ..profiles import EXTRAS

    modules = []
    for module in bundled_modules():
        name = module.__name__.rpartition(".")[2]
        if name in EXTRAS:
            needed, extra = EXTRAS[name]
            try:
                importlib.import_module(needed)
            except ImportError:
                write(
                    sys.stderr,
                    f"conformkit demo: left out {module.__name__}, which needs {needed}: "
                    f"pip install 'conformkit[{extra}]'\n",
                )
                continue
        modules.append(module)
    return modules


def _demo_command(arguments: argparse.Namespace) -> int:
    from ._config import apply_gate

    apply_gate(arguments, None)  # the bundled profiles are not the project's
    outputs = Outputs(arguments.outputs, _verbosity(arguments))
    _discard_when_ended(outputs)
    _backend(arguments.backend)
    try:
        outputs.prepare()
        modules = _installed_bundled_modules()
        pairs = collect_modules(
            modules,
            **_plan_options(arguments),
        )
        selections = [pair.case_ids for pair in pairs]
        names = [module.__name__ for module in modules]
        matrix, stop = _execute(
            arguments,
            pairs,
            selections,
            targets=names,
            on_stuck=functools.partial(outputs.write, matrix_view=True),
        )
        _keep_files(stop)
        outputs.write(matrix, matrix_view=True)
    finally:
        outputs.discard()
    if stop is not None:
        raise stop
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
        outputs.prepare(reads=[("report", path) for path in arguments.reports])
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


def _audit_command(arguments: argparse.Namespace) -> int:
    from .._audit import audit_suites
    from .._exceptions import SuiteAuditFailure
    from ._config import find_settings

    settings = find_settings()
    file = {} if settings is None else settings.audit
    features = arguments.features or file.get("features")
    if features is None:
        where = (
            "" if settings is None else f" (nor does [tool.conformkit.audit] in {settings.path})"
        )
        raise UsageError(f"name the PACKAGE that defines the features{where}")
    suites = arguments.suites or file.get("suites")
    protocols = arguments.protocols or file.get("protocols")
    exempt = {**file.get("exempt", {}), **_exemptions(arguments.exempt, "--exempt", "ID")}
    exempt_protocols = {
        **file.get("exempt-protocols", {}),
        **_exemptions(arguments.exempt_protocols, "--exempt-protocol", "NAME"),
    }
    if exempt_protocols and protocols is None:
        raise UsageError("Protocol exemptions need --protocols PACKAGE: the Protocols to audit")
    # As with ``python -m``, and as for `run`, modules in the current directory are importable.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        audit_suites(
            features,
            suites,
            exempt=exempt,
            protocols=protocols,
            exempt_protocols=exempt_protocols or None,
        )
    except SuiteAuditFailure as failure:
        write(sys.stdout, printable(str(failure)) + "\n")
        return 1
    checked = "every feature has a suite"
    if protocols is not None:
        checked += ", every Protocol a feature"
    write(sys.stdout, f"suite audit holds: {checked}\n")
    return 0


def _exemptions(given: Sequence[str], option: str, key: str) -> dict[str, str]:
    """``--exempt ID=REASON`` options as a dict; a reason is mandatory."""
    found: dict[str, str] = {}
    for text in given:
        name, equals, reason = text.partition("=")
        if not equals or not name.strip() or not reason.strip():
            raise UsageError(f"{option} needs {key}=REASON, a reason included, got {text!r}")
        found[name.strip()] = reason.strip()
    return found


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run_command,
    "list": _list_command,
    "demo": _demo_command,
    "merge": _merge_command,
    "audit": _audit_command,
}
