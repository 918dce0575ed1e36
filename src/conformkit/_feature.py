"""Feature definitions: a stable ID, an API type and named behavioural cases."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeAlias, final

from typing_extensions import TypeVar

from ._exceptions import ContractDefinitionError

API = TypeVar("API")
CaseName = TypeVar("CaseName", bound=str, default=str)


@final
@dataclass(frozen=True, slots=True)
class Supported:
    """Coverage marker: the implementation claims this case and it is run."""


@final
@dataclass(frozen=True, slots=True)
class Unsupported:
    """
    Coverage marker: the case is outside the implementation's coverage.

    The case is never run and never counts as passed; the reason is mandatory
    and appears in every report.

    :param reason: why the implementation does not support the case.
    :raises ContractDefinitionError: if the reason is empty.
    """

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ContractDefinitionError(
                f"Unsupported() needs a non-empty reason, got {self.reason!r}"
            )


Coverage: TypeAlias = Supported | Unsupported


def _check_name(kind: str, value: object) -> str:
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
        raise ContractDefinitionError(
            f"a {kind} must be a non-empty string without whitespace, got {value!r}"
        )
    return value


def suggest(name: str, known: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest known name, or ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


@final
class Feature(Generic[API, CaseName]):
    """
    A named, typed profile that implementations are checked against.

    ``Feature[TextAPI]("example.text", cases=(...))`` defines a feature whose
    implementations provide a ``TextAPI``. Give the case names as a ``Literal``
    type, ``Feature[TextAPI, Literal["missing", "read_your_writes"]]``, and a type
    checker rejects invented case names in coverage and suites.

    Features compare by identity: a suite and an implementation belong together
    only when they name the same feature object.

    :param id: stable identifier; change it when the contract changes incompatibly.
    :param cases: the behavioural cases, in the order reports list them.
    :param description: what the feature is, in a sentence.
    :param does_not_establish: what passing the feature does *not* prove.
    :raises ContractDefinitionError: for an empty or whitespace-bearing ID or case
        name, no cases, or a case named twice.
    """

    __slots__ = ("__orig_class__", "_case_set", "cases", "description", "does_not_establish", "id")

    id: str
    cases: tuple[CaseName, ...]
    description: str
    does_not_establish: str

    def __init__(
        self,
        id: str,
        *,
        cases: Iterable[CaseName],
        description: str = "",
        does_not_establish: str = "",
    ) -> None:
        self.id = _check_name("feature ID", id)
        if isinstance(cases, str):
            raise ContractDefinitionError(
                f"feature {id!r}: cases must be a collection of names, not the string {cases!r}"
            )
        names = tuple(cases)
        if not names:
            raise ContractDefinitionError(
                f"feature {id!r} declares no cases; it needs at least one"
            )
        seen: set[str] = set()
        for name in names:
            _check_name(f"case name of feature {id!r}", name)
            if name in seen:
                raise ContractDefinitionError(f"feature {id!r} declares case {name!r} twice")
            seen.add(name)
        self.cases = names
        self._case_set = frozenset(names)
        self.description = description
        self.does_not_establish = does_not_establish

    def __repr__(self) -> str:
        return f"Feature({self.id!r}, cases={self.cases!r})"

    def __contains__(self, name: object) -> bool:
        return name in self._case_set

    def _check_case(self, name: str, where: str) -> None:
        """
        Raise :exc:`ContractDefinitionError` unless ``name`` is a declared case.

        :param where: what mentioned the name, for the message (``"suite"``).
        """
        if name not in self._case_set:
            raise ContractDefinitionError(
                f"{where} names case {name!r}, but feature {self.id!r} declares no such case"
                f"{suggest(name, self.cases)}"
            )

    def coverage(
        self, *, unsupported: Mapping[CaseName, str] | None = None
    ) -> dict[CaseName, Coverage]:
        """
        Build a complete coverage declaration: every case supported except these.

        ``coverage = text.coverage(unsupported={"ttl": "no clock in this backend"})``
        declares the whole feature without one line per case.

        :param unsupported: the cases outside the coverage, each with its reason.
        :raises ContractDefinitionError: for an unknown case or an empty reason.
        """
        unsupported = dict(unsupported or {})
        for name in unsupported:
            self._check_case(name, "coverage")
        return {
            name: Unsupported(unsupported[name]) if name in unsupported else Supported()
            for name in self.cases
        }

    def _check_coverage(self, coverage: object, owner: str) -> None:
        """
        Raise :exc:`ContractDefinitionError` unless ``coverage`` declares every case.

        :param owner: the implementation that declared it, for the message.
        """
        if not isinstance(coverage, Mapping):
            raise ContractDefinitionError(
                f"{owner}.coverage must be a mapping of case name to Supported() or "
                f"Unsupported(reason), got {coverage!r}; "
                f"{self.id!r} can build one with feature.coverage()"
            )
        for name, value in coverage.items():
            self._check_case(name, f"{owner}.coverage")
            if not isinstance(value, Supported | Unsupported):
                raise ContractDefinitionError(
                    f"{owner}.coverage[{name!r}] must be Supported() or Unsupported(reason), "
                    f"got {value!r}"
                )
        missing = [name for name in self.cases if name not in coverage]
        if missing:
            raise ContractDefinitionError(
                f"{owner}.coverage does not declare case(s) {', '.join(map(repr, missing))} "
                f"of feature {self.id!r}; declare each Supported() or Unsupported(reason)"
            )
