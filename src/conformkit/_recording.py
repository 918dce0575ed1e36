"""Call recording: a proxy that records each API call without changing what it does."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, final

from ._exceptions import LawViolation

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
_NOT_OPERATIONS: Final = frozenset(dir(object)) | frozenset(dir(typing.Protocol)) | {"_is_protocol"}


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


@final
class CallRecorder:
    """
    Records the calls made through the proxies it creates.

    ::

        recorder = CallRecorder()
        api = recorder.wrap(store)          # behaves exactly like store
        await consumer(api)
        recorder.assert_called("write")     # the consumer really went through it

    Methods are recorded with their arguments and outcome, sync and async alike;
    attributes that are not methods are passed through unrecorded. Calls are
    recorded when they finish, in that order.
    """

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def __repr__(self) -> str:
        return f"<CallRecorder of {len(self.calls)} call(s)>"

    def wrap(self, api: _T) -> _T:
        """Return a proxy for ``api`` that records each method call here."""
        proxy_class = _proxy_class(type(api))
        proxy = object.__new__(proxy_class)
        object.__setattr__(proxy, "_conformkit_target", api)
        object.__setattr__(proxy, "_conformkit_recorder", self)
        return typing.cast("_T", proxy)

    def names(self) -> set[str]:
        """The names of the methods called so far."""
        return {call.name for call in self.calls}

    def assert_called(self, *names: str) -> None:
        """
        Require at least one call, or at least one call of each named method.

        :raises LawViolation: saying which methods were never called, and what was.
        """
        called = self.names()
        if not names and not called:
            raise LawViolation("the API was never called")
        missing = [name for name in names if name not in called]
        if missing:
            seen = ", ".join(sorted(called)) if called else "nothing"
            raise LawViolation(
                f"never called {', '.join(map(repr, missing))}; the calls were: {seen}"
            )

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


class _RecordingProxy:
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


_proxy_classes: dict[type, type[_RecordingProxy]] = {}


def _proxy_class(target: type) -> type[_RecordingProxy]:
    """A proxy class with the special methods ``target`` has, made once per type."""
    cached = _proxy_classes.get(target)
    if cached is not None:
        return cached

    def special(name: str) -> Callable[..., Any]:
        def forward(self: _RecordingProxy, *args: Any, **kwargs: Any) -> Any:
            method = getattr(self._conformkit_target, name)
            return self._conformkit_recorder._record(name, method, args, kwargs)

        forward.__name__ = name
        return forward

    namespace: dict[str, Any] = {"__slots__": ()}
    for name in _SPECIAL:
        if callable(getattr(target, name, None)):
            namespace[name] = special(name)
    made = type(f"Recording{target.__name__}", (_RecordingProxy,), namespace)
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
        and name not in _NOT_OPERATIONS
        and callable(getattr(api_type, name, None))
    )
    return tuple(sorted(names))
