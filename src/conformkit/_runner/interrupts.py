"""
Interrupts: a run's SIGINT handler, through which Ctrl-C stops the run cleanly
and the watchdog thread interrupts sync code that blocks the main thread.
"""

from __future__ import annotations

import _thread
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, cast, final

from .._watchdog import Watch, interrupt_at

if TYPE_CHECKING:
    import signal as _signal
else:
    # The C module under `signal`: its functions take a tenth of the time of
    # `signal`'s, which wrap every handler and number in an enum, and a run
    # installs its handler each time it starts; importing it costs nothing.
    import _signal

_SIGINT: Final = _signal.SIGINT


_main_thread: int | None = None  # its ident, once a run needed it


def on_main_thread() -> bool:
    global _main_thread
    if _main_thread is None:
        import threading  # imported by the event loop by now, not with conformkit

        _main_thread = threading.main_thread().ident
    return _thread.get_ident() == _main_thread


@final
class Signals:
    """
    The SIGINT handler of a run on the main thread.

    Through it the watchdog thread interrupts sync code that blocks the event
    loop: a signal ends a blocking call (``time.sleep``, ``Lock.acquire``, a
    read) where an exception raised from another thread waits for it to return.
    Any other SIGINT is Ctrl-C: the first stops the run cleanly, the second at
    once. The handler the run found is put back when it ends.
    """

    __slots__ = ("handle", "pending", "pressed", "previous", "stop")

    def __init__(
        self, previous: Callable[[int, FrameType | None], Any], stop: Callable[[], None]
    ) -> None:
        self.previous = previous
        self.stop = stop  # stops the run for Ctrl-C
        self.pending: tuple[Watch, float] | None = None
        self.pressed = False  # Ctrl-C was pressed once
        # The one bound method installed, to know it again; let go once
        # restored, as it makes a cycle that only the garbage collector breaks.
        self.handle: object = _RESTORED

    @classmethod
    def install(cls, stop: Callable[[], None]) -> Signals | None:
        """Install the handler; ``None`` off the main thread, or over a handler not in Python."""
        if not on_main_thread():
            return None
        previous = _signal.getsignal(_SIGINT)
        if not callable(previous):
            return None
        signals = cls(previous, stop)
        signals.handle = handle = signals._handle
        _signal.signal(_SIGINT, handle)
        return signals

    def restore(self) -> None:
        if _signal.getsignal(_SIGINT) is self.handle:
            _signal.signal(_SIGINT, self._found())
        self.handle = _RESTORED

    def _found(self) -> Callable[[int, FrameType | None], Any]:
        """
        The handler to put back: the one found, unless it is the handler of a run
        that overlapped this one and has ended (it started first, and ended first),
        which outside its run cannot act on Ctrl-C: then the one that run found.
        """
        previous = self.previous
        run = getattr(previous, "__self__", None)
        while isinstance(run, Signals) and run.handle is _RESTORED:
            previous = run.previous
            run = getattr(previous, "__self__", None)
        return previous

    def interrupt(self, watch: Watch, stage: float) -> None:
        """Interrupt a stage that blocks the main thread; called from the watchdog thread."""
        self.pending = (watch, stage)
        kill = getattr(_signal, "pthread_kill", None)  # not on Windows
        if kill is not None and _signal.getsignal(_SIGINT) is self.handle:
            kill(cast("int", _main_thread), _SIGINT)
        else:  # the code under test replaced the handler
            self.pending = None
            watch.raise_in_thread(stage)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        pending = self.pending
        if pending is None:
            # Ctrl-C. The first stops the run: the cases in flight are cancelled,
            # their cleanups run, shielded and under their deadlines, and then the
            # run raises KeyboardInterrupt. The second stops at once.
            if _ctrl_c_hook is not None:
                _ctrl_c_hook()
            if self.pressed:
                raise KeyboardInterrupt
            self.pressed = True
            # Not from here: the loop may be mid-step. The handler runs in the
            # event loop's thread, which knows its loop.
            _call_soon_threadsafe()(self.stop)
            return
        self.pending = None
        interrupt_at(*pending, frame)


_RESTORED: Final = object()
"""What a run's SIGINT handler is known by once the run put the previous one back."""


_ctrl_c_hook: Callable[[], None] | None = None


def set_ctrl_c_hook(hook: Callable[[], None] | None) -> None:
    """
    Call ``hook`` at each Ctrl-C a run's SIGINT handler takes, in the main thread,
    before the run acts on it: the command line, which owns its process, bounds
    how long a run may take to stop. ``None`` removes it.
    """
    global _ctrl_c_hook
    _ctrl_c_hook = hook


_CallSoon = Callable[[Callable[[], object]], object]


def _call_soon_threadsafe() -> _CallSoon:
    """How to run a function on the running event loop from a signal handler or a thread."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            return cast("_CallSoon", asyncio.get_running_loop().call_soon_threadsafe)
        except RuntimeError:  # not on asyncio
            pass
    import trio  # on trio, then

    return cast("_CallSoon", trio.lowlevel.current_trio_token().run_sync_soon)


def natively_cancelled() -> bool:
    """Whether asyncio itself was asked to cancel this task (``Task.cancel()``, not a scope)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not on asyncio
        return False
    return task is not None and task.cancelling() > 0
