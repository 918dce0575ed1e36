"""The exceptions conformkit raises, and the one implementations raise."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._report import ContractReport
    from ._skip import CaseUnsupported as CaseUnsupported


class ConformkitError(Exception):
    """
    Base class of every exception conformkit defines.

    Each subclass also derives from the standard type that fits it, so code that
    does not know conformkit still handles it sensibly.
    """


@final
class ContractDefinitionError(ConformkitError, ValueError):
    """
    A feature, suite, implementation or run option is malformed.

    Raised at the earliest moment the mistake can be seen: feature construction,
    class creation, suite registration or the start of a run. The message names
    the offending feature, case or argument.
    """


class FeatureUnavailable(ConformkitError):
    """
    Raised from ``create`` when a facility the implementation requires is absent.

    A case whose ``create`` raises it is reported ``unavailable`` rather than
    ``failed``: no database server, a missing extension, an unset credential.
    """


@final
class ContractFailure(ConformkitError, AssertionError):
    """
    The gate rejected a report.

    An :class:`AssertionError`, so every test runner shows it as a test failure.
    The message lists each offending case with its status and reason; the
    rejected report is kept in :attr:`report`.
    """

    def __init__(self, message: str, report: ContractReport) -> None:
        super().__init__(message)
        self.report = report


class LawViolation(ConformkitError, AssertionError):
    """
    A law checked inside a case did not hold (see :mod:`conformkit.laws`).

    An :class:`AssertionError`, so the case fails like any failed assertion; the
    message says what each call did and what the law expected instead.
    """


# Hidden from type checkers, which would otherwise accept any name as an
# attribute of this module; they see the TYPE_CHECKING import instead.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """
        ``CaseUnsupported``, imported on first use: it derives from
        :class:`unittest.SkipTest`, and importing :mod:`unittest` costs about as
        much as all of conformkit's own modules, for an exception that only
        ``ContractCase.run()`` raises.
        """
        if name == "CaseUnsupported":
            from ._skip import CaseUnsupported

            return CaseUnsupported
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@final
class SuiteAuditFailure(ConformkitError, AssertionError):
    """
    The suite audit found a feature without a suite, a Protocol without a
    feature, or an exemption to remove.

    An :class:`AssertionError`, so every test runner shows it as a test failure.
    The message has one line per problem, sorted by feature ID; the IDs are also
    kept, sorted, in the attributes below.

    :param message: the text shown to the user.
    :param missing: IDs of features that have no suite and are not exempt.
    :param stale_exemptions: exempt IDs whose features now all have a suite.
    :param unknown_exemptions: exempt IDs that name no audited feature.
    :param duplicate_ids: IDs shared by two or more different :class:`Feature` objects.
    :param missing_protocols: qualified names (``module.Name``) of audited
        ``Protocol`` classes that are the API type of no feature and are not exempt.
    :param stale_protocol_exemptions: exempt Protocols that now have a feature.
    :param unknown_protocol_exemptions: exempt names that name no audited Protocol.
    """

    missing: tuple[str, ...]
    stale_exemptions: tuple[str, ...]
    unknown_exemptions: tuple[str, ...]
    duplicate_ids: tuple[str, ...]
    missing_protocols: tuple[str, ...]
    stale_protocol_exemptions: tuple[str, ...]
    unknown_protocol_exemptions: tuple[str, ...]

    def __init__(
        self,
        message: str,
        *,
        missing: Iterable[str] = (),
        stale_exemptions: Iterable[str] = (),
        unknown_exemptions: Iterable[str] = (),
        duplicate_ids: Iterable[str] = (),
        missing_protocols: Iterable[str] = (),
        stale_protocol_exemptions: Iterable[str] = (),
        unknown_protocol_exemptions: Iterable[str] = (),
    ) -> None:
        super().__init__(message)
        self.missing = tuple(sorted(missing))
        self.stale_exemptions = tuple(sorted(stale_exemptions))
        self.unknown_exemptions = tuple(sorted(unknown_exemptions))
        self.duplicate_ids = tuple(sorted(duplicate_ids))
        self.missing_protocols = tuple(sorted(missing_protocols))
        self.stale_protocol_exemptions = tuple(sorted(stale_protocol_exemptions))
        self.unknown_protocol_exemptions = tuple(sorted(unknown_protocol_exemptions))


class UsageError(ConformkitError, ValueError):
    """
    A bad input to the command line: a target, an option, a baseline or a report file.

    Private: the command line prints its message as one line and exits with status 2.
    """


# Shown as conformkit.Name, like every export, whichever way it was first imported.
for _export in (
    ConformkitError,
    ContractDefinitionError,
    ContractFailure,
    FeatureUnavailable,
    LawViolation,
    SuiteAuditFailure,
):
    _export.__module__ = "conformkit"
del _export
