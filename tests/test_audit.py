"""The suite audit: every feature has a suite, and the exemption list only shrinks."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

import conformkit as ck
from conformkit import SuiteAuditFailure, audit_suites

PACKAGE = "auditpkg"


async def _case(api: Any) -> None:
    """A case that does nothing: the audit never runs a suite."""


def suite_for(feature: ck.Feature[Any, Any]) -> ck.ContractSuite[Any, Any]:
    """A complete suite for ``feature``."""
    return ck.ContractSuite(feature, dict.fromkeys(feature.cases, _case))


text = ck.Feature[Any]("app.text", cases=("read",))
cache = ck.Feature[Any]("app.cache", cases=("get",))
blob = ck.Feature[Any]("app.blob", cases=("put",))
queue = ck.Feature[Any]("app.queue", cases=("push",))

# The throwaway project: features in several modules, one re-exported from the
# package and from the suites module, a subpackage, and a __main__ that must not
# be imported.
_HEADER = """\
from typing import Any, Protocol

import conformkit as ck


async def case(api: Any) -> None: ...
"""
BASE_FILES = {
    "__init__.py": "from auditpkg.features import text as text\n",
    "__main__.py": "raise SystemExit('__main__ must not be imported by a scan')\n",
    "features.py": _HEADER
    + """
text = ck.Feature[Any]("app.text", cases=("read",))
cache = ck.Feature[Any]("app.cache", cases=("get",))
""",
    "suites.py": _HEADER
    + """
from auditpkg.features import text

text_suite = ck.ContractSuite(text, {"read": case})
""",
    "store/__init__.py": "",
    "store/blobs.py": _HEADER
    + """
blob = ck.Feature[Any]("app.blob", cases=("put",))
blob_suite = ck.ContractSuite(blob, {"put": case})
""",
}

MakePackage = Callable[..., types.ModuleType]
"""``make_package({"store/extra.py": source})`` writes the package, changed, and imports it."""


@pytest.fixture
def make_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakePackage]:
    """Write ``auditpkg`` (the base files, changed by the arguments) and import it."""

    def make(changes: Mapping[str, str] | None = None) -> types.ModuleType:
        for name, body in {**BASE_FILES, **(changes or {})}.items():
            path = tmp_path / PACKAGE / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()
        return importlib.import_module(PACKAGE)

    yield make
    for name in list(sys.modules):
        if name == PACKAGE or name.startswith(f"{PACKAGE}."):
            del sys.modules[name]


def audit_failure(*args: Any, **kwargs: Any) -> SuiteAuditFailure:
    """Run the audit, which must fail, and return its failure."""
    with pytest.raises(SuiteAuditFailure) as caught:
        audit_suites(*args, **kwargs)
    return caught.value


class TestExplicitObjects:
    """Features and suites given as objects."""

    def test_passes_when_every_feature_has_a_suite(self) -> None:
        """Features and suites given as objects, each feature covered: the audit returns."""
        audit_suites([text, cache], [suite_for(text), suite_for(cache)])

    def test_fails_for_a_feature_without_a_suite(self) -> None:
        """A feature with no suite fails the audit, and the message names its ID."""
        failure = audit_failure([text, cache], [suite_for(text)])
        assert failure.missing == ("app.cache",)
        assert str(failure) == (
            "suite audit failed (1 problem):\n"
            "  'app.cache': has no suite; write a ContractSuite for it, "
            "or exempt it with a reason"
        )

    def test_an_exempt_feature_passes(self) -> None:
        """A feature without a suite passes when the exemption list gives it a reason."""
        audit_suites([text, cache], [suite_for(text)], exempt={"app.cache": "not built yet"})

    def test_an_exempt_feature_that_gained_a_suite_fails(self) -> None:
        """An exemption whose feature now has a suite must be removed: the audit fails."""
        failure = audit_failure(
            [text, cache], [suite_for(text), suite_for(cache)], exempt={"app.cache": "later"}
        )
        assert failure.stale_exemptions == ("app.cache",)
        assert failure.missing == ()
        assert "'app.cache': is exempt but now has a suite; remove it" in str(failure)

    def test_an_exemption_for_a_feature_that_no_longer_exists_fails(self) -> None:
        """An exempt ID that names no feature fails, suggesting the closest real ID."""
        failure = audit_failure([text], [suite_for(text)], exempt={"app.txet": "renamed"})
        assert failure.unknown_exemptions == ("app.txet",)
        assert "'app.txet': is exempt but no longer exists" in str(failure)
        assert str(failure).endswith("did you mean 'app.text'?")

    def test_lists_every_problem_sorted_by_id(self) -> None:
        """Each offending ID gets its line, sorted by ID whatever the kind of problem."""
        failure = audit_failure(
            [queue, text, cache, blob],
            [suite_for(text), suite_for(blob)],
            exempt={"app.text": "old", "app.zzz": "gone", "app.aaa": "gone"},
        )
        assert failure.missing == ("app.cache", "app.queue")
        assert failure.stale_exemptions == ("app.text",)
        assert failure.unknown_exemptions == ("app.aaa", "app.zzz")
        lines = str(failure).splitlines()
        assert lines[0] == "suite audit failed (5 problems):"
        assert [line.split(":")[0].strip() for line in lines[1:]] == [
            "'app.aaa'",
            "'app.cache'",
            "'app.queue'",
            "'app.text'",
            "'app.zzz'",
        ]

    def test_a_suite_counts_only_for_its_own_feature_object(self) -> None:
        """A suite for another Feature with the same ID covers nothing, and the ID clash fails."""
        impostor = ck.Feature[Any]("app.text", cases=("read",))
        failure = audit_failure([text], [suite_for(impostor)])
        assert failure.missing == ("app.text",)
        assert failure.duplicate_ids == ("app.text",)
        assert (
            "  'app.text': is the ID of 2 different Feature objects "
            "(features[0], the feature of suites[0]); feature IDs must be unique"
        ) in str(failure).splitlines()

    def test_two_features_with_one_id_fail_even_with_suites(self) -> None:
        """IDs must be unique: two Feature objects sharing one ID fail, each place named."""
        twin = ck.Feature[Any]("app.text", cases=("read",))
        failure = audit_failure([text, twin], [suite_for(text), suite_for(twin)])
        assert failure.duplicate_ids == ("app.text",)
        assert failure.missing == ()
        assert "(features[0], features[1])" in str(failure)

    def test_the_same_object_given_twice_counts_once(self) -> None:
        """Deduplication is by identity: a feature listed twice is not a duplicate ID."""
        audit_suites([text, text], [suite_for(text)])

    def test_suites_for_other_features_are_ignored(self) -> None:
        """A suite for a feature outside the audit (a library's profile, say) is not an error."""
        audit_suites([text], [suite_for(text), suite_for(queue)])

    def test_accepts_one_shot_iterables(self) -> None:
        """Generators work: each argument is read once."""
        audit_suites((feature for feature in [text]), (suite for suite in [suite_for(text)]))


class TestPackageScan:
    """Features and suites found by scanning a package on disk."""

    def test_scans_modules_and_subpackages(self, make_package: MakePackage) -> None:
        """Features and suites are found in every submodule; the uncovered one is listed."""
        package = make_package()
        failure = audit_failure(PACKAGE)
        # text is found three times (package, features, suites): one feature, no clash.
        assert failure.missing == ("app.cache",)
        assert failure.duplicate_ids == ()
        assert audit_failure(package).missing == ("app.cache",)

    def test_exempt_feature_passes_a_scan(self, make_package: MakePackage) -> None:
        """With the uncovered feature exempt, the scan of the package passes."""
        make_package()
        audit_suites(PACKAGE, exempt={"app.cache": "waiting for a backend"})

    def test_scan_features_and_suites_from_different_places(
        self, make_package: MakePackage
    ) -> None:
        """features and suites can name different modules, or mix a scan with objects."""
        make_package()
        features = importlib.import_module(f"{PACKAGE}.features")
        audit_suites(features, PACKAGE, exempt={"app.cache": "later"})
        suites = importlib.import_module(f"{PACKAGE}.suites")
        assert audit_failure(f"{PACKAGE}.features", [suites.text_suite]).missing == ("app.cache",)
        assert audit_failure([features.text, features.cache], PACKAGE).missing == ("app.cache",)

    def test_a_suite_gained_by_an_exempt_feature_fails(self, make_package: MakePackage) -> None:
        """Adding a suite for an exempt feature makes the scan fail until the entry goes."""
        make_package(
            {
                "cache_suite.py": _HEADER
                + """
from auditpkg.features import cache

cache_suite = ck.ContractSuite(cache, {"get": case})
"""
            }
        )
        failure = audit_failure(PACKAGE, exempt={"app.cache": "later"})
        assert failure.stale_exemptions == ("app.cache",)
        assert "now has a suite" in str(failure)
        audit_suites(PACKAGE)

    def test_duplicate_ids_name_both_modules(self, make_package: MakePackage) -> None:
        """Two modules defining features with one ID fail, naming where each was found."""
        make_package(
            {
                "store/other.py": _HEADER
                + """
blob = ck.Feature[Any]("app.blob", cases=("put",))
blob_suite = ck.ContractSuite(blob, {"put": case})
"""
            }
        )
        failure = audit_failure(PACKAGE, exempt={"app.cache": "later"})
        assert failure.duplicate_ids == ("app.blob",)
        assert str(failure).splitlines()[1] == (
            "  'app.blob': is the ID of 2 different Feature objects "
            "(auditpkg.store.blobs.blob, auditpkg.store.other.blob); feature IDs must be unique"
        )

    def test_a_module_that_fails_to_import_is_surfaced(self, make_package: MakePackage) -> None:
        """An error while importing a submodule is raised, naming the module, chained."""
        make_package({"store/broken.py": "undefined_name\n"})
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"^audit_suites\(\) could not import 'auditpkg\.store\.broken' while "
            r"scanning 'auditpkg': NameError: name 'undefined_name' is not defined$",
        ) as caught:
            audit_suites(PACKAGE)
        assert isinstance(caught.value.__cause__, NameError)

    def test_an_import_error_in_a_subpackage_is_not_swallowed(
        self, make_package: MakePackage
    ) -> None:
        """A missing dependency in a subpackage fails the scan (walk_packages would hide it)."""
        make_package({"store/__init__.py": "import auditpkg_missing_dependency\n"})
        with pytest.raises(ck.ContractDefinitionError, match=r"'auditpkg\.store'") as caught:
            audit_suites(PACKAGE)
        assert isinstance(caught.value.__cause__, ModuleNotFoundError)

    def test_a_root_that_fails_to_import_is_surfaced(self, make_package: MakePackage) -> None:
        """A named module that exists but fails to import is an import failure, not a bad name."""
        make_package({"bad.py": "1 / 0\n"})
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"could not import 'auditpkg\.bad': ZeroDivisionError",
        ):
            audit_suites(f"{PACKAGE}.bad")

    def test_main_is_not_imported(self, make_package: MakePackage) -> None:
        """The scan skips __main__, which would run the program (here: SystemExit)."""
        make_package()
        audit_suites(PACKAGE, exempt={"app.cache": "later"})
        assert f"{PACKAGE}.__main__" not in sys.modules

    def test_a_scan_that_finds_no_feature_is_an_error(self, make_package: MakePackage) -> None:
        """Pointing the audit at a module without features is a mistake, not a pass."""
        make_package({"empty/__init__.py": "", "empty/nothing.py": "import conformkit\n"})
        with pytest.raises(
            ck.ContractDefinitionError, match=r"found no Feature in 'auditpkg\.empty'"
        ):
            audit_suites(f"{PACKAGE}.empty")
        with pytest.raises(ck.ContractDefinitionError, match="found no Feature in 'textwrap'"):
            audit_suites(textwrap)

    def test_only_a_package_scan_imports_pkgutil(self) -> None:
        """Importing conformkit leaves pkgutil unloaded; the first scan of a package loads it."""
        code = (
            "import sys, conformkit\n"
            "print('pkgutil' in sys.modules)\n"
            "try:\n"
            "    conformkit.audit_suites('json')\n"
            "except conformkit.ContractDefinitionError:\n"
            "    pass  # json defines no feature: the scan ran and found none\n"
            "print('pkgutil' in sys.modules)\n"
        )
        output = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert output.stdout.split() == ["False", "True"]


class TestBadInput:
    """Arguments the audit refuses, each with a one-line error."""

    @pytest.mark.parametrize(
        ("arguments", "error", "message"),
        [
            pytest.param(
                ("auditpkg_does_not_exist",),
                ck.ContractDefinitionError,
                "cannot import 'auditpkg_does_not_exist': no module named "
                "'auditpkg_does_not_exist'",
                id="unknown-module",
            ),
            pytest.param(
                ("textwrap.nope",),
                ck.ContractDefinitionError,
                "cannot import 'textwrap.nope': no module named 'textwrap.nope'",
                id="unknown-submodule",
            ),
            pytest.param(
                (".relative",),
                ck.ContractDefinitionError,
                "needs an absolute dotted module name, got '.relative'",
                id="relative-name",
            ),
            pytest.param(
                ("",), ck.ContractDefinitionError, "absolute dotted module name", id="empty-name"
            ),
            pytest.param(
                (text, []),
                TypeError,
                "features must be Feature objects, a module, or a dotted module name, got "
                "Feature('app.text'",
                id="bare-feature",
            ),
            pytest.param(
                ([text, "app.cache"], []),
                TypeError,
                "features must all be Feature objects, got 'app.cache' at features[1]",
                id="not-a-feature",
            ),
            pytest.param(
                ([text], [text]),
                TypeError,
                "suites must all be ContractSuite objects, got Feature('app.text'",
                id="feature-as-suite",
            ),
            pytest.param(
                ([text], 42), TypeError, "suites must be ContractSuite objects", id="number"
            ),
            pytest.param(
                ([text],),
                TypeError,
                "needs suites= when features are given as objects",
                id="no-suites",
            ),
            pytest.param(
                ([], []),
                ck.ContractDefinitionError,
                "found no Feature in the features given",
                id="no-features",
            ),
        ],
    )
    def test_bad_arguments(
        self, arguments: tuple[Any, ...], error: type[Exception], message: str
    ) -> None:
        """Each bad argument gets a one-line error that names it."""
        with pytest.raises(error) as caught:
            audit_suites(*arguments)
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)

    def test_exemptions_need_reasons(self) -> None:
        """The exemption list maps IDs to non-empty reasons; a bare list of IDs is refused."""
        with pytest.raises(TypeError, match="exempt= must map each feature ID to the reason"):
            audit_suites([text], [], exempt=["app.text"])  # type: ignore[arg-type]
        with pytest.raises(
            ck.ContractDefinitionError, match=r"exempt\['app.text'\] needs a non-empty reason"
        ):
            audit_suites([text], [], exempt={"app.text": " "})


class TestSuiteAuditFailure:
    """The exception the audit raises."""

    def test_is_an_assertion_error(self) -> None:
        """Every test runner shows the failure as a failed assertion; ConformkitError catches it."""
        failure = audit_failure([text], [])
        assert isinstance(failure, AssertionError)
        assert isinstance(failure, ck.ConformkitError)

    def test_attributes_are_sorted_tuples(self) -> None:
        """The structured attributes hold the offending IDs, sorted, defaulting to empty."""
        failure = SuiteAuditFailure("message", missing=["b", "a"], duplicate_ids={"c"})
        assert failure.missing == ("a", "b")
        assert failure.stale_exemptions == ()
        assert failure.unknown_exemptions == ()
        assert failure.duplicate_ids == ("c",)
        assert str(failure) == "message"


# -- Protocols -------------------------------------------------------------------------

PLUGIN_FILES = {
    "plugins/__init__.py": "from auditpkg.plugins.storage import Storage as Storage\n",
    "plugins/storage.py": """\
from typing import Protocol, TypeVar

T = TypeVar("T")


class Storage(Protocol):
    async def put(self, key: str, value: bytes) -> None: ...


class Box(Protocol[T]):
    def get(self) -> T: ...


class _Helper(Protocol):
    def private(self) -> None: ...


class NotAProtocol:
    def put(self) -> None: ...
""",
    "plugins/notify.py": """\
from typing import Protocol, SupportsInt  # an imported Protocol is not audited


class Notifier(Protocol):
    def notify(self, text: str) -> None: ...
""",
    "plugin_features.py": _HEADER
    + """
from auditpkg.plugins.storage import Box, Storage

storage = ck.Feature[Storage]("app.storage", cases=("put",))
box = ck.Feature[Box[int]]("app.box", cases=("get",))
storage_suite = ck.ContractSuite(storage, {"put": case})
box_suite = ck.ContractSuite(box, {"get": case})
""",
}
NOTIFIER = "auditpkg.plugins.notify.Notifier"
NOTIFIER_FEATURE = {
    "notify_feature.py": _HEADER
    + """
from auditpkg.plugins.notify import Notifier

notify = ck.Feature[Notifier]("app.notify", cases=("sends",))
notify_suite = ck.ContractSuite(notify, {"sends": case})
"""
}
ALL_SUITES = {"app.cache": "waiting for a backend"}


class TestProtocols:
    """audit_suites(..., protocols=): every plugin Protocol is the API type of a feature."""

    def test_a_protocol_without_a_feature_fails(self, make_package: MakePackage) -> None:
        """Notifier has no Feature: the audit names it, and only it."""
        make_package(PLUGIN_FILES)
        failure = audit_failure(PACKAGE, exempt=ALL_SUITES, protocols=f"{PACKAGE}.plugins")
        assert failure.missing_protocols == (NOTIFIER,)
        assert failure.missing == ()
        assert str(failure).splitlines() == [
            "suite audit failed (1 problem):",
            f"  Protocol {NOTIFIER!r}: is the API type of no feature; declare a "
            "Feature[Notifier] with a suite, or exempt it with a reason",
            # The base package's features are Feature[Any]: the likely reason, noted.
            "  note: 3 features declared without an API type (Feature(...) or Feature[Any], "
            "not Feature[API](...)) match no Protocol: 'app.blob', 'app.cache', 'app.text'",
        ]

    def test_passes_when_every_protocol_has_a_feature(self, make_package: MakePackage) -> None:
        """A Feature[Box[int]] covers the generic Box; _Helper and imported ones are skipped."""
        make_package({**PLUGIN_FILES, **NOTIFIER_FEATURE})
        audit_suites(PACKAGE, exempt=ALL_SUITES, protocols=f"{PACKAGE}.plugins")

    def test_an_exempt_protocol_passes(self, make_package: MakePackage) -> None:
        make_package(PLUGIN_FILES)
        audit_suites(
            PACKAGE,
            exempt=ALL_SUITES,
            protocols=f"{PACKAGE}.plugins",
            exempt_protocols={NOTIFIER: "notifications are not pluggable yet"},
        )

    def test_a_stale_protocol_exemption_fails(self, make_package: MakePackage) -> None:
        """The Protocol gained a feature: its exemption must go."""
        make_package({**PLUGIN_FILES, **NOTIFIER_FEATURE})
        failure = audit_failure(
            PACKAGE,
            exempt=ALL_SUITES,
            protocols=f"{PACKAGE}.plugins",
            exempt_protocols={NOTIFIER: "notifications are not pluggable yet"},
        )
        assert failure.stale_protocol_exemptions == (NOTIFIER,)
        assert str(failure).splitlines()[1:] == [
            f"  Protocol {NOTIFIER!r}: is exempt but now is the API type of feature "
            "'app.notify'; remove it from the Protocol exemption list"
        ]

    def test_an_exemption_for_no_protocol_fails(self, make_package: MakePackage) -> None:
        make_package({**PLUGIN_FILES, **NOTIFIER_FEATURE})
        failure = audit_failure(
            PACKAGE,
            exempt=ALL_SUITES,
            protocols=f"{PACKAGE}.plugins",
            exempt_protocols={"auditpkg.plugins.notify.Notifer": "renamed since"},
        )
        assert failure.unknown_protocol_exemptions == ("auditpkg.plugins.notify.Notifer",)
        assert f"did you mean {NOTIFIER!r}?" in str(failure)

    def test_a_feature_without_an_api_type_matches_nothing(self) -> None:
        """Feature(...) or Feature[Any] covers no Protocol, and the failure says why."""

        class Clock(Protocol):
            def now(self) -> float: ...

        untyped: ck.Feature[Any] = ck.Feature("app.clock", cases=("now",))
        failure = audit_failure([untyped], [suite_for(untyped)], protocols=[Clock])
        assert failure.missing_protocols == (f"{__name__}.{Clock.__qualname__}",)
        assert str(failure).splitlines()[-1] == (
            "  note: 1 feature declared without an API type (Feature(...) or Feature[Any], "
            "not Feature[API](...)) matches no Protocol: 'app.clock'"
        )
        anything = ck.Feature[Any]("app.any", cases=("now",))
        both = [untyped, anything]
        failure = audit_failure(both, [suite_for(f) for f in both], protocols=[Clock])
        assert str(failure).splitlines()[-1].endswith("match no Protocol: 'app.any', 'app.clock'")
        typed = ck.Feature[Clock]("app.clock", cases=("now",))
        audit_suites([typed], [suite_for(typed)], protocols=[Clock])

    def test_a_look_alike_or_a_subclass_does_not_match(self) -> None:
        """The match is by identity, not by shape or by inheritance."""

        class Clock(Protocol):
            def now(self) -> float: ...

        class Twin(Protocol):
            def now(self) -> float: ...

        class Precise(Clock, Protocol):
            def now_ns(self) -> int: ...

        for api in (Twin, Precise):
            feature = ck.Feature[api]("app.clock", cases=("now",))  # type: ignore[valid-type]
            failure = audit_failure([feature], [suite_for(feature)], protocols=[Clock])
            assert failure.missing_protocols == (f"{__name__}.{Clock.__qualname__}",)

    def test_features_and_protocols_problems_are_listed_together(
        self, make_package: MakePackage
    ) -> None:
        make_package(PLUGIN_FILES)
        failure = audit_failure(PACKAGE, protocols=f"{PACKAGE}.plugins")
        assert failure.missing == ("app.cache",)
        assert failure.missing_protocols == (NOTIFIER,)
        assert str(failure).splitlines()[0] == "suite audit failed (2 problems):"

    @pytest.mark.parametrize(
        ("kwargs", "error", "message"),
        [
            pytest.param(
                {"protocols": "textwrap"},
                ck.ContractDefinitionError,
                "found no Protocol in 'textwrap'",
                id="no-protocol",
            ),
            pytest.param(
                {"protocols": []},
                ck.ContractDefinitionError,
                "found no Protocol in the Protocols given",
                id="empty",
            ),
            pytest.param(
                {"protocols": [int]},
                TypeError,
                "protocols must all be Protocol classes, got <class 'int'> at protocols[0]",
                id="not-a-protocol",
            ),
            pytest.param(
                {"protocols": 42},
                TypeError,
                "protocols must be Protocol classes, a module, or a dotted module name",
                id="number",
            ),
            pytest.param(
                {"exempt_protocols": {"x.Y": "why"}},
                TypeError,
                "exempt_protocols= needs protocols=",
                id="exemption-without-protocols",
            ),
            pytest.param(
                {"protocols": "auditpkg_nope"},
                ck.ContractDefinitionError,
                "cannot import 'auditpkg_nope'",
                id="unknown-module",
            ),
            pytest.param(
                {"protocols": [Protocol], "exempt_protocols": {"x.Y": ""}},
                ck.ContractDefinitionError,
                "exempt_protocols['x.Y'] needs a non-empty reason",
                id="empty-reason",
            ),
            pytest.param(
                {"protocols": [Protocol], "exempt_protocols": ["x.Y"]},
                TypeError,
                "exempt_protocols= must map each Protocol (module.QualName) to the reason",
                id="list-of-names",
            ),
        ],
    )
    def test_bad_arguments(
        self, kwargs: dict[str, Any], error: type[Exception], message: str
    ) -> None:
        with pytest.raises(error) as caught:
            audit_suites([text], [suite_for(text)], **kwargs)
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)
