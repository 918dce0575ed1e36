"""
SIGTERM, taken as Ctrl-C, and a stop that always ends: what a CI runner or a
supervisor sends to stop a run gets the cleanups a user's Ctrl-C gets, and
either gets them for a bounded time, instead of killing the process on the spot
or waiting forever for code under test that does not stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Final, final

from ._console import Streams, write

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType

__all__ = [
    "DEFAULT_STOP_TIMEOUT",
    "INTERRUPTED",
    "TERMINATED",
    "Termination",
    "terminated",
    "terminating",
    "termination",
]

DEFAULT_STOP_TIMEOUT: Final = 10.0
"""Seconds the cleanups get after SIGTERM or Ctrl-C before the process ends regardless."""

INTERRUPTED: Final = 130
"""The exit status after Ctrl-C, as shells give it: 128 + SIGINT."""
TERMINATED: Final = 143
"""The exit status after SIGTERM: 128 + SIGTERM."""

_current: Termination | None = None
"""The termination of the command running, in :func:`terminating`."""


@final
class Termination:
    """
    Whether SIGTERM or Ctrl-C arrived while a command ran, and how the command ends
    at once when its cleanups take too long: a second signal, or the stop timeout.

    :ivar received: whether SIGTERM arrived.
    :ivar interrupted: whether a run took Ctrl-C (see :meth:`press`).
    :ivar committed: whether the outputs were put in place, all of them.
    :ivar describe: how far the run went, for the last line: ``" after 1 of 3 cases"``.
    :ivar at_end: what to do before the process ends at once: remove the
        temporary files of outputs being written.
    :ivar write_judged: after Ctrl-C, what writes the outputs of the cases judged
        before the process ends at once, while a run lasts; called once, in the
        thread that ends it.
    """

    __slots__ = (
        "_committer",
        "_deferred",
        "_forwarding",
        "_lock",
        "_timer",
        "at_end",
        "committed",
        "describe",
        "interrupted",
        "received",
        "stop_timeout",
        "streams",
        "write_judged",
    )

    def __init__(self, stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        self.received = False
        self.interrupted = False
        self.committed = False
        self.stop_timeout = stop_timeout
        self.streams = Streams()
        self.describe: Callable[[], str] = str
        self.at_end: list[Callable[[], None]] = []
        self.write_judged: Callable[[], None] | None = None
        # Held while the outputs are renamed into place, and by whoever ends the
        # process at once: never between two renames. Reentrant: ending after
        # Ctrl-C writes the outputs itself.
        self._lock = threading.RLock()
        self._committer: int | None = None  # the thread renaming the outputs
        self._deferred: str | None = None  # what a signal asked for while they were renamed
        self._forwarding = False  # SIGTERM passed on as Ctrl-C
        self._timer: threading.Timer | None = None

    def receive(self, frame: FrameType | None) -> None:
        """
        SIGTERM arrived, in the main thread, at any instruction: the first stops
        the run as Ctrl-C does and starts the stop timeout; the second, or one
        after Ctrl-C, ends the process at once.
        """
        if self.received or self.interrupted:
            second = self.received
            self.received = True
            self.end(
                f"{'a second SIGTERM' if second else 'SIGTERM after Ctrl-C'} stopped the cleanups"
            )
            return
        self.received = True
        self._start_timer()
        if self._committer == threading.get_ident():
            # The handler interrupted the renames: stop once they are all done.
            self._deferred = self._deferred or ""
            return
        self._forwarding = True
        try:
            _as_ctrl_c(frame)
        finally:
            self._forwarding = False

    def press(self) -> None:
        """
        A run took Ctrl-C, in its SIGINT handler, before acting on it: the first
        starts the stop timeout, the second ends the process at once, before the
        run raises ``KeyboardInterrupt`` where it lands (on trio, that can be inside
        the event loop itself). Ctrl-C after SIGTERM is a second SIGTERM.
        """
        if self._forwarding:
            return
        if self.received:
            self.end("a second SIGTERM stopped the cleanups")
        elif self.interrupted:
            self.end("a second Ctrl-C stopped the cleanups")
        else:
            self.interrupted = True
            self._start_timer()

    def _start_timer(self) -> None:
        timer = self._timer = threading.Timer(
            self.stop_timeout,
            self.end,
            (f"the cleanups did not end within the {self.stop_timeout:g}s stop timeout",),
        )
        timer.daemon = True
        timer.name = "conformkit stop timeout"
        timer.start()

    def end(self, why: str) -> None:
        """
        End the process now, with one line on stderr: after SIGTERM, status 143,
        every output file left as it was (or, if they were all put in place
        already, as written); after Ctrl-C, status 130, the outputs holding the
        cases judged, written here while the run lasts (see ``write_judged``).
        Called from a signal handler or from another thread; it never returns
        but in the thread renaming the outputs, which ends the process once
        they are all in place.
        """
        if self._committer == threading.get_ident():
            self._deferred = why
            return
        self._lock.acquire()  # never released: the process ends here
        self.streams.restore()  # the code under test may have replaced them
        for action in self.at_end:  # temporary files of outputs being written
            with contextlib.suppress(Exception):
                action()
        outputs = (
            "every output file is written" if self.committed else "every output file is as it was"
        )
        if self.received:
            status, line = TERMINATED, f"terminated (SIGTERM){self.describe()}; {why}"
        else:
            status, line = INTERRUPTED, f"interrupted{self.describe()}; {why}"
            if self.committed:
                outputs = "the outputs hold the cases judged"
            elif self.write_judged is not None:
                try:
                    self.write_judged()
                    outputs = "the outputs hold the cases judged"
                except Exception as error:  # a full disk: say so, and end all the same
                    outputs = str(error)
        line = f"{line}; {outputs}"
        with contextlib.suppress(Exception):
            self.streams.stdout.flush()
        with contextlib.suppress(Exception):
            write(self.streams.stderr, f"conformkit: error: {line}\n")
        os._exit(status)

    @contextlib.contextmanager
    def committing(self) -> Iterator[None]:
        """
        While the block renames the outputs into place, a SIGTERM is only noted,
        and acted on once they are all renamed: in CPython a signal's handler
        runs in the main thread at any instruction, whatever that thread's signal
        mask, as soon as another thread received the signal.
        """
        with self._lock:
            self._committer = threading.get_ident()
            try:
                yield
                self.committed = True
            finally:
                self._committer = None
        deferred, self._deferred = self._deferred, None
        if deferred == "":
            _as_ctrl_c(sys._getframe())
        elif deferred is not None:
            self.end(deferred)

    def close(self) -> None:
        """The command ended: the stop timeout no longer runs."""
        if self._timer is not None:
            self._timer.cancel()


@contextlib.contextmanager
def terminating(stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> Iterator[Termination]:
    """
    While the block runs, handle SIGTERM as Ctrl-C: call whatever handles SIGINT
    at that moment, so that the event loop in charge reacts as it does to Ctrl-C
    (asyncio cancels the run, so cleanups run within their deadlines, and raises
    ``KeyboardInterrupt`` once they have; trio delivers ``KeyboardInterrupt`` at
    a checkpoint). Without a Python handler for SIGINT, it raises
    ``KeyboardInterrupt`` where it lands. A second SIGTERM, or ``stop_timeout``
    seconds after the first, ends the process at once (see :meth:`Termination.end`).

    The block sees a ``KeyboardInterrupt``; the termination says it was SIGTERM.
    Outside the main thread, where no handler can be set, or when SIGTERM is
    ignored, nothing changes.
    """
    global _current
    termination = _current = Termination(stop_timeout)
    try:
        with _handled(termination):
            yield termination
    finally:
        termination.close()
        _current = None


@contextlib.contextmanager
def _handled(termination: Termination) -> Iterator[None]:
    terminate = getattr(signal, "SIGTERM", None)
    if terminate is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(terminate)
    if previous is signal.SIG_IGN:
        yield
        return

    def on_terminate(signum: int, frame: FrameType | None) -> None:
        termination.receive(frame)

    signal.signal(terminate, on_terminate)
    try:
        yield
    finally:
        # A handler set outside Python reads as None: put back the default.
        signal.signal(terminate, signal.SIG_DFL if previous is None else previous)


def _as_ctrl_c(frame: FrameType | None) -> None:
    """
    Act as Ctrl-C where ``frame`` runs: call whatever handles SIGINT now (trio's
    looks at the frame), else raise KeyboardInterrupt.
    """
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored (a background job), or left to the system
        raise KeyboardInterrupt


def termination() -> Termination | None:
    """The termination of the command running, if any."""
    return _current


def terminated() -> bool:
    """Whether SIGTERM arrived while the command running ran."""
    return _current is not None and _current.received
