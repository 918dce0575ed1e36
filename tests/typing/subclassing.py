"""
Which exported classes a user may subclass: each @final class refuses it statically.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest. Each negative line carries the exact error code, so a class that
silently loses ``@final`` fails the build; tests/test_exports.py checks the same
rule at run time for every exported class.
"""

from __future__ import annotations

import conformkit as ck
from conformkit import laws

# -- open by design ----------------------------------------------------------------


class NoDatabase(ck.FeatureUnavailable):
    """An implementation's own kind of absent facility."""


class LedgerUnbalanced(laws.LawViolation):
    """A project's own law."""


class ProjectError(ck.ConformkitError):
    """A project's errors may share conformkit's base."""


# -- closed: conformkit makes and raises these; users use them as they are -----------


class MyReport(ck.ContractReport):  # type: ignore[misc]
    pass


class MyFailure(ck.ContractFailure):  # type: ignore[misc]
    pass


class MyDefinitionError(ck.ContractDefinitionError):  # type: ignore[misc]
    pass


class MySkip(ck.CaseUnsupported):  # type: ignore[misc]
    pass


class MyAuditFailure(ck.SuiteAuditFailure):  # type: ignore[misc]
    pass


class MyScope(ck.FeatureScope):  # type: ignore[misc]
    pass


class MyRecorder(laws.CallRecorder):  # type: ignore[misc]
    pass
