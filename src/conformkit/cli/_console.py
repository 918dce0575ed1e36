"""
What the command line writes, and where: the formats and their files, written
whole or not at all, the console, whatever its encoding, and the progress line.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from time import monotonic
from typing import TYPE_CHECKING, Final, TextIO, final

from .._exceptions import UsageError
from ._formats import SUFFIXES, render

if TYPE_CHECKING:
    from ._commands import Progress
    from ._matrix import Matrix

_PROGRESS_AFTER: Final = 0.5
"""Seconds a run lasts before a terminal gets a progress line."""


# -- text that consoles and files can hold ---------------------------------------------

# C0 and C1 controls but tab and newline, lone surrogates and the noncharacters
# U+FFFE and U+FFFF: shown as escapes, never sent to a terminal or written into a document.
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def escape_control(match: re.Match[str]) -> str:
    """The escape that shows a matched character: ``\\x1b``, ``\\ud800``."""
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (but tab and newline) shown as escapes."""
    return _CONTROL.sub(escape_control, text)


def clean(text: str) -> str:
    """``text`` without lone surrogates, which no file encoding can hold."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def write(stream: TextIO, text: str) -> None:
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


# -- files, written whole or not at all ------------------------------------------------


@final
class Destination:
    """
    A file to write atomically: a temporary file beside it, created up front so an
    unwritable path fails before anything runs, then renamed over it.
    """

    def __init__(self, path: str) -> None:
        import tempfile

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
class Outputs:
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
        seen: set[str] = set()
        for path in [path for _, path in pairs if path is not None]:
            if path in seen:
                raise UsageError(f"--output {path!r} is given twice")
            seen.add(path)
        # With every format going to files, stdout still gets the text summary.
        self.stdout = on_stdout[0] if on_stdout else "text"
        self.files = [(format, path) for format, path in pairs if path is not None]
        self.destinations: list[Destination] = []

    def prepare(self, *extra: str) -> list[Destination]:
        """Create the temporary files now, so that an unwritable path fails before the run."""
        try:
            for path in [path for _, path in self.files] + list(extra):
                self.destinations.append(Destination(path))
        except BaseException:
            self.discard()
            raise
        return self.destinations[len(self.files) :]

    def write(self, matrix: Matrix, *, matrix_view: bool = False) -> None:
        """Write every file, then the format for stdout."""
        for (format, _), destination in zip(self.files, self.destinations, strict=False):
            destination.commit(render(format, matrix, verbosity=self.verbosity))
        text = render(
            self.stdout,
            matrix,
            verbosity=self.verbosity,
            colour=self.stdout == "text" and colour(sys.stdout),
            matrix_view=matrix_view,
            width=terminal_width(),
        )
        write(sys.stdout, text)

    def discard(self) -> None:
        for destination in self.destinations:
            destination.discard()


# -- the progress line -----------------------------------------------------------------


@final
class ProgressLine:
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
