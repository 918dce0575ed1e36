"""
An exception as text, one way everywhere: its one-line reason and its full record.

:func:`error_line` is the line that every one-line place shows (a case's reason,
a summary, a message): exception groups by their leaves, bare asserts by their
source. :func:`describe_exception` is the full record that every full place
shows (the JSON report, JUnit's and HTML's traceback): type, message, traceback.
"""

from __future__ import annotations

import ast
import functools
import linecache
from types import FrameType, TracebackType
from typing import Final

from ._util import one_line, short_repr

__all__ = [
    "assertion_detail",
    "describe_exception",
    "error_line",
    "group_leaves",
    "record_line",
    "release_frames",
]

_MAX_LEAVES: Final = 3
"""The most distinct leaf exceptions a reason lists before saying how many more."""
_MAX_NAMES: Final = 6
"""The most local values an assertion's detail shows."""


def group_leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions that are not groups inside ``group``, depth first, in order."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(reversed(exc.exceptions))
        else:
            leaves.append(exc)
    return leaves


def error_line(error: BaseException) -> str:
    """
    The one-line reason of ``error``: ``module.TypeName: message``, the type as a
    traceback's last line names it, the message's lines joined by spaces. Its
    notes are left to the full record (:func:`describe_exception`).

    An exception group is described by its leaves, each distinct one once with a
    count when repeated, at most three of them. A bare ``assert`` (an
    :exc:`AssertionError` with no message) shows the statement and the values
    of the local names it reads, while its frame is still alive.
    """
    if isinstance(error, BaseExceptionGroup):
        counts: dict[str, int] = {}
        for leaf in group_leaves(error):
            text = one_line(error_line(leaf))
            counts[text] = counts.get(text, 0) + 1
        shown = [
            text if n == 1 else f"{text} (×{n})" for text, n in list(counts.items())[:_MAX_LEAVES]
        ]
        more = len(counts) - len(shown)
        if more:
            shown.append(f"and {more} more")
        if shown:
            return "; ".join(shown)
    elif type(error) is AssertionError and not error.args:
        detail = assertion_detail(error)
        if detail is not None:
            return f"AssertionError: {detail}"
    kind = type(error)
    module = kind.__module__
    name = kind.__qualname__
    if module not in ("builtins", "__main__"):  # as a traceback names it
        name = f"{module if isinstance(module, str) else '<unknown>'}.{name}"
    return record_line(name, _message(error))


def record_line(type_name: str, message: str) -> str:
    """
    The one-line reason of an exception known by its record's type name and
    message (a report read back from JSON): ``type_name: message``, the message's
    lines joined by spaces; the type name alone for an empty message.
    """
    lines = " ".join(line.strip() for line in message.splitlines() if line.strip())
    return f"{type_name}: {lines}" if lines else type_name


def describe_exception(error: BaseException) -> dict[str, str]:
    """
    The full record of ``error``, as JSON-ready data: ``type``, its qualified name
    prefixed by its module unless it is a builtin; ``message``, ``str(error)``; and
    ``traceback``, the formatted traceback with its chained exceptions and notes,
    whether or not its frames were released (:func:`release_frames`).

    The report format fixes how ``type`` names a type, ``__main__.Name`` included;
    a traceback, and so :func:`error_line`, says ``Name`` for a type of ``__main__``.
    """
    kind = type(error)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return {"type": name, "message": _message(error), "traceback": _traceback_text(error)}


def _message(error: BaseException) -> str:
    """``str(error)``, or what a traceback shows when the code under test's ``__str__`` raises."""
    try:
        return str(error)
    except KeyboardInterrupt:
        raise  # it alone stops the run, whoever raised it
    except BaseException:
        return "<exception str() failed>"


def assertion_detail(error: BaseException) -> str | None:
    """
    ``assert got == expected (got='a', expected='b')`` for a failed ``assert``.

    The statement is read from the source of the innermost frame of the traceback;
    the values are the ``repr`` (shortened) of each name the statement reads that
    is a local of that frame. ``None`` when the source cannot be found, or the line
    that raised is not an ``assert`` statement.
    """
    tb: TracebackType | None = error.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    statement = _assert_statement(tb.tb_frame, tb.tb_lineno)
    if statement is None:
        return None
    node, text = statement
    local_values = tb.tb_frame.f_locals
    names: list[str] = []
    for sub in ast.walk(node.test):
        if (
            isinstance(sub, ast.Name)
            and isinstance(sub.ctx, ast.Load)
            and sub.id in local_values
            and sub.id not in names
        ):
            names.append(sub.id)
    values = ", ".join(
        f"{name}={short_repr(local_values[name], 80)}" for name in names[:_MAX_NAMES]
    )
    if len(names) > _MAX_NAMES:
        values += ", …"
    return f"{text} ({values})" if values else text


def _assert_statement(frame: FrameType, lineno: int) -> tuple[ast.Assert, str] | None:
    """The ``assert`` statement in ``frame``'s source file that covers ``lineno``, and its text."""
    source = "".join(linecache.getlines(frame.f_code.co_filename, frame.f_globals))
    if not source:
        return None
    for node in _asserts(source):
        if node.lineno <= lineno <= (node.end_lineno or node.lineno):
            return node, one_line(f"assert {ast.unparse(node.test)}", 200)
    return None


@functools.lru_cache(maxsize=16)
def _asserts(source: str) -> tuple[ast.Assert, ...]:
    """The ``assert`` statements of a source file; many failures in one file parse it once."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    return tuple(node for node in ast.walk(tree) if isinstance(node, ast.Assert))


_TEXT: Final = "_conformkit_traceback"
"""The attribute that keeps an exception's formatted traceback once its frames are released."""


def release_frames(error: BaseException) -> None:
    """
    Keep ``error``'s traceback as text, and let go of its frames.

    A traceback keeps every frame it passes through alive, and with them every
    local variable: a report of many failures would keep them all. The text is
    what a reader of the report needs; :func:`describe_exception` gives it back. The
    same is done for the exceptions chained to ``error`` and those in its groups.
    An exception that cannot hold the text keeps its traceback.
    """
    import traceback  # only where an error is described

    try:
        setattr(error, _TEXT, "".join(traceback.format_exception(error)))
    except (AttributeError, TypeError):  # an exception type without attributes
        return
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        exc = pending.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        exc.__traceback__ = None
        for linked in (exc.__cause__, exc.__context__):
            if linked is not None:
                pending.append(linked)
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)


def _traceback_text(error: BaseException) -> str:
    """``error`` formatted as a traceback shows it, whether or not its frames were released."""
    import traceback  # only where an error is described

    text = getattr(error, _TEXT, None)
    if isinstance(text, str):
        return text
    return "".join(traceback.format_exception(error))
