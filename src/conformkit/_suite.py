"""Contract suites: the executable cases of one feature."""

from __future__ import annotations

import dis
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import FunctionType
from typing import Any, Final, Generic, TypeAlias, TypeVar, final, overload

from ._exceptions import ContractDefinitionError
from ._feature import API, CaseName, Feature, check_case, declared_api
from ._util import callable_location, check_timeout

CaseFunction: TypeAlias = Callable[[API], Awaitable[None] | None]
"""A case: a callable, usually ``async def``, that takes the API and raises on failure."""

FamilyFunction: TypeAlias = Callable[[API, Any], Awaitable[None] | None]
"""A case family: like a case, with the member's parameter as a second argument."""

# The decorated function keeps its own return type, so it can still be awaited.
_Outcome = TypeVar("_Outcome", bound=Awaitable[None] | None)


@final
class ContractSuite(Generic[API, CaseName]):
    """
    The executable cases for one feature: one callable per case.

    Cases are registered with the :meth:`case` decorator or given as a mapping.
    A case that names no declared case is rejected when it is registered; a
    declared case without a function is rejected when a run starts.

    :param feature: the feature the cases belong to.
    :param cases: case functions by case name.
    :raises ContractDefinitionError: for an unknown case name or a non-callable.
    """

    __slots__ = ("_cases", "_timeouts", "feature")

    def __init__(
        self,
        feature: Feature[API, CaseName],
        cases: Mapping[CaseName, CaseFunction[API] | FamilyFunction[API]] | None = None,
    ) -> None:
        if not isinstance(feature, Feature):
            raise ContractDefinitionError(
                f"ContractSuite() needs a Feature as its first argument, got {feature!r}"
            )
        self.feature: Feature[API, CaseName] = feature
        self._cases: dict[str, CaseFunction[API] | FamilyFunction[API]] = {}
        self._timeouts: dict[str, float] = {}  # the cases that declare their own deadline
        for name, function in (cases or {}).items():
            self._add(name, function, family=name in feature.families)

    def __repr__(self) -> str:
        return f"ContractSuite({self.feature.id!r}, cases={list(self._cases)!r})"

    def _add(
        self,
        name: str,
        function: CaseFunction[API] | FamilyFunction[API],
        *,
        family: bool,
        timeout: float | None = None,
    ) -> None:
        feature = self.feature
        check_case(feature, name, f"suite of feature {feature.id!r}")
        if timeout is not None:
            timeout = check_timeout(
                timeout, what=f"timeout of case {name!r} of feature {feature.id!r}", optional=False
            )
        if family != (name in feature.families):
            kind, decorator = ("a family", "family") if not family else ("a case", "case")
            raise ContractDefinitionError(
                f"{name!r} is {kind} of feature {feature.id!r}: register it with @suite.{decorator}"
            )
        if not callable(function):
            raise ContractDefinitionError(
                f"case {name!r} of feature {feature.id!r} must be callable, got {function!r}"
            )
        if name in self._cases:
            raise ContractDefinitionError(
                f"suite of feature {feature.id!r} already has a function for case {name!r} "
                f"({callable_location(self._cases[name])})"
            )
        api_type = declared_api(feature)
        if isinstance(api_type, type) and _returns_nothing(function):
            async_only = _async_only(api_type)
            if async_only:
                raise ContractDefinitionError(
                    f"case {name!r} of feature {feature.id!r} is a plain function that returns "
                    f"nothing, but every operation of {api_type.__name__} is async "
                    f"({', '.join(async_only)}): its calls would never run; make it "
                    f"'async def' and await each call ({callable_location(function)})"
                )
        self._cases[name] = function
        if timeout is not None:
            self._timeouts[name] = timeout

    def own_timeout(self, name: str) -> float | None:
        """The deadline a case (or a family, for each of its members) declares; ``None`` if none."""
        return self._timeouts.get(name)

    @overload
    def case(self, function: Callable[[API], _Outcome], /) -> Callable[[API], _Outcome]: ...
    @overload
    def case(
        self, name: CaseName, /, *, timeout: float = ...
    ) -> Callable[[Callable[[API], _Outcome]], Callable[[API], _Outcome]]: ...
    @overload
    def case(
        self, /, *, timeout: float
    ) -> Callable[[Callable[[API], _Outcome]], Callable[[API], _Outcome]]: ...
    def case(
        self,
        function_or_name: Callable[[API], _Outcome] | CaseName | None = None,
        /,
        *,
        timeout: float | None = None,
    ) -> (
        Callable[[API], _Outcome] | Callable[[Callable[[API], _Outcome]], Callable[[API], _Outcome]]
    ):
        """
        Register a case function; use bare, or with the case name as its argument.

        ``@suite.case`` takes the case name from the function's name;
        ``@suite.case("read_your_writes")`` names it explicitly. The function is
        returned unchanged.

        A case that runs threads or many operations declares the deadline its
        stages need, ``@suite.case("bulk_load", timeout=30)`` (or
        ``@suite.case(timeout=30)``): it applies to each stage of that case
        (create, the case, each cleanup) when it is longer than the
        implementation's deadline. A run's own ``timeout=`` (``--timeout``)
        overrides it.

        :raises ContractDefinitionError: if the feature declares no such case,
            the suite already has a function for it, or ``timeout`` is not a
            positive, finite number of seconds.
        """
        if function_or_name is None or isinstance(function_or_name, str):
            name = function_or_name

            def register(function: Callable[[API], _Outcome]) -> Callable[[API], _Outcome]:
                self._add(
                    name if name is not None else getattr(function, "__name__", repr(function)),
                    function,
                    family=False,
                    timeout=timeout,
                )
                return function

            return register
        function = function_or_name
        self._add(getattr(function, "__name__", repr(function)), function, family=False)
        return function

    @overload
    def family(
        self, function: Callable[[API, Any], _Outcome], /
    ) -> Callable[[API, Any], _Outcome]: ...
    @overload
    def family(
        self, name: CaseName, /, *, timeout: float = ...
    ) -> Callable[[Callable[[API, Any], _Outcome]], Callable[[API, Any], _Outcome]]: ...
    @overload
    def family(
        self, /, *, timeout: float
    ) -> Callable[[Callable[[API, Any], _Outcome]], Callable[[API, Any], _Outcome]]: ...
    def family(
        self,
        function_or_name: Callable[[API, Any], _Outcome] | CaseName | None = None,
        /,
        *,
        timeout: float | None = None,
    ) -> (
        Callable[[API, Any], _Outcome]
        | Callable[[Callable[[API, Any], _Outcome]], Callable[[API, Any], _Outcome]]
    ):
        """
        Register the function of a case family; it takes the API and the member's parameter.

        Used like :meth:`case`: bare, or with the family's name, and ``timeout=``
        for each member's own deadline. The function runs once per member the
        implementation claims, receiving the parameter name (or the
        :class:`Example` of a table).

        :raises ContractDefinitionError: if the feature declares no such family,
            the suite already has a function for it, or ``timeout`` is malformed.
        """
        if function_or_name is None or isinstance(function_or_name, str):
            name = function_or_name

            def register(
                function: Callable[[API, Any], _Outcome],
            ) -> Callable[[API, Any], _Outcome]:
                self._add(
                    name if name is not None else getattr(function, "__name__", repr(function)),
                    function,
                    family=True,
                    timeout=timeout,
                )
                return function

            return register
        function = function_or_name
        self._add(getattr(function, "__name__", repr(function)), function, family=True)
        return function

    def __getitem__(self, name: CaseName) -> CaseFunction[API] | FamilyFunction[API]:
        return self._cases[name]

    def __contains__(self, name: object) -> bool:
        return name in self._cases

    def __iter__(self) -> Iterator[str]:
        return iter(self._cases)

    def __len__(self) -> int:
        return len(self._cases)

    def _check_complete(self) -> None:
        has = self._cases.__contains__
        if all(map(has, self.feature.cases)) and all(map(has, self.feature.families)):
            return  # checked at C speed: a run checks it once per case
        missing = [
            name
            for name in (*self.feature.cases, *self.feature.families)
            if name not in self._cases
        ]
        if missing:
            raise ContractDefinitionError(
                f"suite of feature {self.feature.id!r} has no function for case(s) "
                f"{', '.join(map(repr, missing))}"
            )


# The suite's protocol with the rest of the core: functions, not methods, so that a
# ContractSuite shows its users no more than its public API.

check_complete: Final = ContractSuite._check_complete
"""``check_complete(suite)``: raise unless the suite has a function for every case."""


def case_functions(suite: ContractSuite[Any, Any]) -> dict[str, Any]:
    """The suite's functions by case or family name, in the order they were added."""
    return suite._cases


def _async_only(api_type: type) -> tuple[str, ...]:
    """
    The operations of an API type whose every public member is an ``async def``
    method; empty when any is not (a sync method, a property, an attribute).
    """
    names = {name for name in dir(api_type) if not name.startswith("_")}
    names.update(
        name
        for klass in api_type.__mro__
        for name in getattr(klass, "__annotations__", {})
        if not name.startswith("_")
    )
    if not names:
        return ()
    for name in names:
        member = inspect.getattr_static(api_type, name, None)
        if isinstance(member, staticmethod | classmethod):
            member = member.__func__
        if not inspect.iscoroutinefunction(member):
            return ()
    return tuple(sorted(names))


def _returns_nothing(function: object) -> bool:
    """
    Whether ``function`` is a plain ``def`` that can only return ``None``: it
    cannot hand the runner an awaitable, so it awaits nothing. A ``lambda`` or a
    ``def`` that returns a value may return a coroutine, and is not judged here.
    """
    if not isinstance(function, FunctionType) or function.__name__ == "<lambda>":
        return False
    code = function.__code__
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR):
        return False
    previous: dis.Instruction | None = None
    for instruction in dis.get_instructions(code):
        if instruction.opname == "RETURN_CONST" and instruction.argval is not None:
            return False
        if instruction.opname == "RETURN_VALUE" and not (
            not instruction.is_jump_target  # reached with another value on the stack
            and previous is not None
            and previous.opname == "LOAD_CONST"
            and previous.argval is None
        ):
            return False
        previous = instruction
    return True


# Shown as conformkit.Name, like every export, whichever way it was first imported.
ContractSuite.__module__ = "conformkit"
