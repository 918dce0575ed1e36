"""
Call recording: a proxy that records each API call without changing what it does,
and the call assertions that recorders and stubs share.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, final

from ._exceptions import ContractDefinitionError, LawViolation
from ._feature import suggest
from ._util import short_repr

_T = TypeVar("_T")

# Special methods an API may have (a mapping, a context manager, an iterator):
# Python looks them up on the type, so the proxy's class must define them.
_SPECIAL: Final = (
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__contains__",
    "__iter__",
    "__len__",
    "__call__",
    "__enter__",
    "__exit__",
    "__aenter__",
    "__aexit__",
    "__aiter__",
    "__anext__",
    "__next__",
)
NOT_OPERATIONS: Final = frozenset(dir(object)) | frozenset(dir(typing.Protocol)) | {"_is_protocol"}


@final
@dataclass(frozen=True, slots=True)
class Call:
    """
    One recorded call.

    :ivar name: the method's name (``"__getitem__"`` for ``api[key]``).
    :ivar args: the positional arguments.
    :ivar kwargs: the keyword arguments.
    :ivar result: what it returned (for an async method, what its awaitable gave).
    :ivar error: what it raised, if anything.
    """

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: BaseException | None = None

    def __str__(self) -> str:
        arguments = ", ".join(
            [*map(repr, self.args), *(f"{key}={value!r}" for key, value in self.kwargs.items())]
        )
        outcome = f"raised {self.error!r}" if self.error is not None else f"-> {self.result!r}"
        return f"{self.name}({arguments}) {outcome}"


def show_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """``name(arg, key=value)``, each value shortened for a message."""
    shown = [
        *map(short_repr, args),
        *(f"{key}={short_repr(value)}" for key, value in kwargs.items()),
    ]
    return f"{name}({', '.join(shown)})"


_SELF: Final = object()
"""Stands for ``self`` when arguments are bound to a method's signature."""


def method_signature(owner: type, name: str) -> tuple[inspect.Signature, tuple[Any, ...]] | None:
    """
    The signature of method ``name`` of ``owner``, and what stands before the
    caller's arguments when binding to it (``self`` or the class); ``None`` for
    something without a Python signature (a slot wrapper, a callable object).
    """
    raw = inspect.getattr_static(owner, name, None)
    lead: tuple[Any, ...]
    if isinstance(raw, staticmethod | classmethod):
        lead = () if isinstance(raw, staticmethod) else (owner,)
        raw = raw.__func__
    elif inspect.isfunction(raw):
        lead = (_SELF,)
    else:
        return None
    try:
        return inspect.signature(raw), lead
    except (TypeError, ValueError):
        return None


def bind_arguments(
    owner: type, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """
    ``args`` and ``kwargs`` as ``owner.name``'s signature binds them, so that
    ``write("k", value="v")`` and ``write("k", "v")`` compare equal, as with
    ``unittest.mock.create_autospec``; ``None`` when there is no signature to
    bind to or the arguments do not fit it.
    """
    found = method_signature(owner, name)
    if found is None:
        return None
    signature, lead = found
    try:
        bound = signature.bind(*lead, *args, **kwargs)
    except TypeError:
        return None
    return bound.args[len(lead) :], bound.kwargs


class CallAssertions:
    """
    Assertions over recorded calls, in ``unittest.mock``'s vocabulary.

    Shared by :class:`CallRecorder` and :class:`~conformkit.Stub`. Arguments
    may hold :data:`unittest.mock.ANY`; an ordered list of calls is written with
    :data:`unittest.mock.call`, ``[call.write("k", "v"), call.read("k")]``. Each
    assertion raises :exc:`~conformkit.LawViolation` (an :exc:`AssertionError`)
    naming what was expected and listing the calls there were; one that names
    a method the API type does not declare (and nothing called) raises
    :exc:`~conformkit.ContractDefinitionError` instead, as it could never fail.
    """

    __slots__ = ()

    calls: list[Call]

    def names(self) -> set[str]:
        """The names of the methods called so far."""
        return {call.name for call in self.calls}

    def _owners(self) -> Sequence[type]:
        """The types whose signatures normalise arguments before they are compared."""
        return ()

    def _check_refusals(self) -> None:
        """Raise if a call was refused, even when the caller swallowed the refusal."""

    def _check_names(self, where: str, names: Iterable[object]) -> None:
        """
        Raise unless each name is an operation of the API, or was called: an
        assertion about a misspelt name could never fail.
        """
        owners = self._owners()
        known = self.names()
        for owner in owners:
            known.update(api_operations(owner) or ())
        for name in names:
            if not isinstance(name, str):
                raise ContractDefinitionError(
                    f"{where} takes method names, got {short_repr(name, 80)}"
                )
            if owners and name not in known:
                declared = " or ".join(owner.__qualname__ for owner in owners)
                raise ContractDefinitionError(
                    f"{where} names {name!r}, which {declared} does not declare"
                    f"{suggest(name, known)}"
                )

    def _normalised(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        for owner in self._owners():
            bound = bind_arguments(owner, name, args, kwargs)
            if bound is not None:
                return bound
        return args, kwargs

    def _matches(
        self, call: Call, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        if call.name != name:
            return False
        # The expected side first: ANY.__eq__ then answers for any recorded value.
        return self._normalised(name, args, kwargs) == self._normalised(
            name, call.args, call.kwargs
        )

    def _calls_of(self, name: str | None = None) -> str:
        """The calls (of ``name``, or all), listed for a message."""
        chosen = [call for call in self.calls if name is None or call.name == name]
        if not chosen:
            return "there were none" if name is None else f"{name} was never called"
        shown = [show_call(call.name, call.args, call.kwargs) for call in chosen[:10]]
        more = f" and {len(chosen) - 10} more" if len(chosen) > 10 else ""
        return f"the calls{'' if name is None else f' of {name}'} were: {', '.join(shown)}{more}"

    def assert_called(self, *names: str, times: int | None = None) -> None:
        """
        Require at least one call, or at least one call of each named method; with
        ``times``, exactly that many calls of each named method.

        :raises LawViolation: saying which methods were never called, and what was.
        """
        self._check_refusals()
        self._check_names("assert_called()", names)
        if times is not None and (
            isinstance(times, bool) or not isinstance(times, int) or times < 0
        ):
            raise ContractDefinitionError(
                f"times must be a whole number of calls, 0 or more, got {times!r}"
            )
        if times is not None and not names:
            raise ContractDefinitionError("assert_called(times=...) needs the methods to count")
        called = {call.name for call in self.calls}
        if times is not None:
            for name in names:
                count = sum(call.name == name for call in self.calls)
                if count != times:
                    raise LawViolation(
                        f"expected {name} to be called {times} time(s), it was called {count} "
                        f"time(s); {self._calls_of(name)}"
                    )
            return
        if not names and not called:
            raise LawViolation("the API was never called")
        missing = [name for name in names if name not in called]
        if missing:
            seen = ", ".join(sorted(called)) if called else "nothing"
            raise LawViolation(
                f"never called {', '.join(map(repr, missing))}; the calls were: {seen}"
            )

    def assert_not_called(self, *names: str) -> None:
        """
        Require that none of the named methods was called, or, without names, no
        method at all.

        :raises LawViolation: listing the calls made.
        """
        self._check_refusals()
        self._check_names("assert_not_called()", names)
        made = [call for call in self.calls if not names or call.name in names]
        if made:
            shown = ", ".join(show_call(call.name, call.args, call.kwargs) for call in made[:10])
            what = "the API" if not names else " or ".join(names)
            raise LawViolation(f"expected no call of {what}, got {len(made)}: {shown}")

    def assert_any_call(self, name: str, /, *args: Any, **kwargs: Any) -> None:
        """
        Require at least one call of ``name`` with these arguments.

        :raises LawViolation: naming the expected call and listing the calls of ``name``.
        """
        self._check_refusals()
        self._check_names("assert_any_call()", (name,))
        if not any(self._matches(call, name, args, kwargs) for call in self.calls):
            raise LawViolation(
                f"expected a call {show_call(name, args, kwargs)}; {self._calls_of(name)}"
            )

    def assert_called_with(self, name: str, /, *args: Any, **kwargs: Any) -> None:
        """
        Require that the last call of ``name`` had these arguments.

        :raises LawViolation: naming the expected call and listing the calls of ``name``.
        """
        self._check_refusals()
        self._check_names("assert_called_with()", (name,))
        chosen = [call for call in self.calls if call.name == name]
        if not chosen or not self._matches(chosen[-1], name, args, kwargs):
            raise LawViolation(
                f"expected the last call of {name} to be {show_call(name, args, kwargs)}; "
                f"{self._calls_of(name)}"
            )

    def assert_called_once_with(self, name: str, /, *args: Any, **kwargs: Any) -> None:
        """
        Require exactly one call of ``name``, with these arguments.

        :raises LawViolation: naming the expected call and listing the calls of ``name``.
        """
        self._check_refusals()
        self._check_names("assert_called_once_with()", (name,))
        chosen = [call for call in self.calls if call.name == name]
        if len(chosen) != 1 or not self._matches(chosen[0], name, args, kwargs):
            got = f", got {len(chosen)} call(s) of {name}" if chosen else ""
            raise LawViolation(
                f"expected one call {show_call(name, args, kwargs)}{got}; {self._calls_of(name)}"
            )

    def assert_has_calls(self, calls: Iterable[Any], *, any_order: bool = False) -> None:
        """
        Require these calls, consecutive and in this order; with ``any_order``, each
        of them somewhere, in any order. Calls before and after them are allowed,
        as in :meth:`unittest.mock.Mock.assert_has_calls`.

        :param calls: ``unittest.mock.call`` objects naming the method:
            ``[call.write("k", "v"), call.read("k")]``.
        :raises ContractDefinitionError: for an item that is not such a call, or none.
        :raises LawViolation: naming the expected calls and listing the calls made.
        """
        self._check_refusals()
        expected = [_expected_call(item) for item in calls]
        if not expected:
            raise ContractDefinitionError("assert_has_calls() needs at least one call to look for")
        self._check_names("assert_has_calls()", (name for name, _, _ in expected))
        shown = ", ".join(show_call(*item) for item in expected)
        if any_order:
            left = list(self.calls)
            for name, args, kwargs in expected:
                found = next(
                    (call for call in left if self._matches(call, name, args, kwargs)), None
                )
                if found is None:
                    raise LawViolation(
                        f"expected the calls {shown} in any order, but not "
                        f"{show_call(name, args, kwargs)}; {self._calls_of()}"
                    )
                left.remove(found)
            return
        made = self.calls
        for start in range(len(made) - len(expected) + 1):
            if all(
                self._matches(made[start + offset], *item) for offset, item in enumerate(expected)
            ):
                return
        raise LawViolation(f"expected the calls {shown} in this order; {self._calls_of()}")


def _expected_call(item: object) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """A ``unittest.mock.call.name(...)`` object as ``(name, args, kwargs)``."""
    # A mock _Call is a tuple (name, args, kwargs); reading it as one keeps
    # unittest.mock out of the import, and out of a run that never asserts.
    if (
        isinstance(item, tuple)
        and len(item) == 3
        and isinstance(item[0], str)
        and item[0]
        and isinstance(item[1], tuple)
        and isinstance(item[2], dict)
    ):
        return item[0], item[1], item[2]
    raise ContractDefinitionError(
        f"assert_has_calls takes unittest.mock call objects that name the method, such as "
        f"call.read('key'), got {short_repr(item, 80)}"
    )


@final
class CallRecorder(CallAssertions):
    """
    Records the calls made through the proxies it creates.

    ::

        recorder = CallRecorder()
        api = recorder.wrap(store)          # behaves exactly like store
        await consumer(api)
        recorder.assert_called("write")     # the consumer really went through it
        recorder.assert_any_call("write", "key", ANY)

    Methods are recorded with their arguments and outcome, sync and async alike;
    attributes that are not methods are passed through unrecorded. Calls are
    recorded when they finish, in that order. The assertions are those of
    :class:`CallAssertions`; arguments are compared as the wrapped type's
    signature binds them.
    """

    __slots__ = ("_types", "calls")

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._types: list[type] = []

    def __repr__(self) -> str:
        return f"<CallRecorder of {len(self.calls)} call(s)>"

    def wrap(self, api: _T) -> _T:
        """Return a proxy for ``api`` that records each method call here."""
        proxy_class = _proxy_class(type(api))
        if type(api) not in self._types:
            self._types.append(type(api))
        proxy = object.__new__(proxy_class)
        object.__setattr__(proxy, "_conformkit_target", api)
        object.__setattr__(proxy, "_conformkit_recorder", self)
        return typing.cast("_T", proxy)

    def _owners(self) -> Sequence[type]:
        return self._types

    def _record(
        self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        try:
            result = method(*args, **kwargs)
        except BaseException as exc:
            self.calls.append(Call(name, args, kwargs, None, exc))
            raise
        if inspect.isawaitable(result):
            return self._record_awaited(name, result, args, kwargs)
        self.calls.append(Call(name, args, kwargs, result))
        return result

    async def _record_awaited(
        self, name: str, awaitable: Awaitable[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        try:
            result = await awaitable
        except BaseException as exc:
            self.calls.append(Call(name, args, kwargs, None, exc))
            raise
        self.calls.append(Call(name, args, kwargs, result))
        return result


class RecordingProxy:
    __slots__ = ("_conformkit_recorder", "_conformkit_target")

    _conformkit_target: Any
    _conformkit_recorder: CallRecorder

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._conformkit_target, name)
        if name.startswith("__") or not callable(value):
            return value
        recorder = self._conformkit_recorder

        def recorded(*args: Any, **kwargs: Any) -> Any:
            return recorder._record(name, value, args, kwargs)

        return recorded

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._conformkit_target, name, value)

    def __repr__(self) -> str:
        return f"<recording {self._conformkit_target!r}>"


def target_of(proxy: RecordingProxy) -> Any:
    """The API behind a recording proxy."""
    return proxy._conformkit_target


_proxy_classes: dict[type, type[RecordingProxy]] = {}


def _proxy_class(target: type) -> type[RecordingProxy]:
    """A proxy class with the special methods ``target`` has, made once per type."""
    cached = _proxy_classes.get(target)
    if cached is not None:
        return cached

    def special(name: str) -> Callable[..., Any]:
        def forward(self: RecordingProxy, *args: Any, **kwargs: Any) -> Any:
            method = getattr(self._conformkit_target, name)
            return self._conformkit_recorder._record(name, method, args, kwargs)

        forward.__name__ = name
        return forward

    namespace: dict[str, Any] = {"__slots__": ()}
    for name in _SPECIAL:
        if callable(getattr(target, name, None)):
            namespace[name] = special(name)
    made = type(f"Recording{target.__name__}", (RecordingProxy,), namespace)
    _proxy_classes[target] = made
    return made


def api_operations(api_type: object) -> tuple[str, ...] | None:
    """
    The operations of an API type, for "operations no case exercised".

    Public methods and the special methods the proxy records; ``None`` when the
    type is unknown (``Any``, or not a class).
    """
    if api_type is Any or not isinstance(api_type, type):  # Any is a class since 3.11
        return None
    names: Iterable[str] = (
        name
        for name in dir(api_type)
        if (not name.startswith("_") or name in _SPECIAL)
        and name not in NOT_OPERATIONS
        and callable(getattr(api_type, name, None))
    )
    return tuple(sorted(names))
