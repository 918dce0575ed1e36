"""
The adapters' scaffolding that the tests of real third-party stores share: a mapping or a
durable store built in a temporary directory of the scope's own, and the failed set of a report.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, MutableMapping
from typing import Any

import conformkit as ck
from conformkit.profiles import durable_mapping, mapping


def failed(report: ck.ContractReport) -> set[str]:
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.FAILED}


def passed(report: ck.ContractReport) -> set[str]:
    return {result.case_id for result in report.results if result.status is ck.CaseStatus.PASSED}


Make = Callable[[ck.FeatureScope, str], Any]


class ThirdPartyMapping(ck.FeatureImplementation[mapping.MappingAPI, mapping.MappingCase]):
    """A mapping that ``make`` builds in a temporary directory of the scope's own."""

    feature = mapping.feature
    coverage = mapping.feature.coverage()

    def __init__(self, make: Make) -> None:
        self.make = make

    def create(self, scope: ck.FeatureScope) -> mapping.MappingAPI:
        directory = tempfile.TemporaryDirectory()
        scope.defer(directory.cleanup)
        return self.make(scope, directory.name)  # type: ignore[no-any-return]


class WithoutThreads(ThirdPartyMapping):
    """The same, for a store that takes no lock: sharing one handle is declared unsupported."""

    coverage = mapping.feature.coverage(
        unsupported={"shared_handle_is_thread_safe": "the library takes no lock"}
    )


class ReopenedStore:
    """A MappingStore: ``open`` makes a new mapping over the store, ``close`` closes it."""

    def __init__(
        self,
        opener: Callable[[], Any],
        closer: Callable[[Any], object],
        samples: mapping.MappingSamples,
    ) -> None:
        self.opener = opener
        self.closer = closer
        self.conformkit_samples = samples

    def open(self) -> MutableMapping[Any, Any]:
        return self.opener()  # type: ignore[no-any-return]

    def close(self, mapping: MutableMapping[Any, Any]) -> None:
        self.closer(mapping)


def close_it(store: Any) -> None:
    store.close()


class ThirdPartyDurable(
    ck.FeatureImplementation[durable_mapping.MappingStore, durable_mapping.DurableMappingCase]
):
    """A durable store over a temporary directory of the scope's own."""

    feature = durable_mapping.feature
    coverage = durable_mapping.feature.coverage()

    def __init__(self, make: Callable[[str], ReopenedStore]) -> None:
        self.make = make

    def create(self, scope: ck.FeatureScope) -> durable_mapping.MappingStore:
        directory = tempfile.TemporaryDirectory()
        scope.defer(directory.cleanup)
        return self.make(directory.name)
