"""
The types of the honesty gates: ``assert_contract``'s options and the suite
audit's Protocols, each pinned by positive and negative lines.

Checked by mypy (strict, ``warn_unused_ignores``), never run and never collected
by pytest. A negative line's ``# type: ignore[code]`` names the exact error, so
a guarantee that silently disappears leaves an unused ignore, which fails mypy.
"""

from __future__ import annotations

from typing import Protocol, assert_type

import conformkit as ck


class TextAPI(Protocol):
    async def read(self, key: str) -> str | None: ...


text = ck.Feature[TextAPI]("typing.gates", cases=("missing",))
suite = ck.ContractSuite(text)


def check_assert_contract(report: ck.ContractReport) -> None:
    assert_type(
        ck.assert_contract(report, require_full=True, reject_stale=True, require_exercised=True),
        None,
    )
    assert_type(report.unexercised, tuple[str, ...] | None)

    ck.assert_contract(report, True)  # type: ignore[call-arg]
    ck.assert_contract(report, require_exercised="yes")  # type: ignore[arg-type]
    ck.assert_contract(report, require_exercise=True)  # type: ignore[call-arg]


def check_audit_protocols() -> None:
    assert_type(ck.audit_suites("myproject", protocols="myproject.plugins"), None)
    ck.audit_suites([text], [suite], protocols=[TextAPI])
    ck.audit_suites(
        "myproject",
        protocols="myproject.plugins",
        exempt_protocols={"myproject.plugins.Hook": "called, never implemented"},
    )

    ck.audit_suites("myproject", protocols=42)  # type: ignore[arg-type]
    ck.audit_suites("myproject", protocols=[text])  # type: ignore[list-item]
    ck.audit_suites(
        "myproject",
        protocols="myproject.plugins",
        exempt_protocols=["myproject.plugins.Hook"],  # type: ignore[arg-type]
    )


def check_failure_attributes(failure: ck.SuiteAuditFailure) -> None:
    assert_type(failure.missing_protocols, tuple[str, ...])
    assert_type(failure.stale_protocol_exemptions, tuple[str, ...])
    assert_type(failure.unknown_protocol_exemptions, tuple[str, ...])
