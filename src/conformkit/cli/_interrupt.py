"""
SIGTERM, taken as Ctrl-C: what a CI runner or a supervisor sends to stop a run
gets the cleanups a user's Ctrl-C gets, instead of killing the process on the spot.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

__all__ = ["Termination", "terminated", "terminating"]

_current: Termination | None = None
"""The termination of the command running, in :func:`terminating`."""


@final
class Termination:
    """Whether SIGTERM arrived while a command ran."""

    __slots__ = ("received",)

    def __init__(self) -> None:
        self.received = False


@contextlib.contextmanager
def terminating() -> Iterator[Termination]:
    """
    While the block runs, handle SIGTERM as Ctrl-C: call whatever handles SIGINT
    at that moment, so that the event loop in charge reacts as it does to Ctrl-C
    (asyncio cancels the run, so cleanups run within their deadlines, and raises
    ``KeyboardInterrupt`` once they have; trio delivers ``KeyboardInterrupt`` at
    a checkpoint), and a second SIGTERM acts as a second Ctrl-C. Without a
    Python handler for SIGINT, it raises ``KeyboardInterrupt`` where it lands.

    The block sees a ``KeyboardInterrupt``; the termination says it was SIGTERM.
    Outside the main thread, where no handler can be set, or when SIGTERM is
    ignored, nothing changes.
    """
    global _current
    termination = _current = Termination()
    try:
        with _handled(termination):
            yield termination
    finally:
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
        termination.received = True
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored (a background job), or left to the system
            raise KeyboardInterrupt

    signal.signal(terminate, on_terminate)
    try:
        yield
    finally:
        # A handler set outside Python reads as None: put back the default.
        signal.signal(terminate, signal.SIG_DFL if previous is None else previous)


def terminated() -> bool:
    """Whether SIGTERM arrived while the command running ran."""
    return _current is not None and _current.received
