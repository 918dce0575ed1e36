"""
The options of a run, in one value: what ``run_contract`` takes besides the
implementation and the suite, checked once, where the value is made.

The public functions keep their keyword arguments and make a :class:`RunOptions`
of them; the command line and the pytest plugin make one of their settings. The
value goes whole to where the options are read (the run's plan, its execution),
so an option is added here, to the functions that take it, and where it is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from ._implementation import DEFAULT_TIMEOUT
from ._util import check_timeout

__all__ = ["RunOptions"]


@final
@dataclass(frozen=True, slots=True)
class RunOptions:
    """
    How a run runs its cases: the options of ``run_contract``, each as documented there.

    :ivar timeout: the run's deadline per stage; :data:`DEFAULT_TIMEOUT` itself (by
        identity) when the run gave none, so that the implementation's applies.
    :ivar max_concurrency: how many cases may run at once.
    :ivar reject_vacuous: record each case's calls, and fail one that made none.
    :ivar probe_unsupported: run the cases declared unsupported too.
    :ivar keep_tracebacks: keep the live tracebacks of the report's exceptions.
    :ivar check_isolation: create a second API beside each case's.
    :raises ContractDefinitionError: for a malformed ``timeout``.
    :raises ValueError: for a ``max_concurrency`` that is not an int of at least 1.
    """

    timeout: float | None = DEFAULT_TIMEOUT
    max_concurrency: int = 1
    reject_vacuous: bool = False
    probe_unsupported: bool = False
    keep_tracebacks: bool = False
    check_isolation: bool = False

    def __post_init__(self) -> None:
        if self.timeout is not DEFAULT_TIMEOUT:
            # Frozen: the checked deadline (a float) replaces what was given, once.
            object.__setattr__(self, "timeout", check_timeout(self.timeout))
        max_concurrency: object = self.max_concurrency
        if (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or (max_concurrency < 1)
        ):
            raise ValueError(
                f"max_concurrency must be an int of at least 1, got {max_concurrency!r}"
            )
