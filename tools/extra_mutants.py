"""
The mutants mutmut 3 does not make, made from the AST and run beside it by tools/mutation.py.

    python tools/mutation.py --operators extra --module _runner \
        --mutants 'conformkit._runner.x__watch__*'

mutmut mutates comparisons, numbers, strings and arguments, inside functions
that carry no decorator. It never removes an ``await`` or a statement, and never
touches a module's top level (the ``__module__`` fix of its exports, its
constants) nor a decorated function (``open_feature``). Three operators here do:

- ``await``: ``await f()`` becomes ``f()``;
- ``statement``: a simple statement (a call, an assignment, a ``return``, a
  ``raise``, a ``del``) becomes ``pass`` (with a comment naming what it removed);
- ``constant``: a number becomes 0 (0 becomes 1), a string ``""`` (``""``
  becomes ``"XX"``), a bool its opposite, bytes ``b""``.

Docstrings, annotations and the parts of f-strings are left alone. Each
mutant is named as mutmut names the function it changes, with ``__extra_``,
the operator and a number: ``conformkit._runner.xǁExecutionǁrun__extra_await_1``,
``conformkit._scope.x_open_feature__extra_statement_3``; the statements of a
module's top level and of its class bodies are its ``<module>``:
``conformkit._runner.<module>__extra_statement_2``. A ``--mutants`` pattern
thus selects a function's mutants of both tools.

Each mutant is written into a copy of the working tree, one after another, and
the module's test selection runs against it (``pytest -x``), with the copy's
sources first on the path; a mutant may take 3 times what the unmutated tests
took, plus 10 s, as under mutmut, and one that outlasts that twice is a kill.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MARK = "__extra_"
"""What an extra mutant's name holds, and a mutmut mutant's never does."""
KINDS = ("await", "statement", "constant")
# Simple statements that a mutant replaces with `pass`.
_REMOVABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Delete)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
MODULE_UNIT = "<module>"


@dataclass(frozen=True)
class Mutant:
    """One change to a module: its name, the line it changed, and the module's source after it."""

    name: str
    line: str
    source: str

    def diff(self, original: str, path: str) -> str:
        """The change as a unified diff, named as mutmut names its own."""
        lines = difflib.unified_diff(
            original.splitlines(keepends=True),
            self.source.splitlines(keepends=True),
            f"{path}", f"{path}", n=2,
        )  # fmt: skip
        return f"# {self.name}\n{''.join(lines)}"


def unit_name(qualified: Sequence[str]) -> str:
    """mutmut's name for a function: ``x_function``, or ``xǁClassǁmethod`` for a method."""
    if len(qualified) == 1:
        return f"x_{qualified[0]}"
    return "x" + "".join(f"ǁ{part}" for part in qualified)


def mutants_of(source: str, module: str) -> list[Mutant]:
    """Every extra mutant of a module's source, in source order within each unit."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[str, str, tuple[int, int, int, int], str]] = []
    for unit, node in _units(tree):
        skipped = _not_mutated(node)
        for child in _walk(node, unit == MODULE_UNIT):
            if id(child) in skipped:
                continue
            if isinstance(child, ast.Await):
                value = child.value
                if value.lineno == child.lineno:
                    span = (child.lineno, child.col_offset, value.lineno, value.col_offset)
                    edits.append((unit, "await", span, ""))
            elif isinstance(child, ast.Constant):
                replacement = _replaced(child.value)
                if replacement is not None:
                    span = (child.lineno, child.col_offset, _end(child)[0], _end(child)[1])
                    edits.append((unit, "constant", span, replacement))
            elif isinstance(child, _REMOVABLE) and _alone_on_its_lines(child, lines):
                span = (child.lineno, child.col_offset, *_end(child))
                was = (ast.get_source_segment(source, child) or "").splitlines()[0]
                edits.append((unit, "statement", span, f"pass  # removed: {was}"))
    mutants: list[Mutant] = []
    numbers: dict[tuple[str, str], int] = {}
    for unit, kind, span, replacement in edits:
        mutated = _apply(lines, span, replacement)
        try:
            ast.parse(mutated)
        except SyntaxError:  # pragma: no cover - an edit of a well-formed span parses
            continue
        number = numbers[unit, kind] = numbers.get((unit, kind), 0) + 1
        changed = mutated.splitlines()[span[0] - 1].strip()
        mutants.append(Mutant(f"conformkit.{module}.{unit}{MARK}{kind}_{number}", changed, mutated))
    return mutants


def _units(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Each function and method with mutmut's name for it; then the module's other code."""
    yield MODULE_UNIT, tree

    def walk(body: list[ast.stmt], qualified: list[str]) -> Iterator[tuple[str, ast.AST]]:
        for statement in body:
            if isinstance(statement, _DEFS):
                yield unit_name([*qualified, statement.name]), statement
            elif isinstance(statement, ast.ClassDef):
                yield from walk(statement.body, [*qualified, statement.name])

    yield from walk(tree.body, [])


def _walk(node: ast.AST, module: bool) -> Iterator[ast.AST]:
    """
    The nodes of a unit: a function's own (nested functions included); the
    module's, without its functions and imports (each class body's statements
    but for its methods, included).
    """
    for child in ast.iter_child_nodes(node):
        if module and isinstance(child, (*_DEFS, ast.Import, ast.ImportFrom)):
            continue
        yield child
        yield from _walk(child, module)


def _not_mutated(node: ast.AST) -> set[int]:
    """The ids of the nodes a mutant leaves alone: docstrings, annotations, f-string parts."""
    skipped: set[int] = set()
    for child in ast.walk(node):
        body = getattr(child, "body", None)
        if (
            isinstance(child, (ast.Module, ast.ClassDef, *_DEFS))
            and isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            skipped.update(id(each) for each in ast.walk(body[0]))
        annotations: list[ast.AST | None] = []
        if isinstance(child, _DEFS):
            annotations.append(child.returns)
            annotations.extend(child.decorator_list)
        elif isinstance(child, ast.arg | ast.AnnAssign):
            annotations.append(child.annotation)
        elif isinstance(child, ast.JoinedStr):
            annotations.extend(child.values)
        for annotation in annotations:
            if annotation is not None:
                skipped.update(id(each) for each in ast.walk(annotation))
    return skipped


def _replaced(value: object) -> str | None:
    """The source of the constant that replaces ``value``; ``None``: left alone."""
    if isinstance(value, bool):
        return repr(not value)
    if isinstance(value, int | float):
        return "0" if value else "1"
    if isinstance(value, str):
        return '""' if value else '"XX"'
    if isinstance(value, bytes) and value:
        return 'b""'
    return None


def _end(node: ast.AST) -> tuple[int, int]:
    end_line, end_column = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    assert end_line is not None  # as every parsed node has
    assert end_column is not None
    return end_line, end_column


def _alone_on_its_lines(statement: ast.stmt, lines: list[str]) -> bool:
    """Whether only the statement (and a comment) is on its lines: ``pass`` can replace it."""
    first = lines[statement.lineno - 1].encode()  # the columns count UTF-8 bytes
    end_line, end_column = _end(statement)
    last = lines[end_line - 1].encode()
    return (
        not first[: statement.col_offset].strip()
        and last[end_column:].strip()[:1] in (b"", b"#")
        and not _is_docstring(statement)
    )


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _apply(lines: list[str], span: tuple[int, int, int, int], replacement: str) -> str:
    """The source with the span (1-based lines, 0-based UTF-8 byte columns) replaced."""
    start_line, start_column, end_line, end_column = span
    first = lines[start_line - 1].encode()
    last = lines[end_line - 1].encode()
    joined = first[:start_column] + replacement.encode() + last[end_column:]
    return "".join([*lines[: start_line - 1], joined.decode(), *lines[end_line:]])


def run_pytest(
    cwd: Path,
    src: Path,
    args: Sequence[str],
    limit: float | None,
    environment: Mapping[str, str] | None = None,
) -> tuple[int | None, str, float]:
    """
    Run ``pytest -x ARGS`` in ``cwd``, with ``src`` first on the path of every
    interpreter and ``environment`` added to this one's, in a session of its own,
    which is killed whole once pytest ends or outlasts ``limit`` seconds: a test's
    subprocess that never ends (a watchdog that no longer interrupts) is not left
    spinning. Returns pytest's status (``None``: it outlasted the limit), its
    output, and the seconds it took. tools/mutation.py runs its wide check with it.
    """
    path = os.environ.get("PYTHONPATH")
    child = {
        **os.environ,
        "CONFORMKIT_MUTATION": "1",  # see tests/conftest.py
        **(environment or {}),
        "PYTHONPATH": str(src) + (os.pathsep + path if path else ""),
    }
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p"]
    command += ["no:cacheprovider", *args]
    started = time.monotonic()
    with subprocess.Popen(
        command, cwd=cwd, env=child, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    ) as process:  # fmt: skip
        output, timed_out = b"", False
        try:
            output, _ = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            with contextlib.suppress(ProcessLookupError):  # the session is gone already
                os.killpg(process.pid, signal.SIGKILL)
    status = None if timed_out else process.returncode
    return status, output.decode(errors="replace"), time.monotonic() - started


def run_tests(root: Path, tests: Sequence[str], limit: float | None) -> tuple[str, float]:
    """
    Run ``tests`` in the tree at ``root``, its ``src`` first on the path: ``"survived"``
    when they pass, ``"killed"`` when any fails (or cannot even be collected),
    ``"timeout"`` past ``limit`` seconds; and the seconds it took.
    """
    status, output, elapsed = run_pytest(root, root / "src", ["-n", "0", *tests], limit)
    if status is None:
        return "timeout", elapsed
    if status == 0:
        return "survived", elapsed
    if status in (1, 2, 3):  # failed, interrupted (an import error), internal
        return "killed", elapsed
    tail = output.strip().splitlines()[-1:]
    raise RuntimeError(f"pytest could not run {' '.join(tests)} in {root}: {tail}")


def check(
    root: Path, relative: str, mutants: Sequence[Mutant], tests: Sequence[str]
) -> Iterator[tuple[Mutant, str]]:
    """
    Run the tests against each mutant of the module at ``root / relative`` in turn,
    and yield each with its status: ``"killed"``, ``"survived"``, or ``"timeout"``
    (a kill: it outlasted the limit twice). The module is put back after each.

    :raises RuntimeError: when the tests fail on the unmutated module.
    """
    target = root / relative
    original = target.read_text(encoding="utf-8")
    verdict, baseline = run_tests(root, tests, None)
    if verdict != "survived":
        raise RuntimeError(f"{' '.join(tests)} fail on the unmutated {relative}")
    limit = 3 * baseline + 10
    try:
        for mutant in mutants:
            target.write_text(mutant.source, encoding="utf-8")
            verdict, _ = run_tests(root, tests, limit)
            if verdict == "timeout":  # the machine's load, or a hang: once more
                verdict, _ = run_tests(root, tests, limit)
            yield mutant, verdict
    finally:
        target.write_text(original, encoding="utf-8")
