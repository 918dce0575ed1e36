"""
The suite audit: a CI check that every feature a project defines has a suite,
and every plugin Protocol a feature.
"""

from __future__ import annotations

import importlib
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._exceptions import ContractDefinitionError, SuiteAuditFailure
from ._explain import error_line
from ._feature import Feature, declared_api, suggest
from ._importing import ImportByNameError, import_module_named
from ._suite import ContractSuite


def audit_suites(
    features: Iterable[Feature[Any, Any]] | types.ModuleType | str,
    suites: Iterable[ContractSuite[Any, Any]] | types.ModuleType | str | None = None,
    *,
    exempt: Mapping[str, str] | None = None,
    protocols: Iterable[type] | types.ModuleType | str | None = None,
    exempt_protocols: Mapping[str, str] | None = None,
) -> None:
    """
    Check that every feature has a suite, that every Protocol of ``protocols``
    has a feature, and that every exemption is still needed.

    Meant for a project's own CI: one test that calls
    ``audit_suites("myproject")`` fails when someone adds a feature and forgets
    its suite. A feature *has a suite* when some :class:`ContractSuite`'s
    ``feature`` is that very :class:`Feature` object. The exemption list can
    only shrink: an exemption whose feature now has a suite, or that names no
    feature, fails the audit too, so it is removed rather than left to rot.

    ``features`` and ``suites`` are each either the objects themselves, or a
    module or package (the module object or its dotted name) to scan. A scan
    imports the module and, for a package, every submodule and subpackage
    (except ``__main__``), and collects the module-level instances; an object
    reachable under several names counts once. Suites for features that are not
    audited (a library's ready-made profiles, say) are ignored.

    :param features: the features to audit, or the package that defines them.
    :param suites: the suites, or the package that holds them; by default the
        package given as ``features`` is scanned for them too.
    ``protocols`` is the package (or module, or its dotted name) that defines
    the project's plugin Protocols, or the Protocol classes themselves. Every
    ``typing.Protocol`` class defined in it (its ``__module__`` is the package or
    one of its modules), except those whose name starts with an underscore, must
    be the API type of an audited feature: a feature declared as
    ``Feature[P](...)``, or as ``Feature[P[T]](...)`` for a generic ``P``. The
    match is by identity: a Protocol that merely looks the same, a subclass and
    a feature declared without an API type match nothing.

    :param exempt: feature IDs allowed to have no suite, each mapped to the
        reason why; a reason is mandatory, as for :class:`Unsupported`.
    :param protocols: the Protocols to audit, or the package that defines them;
        by default no Protocol is audited.
    :param exempt_protocols: Protocols allowed to have no feature, each named
        ``module.QualName`` as it is defined and mapped to the reason why. Like
        ``exempt``, it can only shrink.
    :raises SuiteAuditFailure: listing every feature without a suite, every
        Protocol without a feature, every stale or unknown exemption, and every
        feature ID that two different :class:`Feature` objects share.
    :raises ContractDefinitionError: for a module name that cannot be imported,
        a module that fails to import during the scan (chained to its error), a
        scan or iterable that yields no feature (or, given ``protocols``, no
        Protocol), or an exemption without a reason.
    :raises TypeError: for an argument of the wrong kind, ``suites`` left out
        when ``features`` are given as objects, or ``exempt_protocols`` given
        without ``protocols``.
    """
    exemptions = _check_exemptions(exempt, "exempt", "feature IDs")
    protocol_exemptions = _check_exemptions(
        exempt_protocols, "exempt_protocols", "Protocol names (module.QualName)"
    )
    if protocols is None and exempt_protocols is not None:
        raise TypeError(
            "audit_suites() exempt_protocols= needs protocols=: the Protocols to audit, "
            "or the package that defines them"
        )
    if suites is None:
        if not isinstance(features, types.ModuleType | str):
            raise TypeError(
                "audit_suites() needs suites= when features are given as objects; "
                "pass the suites, or the package to scan for them"
            )
        suites = features
    scans: dict[str, list[tuple[object, str]]] = {}
    found_features = _collect(features, Feature, "features", scans)
    if not found_features:
        raise ContractDefinitionError(
            f"audit_suites() found no Feature in {_name(features)}; "
            "give it the package that defines the project's features"
        )
    found_suites = _collect(suites, ContractSuite, "suites", scans)

    audited = [feature for feature, _ in found_features]
    covered = {id(suite.feature) for suite, _ in found_suites}
    by_id: dict[str, list[Feature[Any, Any]]] = {}
    for feature in audited:
        by_id.setdefault(feature.id, []).append(feature)

    found_protocols: list[tuple[type, str]] = []
    if protocols is not None:
        found_protocols = _collect_protocols(protocols, scans)
        if not found_protocols:
            raise ContractDefinitionError(
                f"audit_suites() found no Protocol in {_name(protocols, 'the Protocols given')}; "
                "give it the package that defines the project's plugin Protocols"
            )

    problems: list[tuple[str, int, str]] = []
    duplicates = _duplicates(found_features, found_suites)
    for feature_id, places in duplicates.items():
        problems.append(
            (
                feature_id,
                0,
                f"is the ID of {len(places)} different Feature objects ({', '.join(places)}); "
                "feature IDs must be unique",
            )
        )
    missing = {
        feature.id
        for feature in audited
        if id(feature) not in covered and feature.id not in exemptions
    }
    problems.extend(
        (
            feature_id,
            1,
            "has no suite; write a ContractSuite for it, or exempt it with a reason",
        )
        for feature_id in missing
    )
    stale = {
        feature_id
        for feature_id in exemptions
        if feature_id in by_id and all(id(feature) in covered for feature in by_id[feature_id])
    }
    problems.extend(
        (feature_id, 2, "is exempt but now has a suite; remove it from the exemption list")
        for feature_id in stale
    )
    unknown = {feature_id for feature_id in exemptions if feature_id not in by_id}
    problems.extend(
        (
            feature_id,
            3,
            "is exempt but no longer exists (no audited feature has this ID); "
            f"remove it from the exemption list{suggest(feature_id, by_id)}",
        )
        for feature_id in unknown
    )
    lines = [f"  {feature_id!r}: {text}" for feature_id, _, text in sorted(problems)]
    protocol_problems = _protocol_problems(audited, found_protocols, protocol_exemptions)
    lines += protocol_problems.lines
    if lines:
        count = len(lines)
        lines += protocol_problems.notes
        raise SuiteAuditFailure(
            "\n".join([f"suite audit failed ({count} problem{'s' if count > 1 else ''}):", *lines]),
            missing=missing,
            stale_exemptions=stale,
            unknown_exemptions=unknown,
            duplicate_ids=duplicates,
            missing_protocols=protocol_problems.missing,
            stale_protocol_exemptions=protocol_problems.stale,
            unknown_protocol_exemptions=protocol_problems.unknown,
        )


@dataclass(frozen=True, slots=True)
class _ProtocolProblems:
    lines: list[str]
    notes: list[str]
    missing: set[str]
    stale: set[str]
    unknown: set[str]


def _protocol_problems(
    features: list[Feature[Any, Any]],
    protocols: list[tuple[type, str]],
    exemptions: dict[str, str],
) -> _ProtocolProblems:
    """Each audited Protocol that no feature has as its API type, and each needless exemption."""
    covering: dict[int, str] = {}  # id of a Protocol: the ID of a feature declared with it
    untyped: list[str] = []
    for feature in features:
        api = declared_api(feature)
        if api is None or api is Any or api is object:
            untyped.append(feature.id)
            continue
        origin = typing.get_origin(api)
        covering.setdefault(id(api if origin is None else origin), feature.id)
    names = {name: protocol for protocol, name in protocols}
    missing = {
        name
        for name, protocol in names.items()
        if id(protocol) not in covering and name not in exemptions
    }
    stale = {name for name in exemptions if name in names and id(names[name]) in covering}
    unknown = {name for name in exemptions if name not in names}
    problems = [
        (
            name,
            f"is the API type of no feature; declare a Feature[{names[name].__qualname__}] "
            "with a suite, or exempt it with a reason",
        )
        for name in missing
    ]
    problems += [
        (
            name,
            f"is exempt but now is the API type of feature {covering[id(names[name])]!r}; "
            "remove it from the Protocol exemption list",
        )
        for name in stale
    ]
    problems += [
        (
            name,
            "is exempt but no longer exists (no audited Protocol has this name); remove it "
            f"from the Protocol exemption list{suggest(name, names)}",
        )
        for name in unknown
    ]
    notes = []
    if missing and untyped:
        shown = ", ".join(map(repr, sorted(untyped)[:5])) + (", ..." if len(untyped) > 5 else "")
        one = len(untyped) == 1
        notes.append(
            f"  note: {len(untyped)} feature{'' if one else 's'} declared without an API type "
            f"(Feature(...) or Feature[Any], not Feature[API](...)) "
            f"match{'es' if one else ''} no Protocol: {shown}"
        )
    return _ProtocolProblems(
        [f"  Protocol {name!r}: {text}" for name, text in sorted(problems)],
        notes,
        missing,
        stale,
        unknown,
    )


def _check_exemptions(exempt: object, argument: str, keys: str) -> dict[str, str]:
    if exempt is None:
        return {}
    if not isinstance(exempt, Mapping):
        what = "feature ID to the reason it has no suite"
        if argument != "exempt":
            what = "Protocol (module.QualName) to the reason it has no feature"
        raise TypeError(f"audit_suites() {argument}= must map each {what}, got {exempt!r}")
    for key, reason in exempt.items():
        if not isinstance(key, str):
            raise TypeError(f"audit_suites() {argument}= keys must be {keys}, got {key!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise ContractDefinitionError(
                f"audit_suites() {argument}[{key!r}] needs a non-empty reason, got {reason!r}"
            )
    return dict(exempt)


def _collect_protocols(
    source: object, scans: dict[str, list[tuple[object, str]]]
) -> list[tuple[type, str]]:
    """
    Each distinct public Protocol class of ``source``, with its qualified name.

    A scan keeps the Protocols defined in the package (or module) scanned, not
    those it merely imports; Protocols given as objects are all kept.
    """
    from typing_extensions import is_protocol

    def name(protocol: type) -> str:
        return f"{protocol.__module__}.{protocol.__qualname__}"

    found: dict[int, tuple[type, str]] = {}
    if isinstance(source, types.ModuleType | str):
        module = _import_root(source)
        root = module.__name__
        if root not in scans:
            scans[root] = list(_module_objects(module))
        for value, _ in scans[root]:
            if (
                isinstance(value, type)
                and is_protocol(value)
                and (value.__module__ == root or value.__module__.startswith(f"{root}."))
                and not value.__name__.startswith("_")
            ):
                found.setdefault(id(value), (value, name(value)))
    elif isinstance(source, Iterable):
        for index, item in enumerate(source):
            if not (isinstance(item, type) and is_protocol(item)):
                raise TypeError(
                    f"audit_suites() protocols must all be Protocol classes, got {item!r} "
                    f"at protocols[{index}]"
                )
            found.setdefault(id(item), (item, name(item)))
    else:
        raise TypeError(
            "audit_suites() protocols must be Protocol classes, a module, or a dotted module "
            f"name, got {source!r}"
        )
    return list(found.values())


_Found = TypeVar("_Found")


def _collect(
    source: Iterable[_Found] | types.ModuleType | str,
    kind: type[_Found],
    argument: str,
    scans: dict[str, list[tuple[object, str]]],
) -> list[tuple[_Found, str]]:
    """
    Each distinct ``kind`` instance of ``source``, with where it was found.

    :param scans: scans already made in this audit, by module name, so that a
        package given twice is walked once.
    """
    if isinstance(source, types.ModuleType | str):
        module = _import_root(source)
        if module.__name__ not in scans:
            scans[module.__name__] = list(_module_objects(module))
        candidates = scans[module.__name__]
    elif isinstance(source, Iterable):
        candidates = [(item, f"{argument}[{index}]") for index, item in enumerate(source)]
        for item, place in candidates:
            if not isinstance(item, kind):
                raise TypeError(
                    f"audit_suites() {argument} must all be {kind.__name__} objects, "
                    f"got {item!r} at {place}"
                )
    else:
        raise TypeError(
            f"audit_suites() {argument} must be {kind.__name__} objects, a module, or a "
            f"dotted module name, got {source!r}"
        )
    found: dict[int, tuple[_Found, str]] = {}
    for item, place in candidates:
        if isinstance(item, kind):
            found.setdefault(id(item), (item, place))
    return list(found.values())


def _import_root(source: types.ModuleType | str) -> types.ModuleType:
    if isinstance(source, types.ModuleType):
        return source
    if not source or source.startswith(".") or any(ch.isspace() for ch in source):
        raise ContractDefinitionError(
            f"audit_suites() needs an absolute dotted module name, got {source!r}"
        )
    try:
        return import_module_named(source)
    except ImportByNameError as error:
        cause = error.__cause__
        if error.missing:  # the name is wrong
            raise ContractDefinitionError(
                f"audit_suites() cannot import {source!r}: {error}"
            ) from cause
        assert isinstance(cause, Exception)
        raise _import_failure(source, source, cause) from cause


def _module_objects(root: types.ModuleType) -> Iterator[tuple[object, str]]:
    """The module-level values of ``root`` and, for a package, of every submodule."""
    for module in _walk(root, root.__name__):
        for name, value in vars(module).items():
            yield value, f"{module.__name__}.{name}"


def _walk(module: types.ModuleType, root: str) -> Iterator[types.ModuleType]:
    yield module
    path = getattr(module, "__path__", None)
    if path is None:
        return
    # Imported here: only a scan of a package needs it, so importing conformkit does not.
    import pkgutil

    # walk_packages would swallow a subpackage's ImportError; this walk raises every one.
    for info in pkgutil.iter_modules(path, f"{module.__name__}."):
        if info.name.rpartition(".")[2] == "__main__":
            continue  # importing it would run the program
        try:
            submodule = importlib.import_module(info.name)
        except Exception as error:
            raise _import_failure(info.name, root, error) from error
        yield from _walk(submodule, root)


def _import_failure(module: str, root: str, error: Exception) -> ContractDefinitionError:
    scanning = "" if module == root else f" while scanning {root!r}"
    return ContractDefinitionError(
        f"audit_suites() could not import {module!r}{scanning}: {error_line(error)}"
    )


def _duplicates(
    features: list[tuple[Feature[Any, Any], str]],
    suites: list[tuple[ContractSuite[Any, Any], str]],
) -> dict[str, list[str]]:
    """IDs that different Feature objects share, each with where those objects were found."""
    places = {id(feature): (feature, place) for feature, place in features}
    for suite, place in suites:
        places.setdefault(id(suite.feature), (suite.feature, f"the feature of {place}"))
    by_id: dict[str, list[str]] = {}
    for feature, place in places.values():
        by_id.setdefault(feature.id, []).append(place)
    return {feature_id: found for feature_id, found in by_id.items() if len(found) > 1}


def _name(source: object, objects: str = "the features given") -> str:
    if isinstance(source, types.ModuleType):
        return repr(source.__name__)
    if isinstance(source, str):
        return repr(source)
    return objects


# Shown as conformkit.Name, like every export, whichever way it was first imported.
audit_suites.__module__ = "conformkit"
