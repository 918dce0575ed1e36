"""The suite audit: a CI check that every feature a project defines has a suite."""

from __future__ import annotations

import importlib
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

from ._exceptions import ContractDefinitionError, SuiteAuditFailure
from ._feature import Feature, suggest
from ._suite import ContractSuite
from ._util import ImportByNameError, import_module_named


def audit_suites(
    features: Iterable[Feature[Any, Any]] | types.ModuleType | str,
    suites: Iterable[ContractSuite[Any, Any]] | types.ModuleType | str | None = None,
    *,
    exempt: Mapping[str, str] | None = None,
) -> None:
    """
    Check that every feature has a suite, and that every exemption is still needed.

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
    :param exempt: feature IDs allowed to have no suite, each mapped to the
        reason why; a reason is mandatory, as for :class:`Unsupported`.
    :raises SuiteAuditFailure: listing every feature without a suite, every
        stale or unknown exemption, and every feature ID that two different
        :class:`Feature` objects share.
    :raises ContractDefinitionError: for a module name that cannot be imported,
        a module that fails to import during the scan (chained to its error), a
        scan or iterable that yields no feature, or an exemption without a reason.
    :raises TypeError: for an argument of the wrong kind, or ``suites`` left out
        when ``features`` are given as objects.
    """
    exemptions = _check_exemptions(exempt)
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
    if problems:
        lines = [f"  {feature_id!r}: {text}" for feature_id, _, text in sorted(problems)]
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise SuiteAuditFailure(
            "\n".join([f"suite audit failed ({count}):", *lines]),
            missing=missing,
            stale_exemptions=stale,
            unknown_exemptions=unknown,
            duplicate_ids=duplicates,
        )


def _check_exemptions(exempt: object) -> dict[str, str]:
    if exempt is None:
        return {}
    if not isinstance(exempt, Mapping):
        raise TypeError(
            "audit_suites() exempt= must map each feature ID to the reason it has no suite, "
            f"got {exempt!r}"
        )
    for feature_id, reason in exempt.items():
        if not isinstance(feature_id, str):
            raise TypeError(f"audit_suites() exempt= keys must be feature IDs, got {feature_id!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise ContractDefinitionError(
                f"audit_suites() exempt[{feature_id!r}] needs a non-empty reason, got {reason!r}"
            )
    return dict(exempt)


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
        f"audit_suites() could not import {module!r}{scanning}: {type(error).__name__}: {error}"
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


def _name(source: object) -> str:
    if isinstance(source, types.ModuleType):
        return repr(source.__name__)
    if isinstance(source, str):
        return repr(source)
    return "the features given"


# Shown as conformkit.Name, like every export, whichever way it was first imported.
audit_suites.__module__ = "conformkit"
