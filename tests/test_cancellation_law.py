"""The cancellation law: conformkit.laws.assert_honours_cancellation."""

from __future__ import annotations

import math

import anyio
import anyio.lowlevel
import pytest

from conformkit import ContractDefinitionError
from conformkit.laws import LawViolation, assert_honours_cancellation

EXPIRES = 0.1
"""The deadline of a test whose stage is meant to time out: small, so that it times out fast."""

AMPLE = 0.3
"""The deadline of a test whose stages are meant to finish: they take microseconds."""

FOREVER = 5.0
"""How long "long-running work" lasts here: a bug then fails a test instead of hanging it."""


class BrokenConnection(Exception):
    """What a service left broken by a cancelled call raises on the next call."""


class Service:
    """
    A handler-like service: one request at a time, each holding the only slot.

    ``handle`` is correct: it sets ``started``, does long work and, in a
    ``finally``, gives the slot back and runs an awaiting (so shielded) cleanup
    that sets ``cleaned_up``. The tests below break one of those steps each.
    """

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cleaned_up = anyio.Event()
        self.slot = anyio.Semaphore(1)  # no owner: a leaked slot hangs the next call
        self.broken = False
        self.flushed: list[str] = []

    async def handle(self) -> str:
        async with self.slot:
            self.started.set()
            try:
                await anyio.sleep(FOREVER)
            finally:
                with anyio.CancelScope(shield=True):
                    await self.flush("handle")
                self.cleaned_up.set()
        return "handled"

    async def flush(self, what: str) -> None:
        await anyio.lowlevel.checkpoint()  # an awaiting cleanup step: cancelled unless shielded
        self.flushed.append(what)

    async def ping(self) -> str:
        if self.broken:
            raise BrokenConnection("the connection was left half-written")
        async with self.slot:
            return "pong"


class TestCorrectImplementation:
    """A call that cleans up when cancelled, and a service that still serves, pass."""

    @pytest.mark.anyio
    async def test_passes_a_handler_with_shielded_cleanup(self) -> None:
        """A handler whose finally runs its awaiting cleanup shielded passes the law."""
        service = Service()
        await assert_honours_cancellation(
            service.handle,
            started=service.started,
            cleaned_up=service.cleaned_up,
            afterwards=service.ping,
            timeout=AMPLE,
        )
        assert service.flushed == ["handle"]
        assert await service.ping() == "pong"

    @pytest.mark.anyio
    async def test_afterwards_is_optional(self) -> None:
        """Without afterwards, the law checks start, cleanup and the end of the call only."""
        service = Service()
        await assert_honours_cancellation(
            service.handle, started=service.started, cleaned_up=service.cleaned_up, timeout=AMPLE
        )
        assert service.cleaned_up.is_set()

    @pytest.mark.anyio
    async def test_accepts_any_object_with_an_async_wait(self) -> None:
        """The events need only ``await wait()``; ``is_set`` is optional."""

        class OnlyWait:
            def __init__(self, event: anyio.Event) -> None:
                self._event = event

            async def wait(self) -> None:
                await self._event.wait()

        service = Service()
        await assert_honours_cancellation(
            service.handle,
            started=OnlyWait(service.started),
            cleaned_up=OnlyWait(service.cleaned_up),
            timeout=AMPLE,
        )
        assert service.cleaned_up.is_set()


class TestStages:
    """Each broken stage fails the law with a reason that names it."""

    @pytest.mark.anyio
    async def test_cleanup_never_finished(self) -> None:
        """A handler without a finally ends when cancelled, but its cleanup never runs."""
        service = Service()

        async def no_finally() -> None:
            service.started.set()
            await anyio.sleep(FOREVER)
            service.cleaned_up.set()  # never reached when cancelled

        with pytest.raises(LawViolation, match=r"^cleanup never finished: .*within 0\.1s"):
            await assert_honours_cancellation(
                no_finally,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=EXPIRES,
            )

    @pytest.mark.anyio
    async def test_cleanup_that_awaits_unshielded(self) -> None:
        """A finally whose first await is cancelled again never reaches the end of its cleanup."""
        service = Service()

        async def unshielded_cleanup() -> None:
            service.started.set()
            try:
                await anyio.sleep(FOREVER)
            finally:
                await service.flush("handle")  # the bug under test: not shielded
                service.cleaned_up.set()

        with pytest.raises(LawViolation, match=r"^cleanup never finished: "):
            await assert_honours_cancellation(
                unshielded_cleanup,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=EXPIRES,
            )
        assert service.flushed == []

    @pytest.mark.anyio
    async def test_never_started(self) -> None:
        """A call that never sets started fails at the first stage, and is cancelled."""
        service = Service()
        ended = anyio.Event()

        async def stuck_before_starting() -> None:
            try:
                await anyio.sleep(FOREVER)
            finally:
                ended.set()

        with pytest.raises(LawViolation, match=r"^never started: .*within 0\.1s"):
            await assert_honours_cancellation(
                stuck_before_starting,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=EXPIRES,
            )
        assert ended.is_set()

    @pytest.mark.anyio
    async def test_unusable_afterwards_when_the_next_call_hangs(self) -> None:
        """A slot the cancelled call never gives back makes the next call time out."""
        service = Service()

        async def leaks_the_slot() -> None:
            await service.slot.acquire()
            service.started.set()
            try:
                await anyio.sleep(FOREVER)
                service.slot.release()  # skipped when cancelled
            finally:
                service.cleaned_up.set()

        with pytest.raises(
            LawViolation, match=r"^unusable afterwards: .*did not finish within 0\.1s"
        ):
            await assert_honours_cancellation(
                leaks_the_slot,
                started=service.started,
                cleaned_up=service.cleaned_up,
                afterwards=service.ping,
                timeout=EXPIRES,
            )

    @pytest.mark.anyio
    async def test_unusable_afterwards_when_the_next_call_raises(self) -> None:
        """The next call's error is named in the reason and chained as the cause."""
        service = Service()

        async def breaks_the_connection() -> None:
            service.started.set()
            try:
                await anyio.sleep(FOREVER)
            finally:
                service.broken = True
                service.cleaned_up.set()

        with pytest.raises(
            LawViolation,
            match=r"^unusable afterwards: .* raised .*BrokenConnection: the connection was left",
        ) as caught:
            await assert_honours_cancellation(
                breaks_the_connection,
                started=service.started,
                cleaned_up=service.cleaned_up,
                afterwards=service.ping,
                timeout=AMPLE,
            )
        assert isinstance(caught.value.__cause__, BrokenConnection)


class TestCallsThatDoNotWaitToBeCancelled:
    """A call that finishes on its own proves nothing about cancellation."""

    @pytest.mark.anyio
    async def test_a_call_that_returns_at_once(self) -> None:
        """A call that returns before it is cancelled fails, showing the value it returned."""
        service = Service()

        async def returns_at_once() -> int:
            service.started.set()
            return 42

        with pytest.raises(
            LawViolation, match=r"^finished before cancellation: .* returned 42 before"
        ):
            await assert_honours_cancellation(
                returns_at_once,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=AMPLE,
            )

    @pytest.mark.anyio
    async def test_a_huge_returned_value_is_shortened(self) -> None:
        """The value a call returned on its own is shown shortened, not in full."""
        service = Service()

        async def returns_a_lot() -> list[int]:
            service.started.set()
            return list(range(100_000))

        with pytest.raises(LawViolation) as caught:
            await assert_honours_cancellation(
                returns_a_lot,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=AMPLE,
            )
        assert "returned [0, 1, 2, 3, 4, 5, 6, 7, ...] before it was cancelled" in str(caught.value)

    @pytest.mark.anyio
    async def test_a_call_that_returns_without_starting(self) -> None:
        """A call that returns without setting started is reported at once, not as never started."""
        service = Service()

        async def returns_none() -> None:
            pass

        with anyio.fail_after(FOREVER / 2):  # the law does not wait out its deadline
            with pytest.raises(LawViolation, match=r"^finished before cancellation: .* None"):
                await assert_honours_cancellation(
                    returns_none,
                    started=service.started,
                    cleaned_up=service.cleaned_up,
                    timeout=FOREVER,
                )

    @pytest.mark.anyio
    async def test_a_call_that_raises_before_being_cancelled(self) -> None:
        """A call that raises on its own fails, naming the error and chaining it."""
        service = Service()

        async def raises() -> None:
            service.started.set()
            raise BrokenConnection("refused")

        with pytest.raises(
            LawViolation,
            match=r"^finished before cancellation: .* raised .*BrokenConnection: refused before",
        ) as caught:
            await assert_honours_cancellation(
                raises, started=service.started, cleaned_up=service.cleaned_up, timeout=AMPLE
            )
        assert isinstance(caught.value.__cause__, BrokenConnection)


class TestCallsThatDoNotHonourCancellation:
    """A call that catches the cancellation is caught, within the deadline's verdict."""

    @pytest.mark.anyio
    async def test_swallows_the_cancellation_and_returns(self) -> None:
        """A call that swallows the cancellation and returns a value ignored it."""
        service = Service()

        async def swallows() -> str:
            service.started.set()
            try:
                await anyio.sleep(FOREVER)
            except anyio.get_cancelled_exc_class():
                pass  # the bug under test: the cancellation is swallowed
            finally:
                service.cleaned_up.set()
            return "done anyway"

        with pytest.raises(
            LawViolation,
            match=r"^ignored cancellation: .* returned 'done anyway' after being cancelled",
        ):
            await assert_honours_cancellation(
                swallows, started=service.started, cleaned_up=service.cleaned_up, timeout=AMPLE
            )

    @pytest.mark.anyio
    async def test_swallows_the_cancellation_and_keeps_running(self) -> None:
        """A call still running at the deadline ignored cancellation, and its cleanup is missing."""
        service = Service()
        carried_on = 3 * EXPIRES

        async def keeps_running() -> None:
            service.started.set()
            try:
                await anyio.sleep(FOREVER)
            except anyio.get_cancelled_exc_class():
                # The bug under test: it carries on with its work, out of reach.
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(carried_on)
            service.cleaned_up.set()

        with pytest.raises(
            LawViolation,
            match=(
                r"^ignored cancellation: .* still running 0\.1s after being cancelled; "
                r"and cleaned_up was not set"
            ),
        ):
            await assert_honours_cancellation(
                keeps_running,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=EXPIRES,
            )

    @pytest.mark.anyio
    async def test_turns_the_cancellation_into_an_error(self) -> None:
        """A call that raises another error when cancelled fails, chaining that error."""
        service = Service()

        async def converts() -> None:
            service.started.set()
            try:
                await anyio.sleep(FOREVER)
            finally:
                service.cleaned_up.set()
                raise BrokenConnection("closed while writing")  # replaces the cancellation

        with pytest.raises(
            LawViolation,
            match=r"^failed when cancelled: .* raised .*BrokenConnection: closed while writing",
        ) as caught:
            await assert_honours_cancellation(
                converts, started=service.started, cleaned_up=service.cleaned_up, timeout=AMPLE
            )
        assert isinstance(caught.value.__cause__, BrokenConnection)


class TestOutsideCancellation:
    """A cancellation of the code awaiting the law propagates; it is never a violation."""

    @pytest.mark.anyio
    async def test_while_waiting_for_started(self) -> None:
        """Cancelled while waiting for started: the enclosing scope catches it, the call ends."""
        service = Service()
        ended = anyio.Event()

        async def never_starts() -> None:
            try:
                await anyio.sleep(FOREVER)
            finally:
                ended.set()

        with anyio.move_on_after(EXPIRES) as outer:
            await assert_honours_cancellation(
                never_starts,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=FOREVER,
            )
        assert outer.cancelled_caught
        assert ended.is_set()

    @pytest.mark.anyio
    async def test_while_waiting_for_cleanup(self) -> None:
        """Cancelled while waiting for cleanup: the cancellation propagates, not a violation."""
        service = Service()

        async def no_cleanup() -> None:
            service.started.set()
            await anyio.sleep(FOREVER)

        with anyio.move_on_after(EXPIRES) as outer:
            await assert_honours_cancellation(
                no_cleanup,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=FOREVER,
            )
        assert outer.cancelled_caught

    @pytest.mark.anyio
    async def test_while_waiting_for_afterwards(self) -> None:
        """Cancelled while the new call runs: the cancellation propagates, not a violation."""
        service = Service()

        async def hangs() -> None:
            await anyio.sleep(FOREVER)

        with anyio.move_on_after(EXPIRES) as outer:
            await assert_honours_cancellation(
                service.handle,
                started=service.started,
                cleaned_up=service.cleaned_up,
                afterwards=hangs,
                timeout=FOREVER,
            )
        assert outer.cancelled_caught
        assert service.cleaned_up.is_set()


class TestArguments:
    """Bad arguments are rejected at once, with a one-line message."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("timeout", [0, -1.0, math.nan, math.inf, True, "1"])
    async def test_rejects_a_timeout_that_is_not_a_positive_number(self, timeout: object) -> None:
        """A zero, negative, NaN, infinite, boolean or non-numeric timeout is rejected."""
        service = Service()
        with pytest.raises(
            ContractDefinitionError, match=r"^timeout must be a positive, finite number"
        ):
            await assert_honours_cancellation(
                service.handle,
                started=service.started,
                cleaned_up=service.cleaned_up,
                timeout=timeout,  # type: ignore[arg-type]
            )
        assert not service.started.is_set()

    @pytest.mark.anyio
    async def test_rejects_an_event_that_is_already_set(self) -> None:
        """An event set before the call starts would be stale evidence: a ValueError."""
        service = Service()
        service.cleaned_up.set()
        with pytest.raises(ValueError, match=r"^cleaned_up is already set before the call starts"):
            await assert_honours_cancellation(
                service.handle, started=service.started, cleaned_up=service.cleaned_up
            )
        assert not service.started.is_set()

    @pytest.mark.anyio
    async def test_rejects_a_call_that_is_not_callable(self) -> None:
        """Passing the awaitable instead of the function is a TypeError that says so."""
        service = Service()
        with pytest.raises(TypeError, match=r"^call must be a callable returning an awaitable"):
            await assert_honours_cancellation(
                anyio.Event(),  # type: ignore[arg-type]
                started=service.started,
                cleaned_up=service.cleaned_up,
            )
