"""Small helpers that the core, the laws, the profiles and the command line share."""

from __future__ import annotations

import math
import reprlib
from typing import Final

from ._exceptions import ContractDefinitionError

__all__ = [
    "callable_location",
    "callable_name",
    "check_timeout",
    "cut",
    "one_line",
    "short_repr",
]

SHOWN: Final = 200
"""The most characters of any one value that a message shows."""

_repr = reprlib.Repr()
_repr.maxlevel = 4
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxfrozenset = _repr.maxdeque = 8
_repr.maxdict = 8
_repr.maxstring = 60
_repr.maxlong = 40
_repr.maxother = 100  # room for a whole datetime with its tzinfo


def cut(text: str, limit: int = SHOWN) -> str:
    """``text`` if it is at most ``limit`` characters, else cut in the middle with `` ... ``."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[len(text) - half :]}"


def short_repr(value: object, limit: int = SHOWN) -> str:
    """
    A repr of ``value`` for a message: at most ``limit`` characters, nested
    containers shortened, long byte strings shown by their length and first bytes.
    """
    if isinstance(value, bytes | bytearray) and len(value) > 40:
        return f"{len(value)} bytes starting {bytes(value[:16])!r}"
    return cut(_repr.repr(value), limit)


def one_line(text: str | None, limit: int = 240) -> str:
    """The first line of ``text``, at most ``limit`` characters, with ``…`` if anything was cut."""
    line = (text or "").strip().splitlines()[0] if text and text.strip() else ""
    more = line != (text or "").strip()
    if len(line) > limit:
        line, more = line[: limit - 1], True
    return line + ("…" if more else "")


def callable_name(function: object, limit: int | None = None) -> str:
    """
    Name a callable for a message: its qualified name, or its repr; cut to
    ``limit`` characters when one is given.
    """
    try:
        name = getattr(function, "__qualname__", None)
        if not isinstance(name, str):
            name = repr(function)
    except Exception:  # the code under test's __getattr__ or __repr__ may raise anything
        name = f"<{type(function).__qualname__} object>"
    return name if limit is None else cut(name, limit)


def callable_location(function: object) -> str:
    """Name a callable and, for a Python function, where it is defined: ``name at file:line``."""
    name = callable_name(function)
    code = getattr(function, "__code__", None)
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def check_timeout(timeout: object, *, what: str = "timeout", optional: bool = True) -> float | None:
    """
    Check a deadline in seconds: a positive, finite number, or ``None`` for none
    when ``optional``.

    :raises ContractDefinitionError: naming the parameter and the value, on one line.
    """
    expected = "a positive, finite number of seconds" + (" or None" if optional else "")
    if timeout is None and optional:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ContractDefinitionError(f"{what} must be {expected}, got {short_repr(timeout, 40)}")
    try:
        seconds = float(timeout)
    except OverflowError:
        seconds = math.inf
    if not (0 < seconds < math.inf):
        raise ContractDefinitionError(f"{what} must be {expected}, got {short_repr(timeout, 40)}")
    return seconds
