"""Conformance testing: one contract, every implementation, the same verdict whatever runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._audit import audit_suites as audit_suites
from ._exceptions import ConformkitError as ConformkitError
from ._exceptions import ContractDefinitionError as ContractDefinitionError
from ._exceptions import ContractFailure as ContractFailure
from ._exceptions import FeatureUnavailable as FeatureUnavailable
from ._exceptions import LawViolation as LawViolation
from ._exceptions import SuiteAuditFailure as SuiteAuditFailure
from ._feature import Example as Example
from ._feature import Examples as Examples
from ._feature import Feature as Feature
from ._feature import Supported as Supported
from ._feature import Unsupported as Unsupported
from ._implementation import FeatureImplementation as FeatureImplementation
from ._report import CaseResult as CaseResult
from ._report import CaseStatus as CaseStatus
from ._report import ContractReport as ContractReport
from ._report import assert_contract as assert_contract
from ._runner import ContractCase as ContractCase
from ._runner import contract_cases as contract_cases
from ._runner import run_contract as run_contract
from ._runner import run_contract_sync as run_contract_sync
from ._scope import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._scope import FeatureScope as FeatureScope
from ._scope import Session as Session
from ._scope import open_feature as open_feature
from ._suite import ContractSuite as ContractSuite

if TYPE_CHECKING:
    from ._skip import CaseUnsupported as CaseUnsupported

__all__ = [
    "DEFAULT_TIMEOUT",
    "CaseResult",
    "CaseStatus",
    "CaseUnsupported",
    "ConformkitError",
    "ContractCase",
    "ContractDefinitionError",
    "ContractFailure",
    "ContractReport",
    "ContractSuite",
    "Example",
    "Examples",
    "Feature",
    "FeatureImplementation",
    "FeatureScope",
    "FeatureUnavailable",
    "LawViolation",
    "Session",
    "SuiteAuditFailure",
    "Supported",
    "Unsupported",
    "assert_contract",
    "audit_suites",
    "contract_cases",
    "open_feature",
    "run_contract",
    "run_contract_sync",
]

# Names imported on first use: CaseUnsupported derives from unittest.SkipTest,
# and importing unittest costs about as much as all of conformkit's own modules.
_LAZY = frozenset({"CaseUnsupported"})

# Tracebacks, reprs and docs show ``conformkit.Name`` rather than a private module.
for _name in __all__:
    _value = globals().get(_name)
    if getattr(_value, "__module__", "").startswith("conformkit."):  # not the constants
        _value.__module__ = __name__
del _name, _value


# Hidden from type checkers, which would otherwise accept any name as an
# attribute of this module; they see the TYPE_CHECKING import instead.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        if name in _LAZY:
            from . import _skip

            value = getattr(_skip, name)
            globals()[name] = value  # found directly from now on
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


del TYPE_CHECKING


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
