"""Feature definitions: a stable ID, an API type and named behavioural cases."""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, NamedTuple, TypeAlias, final

from typing_extensions import TypeVar

from ._exceptions import ContractDefinitionError

if TYPE_CHECKING:
    from ._implementation import FeatureImplementation
    from ._scope import FeatureScope

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
_MARKERS: Final = frozenset((Supported, Unsupported))


def _check_name(kind: str, value: object) -> str:
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
        raise ContractDefinitionError(
            f"a {kind} must be a non-empty string without whitespace, got {value!r}"
        )
    return value


def suggest(name: str, known: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest known name, or ``""``."""
    import difflib  # only a mistake pays for it

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


@final
@dataclass(frozen=True, slots=True)
class Example:
    """
    One row of an :class:`Examples` table: what a family case receives as its parameter.

    :ivar id: the row's stable ID, the part in brackets of the case ID.
    :ivar input: what the case feeds the API.
    :ivar expected: what the case expects back.
    """

    id: str
    input: Any
    expected: Any


@final
class Examples:
    """
    A table of ``(input, expected)`` examples: the parameters of a data-driven family.

    ``Examples([("1", 1), ("-2", -2)])`` gives the rows IDs ``0`` and ``1``;
    pass ``ids=`` or :class:`Example` rows to name them. Each row becomes a case,
    ``parse[0]``, ``parse[1]``, and the family's function receives the
    :class:`Example`.

    :param rows: ``(input, expected)`` pairs or :class:`Example` objects.
    :param ids: a stable ID for each row, instead of its position.
    :raises ContractDefinitionError: for a malformed row, a bad or repeated ID, or
        ``ids`` of the wrong length.
    """

    __slots__ = ("rows",)

    def __init__(
        self, rows: Iterable[Example | tuple[Any, Any]], *, ids: Iterable[str] | None = None
    ) -> None:
        rows = list(rows)
        names = list(ids) if ids is not None else None
        if names is not None and len(names) != len(rows):
            raise ContractDefinitionError(
                f"Examples() got {len(rows)} row(s) but {len(names)} ID(s)"
            )
        built: list[Example] = []
        for index, row in enumerate(rows):
            if isinstance(row, Example):
                example = row if names is None else Example(names[index], row.input, row.expected)
            elif isinstance(row, tuple | list) and len(row) == 2:
                example = Example(str(index) if names is None else names[index], row[0], row[1])
            else:
                raise ContractDefinitionError(
                    f"example row {index} must be an (input, expected) pair or an Example, "
                    f"got {row!r}"
                )
            built.append(example)
        self.rows: tuple[Example, ...] = tuple(built)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Examples:
        """
        Load a table from a JSON file.

        The file holds a list whose items are ``[input, expected]`` pairs or objects
        ``{"id": ..., "input": ..., "expected": ...}`` (``id`` optional).

        :raises ContractDefinitionError: naming the file, for unreadable JSON or a
            malformed item.
        """
        import json  # only a table kept in a file needs it

        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except (OSError, ValueError) as exc:
            raise ContractDefinitionError(
                f"cannot load examples from {os.fspath(path)!r}: {exc}"
            ) from exc
        if not isinstance(data, list):
            raise ContractDefinitionError(
                f"examples file {os.fspath(path)!r} must hold a JSON list, "
                f"got {type(data).__name__}"
            )
        rows: list[Example | tuple[Any, Any]] = []
        for index, item in enumerate(data):
            if isinstance(item, dict) and {"input", "expected"} <= item.keys() <= {
                "id",
                "input",
                "expected",
            }:
                rows.append(Example(str(item.get("id", index)), item["input"], item["expected"]))
            elif isinstance(item, list) and len(item) == 2:
                rows.append((item[0], item[1]))
            else:
                raise ContractDefinitionError(
                    f"examples file {os.fspath(path)!r}, item {index}: expected [input, expected] "
                    f'or {{"id", "input", "expected"}}, got {item!r}'
                )
        return cls(rows)

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str]) -> Examples:
        """
        Load a table from a folder that holds one example per file.

        Each ``*.json`` or ``*.toml`` file holds one object (a JSON object, a TOML
        document) with exactly the keys ``input`` and ``expected``; its name
        without the suffix is the example's ID. The rows are in the order of
        their IDs, the same on every machine. Other files, and names starting
        with ``.``, are not examples and are left alone; subfolders are not read.

        :raises ContractDefinitionError: on one line naming the folder or the file
            (``path:line:`` for a file that does not parse): for a folder that is
            missing or holds no example, a file that cannot be read, is not UTF-8,
            does not parse or has other keys, an entry that is not a file, an ID
            that is not a valid parameter, or two files with the same ID.
        """
        folder = os.fspath(path)
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            raise ContractDefinitionError(
                f"cannot read the examples folder {folder!r}: {exc.strerror or exc}"
            ) from exc
        found: dict[str, str] = {}
        for entry in entries:
            stem, suffix = os.path.splitext(entry.name)
            if suffix not in (".json", ".toml") or entry.name.startswith("."):
                continue
            if not entry.is_file():
                raise ContractDefinitionError(
                    f"{entry.path}: is not a file; an examples folder holds one example per file"
                )
            if stem in found:
                raise ContractDefinitionError(
                    f"{entry.path}: example ID {stem!r} is also the ID of {found[stem]}; "
                    f"each ID is one file"
                )
            if not stem or any(ch.isspace() or ch in "[]" for ch in stem):
                raise ContractDefinitionError(
                    f"{entry.path}: the file name is the example's ID, which must be without "
                    f"whitespace or brackets"
                )
            found[stem] = entry.path
        if not found:
            raise ContractDefinitionError(
                f"examples folder {folder!r} holds no example: no *.json or *.toml file"
            )
        return cls(cls._example_file(stem, found[stem]) for stem in sorted(found))

    @staticmethod
    def _example_file(stem: str, path: str) -> Example:
        """The example that one file of an examples folder holds."""
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as exc:
            raise ContractDefinitionError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ContractDefinitionError(
                f"{path}:{line}: is not UTF-8 text (byte {data[exc.start]:#04x})"
            ) from exc
        if path.endswith(".json"):
            import json  # only a table kept in files needs it

            def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
                keys = [key for key, _ in pairs]
                twice = next((key for key in keys if keys.count(key) > 1), None)
                if twice is not None:  # JSON would keep the last silently
                    raise ContractDefinitionError(f"{path}: key {twice!r} appears twice")
                return dict(pairs)

            try:
                value = json.loads(text, object_pairs_hook=unique)
            except json.JSONDecodeError as exc:
                raise ContractDefinitionError(f"{path}:{exc.lineno}: {exc.msg}") from exc
        else:
            import tomllib

            try:
                value = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                # The message ends "(at line N, column M)" or "(at end of document)".
                message = str(exc)
                at = re.search(r"\s*\(at (?:line (\d+), column \d+|end of document)\)$", message)
                where = at[1] if at and at[1] else str(text.count("\n") + 1)
                raise ContractDefinitionError(
                    f"{path}:{where}: {message[: at.start()] if at else message}"
                ) from exc
        if not isinstance(value, dict) or value.keys() != {"input", "expected"}:
            got = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise ContractDefinitionError(
                f"{path}: must hold an object with exactly the keys 'input' and 'expected', "
                f"got {got!r}"
            )
        return Example(stem, value["input"], value["expected"])

    def __repr__(self) -> str:
        return f"Examples({[row.id for row in self.rows]!r})"


Family: TypeAlias = Iterable[str] | Examples
"""The parameters of a case family: parameter names, or a table of examples."""

_MEMBER: Final = r"^(?P<family>[^\s\[\]]+)\[(?P<param>[^\s\[\]]+)\]$"
"""A family member's case ID, ``family[param]``; :mod:`re` compiles it on first use."""


def member_id(family: str, param: str) -> str:
    """The case ID of one member of a family: ``family[param]``."""
    return f"{family}[{param}]"


class CaseExpansion(NamedTuple):
    """
    A feature's cases expanded for one implementation's claims: every case ID it is
    checked on, in report order, and of those the family members, each with its
    family and parameter value.
    """

    case_ids: list[str]
    members: dict[str, tuple[str, Any]]


@final
class Feature(Generic[API, CaseName]):
    """
    A named, typed profile that implementations are checked against.

    ``Feature[TextAPI]("example.text", cases=(...))`` defines a feature whose
    implementations provide a ``TextAPI``. Give the case names as a ``Literal``
    type, ``Feature[TextAPI, Literal["missing", "read_your_writes"]]``, and a type
    checker rejects invented case names in coverage and suites.

    A **family** is a case parametrized over a set of values, ``families=
    {"fidelity": ("status", "history")}``, expanding to the cases
    ``fidelity[status]`` and ``fidelity[history]``; or over a table of
    :class:`Examples`. Each implementation claims the values it supports (see
    :attr:`FeatureImplementation.claims`) and gets a case for each.

    Features compare by identity: a suite and an implementation belong together
    only when they name the same feature object.

    :param id: stable identifier; change it when the contract changes incompatibly.
    :param cases: the behavioural cases, in the order reports list them.
    :param families: case families by name, listed after the cases in reports.
    :param description: what the feature is, in a sentence.
    :param does_not_establish: what passing the feature does *not* prove.
    :raises ContractDefinitionError: for an empty or whitespace-bearing ID or name,
        no cases, or a name declared twice.
    """

    __slots__ = (
        "__orig_class__",
        "_names",
        "cases",
        "description",
        "does_not_establish",
        "families",
        "id",
    )

    id: str
    cases: tuple[CaseName, ...]
    families: dict[str, dict[str, Any]]
    description: str
    does_not_establish: str

    def __init__(
        self,
        id: str,
        *,
        cases: Iterable[CaseName],
        families: Mapping[CaseName, Family] | None = None,
        description: str = "",
        does_not_establish: str = "",
    ) -> None:
        self.id = _check_name("feature ID", id)
        if isinstance(cases, str):
            raise ContractDefinitionError(
                f"feature {id!r}: cases must be a collection of names, not the string {cases!r}"
            )
        names = tuple(cases)
        self.families = {}
        for family, params in (families or {}).items():
            self.families[_check_name(f"family name of feature {id!r}", family)] = _family_params(
                id, family, params
            )
        if not names and not self.families:
            raise ContractDefinitionError(
                f"feature {id!r} declares no cases; it needs at least one"
            )
        seen: set[str] = set()
        every_name: list[str] = [*names, *self.families]
        for name in every_name:
            _check_name(f"case name of feature {id!r}", name)
            if "[" in name or "]" in name:
                raise ContractDefinitionError(
                    f"case name {name!r} of feature {id!r} may not contain brackets: "
                    f"they mark family members"
                )
            if name in seen:
                raise ContractDefinitionError(f"feature {id!r} declares case {name!r} twice")
            seen.add(name)
        self.cases = names
        self._names = frozenset(seen)
        self.description = description
        self.does_not_establish = does_not_establish

    def __repr__(self) -> str:
        families = f", families={list(self.families)!r}" if self.families else ""
        return f"Feature({self.id!r}, cases={self.cases!r}{families})"

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def _check_case(self, name: str, where: str) -> None:
        """
        Raise :exc:`ContractDefinitionError` unless ``name`` is a declared case or family.

        :param where: what mentioned the name, for the message (``"suite"``).
        """
        if name not in self._names:
            raise ContractDefinitionError(
                f"{where} names case {name!r}, but feature {self.id!r} declares no such case"
                f"{suggest(name, self._names)}"
            )

    def _check_member(self, case_id: str, where: str) -> None:
        """Like :meth:`_check_case`, also accepting ``family[param]`` member IDs."""
        if case_id in self._names:
            return
        match = re.match(_MEMBER, case_id)
        if match is None or match["family"] not in self.families:
            self._check_case(case_id, where)
            return
        params = self.families[match["family"]]
        if match["param"] not in params:
            raise ContractDefinitionError(
                f"{where} names case {case_id!r}, but family {match['family']!r} of feature "
                f"{self.id!r} has no parameter {match['param']!r}{suggest(match['param'], params)}"
            )

    def coverage(
        self,
        *,
        unsupported: Mapping[CaseName, str] | None = None,
        unsupported_members: Mapping[str, str] | None = None,
    ) -> dict[CaseName, Coverage]:
        """
        Build a complete coverage declaration: every case supported except these.

        ``coverage = text.coverage(unsupported={"ttl": "no clock in this backend"})``
        declares the whole feature without one line per case. Families are declared
        as a whole; ``unsupported_members={"fidelity[history]": "..."}`` excepts
        single members (the dict then holds those member IDs too).

        :param unsupported: the cases or families outside the coverage, with reasons.
        :param unsupported_members: family members outside the coverage, with reasons.
        :raises ContractDefinitionError: for an unknown case or an empty reason.
        """
        declared: dict[str, Coverage] = {}
        for name, reason in (unsupported or {}).items():
            self._check_case(name, "coverage")
            declared[name] = Unsupported(reason)
        for case_id, reason in (unsupported_members or {}).items():
            if re.match(_MEMBER, case_id) is None:
                raise ContractDefinitionError(
                    f"unsupported_members takes family member IDs like 'family[param]', "
                    f"got {case_id!r}"
                )
            self._check_member(case_id, "coverage")
            declared[case_id] = Unsupported(reason)
        every_name: list[str] = [*self.cases, *self.families]
        built: dict[str, Coverage] = dict.fromkeys(every_name, Supported())
        built.update(declared)
        return built  # type: ignore[return-value]  # member IDs are not in a Literal

    def implementation(
        self,
        create: Callable[[FeatureScope], API | Awaitable[API]] | Callable[[], API | Awaitable[API]],
        *,
        name: str,
        coverage: Mapping[CaseName, Coverage] | None = None,
        claims: Mapping[str, Collection[str]] | None = None,
    ) -> FeatureImplementation[API, CaseName]:
        """
        Build an implementation of this feature from a factory, in one line.

        ``text.implementation(MemoryTextAPI, name="MemoryText")`` is the same as a
        :class:`FeatureImplementation` subclass named ``MemoryText`` whose
        ``create`` returns ``MemoryTextAPI()``: the same checks when it is built,
        and the same name in reports. The factory may be sync or ``async``; one
        that can be called without arguments is, otherwise it gets the
        :class:`FeatureScope`, to register cleanups with ``scope.defer``. An
        implementation with a deadline of its own (``timeout``) is a class.

        What the factory returns is closed when its scope closes, after the case,
        whether the case passed, failed or was cancelled: its ``aclose()`` is
        awaited, or, for an object without one, its ``close()`` is called, once,
        before the cleanups the factory registered. An object with neither is
        left as it is. A factory that closes the object itself would close it
        twice: write a class whose ``create`` registers what it needs instead.

        :param create: returns a freshly prepared API at each call.
        :param name: the implementation's name in reports, as a class name would be.
        :param coverage: as the class attribute; every case supported by default.
        :param claims: as the class attribute; every family parameter by default.
        :raises ContractDefinitionError: for a factory that is not callable, that
            yields, or that takes more than the scope; a bad name; and what the
            class path rejects.
        """
        import sys

        from ._implementation import implementation_from_factory

        # The module that called, as for a class defined there (namedtuple does the same).
        module = sys._getframe(1).f_globals.get("__name__", "conformkit")
        return implementation_from_factory(
            self,
            create,
            name=name,
            coverage=self.coverage() if coverage is None else coverage,
            claims=claims,
            module=module,
        )

    def _check_claims(self, claims: object, owner: str) -> dict[str, tuple[str, ...]]:
        """Return the claimed parameters of each family, every one by default."""
        claimed = {family: tuple(params) for family, params in self.families.items()}
        if claims is None:
            return claimed
        if not isinstance(claims, Mapping):
            raise ContractDefinitionError(
                f"{owner}.claims must map family names to the parameters claimed, got {claims!r}"
            )
        for family, params in claims.items():
            if family not in self.families:
                raise ContractDefinitionError(
                    f"{owner}.claims names family {family!r}, but feature {self.id!r} declares "
                    f"no such family{suggest(str(family), self.families)}"
                )
            if isinstance(params, str):
                raise ContractDefinitionError(
                    f"{owner}.claims[{family!r}] must be a collection of parameters, "
                    f"not the string {params!r}"
                )
            known = self.families[family]
            wanted = set()
            for param in params:
                if param not in known:
                    raise ContractDefinitionError(
                        f"{owner}.claims[{family!r}] claims {param!r}, but family {family!r} of "
                        f"feature {self.id!r} has no such parameter{suggest(str(param), known)}"
                    )
                wanted.add(param)
            claimed[family] = tuple(param for param in known if param in wanted)
        return claimed

    def _expand_cases(self, claims: object, owner: str) -> CaseExpansion:
        """The cases an implementation with these claims is checked on, in report order."""
        case_ids: list[str] = list(self.cases)
        members: dict[str, tuple[str, Any]] = {}
        for family, params in self._check_claims(claims, owner).items():
            values = self.families[family]
            for param in params:
                case_id = member_id(family, param)
                case_ids.append(case_id)
                members[case_id] = (family, values[param])
        return CaseExpansion(case_ids, members)

    def _resolve_coverage(
        self, coverage: object, expansion: CaseExpansion, owner: str
    ) -> dict[str, Coverage]:
        """
        Check a coverage declaration and return the coverage of each planned case.

        :raises ContractDefinitionError: unless every case, and every family (as a
            whole or member by member), is declared with a valid marker.
        """
        if not isinstance(coverage, Mapping):
            raise ContractDefinitionError(
                f"{owner}.coverage must be a mapping of case name to Supported() or "
                f"Unsupported(reason), got {coverage!r}; "
                f"{self.id!r} can build one with feature.coverage()"
            )
        members = expansion.members
        case_ids = expansion.case_ids
        if (
            not members
            and type(coverage) is dict
            and len(coverage) == len(case_ids)
            and all(map(coverage.__contains__, case_ids))
            and _MARKERS.issuperset(map(type, coverage.values()))
        ):
            # The common declaration, checked at C speed: exactly the planned
            # cases, none a family's member, each with a valid marker.
            return coverage.copy()
        known = self._names
        for name, value in coverage.items():
            if name not in known:
                self._check_member(name, f"{owner}.coverage")
            if type(value) is not Supported and type(value) is not Unsupported:
                raise ContractDefinitionError(
                    f"{owner}.coverage[{name!r}] must be Supported() or Unsupported(reason), "
                    f"got {value!r}"
                )
        missing = [
            case_id
            for case_id in expansion.case_ids
            if case_id not in coverage
            and (case_id not in members or members[case_id][0] not in coverage)
        ]
        if missing:
            whole = (
                " (or a family as a whole, under its name)"
                if any(re.match(_MEMBER, case_id) for case_id in missing)
                else ""
            )
            raise ContractDefinitionError(
                f"{owner}.coverage does not declare case(s) {', '.join(map(repr, missing))} "
                f"of feature {self.id!r}; declare each Supported() or Unsupported(reason){whole}"
            )
        return {
            case_id: coverage[case_id] if case_id in coverage else coverage[members[case_id][0]]
            for case_id in expansion.case_ids
        }


# The feature's protocol with the rest of the core: functions, not methods, so that a
# Feature shows its users no more than its public API. They are the methods themselves.

check_case: Final = Feature._check_case
"""``check_case(feature, name, where)``: a suite's or coverage's case name must be declared."""

expand_cases: Final = Feature._expand_cases
"""``expand_cases(feature, claims, owner)``: the cases an implementation is checked on."""

resolve_coverage: Final = Feature._resolve_coverage
"""``resolve_coverage(feature, coverage, expansion, owner)``: the coverage of each case."""


def declared_api(feature: object) -> object:
    """The API type a feature was declared with, ``Feature[API](...)``; ``None`` if unknown."""
    arguments = typing.get_args(getattr(feature, "__orig_class__", None))
    return arguments[0] if arguments else None


def _family_params(feature_id: str, family: str, params: object) -> dict[str, Any]:
    """A family's parameters by ID: each name maps to itself, each example to its row."""
    where = f"family {family!r} of feature {feature_id!r}"
    if isinstance(params, Examples):
        values: dict[str, Any] = {}
        for row in params.rows:
            _check_param(where, row.id, values)
            values[row.id] = row
        return values
    if isinstance(params, str) or not isinstance(params, Iterable):
        raise ContractDefinitionError(
            f"{where} needs a collection of parameter names or Examples, got {params!r}"
        )
    names: dict[str, Any] = {}
    for name in params:
        _check_param(where, name, names)
        names[name] = name
    return names


def _check_param(where: str, name: object, seen: Mapping[str, Any]) -> None:
    if not isinstance(name, str) or not name or any(ch.isspace() or ch in "[]" for ch in name):
        raise ContractDefinitionError(
            f"parameter of {where} must be a non-empty string without whitespace or "
            f"brackets, got {name!r}"
        )
    if name in seen:
        raise ContractDefinitionError(f"{where} declares parameter {name!r} twice")


# Shown as conformkit.Name, like every export, whichever way it was first imported.
for _export in (Example, Examples, Feature, Supported, Unsupported):
    _export.__module__ = "conformkit"
del _export
