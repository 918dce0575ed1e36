"""
The outputs of a command: the formats it writes, and where, each file written
whole or not at all.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from typing import TYPE_CHECKING, Final, TextIO, final

from .._exceptions import UsageError
from ._console import colour, write
from ._formats import SUFFIXES, render

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from ._matrix import Matrix


_RANDOM: Final = 8
"""The characters ``tempfile.mkstemp`` adds to make a temporary name unique."""
_TEMPORARY: Final = ".tmp"


@final
class Destination:
    """
    A file to write whole or not at all: written to a temporary file beside it,
    then renamed over it.

    Only a regular file, or a path where nothing is yet, is replaced that way. A
    path that names something else (a FIFO, a character device such as
    ``/dev/null``) is written in place, as a shell's ``>`` would; and one that
    names this process's stderr is written to that stream. A symbolic link stays
    a link: the file it points to is replaced.

    The temporary file exists only while the outputs are being written: a
    process killed during the run leaves nothing behind.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.temporary: str | None = None
        self.text: str | None = None
        status = _status(path)
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise UsageError(f"cannot write {path!r}: it is a directory")
        self.stream = sys.stderr if status is not None and _is_stream(status, sys.stderr) else None
        self.in_place = status is not None and (
            not stat.S_ISREG(status.st_mode) or self.stream is not None
        )
        self.status = status
        # The file a rename replaces: where a symbolic link points, so that it stays one.
        self.final = path if self.in_place else os.path.realpath(path)
        directory = os.path.dirname(os.path.abspath(self.final))
        if not os.path.isdir(directory):
            raise UsageError(f"cannot write {path!r}: no such directory {directory!r}")
        self.directory = directory
        if not self.in_place:
            # Fail now, before anything runs, if no file can be created there.
            fd, temporary = self._create_temporary()
            os.close(fd)
            os.unlink(temporary)

    @property
    def key(self) -> object | None:
        """
        What tells two spellings of one file apart from two files: the device and
        inode of an existing file, else the resolved path; ``None`` for a path
        written in place, which no rename can destroy.
        """
        if self.in_place:
            return None
        if self.status is not None:
            return (self.status.st_dev, self.status.st_ino)
        return os.path.normcase(self.final)

    def _create_temporary(self) -> tuple[int, str]:
        import tempfile

        name = os.path.basename(self.final)
        # The temporary name must fit the file system's limit on a name, in bytes,
        # however long the final name: it keeps as much of it as fits.
        room = _name_max(self.directory) - len(_TEMPORARY) - _RANDOM - 2
        while len(os.fsencode(name)) > room and name:
            name = name[:-1]
        try:
            return tempfile.mkstemp(dir=self.directory, prefix=f".{name}.", suffix=_TEMPORARY)
        except OSError as error:
            raise self._error(error) from error

    def _error(self, error: OSError) -> UsageError:
        return UsageError(f"cannot write {self.path!r}: {error.strerror or error}")

    def stage(self, text: str) -> None:
        """Write ``text`` to the temporary file, to disk: the file itself is not touched yet."""
        if self.in_place:
            self.text = text
            return
        fd, self.temporary = self._create_temporary()
        try:
            file = open(fd, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed below)
        except BaseException:
            os.close(fd)
            self.discard()
            raise
        try:
            with file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(self.temporary, _mode_for(self.final))
        except OSError as error:
            self.discard()
            raise self._error(error) from error

    def commit(self) -> None:
        """Put the staged text in place: rename the temporary file over the file."""
        if self.temporary is None:
            return
        try:
            os.replace(self.temporary, self.final)
        except OSError as error:
            self.discard()
            raise self._error(error) from error
        self.temporary = None

    def write_in_place(self) -> None:
        """Write the staged text to a path that is not a regular file, or to stderr."""
        text = self.text
        if text is None:
            return
        self.text = None
        if self.stream is not None:
            write(self.stream, text)
            return
        try:
            with open(self.path, "w", encoding="utf-8", newline="\n") as file:
                file.write(text)
        except OSError as error:
            raise self._error(error) from error

    def discard(self) -> None:
        """Remove the temporary file, if there is one: the file stays as it was."""
        temporary, self.temporary, self.text = self.temporary, None, None
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def _status(path: str) -> os.stat_result | None:
    """What ``path`` names, following links; ``None`` when nothing is there yet."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise UsageError(f"cannot write {path!r}: {error.strerror or error}") from error
    except ValueError as error:  # an embedded null character
        raise UsageError(f"cannot write {path!r}: {error}") from error


def _is_stream(status: os.stat_result, stream: TextIO) -> bool:
    """Whether ``status`` is that of the file ``stream`` writes to."""
    try:
        return os.path.samestat(status, os.fstat(stream.fileno()))
    except (OSError, ValueError, AttributeError):  # no file descriptor: a test's capture
        return False


def _names_stdout(path: str) -> bool:
    """Whether ``path`` names the file this process's stdout writes to (``/dev/stdout``)."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return False
    return _is_stream(status, sys.stdout)


def _name_max(directory: str) -> int:
    """The longest name, in bytes, that the file system of ``directory`` takes."""
    try:
        limit = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not POSIX, or no limit it will say
        return 255
    return limit if 32 <= limit <= 4096 else 255


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
            if path is not None and _names_stdout(path):
                path = None  # `-o /dev/stdout`: the format goes to stdout, as without -o
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

    def prepare(
        self, *extra: tuple[str, str], reads: Sequence[tuple[str, str]] = ()
    ) -> list[Destination]:
        """
        Check every output path now, so that an unwritable one fails before the run,
        and so does an output that names the same file as another, or as an input.

        :param extra: more files to write besides the outputs (a baseline to update),
            each as messages name it, with its path.
        :param reads: the files the command reads, each with what it is: ``("baseline",
            path)``; an output must not replace one.
        :return: the destinations of ``extra``.
        """
        try:
            named = [(f"--output {path!r}", path) for _, path in self.files]
            named += list(extra)
            keys: dict[object, str] = {}
            for shown, path in named:
                destination = Destination(path)
                self.destinations.append(destination)
                key = destination.key
                if key is None:
                    continue
                if key in keys:
                    raise UsageError(f"{keys[key]} and {shown} name the same file")
                keys[key] = shown
            for role, path in reads:
                try:
                    status = os.stat(path)
                except (OSError, ValueError):
                    continue  # the command says so when it reads it
                output = keys.get((status.st_dev, status.st_ino))
                if output is not None:
                    raise UsageError(
                        f"{output} names the {role} {path!r}, which this command reads; "
                        f"write to another file"
                    )
        except BaseException:
            self.discard()
            raise
        return self.destinations[len(self.files) :]

    def write(
        self, matrix: Matrix, *, matrix_view: bool = False, extra: Sequence[str] = ()
    ) -> None:
        """
        Write every file, then the format for stdout.

        Every file is written to its temporary file first, and only when all are
        written are they renamed into place: when one cannot be written (a full
        disk), every file stays as it was.

        :param extra: the text of each extra file :meth:`prepare` was given.
        """
        texts = [render(format, matrix, verbosity=self.verbosity) for format, _ in self.files]
        texts += extra
        staged = list(zip(self.destinations, texts, strict=True))
        try:
            for destination, text in staged:
                destination.stage(text)
            with _committing():
                for destination, _ in staged:
                    destination.commit()
            for destination, _ in staged:
                destination.write_in_place()
        finally:
            self.discard()
        text = render(
            self.stdout,
            matrix,
            verbosity=self.verbosity,
            colour=self.stdout == "text" and colour(sys.stdout),
            matrix_view=matrix_view,
        )
        write(sys.stdout, text)

    def discard(self) -> None:
        """Remove every temporary file: each output stays as it was."""
        for destination in self.destinations:
            destination.discard()


@contextlib.contextmanager
def _committing() -> Iterator[None]:
    """
    Hold back Ctrl-C and SIGTERM while the outputs are renamed into place, so that
    an interrupt there cannot leave some renamed and others not; it is acted on
    once they all are.

    Not with a signal mask: CPython runs a handler in the main thread at any
    instruction, whatever that thread's mask, once another thread (the watchdog, a
    worker) received the signal. The handlers themselves wait instead.
    """
    import signal
    import threading

    from ._interrupt import termination

    current = termination()
    renaming = contextlib.nullcontext() if current is None else current.committing()
    if threading.current_thread() is not threading.main_thread():
        with renaming:
            yield
        return
    pressed: list[object] = []
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(frame))
    try:
        with renaming:
            yield
    finally:
        # A handler set outside Python reads as None: put back the default.
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    if pressed and callable(previous):
        previous(signal.SIGINT, sys._getframe())
    elif pressed:
        raise KeyboardInterrupt
