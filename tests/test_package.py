"""The public surface of the package."""

from __future__ import annotations

import inspect

import conformkit as ck


class TestPublicNames:
    def test_all_is_sorted_and_complete(self) -> None:
        """__all__ is sorted (constants, classes, functions) and lists every public name."""

        def kind_then_name(name: str) -> tuple[int, str]:
            return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

        assert ck.__all__ == sorted(ck.__all__, key=kind_then_name)
        public = {name for name in dir(ck) if not name.startswith("_")} - {"annotations"}
        modules = {name for name in public if inspect.ismodule(getattr(ck, name))}
        assert public - modules == set(ck.__all__)

    def test_spec_names_are_exported(self) -> None:
        """Every name the specification fixes is importable from conformkit."""
        fixed = {
            "Feature", "FeatureImplementation", "FeatureScope", "Supported", "Unsupported",
            "FeatureUnavailable", "ContractSuite", "open_feature", "Session", "contract_cases",
            "ContractCase", "run_contract", "run_contract_sync", "assert_contract",
            "ContractReport", "CaseResult", "CaseStatus", "ContractFailure",
            "ContractDefinitionError",
        }  # fmt: skip
        assert fixed <= set(ck.__all__)

    def test_laws_are_sorted_and_claim_their_package(self) -> None:
        """conformkit.laws lists its names sorted and shows them as conformkit.laws.Name."""
        from conformkit import laws

        assert laws.__all__ == sorted(laws.__all__, key=lambda name: (name[0].islower(), name))
        for name in laws.__all__:
            value = getattr(laws, name)
            assert value.__module__ in ("conformkit", "conformkit.laws"), name

    def test_exports_claim_the_package_as_their_module(self) -> None:
        """Tracebacks and docs show conformkit.Name, never a private module."""
        for name in ck.__all__:
            value = getattr(ck, name)
            if hasattr(value, "__module__"):
                assert value.__module__ == "conformkit", name

    def test_exceptions_derive_from_the_fitting_standard_types(self) -> None:
        """Each exception is a ConformkitError and the standard type that fits it."""
        import unittest

        assert issubclass(ck.ContractFailure, AssertionError)
        assert issubclass(ck.LawViolation, AssertionError)
        assert issubclass(ck.SuiteAuditFailure, AssertionError)
        assert issubclass(ck.ContractDefinitionError, ValueError)
        assert issubclass(ck.CaseUnsupported, unittest.SkipTest)
        for exception in (
            ck.ContractFailure,
            ck.ContractDefinitionError,
            ck.CaseUnsupported,
            ck.FeatureUnavailable,
            ck.LawViolation,
            ck.SuiteAuditFailure,
        ):
            assert issubclass(exception, ck.ConformkitError)

    def test_core_imports_no_test_framework(self) -> None:
        """Importing conformkit in a fresh interpreter loads neither pytest nor hypothesis."""
        import subprocess
        import sys

        code = (
            "import sys, conformkit\n"
            "print(sorted(m for m in ('pytest', '_pytest', 'hypothesis') if m in sys.modules))"
        )
        output = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert output.stdout.strip() == "[]"
