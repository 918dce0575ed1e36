"""Conformance testing: one contract, every implementation, the same verdict whatever runs it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag, without the cost of importing typing
if TYPE_CHECKING:
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
    from ._skip import CaseUnsupported as CaseUnsupported
    from ._stub import Stub as Stub
    from ._suite import ContractSuite as ContractSuite
    from ._testing import contract_test_case as contract_test_case

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
    "Stub",
    "SuiteAuditFailure",
    "Supported",
    "Unsupported",
    "assert_contract",
    "audit_suites",
    "contract_cases",
    "contract_test_case",
    "open_feature",
    "run_contract",
    "run_contract_sync",
]

# Each name above is imported from its module when it is first used (PEP 562),
# as anyio does: `import conformkit` loads none of the core, `conformkit --help`
# loads no runner, and CaseUnsupported, which derives from unittest.SkipTest,
# loads unittest only when used. The modules are listed once more here, as
# reading the imports above would mean parsing this file at every import; a test
# keeps the two in step. Each module sets `__module__` on its own exports, so
# they show as conformkit.Name whichever way they were first reached.
_MODULES: dict[str, tuple[str, ...]] = {
    "_audit": ("audit_suites",),
    "_exceptions": (
        "ConformkitError",
        "ContractDefinitionError",
        "ContractFailure",
        "FeatureUnavailable",
        "LawViolation",
        "SuiteAuditFailure",
    ),
    "_feature": ("Example", "Examples", "Feature", "Supported", "Unsupported"),
    "_implementation": ("FeatureImplementation",),
    "_report": ("CaseResult", "CaseStatus", "ContractReport", "assert_contract"),
    "_runner": ("ContractCase", "contract_cases", "run_contract", "run_contract_sync"),
    "_scope": ("DEFAULT_TIMEOUT", "FeatureScope", "Session", "open_feature"),
    "_skip": ("CaseUnsupported",),
    "_stub": ("Stub",),
    "_suite": ("ContractSuite",),
    "_testing": ("contract_test_case",),
}
_SOURCES: dict[str, str] = {name: module for module, names in _MODULES.items() for name in names}


# Hidden from type checkers, which would otherwise accept any name as an
# attribute of this module; they see the TYPE_CHECKING imports instead.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        module_name = _SOURCES.get(name)
        if module_name is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        module = importlib.import_module(f"{__name__}.{module_name}")
        for each in _MODULES[module_name]:  # found directly from now on
            globals()[each] = getattr(module, each)
        return globals()[name]


del TYPE_CHECKING


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
