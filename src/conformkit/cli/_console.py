"""
The console: what is written to it, whatever its encoding, the streams in place
when a command started, and the progress line.
"""

from __future__ import annotations

import os
import sys
from time import monotonic
from typing import Final, TextIO, final

from ._characters import printable

_PROGRESS_AFTER: Final = 0.5
"""Seconds a run lasts before a terminal gets a progress line."""


# What a console that cannot show the reports' marks and signs gets instead (LANG=C,
# PYTHONIOENCODING=ascii): the grid's marks and the legend that explains them alike.
_PLAIN: Final = str.maketrans(
    {"✓": "+", "✗": "X", "–": "-", "·": ".", "×": "x", "—": "-", "…": "..."}
)


def write(stream: TextIO, text: str) -> None:
    """
    Write to a console whatever its encoding: the marks it cannot show become plain
    ASCII ones, and any other character it cannot show gets escaped.
    """
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            encoding = stream.encoding or "utf-8"
            plain = text.translate(_PLAIN)
            stream.write(plain.encode(encoding, "backslashreplace").decode(encoding))
        stream.flush()
    except BrokenPipeError:
        # The reader has gone (`conformkit run ... | head`): it wants no more text,
        # but the exit status still gives the verdict. Later writes go nowhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def colour(stream: TextIO) -> bool:
    """Colour for a terminal, unless NO_COLOR (https://no-color.org) or TERM=dumb says not."""
    isatty = getattr(stream, "isatty", None)
    return (
        isatty is not None
        and isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM") != "dumb"
    )


def terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size().columns


# -- the streams -------------------------------------------------------------------------


@final
class Streams:
    """
    The stdout and stderr in place when it was made: what the command line writes
    to, though the code under test replaced ``sys.stdout`` or ``sys.stderr``.
    """

    __slots__ = ("stderr", "stdout")

    def __init__(self) -> None:
        self.stdout = sys.stdout
        self.stderr = sys.stderr

    def restore(self) -> None:
        """Put them back in ``sys``, for every later write."""
        sys.stdout, sys.stderr = self.stdout, self.stderr


# -- the progress line -----------------------------------------------------------------


@final
class ProgressLine:
    """A line on a terminal's stderr saying how far a long run is, erased when it ends."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = monotonic()
        self.text = ""
        self.width = 0

    def show(self, finished: int, total: int, label: str) -> None:
        """Show how many cases of the total are finished, and what runs: ``label``."""
        elapsed = monotonic() - self.started
        if elapsed < _PROGRESS_AFTER:
            return
        text = f"conformkit: {finished}/{total} cases, {elapsed:.1f}s: {printable(label)}"
        text = text[: max(terminal_width() - 1, 20)]
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
            write(self.stream, "\r" + text)
        except OSError:
            self.width = 0  # a closed terminal ends the progress line, not the run
