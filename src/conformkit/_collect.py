"""
Collecting what a run runs, for the command line and the pytest plugin alike: targets,
installed entry points, the pairs of implementation and suite, and the selection and
shard of their cases.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
import re
import reprlib
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict, final

from typing_extensions import Unpack

from ._exceptions import UsageError
from ._explain import error_line
from ._feature import Coverage, Feature, suggest
from ._implementation import FeatureImplementation
from ._importing import ImportByNameError, import_module_named
from ._runner import RunPlan
from ._scope import DEFAULT_TIMEOUT
from ._suite import ContractSuite

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "ENTRY_POINT_GROUP",
    "Distribution",
    "Pair",
    "PlanOptions",
    "Shard",
    "collect",
    "collect_modules",
    "installed_entry_points",
    "load_target",
    "matches",
    "select",
    "target_file",
    "target_module",
]

ENTRY_POINT_GROUP: Final = "conformkit.contracts"
"""The entry-point group in which installed distributions publish their contracts."""


@final
@dataclass(frozen=True, slots=True)
class Distribution:
    """The installed distribution that published an implementation through an entry point."""

    name: str
    version: str


@final
@dataclass(frozen=True, slots=True)
class Pair:
    """An implementation and the suite of its feature, checked and ready to run."""

    implementation: FeatureImplementation[Any, Any]
    suite: ContractSuite[Any, Any]
    plan: RunPlan[Any]
    distribution: Distribution | None

    @property
    def name(self) -> str:
        """The implementation's readable name, as reports show it."""
        return self.plan.name

    @property
    def feature(self) -> Feature[Any, Any]:
        return self.implementation.feature

    @property
    def feature_id(self) -> str:
        return self.plan.feature_id

    @property
    def module(self) -> str:
        """The module that defines the implementation's class."""
        return type(self.implementation).__module__

    @property
    def case_ids(self) -> tuple[str, ...]:
        """Every case the implementation is checked on, in report order."""
        return self.plan.case_ids

    @property
    def coverage(self) -> dict[str, Coverage]:
        return self.plan.coverage


class PlanOptions(TypedDict, total=False):
    """The options of ``run_contract`` that the command line sets for every pair it runs."""

    timeout: float | None
    reject_vacuous: bool
    probe_unsupported: bool
    check_isolation: bool


def collect(
    targets: Sequence[str],
    *,
    installed: bool = False,
    **options: Unpack[PlanOptions],
) -> list[Pair]:
    """
    Collect the suites and implementations that targets and entry points hold, and pair them.

    ``options`` are those of ``run_contract``, for every pair.

    :param targets: ``pkg.contracts``, ``pkg.contracts:name``, ``path/to/file.py`` or
        ``path/to/file.py:name``.
    :param installed: also collect what installed distributions publish in the
        entry-point group ``conformkit.contracts``.
    :raises UsageError: for a target that cannot be loaded or holds nothing, and for
        suites and implementations that do not pair up.
    :raises ContractDefinitionError: for a pair whose definitions do not fit together.
    """
    # As with ``python -m``, modules in the current directory are importable.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    collector = _Collector()
    for target in targets:
        value, where, module = load_target(target)
        collector.contexts.append((module, None))
        if not collector.gather(value, where, None, explicit=True):
            raise UsageError(f"target {target!r} holds no contract suite or feature implementation")
    if installed:
        for entry in installed_entry_points("--installed"):
            distribution = (
                Distribution(entry.dist.name, entry.dist.version)
                if entry.dist is not None
                else None
            )
            where = f"entry point {entry.name!r} ({entry.value})"
            if distribution is not None:
                where += f" of {distribution.name} {distribution.version}"
            try:
                with _importing(entry.value, f"{where} cannot be loaded"):
                    value = entry.load()
            except Exception as error:
                raise UsageError(f"{where} cannot be loaded: {error_line(error)}") from error
            context = sys.modules.get(entry.module)
            if context is not None:
                collector.contexts.append((context, distribution))
            if not collector.gather(value, where, distribution, explicit=True):
                raise UsageError(f"{where} holds no contract suite or feature implementation")
    return collector.pairs(**options)


def installed_entry_points(option: str) -> list[EntryPoint]:
    """
    The entry points installed distributions publish in ``conformkit.contracts``, by
    distribution, name and value.

    :param option: the option that asked for them, which the error names.
    :raises UsageError: when no installed distribution publishes any.
    """
    import importlib.metadata

    entry_points = sorted(
        importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
        key=lambda entry: (entry.dist.name if entry.dist else "", entry.name, entry.value),
    )
    if not entry_points:
        raise UsageError(
            f"{option}: no installed distribution publishes entry points in the group "
            f"{ENTRY_POINT_GROUP!r}"
        )
    return entry_points


def collect_modules(
    modules: Iterable[types.ModuleType],
    **options: Unpack[PlanOptions],
) -> list[Pair]:
    """
    Pair the ``suite`` of each module with the module's ``implementations``.

    The bundled profiles and the built-in demo have this shape.
    """
    collector = _Collector()
    for module in modules:
        for attribute in ("suite", "implementations"):
            if not hasattr(module, attribute):
                raise UsageError(f"module {module.__name__!r} has no {attribute!r}")
        collector.gather(module.suite, f"{module.__name__}:suite", None, explicit=True)
        collector.gather(
            module.implementations, f"{module.__name__}:implementations", None, explicit=True
        )
    return collector.pairs(**options)


def load_target(target: str) -> tuple[object, str, types.ModuleType]:
    """
    Import what a target names: a module, or an object in one.

    Return the object, how to name it in messages, and the module it is in.

    :raises UsageError: naming the target and what is wrong with it.
    """
    spec, attribute = _split_target(target)
    if _is_file(spec):
        module = _import_file(spec)
    elif _is_dotted(spec):
        module = _import_module(spec, spec)
    else:
        raise UsageError(
            f"target {target!r} is neither a module (pkg.contracts), an object in one "
            f"(pkg.contracts:suite) nor a .py file"
        )
    if attribute is None:
        return module, spec, module
    value: object = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError as error:
            names = [name for name in dir(value) if not name.startswith("_")]
            raise UsageError(
                f"target {target!r}: {_name_of(value)} has no attribute {part!r}"
                f"{suggest(part, names)}"
            ) from error
    return value, target, module


def target_file(target: str) -> str | None:
    """The file a target names (``tests/contracts.py:Store``), or ``None`` for a module."""
    spec, _ = _split_target(target)
    return spec if _is_file(spec) else None


def target_module(target: str) -> str | None:
    """
    The name of the module a target imports, without importing it: ``pkg.contracts``
    for ``pkg.contracts:suite`` or for ``pkg/contracts.py`` in a package; ``None`` for
    a file whose name is not a module name, and for what is not a target at all.
    """
    spec, _ = _split_target(target)
    if _is_file(spec):
        path = Path(spec)
        return _file_module(path.resolve())[0] if path.suffix == ".py" else None
    return spec if _is_dotted(spec) else None


def _split_target(target: str) -> tuple[str, str | None]:
    """A target's module or file, and the attribute after its colon, if any."""
    head, colon, tail = target.rpartition(":")
    if colon and head and _is_dotted(tail):  # "C:\\x.py" keeps its drive
        return head, tail
    return target, None


def _is_file(spec: str) -> bool:
    separators = {"/", os.sep, os.altsep or "/"}
    return spec.endswith(".py") or any(separator in spec for separator in separators)


def _is_dotted(text: str) -> bool:
    """Whether ``text`` is a dotted name, ``pkg.contracts``, as imports and attributes take."""
    return all(part.isidentifier() for part in text.split("."))


def _name_of(value: object) -> str:
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__!r}"
    return repr(value)


@contextlib.contextmanager
def _importing(argv0: str, failed: str) -> Iterator[None]:
    """
    Import a target as a script would run alone: with ``sys.argv`` holding only
    ``argv0``, so that a module that parses its arguments on import does not see
    conformkit's; and with a ``sys.exit()`` (or any other ``BaseException`` but
    ``KeyboardInterrupt``) during the import reported as an error, status 2.

    :param failed: the start of the message, naming the target.
    """
    saved = sys.argv
    sys.argv = [argv0]
    try:
        yield
    except (Exception, KeyboardInterrupt):
        raise
    except SystemExit as error:
        raise UsageError(f"{failed}: it called sys.exit({error.code!r}) on import") from error
    except BaseException as error:
        raise UsageError(f"{failed}: {error_line(error)} on import") from error
    finally:
        sys.argv = saved


def _import_module(name: str, shown: str) -> types.ModuleType:
    try:
        with _importing(shown, f"cannot import {shown!r}"):
            return import_module_named(name)
    except ImportByNameError as error:
        raise UsageError(f"cannot import {shown!r}: {error}") from error


def _import_file(shown: str) -> types.ModuleType:
    """
    Import a file the way pytest's default import mode does: under the dotted name of
    its package (the folders above it that hold an ``__init__.py``), with the folder
    above the top package on ``sys.path``, so that it can import its siblings.
    """
    path = Path(shown)
    if not path.exists():
        raise UsageError(f"target {shown!r}: no such file")
    if path.is_dir():
        raise UsageError(
            f"target {shown!r} is a directory; name a .py file, or the package's module name"
        )
    if path.suffix != ".py":
        raise UsageError(f"target {shown!r} is not a Python file (.py)")
    path = path.resolve()
    name, root = _file_module(path)
    if name is None:
        return _import_loose_file(path, shown)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = _import_module(name, shown)
    file = getattr(module, "__file__", None)
    if file is None or not os.path.exists(file) or not os.path.samefile(file, path):
        raise UsageError(
            f"target {shown!r} imports as module {name!r}, but that name is already taken by "
            f"{file or module!r}; rename the file, or name the module instead of the file"
        )
    return module


def _file_module(path: Path) -> tuple[str | None, Path]:
    """
    The dotted name a resolved file imports as, and the folder above its top
    package; no name when a part of it is not an identifier.
    """
    parts = [] if path.stem == "__init__" else [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    if not parts or not all(part.isidentifier() for part in parts):
        return None, root
    return ".".join(parts), root


def _import_loose_file(path: Path, shown: str) -> types.ModuleType:
    """A file whose name is not a module name: import it under a name of its own."""
    name = "_conformkit_target_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {shown!r}: not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _importing(shown, f"cannot import {shown!r}"):
            spec.loader.exec_module(module)
    except BaseException as error:
        del sys.modules[name]
        if isinstance(error, Exception) and not isinstance(error, UsageError):
            raise UsageError(f"cannot import {shown!r}: {error_line(error)}") from error
        raise
    return module


@final
class _Collector:
    """The suites and implementations found so far, each once, in the order found."""

    def __init__(self) -> None:
        self.suites: dict[int, tuple[ContractSuite[Any, Any], str]] = {}
        # Implementation instances and classes, to construct at the end if no
        # instance of the class was found.
        self.items: dict[int, tuple[object, str]] = {}
        self.distributions: dict[int, Distribution] = {}
        # The modules that targets and entry points named objects in: an
        # implementation named alone runs against the suite beside it.
        self.contexts: list[tuple[types.ModuleType, Distribution | None]] = []

    def gather(
        self, value: object, where: str, distribution: Distribution | None, *, explicit: bool
    ) -> int:
        """
        Collect the suites and implementations ``value`` is or holds; return how many.

        :param explicit: ``value`` was named (a target, an entry point), so it must
            be something collectable; a value met while scanning a module may be
            anything.
        """
        if isinstance(value, ContractSuite):
            self.suites.setdefault(id(value), (value, where))
            return 1
        if isinstance(value, FeatureImplementation) or _is_implementation_class(value):
            self.items.setdefault(id(value), (value, where))
            if distribution is not None:
                self.distributions.setdefault(id(value), distribution)
            return 1
        if isinstance(value, type) and issubclass(value, FeatureImplementation):
            if explicit:
                raise UsageError(
                    f"{where}: {value.__qualname__} is an abstract implementation class "
                    f"(no feature, or no create()); name a concrete one"
                )
            return 0
        if isinstance(value, types.ModuleType):
            # Modules a scanned module imports are not scanned in turn.
            return self._scan(value, distribution) if explicit else 0
        if isinstance(value, tuple | list):
            found = 0
            for index, item in enumerate(value):
                count = self.gather(item, f"{where}[{index}]", distribution, explicit=False)
                if explicit and not count:
                    raise UsageError(
                        f"{where}[{index}] is {reprlib.repr(item)}, not a ContractSuite or a "
                        f"FeatureImplementation"
                    )
                found += count
            return found
        if explicit:
            raise UsageError(
                f"{where} is {type(value).__name__} {reprlib.repr(value)}, not a module, "
                f"a ContractSuite, a FeatureImplementation or a tuple of them"
            )
        return 0

    def _scan(self, module: types.ModuleType, distribution: Distribution | None) -> int:
        """
        The suites of a module, and its implementations: those in its ``implementations``
        if it declares them, else every implementation instance and concrete class.
        """
        found = 0
        declared = getattr(module, "implementations", None)
        if not isinstance(declared, tuple | list):
            declared = None
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue
            where = f"{module.__name__}.{name}"
            if declared is not None and value is not declared:
                if isinstance(value, ContractSuite):
                    found += self.gather(value, where, distribution, explicit=False)
                elif isinstance(value, tuple | list):
                    found += sum(
                        self.gather(item, f"{where}[{index}]", distribution, explicit=False)
                        for index, item in enumerate(value)
                        if isinstance(item, ContractSuite)
                    )
                continue
            explicit = declared is not None  # what a module declares must be collectable
            found += self.gather(value, where, distribution, explicit=explicit)
        return found

    def pairs(self, **options: Unpack[PlanOptions]) -> list[Pair]:
        """
        Each implementation with the suite of its feature, suites in the order found.

        An implementation without a suite among the targets gets the suite of its
        feature from the module its target named, or from the module of its class;
        a suite without implementations, the implementations in its target's module.
        """
        options.setdefault("timeout", DEFAULT_TIMEOUT)
        implementations = self._implementations()
        features: dict[str, tuple[Feature[Any, Any], str]] = {}

        def check_feature(feature: Feature[Any, Any], where: str) -> None:
            first, first_where = features.setdefault(feature.id, (feature, where))
            if first is not feature:
                raise UsageError(
                    f"two different Feature objects share the ID {feature.id!r} ({first_where} "
                    f"and {where}); feature IDs must be unique"
                )

        suites: dict[int, tuple[ContractSuite[Any, Any], str]] = {}
        for suite, where in self.suites.values():
            check_feature(suite.feature, where)
            other = suites.setdefault(id(suite.feature), (suite, where))
            if other[0] is not suite:
                raise UsageError(
                    f"two suites for feature {suite.feature.id!r}: {other[1]} and {where}; "
                    f"name the one to run as TARGET (module:suite)"
                )
        by_feature: dict[int, list[tuple[FeatureImplementation[Any, Any], str]]] = {}
        for implementation, where in implementations:
            feature = implementation.feature
            check_feature(feature, where)
            if id(feature) not in suites:
                found = self._suite_beside(implementation)
                if found is None:
                    raise UsageError(
                        f"{type(implementation).__qualname__} ({where}) implements feature "
                        f"{feature.id!r}, but no target holds a suite for it; add the module "
                        f"that defines the suite as a TARGET"
                    )
                suites[id(feature)] = found
            by_feature.setdefault(id(feature), []).append((implementation, where))
        pairs: list[Pair] = []
        for key, (suite, where) in suites.items():
            if key not in by_feature:
                found_implementations = self._implementations_beside(suite.feature)
                if not found_implementations:
                    raise UsageError(
                        f"the suite of feature {suite.feature.id!r} ({where}) has no "
                        f"implementation among the targets; add the module that defines one "
                        f"as a TARGET"
                    )
                by_feature[key] = found_implementations
            names: dict[str, str] = {}
            for implementation, place in by_feature[key]:
                plan = RunPlan(implementation, suite, **options)
                if plan.name in names:
                    raise UsageError(
                        f"two implementations of feature {suite.feature.id!r} are named "
                        f"{plan.name!r} ({names[plan.name]} and {place}); reports name "
                        f"implementations by class, so give each its own class"
                    )
                names[plan.name] = place
                pairs.append(
                    Pair(implementation, suite, plan, self.distributions.get(id(implementation)))
                )
        return pairs

    def _suite_beside(
        self, implementation: FeatureImplementation[Any, Any]
    ) -> tuple[ContractSuite[Any, Any], str] | None:
        """The suite of the implementation's feature in a target's module, or its class's."""
        own = sys.modules.get(type(implementation).__module__)
        modules = [module for module, _ in self.contexts]
        for module in [*modules, *([own] if own is not None else [])]:
            for name, value in vars(module).items():
                if isinstance(value, ContractSuite) and value.feature is implementation.feature:
                    return value, f"{module.__name__}.{name}"
        return None

    def _implementations_beside(
        self, feature: Feature[Any, Any]
    ) -> list[tuple[FeatureImplementation[Any, Any], str]]:
        """The implementations of ``feature`` in the modules the targets named objects in."""
        for module, distribution in self.contexts:
            beside = _Collector()
            beside._scan(module, None)
            found = beside._implementations(feature)
            if found:
                if distribution is not None:
                    for implementation, _ in found:
                        self.distributions[id(implementation)] = distribution
                return found
        return []

    def _implementations(
        self, feature: Feature[Any, Any] | None = None
    ) -> list[tuple[FeatureImplementation[Any, Any], str]]:
        """
        The instances found, and an instance of each class found without one.

        :param feature: only those of this feature.
        """
        items = [
            (item, where)
            for item, where in self.items.values()
            if feature is None or getattr(item, "feature", None) is feature
        ]
        instantiated = {type(item) for item, _ in items if not isinstance(item, type)}
        found: list[tuple[FeatureImplementation[Any, Any], str]] = []
        for item, where in items:
            if isinstance(item, FeatureImplementation):
                found.append((item, where))
            elif isinstance(item, type) and item not in instantiated:
                instance = _construct(item, where)
                instantiated.add(item)
                if id(item) in self.distributions:
                    self.distributions[id(instance)] = self.distributions[id(item)]
                found.append((instance, where))
        return found


def _is_implementation_class(value: object) -> bool:
    return (
        isinstance(value, type)
        and issubclass(value, FeatureImplementation)
        and not inspect.isabstract(value)
        and isinstance(getattr(value, "feature", None), Feature)
    )


def _construct(cls: type[Any], where: str) -> FeatureImplementation[Any, Any]:
    """An instance of an implementation class that constructs without arguments."""
    try:
        inspect.signature(cls).bind()
    except TypeError as error:
        raise UsageError(
            f"{where}: {cls.__qualname__} needs arguments to construct ({error}); "
            f"expose an instance of it instead"
        ) from error
    except ValueError:
        pass  # no signature to inspect: try it
    try:
        instance = cls()
    except (Exception, SystemExit) as error:
        raise UsageError(f"{where}: {cls.__qualname__}() raised {error_line(error)}") from error
    if not isinstance(instance, FeatureImplementation):
        raise UsageError(f"{where}: {cls.__qualname__}() did not return an instance of it")
    return instance


def matches(patterns: Sequence[str], case_id: str) -> bool:
    """Whether ``-k`` selects a case: no pattern, or one that the case ID contains."""
    return not patterns or any(pattern in case_id for pattern in patterns)


@final
@dataclass(frozen=True, slots=True)
class Shard:
    """Job ``index`` of ``count`` (``--shard index/count``), counting from 1."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def select(
    pairs: Sequence[Pair], patterns: Sequence[str], shard: Shard | None
) -> list[tuple[str, ...]]:
    """
    The cases of each pair that this run runs: those ``-k`` selects, then this shard's.

    The shards partition the selected (implementation, case) pairs: sorted by
    implementation, feature and case ID, they are dealt out to the jobs in turn, so
    every job of a CI matrix computes the same partition and together they run
    each pair exactly once.

    :raises UsageError: when patterns are given and select no case at all.
    """
    chosen = [tuple(case for case in pair.case_ids if matches(patterns, case)) for pair in pairs]
    if patterns and not any(chosen):
        shown = ", ".join(f"-k {pattern!r}" for pattern in patterns)
        total = sum(len(pair.case_ids) for pair in pairs)
        raise UsageError(f"{shown} selects none of the {total} case(s) collected")
    if shard is None:
        return chosen
    keys = sorted(
        (pair.name, pair.feature_id, case_id, index)
        for index, pair in enumerate(pairs)
        for case_id in chosen[index]
    )
    mine = {
        (index, case_id)
        for position, (_, _, case_id, index) in enumerate(keys)
        if position % shard.count == shard.index - 1
    }
    return [
        tuple(case for case in cases if (index, case) in mine) for index, cases in enumerate(chosen)
    ]
