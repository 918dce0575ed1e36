"""Test doubles: a stub of an API type that answers what it is told to and refuses the rest."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from inspect import Signature
from typing import Any, Final, Generic, TypeVar, final

from ._exceptions import ContractDefinitionError, LawViolation
from ._feature import suggest
from ._recording import (
    NOT_OPERATIONS,
    Call,
    CallAssertions,
    api_operations,
    method_signature,
    show_call,
)
from ._util import short_repr

API = TypeVar("API")

_RAISE: Final = "raise"
_CALL: Final = "call"
_NEXT: Final = "next"


@final
class Stub(CallAssertions, Generic[API]):
    """
    A test double of an API type: canned answers per operation, and a refusal
    for every call it was given no answer for.

    ::

        stub = Stub(TextAPI, returns={"write": None}, side_effects={"read": ["v", KeyError("k")]})
        await consumer(stub.api)            # stub.api is a TextAPI
        stub.assert_any_call("write", "key", ANY)

    Answers follow ``unittest.mock``: ``returns`` gives each call of an operation
    the same value (its ``return_value``); ``side_effects`` gives an exception
    (instance or class) to raise, a callable to call with the arguments (its
    result is the answer; awaited for an async operation if it is awaitable), or
    an iterable of answers, one per call, any exception among them raised.

    A call of an operation with no answer, or past the end of its answers, or
    with arguments that do not fit the API type's signature, raises at once,
    naming the operation and the arguments: :exc:`~conformkit.LawViolation`
    (:exc:`TypeError` for arguments that do not fit). The refusal is also kept,
    and every assertion of the stub fails on it first, so a consumer that
    swallows the error does not hide it.

    The stub's operations are those of the API type: ``async def`` ones are
    coroutine functions on :attr:`api`, the rest plain. Attributes and
    properties the type declares are read from ``returns``. Calls are recorded
    as :class:`~conformkit.laws.CallRecorder` records them, in :attr:`calls`,
    with the assertions of ``CallRecorder``.

    Unlike ``unittest.mock.create_autospec``, whose mocks answer every call
    with another mock, a stub never makes an answer up.

    :param api_type: the API type, a class or a ``Protocol``.
    :param returns: each operation's (or attribute's) value.
    :param side_effects: each operation's exception, callable or answers.
    :raises ContractDefinitionError: for a type that is not a class, a name the
        type does not declare, a name given both, or a side effect of no known kind.
    """

    __slots__ = ("_effects", "_refused", "_returns", "api", "api_type", "calls")

    api: API
    """The double, with the API type's operations; give it to the code under test."""
    api_type: type
    """The API type the stub was built from."""
    calls: list[Call]
    """The calls made through :attr:`api`, in the order they finished."""

    def __init__(
        self,
        api_type: Callable[..., API],
        *,
        returns: Mapping[str, object] | None = None,
        side_effects: Mapping[str, object] | None = None,
    ) -> None:
        if not isinstance(api_type, type) or api_type is Any:  # Any is a class since 3.11
            raise ContractDefinitionError(
                f"Stub() needs the API type, a class or a Protocol, got {short_repr(api_type, 80)}"
            )
        self.api_type = api_type
        operations, attributes = _members(api_type)
        type_name = api_type.__qualname__
        self._returns: dict[str, object] = {}
        self._effects: dict[str, tuple[str, Any]] = {}
        for option, given in (("returns", returns), ("side_effects", side_effects)):
            if given is None:
                continue
            if not isinstance(given, Mapping):
                raise ContractDefinitionError(
                    f"Stub({type_name}): {option} must map operation names to answers, "
                    f"got {short_repr(given, 80)}"
                )
            for name, answer in given.items():
                if name not in operations and name not in attributes:
                    known = [*operations, *attributes]
                    raise ContractDefinitionError(
                        f"Stub({type_name}): {option} names {name!r}, which {type_name} does not "
                        f"declare{suggest(str(name), known)}"
                    )
                if option == "returns":
                    self._returns[name] = answer
                    continue
                if name in self._returns:
                    raise ContractDefinitionError(
                        f"Stub({type_name}): {name!r} is in both returns and side_effects; "
                        f"give it one answer"
                    )
                if name in attributes:
                    raise ContractDefinitionError(
                        f"Stub({type_name}): {name!r} is an attribute of {type_name}; "
                        f"give its value in returns"
                    )
                self._effects[name] = _effect(type_name, name, answer)
        self._refused: list[str] = []
        self.calls = []
        # The answering class has the type's members, so it stands for an API.
        self.api = typing.cast("API", _answering_class(api_type)(self))

    @property
    def refused(self) -> tuple[str, ...]:
        """What the stub refused so far, each as the message it raised."""
        return tuple(self._refused)

    def __repr__(self) -> str:
        answered = sorted({*self._returns, *self._effects})
        return (
            f"<Stub of {self.api_type.__qualname__} answering {answered!r}, "
            f"{len(self.calls)} call(s)>"
        )

    def _owners(self) -> Sequence[type]:
        return (self.api_type,)

    def _check_refusals(self) -> None:
        if self._refused:
            more = f" (and {len(self._refused) - 1} more)" if len(self._refused) > 1 else ""
            raise LawViolation(f"the stub refused a call: {self._refused[0]}{more}")

    def _refuse(self, message: str, error: type[Exception] = LawViolation) -> Exception:
        self._refused.append(message)
        return error(message)

    def _answer(
        self, name: str, signature: Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The answer to one call, not yet awaited; or the refusal, raised."""
        shown = f"{self.api_type.__qualname__}.{show_call(name, args, kwargs)}"
        if signature is not None:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as error:
                raise self._refuse(
                    f"{shown} does not fit the signature {name}{signature}: {error}", TypeError
                ) from None
        if name in self._returns:
            return self._returns[name]
        effect = self._effects.get(name)
        if effect is None:
            raise self._refuse(
                f"unexpected call {shown}: the stub has no answer for {name}; "
                f"give one in returns or side_effects"
            )
        kind, value = effect
        if kind == _RAISE:
            raise value
        if kind == _CALL:
            return value(*args, **kwargs)
        try:
            answer = next(value)
        except StopIteration:
            raise self._refuse(
                f"unexpected call {shown}: the side effects of {name} ran out"
            ) from None
        if _is_exception(answer):
            raise answer
        return answer

    def _attribute(self, name: str) -> Any:
        if name in self._returns:
            return self._returns[name]
        raise self._refuse(
            f"unexpected read of {self.api_type.__qualname__}.{name}: the stub has no value "
            f"for it; give one in returns"
        )


def _is_exception(value: object) -> bool:
    return isinstance(value, BaseException) or (
        isinstance(value, type) and issubclass(value, BaseException)
    )


def _effect(type_name: str, name: str, effect: object) -> tuple[str, Any]:
    """A side effect as ``(kind, value)``; an iterable becomes its iterator."""
    if _is_exception(effect):
        return _RAISE, effect
    if callable(effect):
        return _CALL, effect
    if isinstance(effect, Iterable) and not isinstance(effect, str | bytes | bytearray | Mapping):
        answers: Iterator[Any] = iter(effect)
        return _NEXT, answers
    raise ContractDefinitionError(
        f"Stub({type_name}): side_effects[{name!r}] must be an exception, a callable or "
        f"an iterable of answers, got {short_repr(effect, 80)}; one value for every call "
        f"goes in returns"
    )


def _members(api_type: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The operations of ``api_type``, and its public attributes and properties."""
    operations = api_operations(api_type) or ()
    attributes: set[str] = set()
    for klass in api_type.__mro__:
        if klass is object:
            continue
        for name in inspect.get_annotations(klass):
            attributes.add(name)
        for name, value in vars(klass).items():
            if isinstance(value, property):
                attributes.add(name)
    public = sorted(
        name
        for name in attributes
        if not name.startswith("_") and name not in NOT_OPERATIONS and name not in operations
    )
    return operations, tuple(public)


class _Answering:
    """The object behind a stub's recording proxy: each operation asks the stub."""

    __slots__ = ("__dict__", "_conformkit_stub")

    _conformkit_stub: Stub[Any]

    def __init__(self, stub: Stub[Any]) -> None:
        object.__setattr__(self, "_conformkit_stub", stub)

    def __repr__(self) -> str:
        return f"<stub of {self._conformkit_stub.api_type.__qualname__}>"


_answering_classes: dict[type, type[_Answering]] = {}


def _answering_class(api_type: type) -> type[_Answering]:
    """A class with ``api_type``'s operations, each asking the stub; made once per type."""
    cached = _answering_classes.get(api_type)
    if cached is not None:
        return cached
    operations, attributes = _members(api_type)
    namespace: dict[str, Any] = {"__slots__": ()}
    for name in operations:
        namespace[name] = _operation(api_type, name)
    for name in attributes:
        namespace[name] = property(_reader(name))
    made = type(_class_name(api_type), (_Answering,), namespace)
    _answering_classes[api_type] = made
    return made


def _class_name(api_type: type) -> str:
    return f"Stub{api_type.__name__}"


def _operation(api_type: type, name: str) -> Callable[..., Any]:
    declared = inspect.getattr_static(api_type, name, None)
    if isinstance(declared, staticmethod | classmethod):
        declared = declared.__func__
    # Bound once here, so that each call checks its arguments without a lookup.
    found = method_signature(api_type, name)
    signature = None
    if found is not None:
        full, lead = found
        signature = full.replace(parameters=list(full.parameters.values())[len(lead) :])
    # Each call is recorded when it finishes, as CallRecorder records it.
    if inspect.iscoroutinefunction(declared) or name in ("__aenter__", "__aexit__", "__anext__"):

        async def answer_async(self: _Answering, *args: Any, **kwargs: Any) -> Any:
            stub = self._conformkit_stub
            try:
                result = stub._answer(name, signature, args, kwargs)
                if inspect.isawaitable(result):
                    result = await result
            except BaseException as exc:
                stub.calls.append(Call(name, args, kwargs, None, exc))
                raise
            stub.calls.append(Call(name, args, kwargs, result))
            return result

        answer_async.__name__ = name
        answer_async.__qualname__ = f"{_class_name(api_type)}.{name}"
        return answer_async

    def answer(self: _Answering, *args: Any, **kwargs: Any) -> Any:
        stub = self._conformkit_stub
        try:
            result = stub._answer(name, signature, args, kwargs)
        except BaseException as exc:
            stub.calls.append(Call(name, args, kwargs, None, exc))
            raise
        stub.calls.append(Call(name, args, kwargs, result))
        return result

    answer.__name__ = name
    answer.__qualname__ = f"{_class_name(api_type)}.{name}"
    return answer


def _reader(name: str) -> Callable[[_Answering], Any]:
    def read(self: _Answering) -> Any:
        return self._conformkit_stub._attribute(name)

    return read


Stub.__module__ = "conformkit"
