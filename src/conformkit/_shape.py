"""
What ``create`` returned, checked before a case uses it: the API's shape and its isolation.

Shape: when a feature's API type is a :class:`typing.Protocol` (every member it
declares) or an ABC (its abstract members), the object must have each member,
and each method declared ``async def`` must be async on the object. ``None`` is
rejected for any API type that does not admit it. What a type of object lacks
is worked out once per (type of object, API type), from the first object of
that type; a case pays a dictionary lookup.

Isolation: an object that is still the API of another live scope of the same
run is refused. Only the identity of each live API is kept, with its scope:
nothing here keeps an API alive.
"""

from __future__ import annotations

import abc
import functools
import inspect
import re
import types
import typing
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final, cast, final

from ._feature import declared_api
from ._recording import RecordingProxy, target_of

if TYPE_CHECKING:
    from ._scope import FeatureScope

__all__ = ["CLEAN", "CreateCheck", "session_check"]

_MISSING: Final = object()

# Immutable values cannot carry state between scopes: two scopes may share one.
_VALUES: Final = frozenset(
    {types.NoneType, bool, int, float, complex, str, bytes, tuple, frozenset, range}
)

# What typing and abc put on a class: never members of an API.
_NOT_MEMBERS: Final = frozenset(dir(object)) | {
    "__abstractmethods__",
    "__annotations__",
    "__class_getitem__",
    "__dict__",
    "__init_subclass__",
    "__orig_bases__",
    "__parameters__",
    "__protocol_attrs__",
    "__non_callable_proto_members__",
    "__slots__",
    "__type_params__",
    "__weakref__",
    "_abc_impl",
    "_is_protocol",
    "_is_runtime_protocol",
}

# A return annotation naming one of these says that a plain ``def`` returns an awaitable.
_AWAITABLE_NAMES: Final = re.compile(r"\b(Awaitable|Coroutine|Future|Task|Deferred)\b")


@final
class _Member:
    """A member the API type declares: a method (maybe ``async def``), or an attribute."""

    __slots__ = ("is_async", "is_method", "name")

    def __init__(self, name: str, *, is_method: bool, is_async: bool) -> None:
        self.name = name
        self.is_method = is_method
        self.is_async = is_async


@final
class _Declared:
    """The members an API type declares, and how to name it in a reason."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: tuple[_Member, ...]) -> None:
        self.name = name
        self.members = members


def _resolve(api: object) -> tuple[bool, _Declared | None] | None:
    """
    What an API type requires of ``create``'s object: whether ``None`` may be it,
    and the members to check (for a Protocol or an ABC); ``None`` when the type
    says nothing checkable (``Any``, ``object``, a type variable, a string).
    """
    while typing.get_origin(api) is typing.Annotated:
        api = typing.get_args(api)[0]
    if api is None or api is types.NoneType:
        return True, None
    origin = typing.get_origin(api)
    if origin is typing.Union or origin is types.UnionType:
        return types.NoneType in typing.get_args(api), None
    if origin is not None:
        api = origin  # a generic alias, SizedStore[str]: its class
    if api is Any or api is object or not isinstance(api, type):  # Any is a class since 3.11
        return None
    if getattr(api, "_is_protocol", False):
        return False, _declared(api, _protocol_members(api))
    if isinstance(api, abc.ABCMeta):
        return False, _declared(api, _abc_members(api))
    return False, None  # a plain class: its instances are not checked, None is refused


def _protocol_members(protocol: type) -> set[str]:
    import typing_extensions  # only where a Protocol is checked

    return set(typing_extensions.get_protocol_members(protocol))


def _abc_members(klass: type) -> set[str]:
    """
    An ABC's members: its abstract methods and properties, what a subclass must
    define; the methods it defines itself (``MutableMapping.update``) come with
    subclassing, and a class that merely quacks like it need not have them.
    """
    return set(getattr(klass, "__abstractmethods__", ()))


def _declared(api: type, names: set[str]) -> _Declared:
    members = []
    for name in sorted(names - _NOT_MEMBERS):
        value = inspect.getattr_static(api, name, _MISSING)
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        is_method = inspect.isfunction(value) or (
            callable(value) and not isinstance(value, type) and value is not _MISSING
        )
        is_async = is_method and inspect.iscoroutinefunction(value)
        members.append(_Member(name, is_method=is_method, is_async=is_async))
    return _Declared(api.__name__, tuple(members))


@final
class _Verdict:
    """
    What one type of object lacks against one API type: the problems seen on the
    type itself, and the members to look for on each object (set in ``__init__``,
    or found through ``__getattr__``).
    """

    __slots__ = ("missing", "per_object", "sync")

    def __init__(self, missing: list[str], sync: list[str], per_object: list[_Member]) -> None:
        self.missing = missing
        self.sync = sync
        self.per_object = per_object


def _judge(klass: type, declared: _Declared) -> _Verdict:
    verdict = _Verdict([], [], [])
    for member in declared.members:
        value = inspect.getattr_static(klass, member.name, _MISSING)
        if value is _MISSING:
            verdict.per_object.append(member)
        else:
            _note(verdict, member, value)
    return verdict


def _note(verdict: _Verdict, member: _Member, value: object) -> None:
    """Note what is wrong with the value a member has on the object, if anything."""
    if value is _MISSING:
        verdict.missing.append(f"{member.name}()" if member.is_method else member.name)
    elif member.is_async:
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if _sync(value):
            verdict.sync.append(member.name)


def _sync(value: object) -> bool:
    """
    Whether ``value`` is surely a sync function: a plain ``def``, not wrapping an
    async one, whose return annotation does not say it returns an awaitable. Any
    other callable may return an awaitable, and is given the benefit of the doubt.
    """
    function = value.__func__ if isinstance(value, types.MethodType) else value
    if not inspect.isfunction(function) or inspect.iscoroutinefunction(function):
        return False
    if inspect.isasyncgenfunction(function):
        return False
    try:
        if inspect.iscoroutinefunction(inspect.unwrap(function)):
            return False  # a sync decorator around an async function returns its coroutine
        annotation = function.__annotations__.get("return", _MISSING)
    except Exception:  # a cycle of __wrapped__, annotations that cannot be evaluated
        return False
    if annotation is _MISSING:
        return True
    if isinstance(annotation, str):
        return _AWAITABLE_NAMES.search(annotation) is None
    origin = typing.get_origin(annotation) or annotation
    return not (isinstance(origin, type) and issubclass(origin, Awaitable))


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


CLEAN: Final = _Verdict([], [], [])
"""The verdict on a type of object with nothing wrong, and nothing to look for per object."""
_PROXY: Final = _Verdict([], [], [])
"""The verdict on a recording proxy's class: what counts is the object behind it."""


@final
class CreateCheck:
    """
    The check of each object ``create`` returned, for one implementation: its
    shape against the API type, and that no other live scope has it as its API.

    :ivar live: the identity of each live API, and its scope.
    """

    __slots__ = ("admits_none", "declared", "labels", "live", "verdicts")

    def __init__(self, api: object) -> None:
        resolved = _resolve(api)
        self.admits_none, self.declared = (True, None) if resolved is None else resolved
        self.verdicts: dict[type, _Verdict] = {}
        self.live: dict[int, FeatureScope] = {}
        # How a reason names a live scope that is not a case's own, by its API's identity.
        self.labels: dict[int, str] = {}

    def shape(self, target: object) -> TypeError | None:
        """The error that ``target`` is not of the API's shape, or ``None``."""
        klass = type(target)
        verdict = self.verdicts.get(klass)
        if verdict is None:
            verdict = self.verdicts[klass] = self._judge(klass)
        if verdict is CLEAN:
            return None
        if verdict is _PROXY:
            return self.shape(target_of(cast("RecordingProxy", target)))
        if target is None:
            instead = "" if self.declared is None else f", not a {self.declared.name}"
            return TypeError(f"create() returned None (a forgotten return?){instead}")
        if not (verdict.missing or verdict.sync):
            # Only members to look for on the object (set in __init__, or found
            # through __getattr__): once the first object of its type has them
            # all, the type is taken as clean, as a type with none to look for.
            for member in verdict.per_object:
                value = getattr(target, member.name, _MISSING)
                if value is _MISSING or (member.is_async and _sync(value)):
                    break
            else:
                self.verdicts[klass] = CLEAN
                return None
        declared = cast("_Declared", self.declared)
        found = _Verdict(list(verdict.missing), list(verdict.sync), [])
        for member in verdict.per_object:
            _note(found, member, getattr(target, member.name, _MISSING))
        if not (found.missing or found.sync):
            return None
        problems = [f"which lacks {_listed(found.missing)}"] if found.missing else []
        problems += [
            f"whose {name}() is sync but {declared.name}.{name} is async" for name in found.sync
        ]
        return TypeError(f"create() returned {klass.__name__}, {_listed(problems)}")

    def _judge(self, klass: type) -> _Verdict:
        """What a type of object lacks, once: :data:`CLEAN` when nothing, nor per object."""
        if issubclass(klass, RecordingProxy):
            return _PROXY  # its target is checked, each time
        if klass is types.NoneType:
            return CLEAN if self.admits_none else _Verdict(["None"], [], [])
        if self.declared is None:
            return CLEAN
        verdict = _judge(klass, self.declared)
        if not (verdict.per_object or verdict.missing or verdict.sync):
            return CLEAN
        return verdict

    def admit(
        self,
        created: object,
        scope: FeatureScope,
        label: str | None = None,
        *,
        alongside: str = "",
    ) -> int | None:
        """
        Check what ``create`` returned for ``scope``, and take it as that scope's live API.

        The runner's hot path: for a type of object seen before, with nothing to
        look for on each object, two dictionary lookups and one insertion.

        :param label: how a later reason names ``scope``, when not by its case.
        :param alongside: what ``scope`` is for, when it is not the case's own.
        :return: the key to :meth:`release` it by; ``None`` for an immutable
            value, which scopes may share.
        :raises TypeError: when ``created`` is not of the API's shape, or is still
            the API of another live scope.
        """
        klass = type(created)
        if self.verdicts.get(klass) is not CLEAN:
            if issubclass(klass, RecordingProxy):  # a recorder the implementation wrapped
                created = target_of(cast("RecordingProxy", created))
                klass = type(created)
            problem = self.shape(created)
            if problem is not None:
                raise problem
        if klass in _VALUES:
            return None
        identity = id(created)
        live = self.live
        owner = live.get(identity)
        if owner is not None and _is_live(owner):
            what = self.labels.get(identity) or _label(owner)
            raise TypeError(
                f"isolation broken: create() returned{alongside} the same {klass.__name__} "
                f"object as for {what}, whose scope is still live; each call of create() "
                f"must return an API of its own"
            )
        live[identity] = scope
        if label is not None:
            self.labels[identity] = label
        elif self.labels:  # a label left by a scope whose release never came
            self.labels.pop(identity, None)
        return identity

    def release(self, identity: int, scope: FeatureScope) -> None:
        """Forget the API of ``scope``, once the scope is closed."""
        if self.live.get(identity) is scope:
            del self.live[identity]
            if self.labels:
                self.labels.pop(identity, None)


def _label(scope: FeatureScope) -> str:
    from ._scope import case_of  # which imports this module

    case_id = case_of(scope)
    return "an open_feature session" if case_id is None else f"case {case_id!r}"


def _is_live(scope: FeatureScope) -> bool:
    from ._scope import is_closed  # which imports this module

    return not is_closed(scope)


@functools.lru_cache(maxsize=128)
def session_check(feature: object) -> CreateCheck:
    """The check of ``open_feature``: the live sessions of a feature must not share an API."""
    return CreateCheck(declared_api(feature))
