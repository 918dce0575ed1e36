"""The base class that implementations of a feature subclass."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, final

from ._exceptions import ContractDefinitionError
from ._feature import API, CaseName, Coverage, Feature, expand_cases, resolve_coverage
from ._util import callable_name, check_timeout

if TYPE_CHECKING:
    from ._scope import FeatureScope


@final
class _DefaultTimeout(float):
    """
    The type of :data:`DEFAULT_TIMEOUT`: a float like any other, recognised by
    identity as the default of a ``timeout=`` parameter.
    """

    __slots__ = ()
    __module__ = "conformkit"  # where the one instance is found

    def __repr__(self) -> str:
        return "DEFAULT_TIMEOUT"


DEFAULT_TIMEOUT: Final[float] = _DefaultTimeout(5.0)
"""
Seconds each stage (create, case, each cleanup) may take unless told otherwise.

As the default of a ``timeout=`` parameter it stands for "the implementation's
own deadline": its ``timeout`` class attribute, which is this value unless the
implementation declares another. Any other value, ``5.0`` included, overrides it.
"""


GUARD_TIMEOUTS: tuple[float, float] = (float(DEFAULT_TIMEOUT), 30.0)
"""
The default deadline, a guard against hangs rather than a judge of speed: a
stage's first deadline, and the longer one that a case whose stage overran the
first is run again under, in a fresh scope, before it is judged.
"""

DeadlineSource = Literal["guard", "implementation", "run"]
"""Who set a run's deadline: nobody (the default guard), the implementation, or the run."""


def run_deadline(
    timeout: float | None, implementation: object
) -> tuple[float | None, DeadlineSource]:
    """
    The deadline of each stage of a run, and who set it: ``timeout`` when it was
    given (``"run"``), else the implementation's ``timeout`` when its class
    declares one (``"implementation"``), else the default guard (``"guard"``),
    whose first deadline is ``GUARD_TIMEOUTS[0]``.

    :param timeout: the run's, checked (:class:`~conformkit._options.RunOptions`).
    :raises ContractDefinitionError: if the implementation's ``timeout`` is malformed.
    """
    if timeout is not DEFAULT_TIMEOUT:
        return timeout, "run"
    declared = getattr(type(implementation), "timeout", DEFAULT_TIMEOUT)
    if declared is not DEFAULT_TIMEOUT:
        return check_timeout(declared), "implementation"
    return GUARD_TIMEOUTS[0], "guard"


def stage_timeout(timeout: object, implementation: object) -> float | None:
    """
    The deadline of each stage of a run: ``timeout`` when it was given, else the
    deadline the implementation's class declares.

    :raises ContractDefinitionError: if ``timeout`` is malformed.
    """
    if timeout is DEFAULT_TIMEOUT:
        timeout = getattr(type(implementation), "timeout", DEFAULT_TIMEOUT)
    return check_timeout(timeout)


# Names a subclass may not define: the lifecycle they suggest belongs to the host
# (open_feature and the runners), which would never call them.
_HOST_OWNED = frozenset(
    {"open", "close", "aclose", "dispose", "__aenter__", "__aexit__", "__enter__", "__exit__"}
)


class FeatureImplementation(ABC, Generic[API, CaseName]):
    """
    One implementation of a feature: it names the feature, declares its coverage
    and creates freshly prepared API objects.

    Subclasses set two class attributes and implement :meth:`create`::

        class MemoryText(FeatureImplementation[TextAPI]):
            feature = text
            coverage = text.coverage(unsupported={"ttl": "no clock"})

            def create(self, scope: FeatureScope) -> TextAPI: ...

    An implementation whose backend is remote or slow declares the deadline of
    each stage as a class attribute, ``timeout = 30.0`` (``None`` for none); a
    run's own ``timeout=`` overrides it. A declared deadline is kept to: a stage
    that overruns it fails. Without one, the default deadline only guards against
    hangs: a case that overran it is run again under a longer one before it is
    judged (see docs/running.md).

    The declarations are checked when the class is created. The lifecycle is the
    host's: a subclass that defines ``dispose``, ``close``, ``aclose``, ``open`` or
    a context-manager method is rejected, because nothing would ever call it;
    register cleanups with :meth:`FeatureScope.defer` inside :meth:`create`.

    A subclass that sets neither attribute is an abstract intermediate base and is
    not checked until a subclass of it sets them.
    """

    feature: Feature[API, CaseName]
    coverage: Mapping[CaseName, Coverage]
    claims: Mapping[str, Collection[str]] | None = None
    """
    The parameters claimed of each case family: ``{"fidelity": ("status",)}``.

    A case is generated for each claimed parameter, so a family whose claim is
    empty has no cases for this implementation (which is not a gap). A family
    left out claims every parameter; ``None``, the default, claims everything.
    """
    timeout: ClassVar[float | None] = DEFAULT_TIMEOUT
    """
    Seconds each stage of a case (create, the case, each cleanup) may take,
    unless the run says otherwise with ``timeout=``; ``None`` for no deadline.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        owner = cls.__qualname__
        overridden = sorted(_HOST_OWNED.intersection(vars(cls)))
        if overridden:
            raise ContractDefinitionError(
                f"{owner} defines {', '.join(map(repr, overridden))}, but the lifecycle belongs "
                f"to the host and would never call it; register cleanups with scope.defer() "
                f"inside create()"
            )
        if "timeout" in vars(cls):
            check_timeout(vars(cls)["timeout"], what=f"{owner}.timeout")
        create = vars(cls).get("create")
        if create is not None and (
            inspect.isgeneratorfunction(create) or inspect.isasyncgenfunction(create)
        ):
            raise ContractDefinitionError(
                f"{owner}.create() must return the API, not yield it; "
                f"register cleanups with scope.defer()"
            )
        feature = getattr(cls, "feature", None)
        coverage = getattr(cls, "coverage", None)
        if feature is None and coverage is None:
            return  # an abstract intermediate base, until an instance is used
        if not isinstance(feature, Feature):
            raise ContractDefinitionError(_undeclared(cls, "feature", feature))
        resolve_coverage(
            feature, coverage, expand_cases(feature, getattr(cls, "claims", None), owner), owner
        )

    @abstractmethod
    def create(self, scope: FeatureScope) -> API | Awaitable[API]:
        """
        Return a freshly prepared API object; ``async def create`` works too.

        Every call must return an independently prepared API. Register each owned
        resource with ``scope.defer(cleanup)`` as soon as it exists, before awaiting
        setup that can fail: if ``create`` raises, the host runs what was
        registered so far, in reverse order, and re-raises.

        :raises FeatureUnavailable: when a facility the implementation requires is
            absent; the case is then reported ``unavailable``.
        """

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} implementing {self.feature.id!r}>"


def declared_feature(implementation: FeatureImplementation[API, Any]) -> Feature[API, Any]:
    """
    The feature an implementation instance declares, checked before anything runs.

    :raises ContractDefinitionError: when its class (an intermediate base, or one
        whose attributes are misspelt) declares no ``feature`` or ``coverage``.
    """
    cls = type(implementation)
    feature = getattr(cls, "feature", None)
    if not isinstance(feature, Feature):
        raise ContractDefinitionError(_undeclared(cls, "feature", feature))
    if getattr(cls, "coverage", None) is None:
        raise ContractDefinitionError(_undeclared(cls, "coverage", None))
    return feature


def _undeclared(cls: type, name: str, value: object) -> str:
    """Say that ``cls`` lacks the class attribute ``name``, naming a near miss it sets."""
    if value is not None:
        return f"{cls.__qualname__}.{name} must be a Feature, got {value!r}"
    known = {"feature", "coverage", "claims", "create", "timeout"}
    own = [
        attribute
        for klass in cls.__mro__[: cls.__mro__.index(FeatureImplementation)]
        for attribute in vars(klass)
        if not attribute.startswith("__") and attribute not in known
    ]
    import difflib  # only a mistake pays for it

    near = difflib.get_close_matches(name, own, n=1, cutoff=0.75)
    hint = f"; it sets {near[0]!r}: a misspelling?" if near else ""
    what = (
        "the Feature it implements"
        if name == "feature"
        else "each case Supported() or Unsupported(reason)"
    )
    return f"{cls.__qualname__} does not set the class attribute {name!r} ({what}){hint}"


def implementation_from_factory(
    feature: Feature[API, CaseName],
    create: Callable[..., API | Awaitable[API]],
    *,
    name: str,
    coverage: Mapping[CaseName, Coverage],
    claims: Mapping[str, Collection[str]] | None,
    module: str,
) -> FeatureImplementation[API, CaseName]:
    """
    What :meth:`Feature.implementation` builds: an instance of a subclass named
    ``name``, defined in ``module``, whose ``create`` calls the factory.
    """
    if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
        raise ContractDefinitionError(
            f"implementation() needs a name=, as a class would have: an identifier "
            f"like 'MemoryText', got {name!r}"
        )
    if not callable(create):
        raise ContractDefinitionError(
            f"{name}: implementation() takes a factory that returns the API, got {create!r}"
        )
    factory = callable_name(create)
    if inspect.isgeneratorfunction(create) or inspect.isasyncgenfunction(create):
        raise ContractDefinitionError(
            f"{name}: the factory {factory}() must return the API, not yield it; "
            f"take the scope and register cleanups with scope.defer()"
        )
    takes_scope = _takes_scope(create, f"{name}: the factory {factory}")
    namespace: dict[str, Any] = {
        "__module__": module,
        "__qualname__": name,
        "__doc__": f"An implementation of {feature.id!r} that {factory}() creates.",
        "feature": feature,
        "coverage": coverage,
        "claims": claims,
    }

    # Sync for a sync factory, as a class's create would be; an awaitable the
    # factory returns is awaited here, so that what it made is closed too.
    def create_from_factory(self: Any, scope: FeatureScope) -> Any:
        made = create(scope) if takes_scope else create()
        if inspect.isawaitable(made):
            return _closed_with(scope, made)
        return _close_with(scope, made)

    namespace["create"] = create_from_factory
    cls = type(name.rpartition(".")[2], (FeatureImplementation,), namespace)
    instance: FeatureImplementation[API, CaseName] = cls()
    return instance


def _close_with(scope: FeatureScope, api: API) -> API:
    """
    Register the disposal of what a factory made: its ``aclose()``, awaited, or
    else its ``close()``; nothing for an object with neither.
    """
    for name in ("aclose", "close"):
        # Looked up without running the object's own __getattr__, which may raise
        # for a name it does not know.
        if inspect.getattr_static(api, name, None) is not None:
            method = getattr(api, name)
            if callable(method):
                scope.defer(method)
                break
    return api


async def _closed_with(scope: FeatureScope, made: Awaitable[API]) -> API:
    return _close_with(scope, await made)


def _takes_scope(create: Callable[..., object], what: str) -> bool:
    """
    Whether a factory is called with the scope: not when it can be called without
    arguments, nor when it has no signature to inspect (a builtin type).

    :raises ContractDefinitionError: for a factory that needs more than one argument.
    """
    try:
        signature = inspect.signature(create)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind()
    except TypeError:
        pass
    else:
        return False
    try:
        signature.bind(None)
    except TypeError:
        raise ContractDefinitionError(
            f"{what} must take the scope or nothing, but its signature is {signature}"
        ) from None
    return True


# Shown as conformkit.Name, like every export, whichever way it was first imported.
FeatureImplementation.__module__ = "conformkit"
