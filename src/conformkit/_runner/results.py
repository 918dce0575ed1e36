"""The results of cases that did not simply pass: their reasons, statuses and tracebacks."""

from __future__ import annotations

import dataclasses
import os
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Final

import anyio

from .._exceptions import FeatureUnavailable
from .._explain import error_line, release_frames
from .._report import CaseResult, CaseStatus
from .._watchdog import format_frames

if TYPE_CHECKING:
    from .lanes import Retry

_PASSED: Final = CaseStatus.PASSED
_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RUNNER: Final = os.path.dirname(os.path.abspath(__file__))
# The host's own frames, dropped from the front of a case's traceback; the bundled
# profiles' case functions live in the package too, and are kept.
_HOST_FILES: Final = frozenset(
    [
        *(os.path.join(_RUNNER, name) for name in os.listdir(_RUNNER) if name.endswith(".py")),
        *(os.path.join(_PACKAGE, name) for name in ("_scope.py", "_shape.py")),
    ]
)


def retried(result: CaseResult, retry: Retry, timeout: float | None) -> CaseResult:
    """
    The result of a case run again under the longer deadline: passed, it passed
    only with more time, and says so; else it is judged as it ran the second time.
    Its duration is that of both runs.
    """
    duration = retry.duration + result.duration
    if result.status is _PASSED and result.reason is None:
        reason = (
            f"slow: passed only when run again under a {timeout or 0:g}s deadline; the first "
            f"run: {retry.reason}"
        )
        return CaseResult(result.case_id, _PASSED, reason, duration=duration, slow=True)
    return dataclasses.replace(result, duration=duration)


def probed(result: CaseResult, declared: str) -> CaseResult:
    """A probed case stays unsupported; one that passed is a stale declaration."""
    if result.status is CaseStatus.PASSED:
        return CaseResult(
            result.case_id, CaseStatus.UNSUPPORTED, f"{declared} (declared unsupported but passed)",
            duration=result.duration, stale=True,
        )  # fmt: skip
    return CaseResult(result.case_id, CaseStatus.UNSUPPORTED, declared, duration=result.duration)


def unsupported_reason(error: BaseException | None) -> str | None:
    """
    The reason of a :class:`CaseUnsupported` a case raised; ``None`` for any other
    error, and for one with no reason, or whose reason cannot be read (its
    argument's ``__str__`` raised): that case fails, its reason saying so.
    """
    skip = sys.modules.get("conformkit._skip")  # none can be raised before it is imported
    if skip is None or type(error) is not skip.CaseUnsupported:
        return None
    try:
        reason = str(error)
    except KeyboardInterrupt:
        raise  # it alone stops the run, whoever raised it
    except BaseException:
        return None
    return reason if reason.strip() else None


def stack_of(error: BaseException) -> str:
    """The innermost frames of an exception's traceback, formatted."""
    import traceback  # only where an error is described

    return format_frames(traceback.extract_tb(error.__traceback__))


def release_result(result: CaseResult) -> None:
    """Keep the tracebacks of a result's exceptions as text, letting their frames go."""
    if result.error is not None:
        release_frames(result.error)
    for error in result.cleanup_errors:
        release_frames(error)


def failed_result(
    case_id: str,
    stage: str,
    error: BaseException | None,
    cleanup_errors: tuple[BaseException, ...],
    duration: float,
) -> CaseResult:
    """The result of a case that ended in an error or a failed cleanup."""
    if error is None:
        first = error_line(cleanup_errors[0])
        more = f" (and {len(cleanup_errors) - 1} more)" if len(cleanup_errors) > 1 else ""
        reason = f"case {case_id!r} failed in cleanup: {first}{more}"
        return CaseResult(case_id, CaseStatus.FAILED, reason, None, cleanup_errors, duration)
    trim_traceback(error)
    where = " in create()" if stage == "create" else ""
    reason = f"{error_line(error)}{_location(error)}"
    if isinstance(error, anyio.get_cancelled_exc_class()):
        reason = (
            f"{type(error).__name__} raised with no cancellation under way, a stray or "
            f"re-raised cancellation in the code under test{_location(error)}"
        )
    if cleanup_errors:
        reason += f"; {len(cleanup_errors)} cleanup(s) failed too"
    if isinstance(error, FeatureUnavailable):
        if stage == "create":
            return CaseResult(
                case_id,
                CaseStatus.UNAVAILABLE,
                f"case {case_id!r} unavailable: {reason}",
                error,
                cleanup_errors,
                duration,
            )
        reason += " (FeatureUnavailable means 'unavailable' only when create() raises it)"
    return CaseResult(
        case_id,
        CaseStatus.FAILED,
        f"case {case_id!r} failed{where}: {reason}",
        error,
        cleanup_errors,
        duration,
    )


def trim_traceback(error: BaseException) -> None:
    """Drop conformkit's own frames from the front of ``error``'s traceback."""

    tb: TracebackType | None = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in _HOST_FILES:
        tb = tb.tb_next
    # None when conformkit raised it itself: no frame of the code under test.
    error.__traceback__ = tb


def _location(error: BaseException) -> str:
    """`` (at file:line in function)`` for the first frame of the error's traceback."""

    tb = error.__traceback__
    if tb is None:
        return ""
    code = tb.tb_frame.f_code
    return f" (at {os.path.basename(code.co_filename)}:{tb.tb_lineno} in {code.co_name})"


def misread(error: BaseException) -> bool:
    """
    Whether a test runner or a program would read ``error``, raised from a test,
    as something else than its failure: a skip (``unittest.SkipTest``, which
    ``CaseUnsupported`` with no reason or a subclass of it is; pytest's
    ``skip``), an expected failure (pytest's ``xfail``), the end of the session
    or of the process (pytest's ``exit``, ``SystemExit(0)``), the caller's own
    cancellation, or any other ``BaseException`` that is not an ``Exception``.
    The test modules are not imported for this: an error of theirs can only
    exist once they are.
    """
    if not isinstance(error, Exception):
        return True  # KeyboardInterrupt never gets here: it stops the run
    unittest = sys.modules.get("unittest")
    if unittest is not None and isinstance(error, unittest.SkipTest):
        return True
    outcomes = sys.modules.get("_pytest.outcomes")
    return outcomes is not None and isinstance(error, outcomes.Exit)
