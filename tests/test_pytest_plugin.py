"""The pytest plugin and contract_test(): contracts as pytest items, run by pytest's own means."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

import conformkit as ck
from conformkit import pytest_plugin

pytest_plugins = ["pytester"]

# pytester's in-process runs forget the modules first imported during them, and a
# module imported again is a second copy: a Feature of one copy is not a Feature
# to the other. So the modules those runs use are imported here first, once.
for _module in (
    *(f"conformkit.{module}" for module in ck._MODULES),
    "anyio._backends._asyncio",
    "anyio._backends._trio",
    "trio",
):
    importlib.import_module(_module)

# A store contract with bare asserts, and a table of implementations: one
# correct, one with a declared gap, and two broken ones that each fail exactly
# one case. Each case appends "worker case backend" to cases.log, so a test can
# count what ran where.
CONTRACT = """
import asyncio
import os
from pathlib import Path

import conformkit as ck

with Path(__file__).with_name("imports.log").open("a") as log:
    log.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")

store = ck.Feature("example.store", cases=("missing", "read_your_writes", "delete"))
suite = ck.ContractSuite(store)


def ran(case):
    try:
        asyncio.get_running_loop()
        backend = "asyncio"
    except RuntimeError:
        backend = "trio"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with Path(__file__).with_name("cases.log").open("a") as log:
        log.write(f"{worker} {case} {backend}\\n")


@suite.case
async def missing(api):
    ran("missing")
    assert await api.read("absent") is None


@suite.case
async def read_your_writes(api):
    ran("read_your_writes")
    await api.write("key", "value")
    value = await api.read("key")
    assert value == "value"


@suite.case
async def delete(api):
    ran("delete")
    await api.write("key", "value")
    await api.delete("key")
    assert await api.read("key") is None


class Memory:
    def __init__(self):
        self.values = {}

    async def read(self, key):
        return self.values.get(key)

    async def write(self, key, value):
        self.values[key] = value

    async def delete(self, key):
        self.values.pop(key, None)


class Forgetful(Memory):
    async def write(self, key, value):
        pass


class Undeletable(Memory):
    async def delete(self, key):
        pass


implementations = (
    store.implementation(Memory, name="MemoryStore"),
    store.implementation(
        Memory, name="AppendOnly", coverage=store.coverage(unsupported={"delete": "no deletes"})
    ),
    store.implementation(Forgetful, name="Forgetful"),
    store.implementation(Undeletable, name="Undeletable"),
)
"""

IMPLEMENTATIONS = ("MemoryStore", "AppendOnly", "Forgetful", "Undeletable")
CASES = ("missing", "read_your_writes", "delete")
FAILING = {"example.store::Forgetful::read_your_writes", "example.store::Undeletable::delete"}
SKIPPED = {"example.store::AppendOnly::delete"}


def node_ids(backends: tuple[str, ...] = ("asyncio",)) -> list[str]:
    return [
        f"example.store::{implementation}::{case}[{backend}]"
        for implementation in IMPLEMENTATIONS
        for case in CASES
        for backend in backends
    ]


@pytest.fixture
def contract(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The contract above, as contract.py in the run's folder."""
    # The runs here are not xdist workers, even when this test runs on one.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    return pytester.makepyfile(contract=CONTRACT)


def outcomes(result: pytest.RunResult, feature: str = "example.store") -> dict[str, str]:
    """Each item's node ID and its outcome, from the lines of a verbose run."""
    found = {}
    for line in result.outlines:
        for outcome in ("PASSED", "FAILED", "SKIPPED", "ERROR"):
            node, separator, _ = line.partition(f" {outcome}")
            if separator and node.startswith(f"{feature}::"):
                found[node] = outcome
    return found


def log_lines(folder: Path, name: str = "cases.log") -> list[str]:
    path = folder / name
    return path.read_text().splitlines() if path.exists() else []


class TestInert:
    def test_a_run_that_does_not_ask_sees_no_change(self, pytester: pytest.Pytester) -> None:
        """Without --conformkit, a project's run has the same outcome with or without the plugin."""
        pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
        pytester.makepyfile(contract=CONTRACT)
        with_plugin = pytester.runpytest("-p", "no:cacheprovider")
        without = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:conformkit")
        with_plugin.assert_outcomes(passed=1)
        without.assert_outcomes(passed=1)
        assert not (pytester.path / "imports.log").exists()

    def test_pytest_loads_it_but_not_the_core(self, pytester: pytest.Pytester) -> None:
        """A run that does not ask imports the plugin module alone, nothing of the core."""
        pytester.makeconftest(
            """
            import sys

            def pytest_sessionfinish():
                loaded = sorted(name for name in sys.modules if name.startswith("conformkit"))
                print("\\nLOADED", *loaded)
            """
        )
        pytester.makepyfile(test_plain="def test_one():\n    pass\n")
        result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", timeout=120)
        result.assert_outcomes(passed=1)
        [line] = [line for line in result.outlines if line.startswith("LOADED")]
        assert line.split()[1:] == ["conformkit", "conformkit.pytest_plugin"]

    def test_import_conformkit_imports_no_pytest(self) -> None:
        """The plugin is pytest's to load: `import conformkit` and its names never import pytest."""
        code = (
            "import sys, conformkit\n"
            "[getattr(conformkit, name) for name in conformkit.__all__]\n"
            "print('pytest' in sys.modules, 'conformkit.pytest_plugin' in sys.modules)"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
        assert done.stdout.split() == ["False", "False"]


class TestItems:
    def test_one_item_per_implementation_case_and_backend(
        self, pytester: pytest.Pytester, contract: Path
    ) -> None:
        """Item IDs are feature::implementation::case[backend], in report order, each backend."""
        result = pytester.runpytest(
            "--conformkit", "contract.py", "--conformkit-backend", "asyncio",
            "--conformkit-backend", "trio", "--collect-only", "-q", "-p", "no:cacheprovider",
        )  # fmt: skip
        assert [line for line in result.outlines if "::" in line] == node_ids(("asyncio", "trio"))

    def test_the_ids_are_the_reports_case_ids(
        self, pytester: pytest.Pytester, contract: Path
    ) -> None:
        """Each item's name is a report's case ID with its backend, family members included."""
        pytester.makepyfile(
            families="""
            import conformkit as ck

            codec = ck.Feature("example.codec", cases=("empty",), families={
                "parse": ck.Examples([("1", 1), ("-2", -2)], ids=["one", "minus.two"]),
            })
            suite = ck.ContractSuite(codec)

            @suite.case
            def empty(api):
                assert api("") is None

            @suite.family
            def parse(api, example):
                assert api(example.input) == example.expected

            Parse = codec.implementation(lambda: lambda text: int(text) if text else None,
                                         name="Parse")
            """
        )
        result = pytester.runpytest(
            "--conformkit", "families.py", "--collect-only", "-q", "-p", "no:cacheprovider"
        )
        sys.path.insert(0, str(pytester.path))
        try:
            import families  # type: ignore[import-not-found]

            report = ck.run_contract_sync(families.Parse, families.suite)
        finally:
            sys.path.remove(str(pytester.path))
            sys.modules.pop("families", None)
        assert [line for line in result.outlines if "::" in line] == [
            f"example.codec::Parse::{result.case_id}[asyncio]" for result in report.results
        ]
        assert [result.case_id for result in report.results] == [
            "empty", "parse[one]", "parse[minus.two]",
        ]  # fmt: skip

    def test_verdicts_are_pytest_outcomes(self, pytester: pytest.Pytester, contract: Path) -> None:
        """The broken implementations fail exactly their case; a declared gap is a skip."""
        result = pytester.runpytest(
            "--conformkit", "contract.py", "-v", "-rs", "-p", "no:cacheprovider"
        )
        result.assert_outcomes(passed=9, failed=2, skipped=1)
        found = outcomes(result)
        assert {node for node, outcome in found.items() if outcome == "FAILED"} == {
            f"{node}[asyncio]" for node in FAILING
        }
        assert {node for node, outcome in found.items() if outcome == "SKIPPED"} == {
            f"{node}[asyncio]" for node in SKIPPED
        }
        result.stdout.fnmatch_lines(["SKIPPED [[]1[]] contract.py: no deletes"])
        # An unsupported case is never run; every other case ran once.
        assert sorted(log_lines(pytester.path)) == sorted(
            f"main {case} asyncio"
            for implementation in IMPLEMENTATIONS
            for case in CASES
            if f"example.store::{implementation}::{case}" not in SKIPPED
        )

    def test_hostile_code_fails_its_items_alone(self, pytester: pytest.Pytester) -> None:
        """Code that overruns its deadline or calls sys.exit(0) fails its items, and only those."""
        pytester.makepyfile(
            hostile="""
            import anyio
            import conformkit as ck

            feature = ck.Feature("example.hostile", cases=("one", "two"))
            suite = ck.ContractSuite(feature, {"one": lambda api: None, "two": lambda api: None})

            class Hangs(ck.FeatureImplementation):
                feature = feature
                coverage = feature.coverage()
                # Waited out: short, but its grace (as long, at most 1 s) is the time
                # a loaded machine gets to end the cancelled create before the
                # watchdog calls it stuck and ends the process, this one included.
                timeout = 1.0

                async def create(self, scope):
                    await anyio.sleep_forever()

            def exits():
                raise SystemExit(0)

            implementations = (
                Hangs(),
                feature.implementation(exits, name="Exits"),
                feature.implementation(dict, name="Fine"),
            )
            """
        )
        result = pytester.runpytest(
            "--conformkit", "hostile.py", "-p", "no:cacheprovider", "-v", "--tb=line"
        )
        result.assert_outcomes(passed=2, failed=4)
        assert outcomes(result, "example.hostile") == {
            f"example.hostile::{name}::{case}[asyncio]": "PASSED" if name == "Fine" else "FAILED"
            for name in ("Hangs", "Exits", "Fine")
            for case in ("one", "two")
        }
        result.stdout.fnmatch_lines(
            ["*TimeoutError: feature 'example.hostile', case 'one': stage 'create' exceeded*"]
        )
        result.stdout.fnmatch_lines(["*SystemExit: 0"])

    def test_bare_asserts_get_pytests_introspection(
        self, pytester: pytest.Pytester, contract: Path
    ) -> None:
        """Asserts are rewritten; a failure shows the case's own frames and the values compared."""
        result = pytester.runpytest(
            "--conformkit", "contract.py", "-k", "Forgetful and read_your_writes",
            "-p", "no:cacheprovider",
        )  # fmt: skip
        result.assert_outcomes(failed=1, deselected=11)
        result.stdout.fnmatch_lines(
            [
                "*_ Forgetful::read_your_writes[[]asyncio[]] _*",
                "api = <contract.Forgetful object at *>",
                "    @suite.case",
                "    async def read_your_writes(api):",
                "*",
                "*",
                "*",
                '>       assert value == "value"',
                "E       AssertionError: assert None == 'value'",
                "",
                "contract.py:*: AssertionError",
            ]
        )

    def test_the_ini_options_opt_in(self, pytester: pytest.Pytester, contract: Path) -> None:
        """conformkit_targets and conformkit_backends in the configuration do what the flags do."""
        pytester.makeini(
            """
            [pytest]
            conformkit_targets =
                contract.py
            conformkit_backends =
                trio
                asyncio
            """
        )
        result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
        expected = [
            f"example.store::{implementation}::{case}[{backend}]"
            for implementation in IMPLEMENTATIONS
            for case in CASES
            for backend in ("trio", "asyncio")
        ]
        assert [line for line in result.outlines if "::" in line] == expected

    def test_installed_entry_points_are_collected(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--conformkit-installed collects what distributions publish, asserts rewritten too."""
        site = pytester.path / "site"
        (site / "storeplugin").mkdir(parents=True)
        (site / "storeplugin" / "__init__.py").write_text("")
        (site / "storeplugin" / "contracts.py").write_text(CONTRACT)
        info = site / "storeplugin-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: storeplugin\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(
            "[conformkit.contracts]\nstores = storeplugin.contracts\n"
        )
        monkeypatch.syspath_prepend(str(site))
        result = pytester.runpytest(
            "--conformkit-installed", "-k", "Forgetful", "-p", "no:cacheprovider"
        )
        result.assert_outcomes(passed=2, failed=1, deselected=9)
        result.stdout.fnmatch_lines(["E       AssertionError: assert None == 'value'"])


class TestPytestsMeans:
    def test_keyword_selection(self, pytester: pytest.Pytester, contract: Path) -> None:
        """-k matches implementations, cases and backends; -m conformkit selects the items alone."""
        pytester.makepyfile(test_plain="def test_one():\n    pass\n")
        result = pytester.runpytest(
            "--conformkit", "contract.py", "--conformkit-backend", "asyncio",
            "--conformkit-backend", "trio", "-k", "delete and trio", "-m", "conformkit",
            "-v", "-p", "no:cacheprovider",
        )  # fmt: skip
        assert outcomes(result) == {
            "example.store::MemoryStore::delete[trio]": "PASSED",
            "example.store::AppendOnly::delete[trio]": "SKIPPED",
            "example.store::Forgetful::delete[trio]": "PASSED",
            "example.store::Undeletable::delete[trio]": "FAILED",
        }
        result.assert_outcomes(passed=2, failed=1, skipped=1, deselected=21)

    def test_exit_first(self, pytester: pytest.Pytester, contract: Path) -> None:
        """-x stops at the first failed case."""
        result = pytester.runpytest("--conformkit", "contract.py", "-x", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=6, failed=1, skipped=1)

    def test_last_failed(self, pytester: pytest.Pytester, contract: Path) -> None:
        """--lf runs again exactly the cases that failed."""
        pytester.runpytest("--conformkit", "contract.py").assert_outcomes(
            passed=9, failed=2, skipped=1
        )
        (pytester.path / "cases.log").unlink()
        again = pytester.runpytest("--conformkit", "contract.py", "--lf", "-v")
        again.assert_outcomes(failed=2, deselected=10)
        assert set(outcomes(again)) == {f"{node}[asyncio]" for node in FAILING}
        assert sorted(log_lines(pytester.path)) == [
            "main delete asyncio",
            "main read_your_writes asyncio",
        ]

    def test_junit_xml(self, pytester: pytest.Pytester, contract: Path) -> None:
        """JUnit XML names each case as `conformkit run` does: feature.Implementation, case."""
        pytester.runpytest(
            "--conformkit", "contract.py", "--junitxml=junit.xml", "-p", "no:cacheprovider"
        )
        root = ElementTree.parse(pytester.path / "junit.xml").getroot()
        cases = {
            (case.get("classname"), case.get("name")): [child.tag for child in case]
            for case in root.iter("testcase")
        }
        assert len(cases) == 12
        assert cases[("example.store.Forgetful", "read_your_writes[asyncio]")] == ["failure"]
        assert cases[("example.store.AppendOnly", "delete[asyncio]")] == ["skipped"]
        assert cases[("example.store.MemoryStore", "missing[asyncio]")] == []

    def test_xdist_workers_share_the_work(self, pytester: pytest.Pytester, contract: Path) -> None:
        """Under -n 2 each case runs once on one worker; the controller imports no contract."""
        result = pytester.runpytest_subprocess(
            "--conformkit", "contract.py", "--conformkit-backend", "asyncio",
            "--conformkit-backend", "trio", "-n", "2", "-p", "no:cacheprovider",
            timeout=240,
        )  # fmt: skip
        result.assert_outcomes(passed=18, failed=4, skipped=2)
        lines = log_lines(pytester.path)
        ran = sorted(line.split(" ", 1)[1] for line in lines)
        expected = sorted(
            f"{case} {backend}"
            for implementation in IMPLEMENTATIONS
            for case in CASES
            for backend in ("asyncio", "trio")
            if f"example.store::{implementation}::{case}" not in SKIPPED
        )
        assert ran == expected
        assert {line.split()[0] for line in lines} == {"gw0", "gw1"}
        assert sorted(log_lines(pytester.path, "imports.log")) == ["gw0", "gw1"]


class TestMistakes:
    def test_a_bad_target_is_a_one_line_collection_error(self, pytester: pytest.Pytester) -> None:
        """A target that cannot load fails collection with conformkit's one-line message."""
        result = pytester.runpytest("--conformkit", "absent.py", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(["conformkit: target 'absent.py': no such file"])

    def test_no_entry_points_is_a_one_line_collection_error(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--conformkit-installed with nothing installed in the group says so, naming the option."""
        monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
        result = pytester.runpytest("--conformkit-installed", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(
            [
                "conformkit: --conformkit-installed: no installed distribution publishes entry "
                "points in the group 'conformkit.contracts'"
            ]
        )

    def test_a_definition_error_is_one_line(self, pytester: pytest.Pytester) -> None:
        """A suite missing a case is named at collection, without a traceback through conformkit."""
        pytester.makepyfile(
            incomplete="""
            import conformkit as ck

            store = ck.Feature("example.incomplete", cases=("one", "two"))
            suite = ck.ContractSuite(store)

            @suite.case
            def one(api):
                pass

            Memory = store.implementation(dict, name="Memory")
            """
        )
        result = pytester.runpytest("--conformkit", "incomplete.py", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(["conformkit: *'two'*"])
        result.stdout.no_fnmatch_line("*_runner[/\\]*.py*")  # the runner's own frames

    def test_an_unknown_backend_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        """An unknown backend in the configuration stops the run at once, naming it."""
        pytester.makeini(
            "[pytest]\nconformkit_targets = contract.py\nconformkit_backends = curio\n"
        )
        result = pytester.runpytest("-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*conformkit: backend must be 'asyncio' or 'trio', got 'curio'"]
        )


class TestContractTest:
    def test_one_call_parametrizes_a_test(self, pytester: pytest.Pytester, contract: Path) -> None:
        """contract_test() returns a test of every case on each backend, with the plugin or not."""
        pytester.makepyfile(
            test_store="""
            from conformkit.pytest_plugin import contract_test
            from contract import implementations, suite

            test_store = contract_test(implementations, suite, backends=("asyncio", "trio"))
            """
        )
        for disabled in ([], ["-p", "no:conformkit"]):
            result = pytester.runpytest("-v", "-rs", "-p", "no:cacheprovider", *disabled)
            result.assert_outcomes(passed=18, failed=4, skipped=2)
            result.stdout.fnmatch_lines(
                [
                    "test_store.py::test_store[[]MemoryStore-missing-asyncio[]] PASSED*",
                    "test_store.py::test_store[[]AppendOnly-delete-trio[]] SKIPPED*",
                    "test_store.py::test_store[[]Forgetful-read_your_writes-trio[]] FAILED*",
                    # A failure shows the case, not the event loop around it.
                    "*_ test_store[[]Forgetful-read_your_writes-asyncio[]] _*",
                    "api = <contract.Forgetful object at *>",
                    "    @suite.case",
                ]
            )
            # A skip is placed at the line that called contract_test(), in the test file.
            result.stdout.fnmatch_lines(["SKIPPED [[]2[]] test_store.py:4: no deletes"])

    def test_a_single_implementation(self) -> None:
        """One implementation is enough; none, or an unknown backend, is refused at once."""
        feature = ck.Feature[dict[str, str]]("plugin.single", cases=("empty",))
        suite = ck.ContractSuite(feature, {"empty": lambda api: None})
        test = pytest_plugin.contract_test(feature.implementation(dict, name="Dict"), suite)
        [mark] = test.pytestmark  # type: ignore[attr-defined]
        assert [param.id for param in mark.args[1]] == ["Dict-empty-asyncio"]
        with pytest.raises(ValueError, match="got 'curio'"):
            pytest_plugin.contract_test([], suite, backends=["curio"])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="at least one backend"):
            pytest_plugin.contract_test([], suite, backends=[])
        with pytest.raises(ck.ContractDefinitionError, match="got no implementation of 'plugin"):
            pytest_plugin.contract_test([], suite)


class TestThisProject:
    def test_the_docs_contract_runs_under_the_projects_configuration(self) -> None:
        """From the root, under pyproject.toml's strict settings, the docs' contract runs, -n 2."""
        root = Path(__file__).resolve().parent.parent
        environment = {
            name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")
        }
        environment["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ among the docs
        run = subprocess.run(
            [
                sys.executable, "-m", "pytest", "docs/examples/text_contract.py",
                "--conformkit", "docs/examples/text_contract.py", "--conformkit-backend", "asyncio",
                "--conformkit-backend", "trio", "-n", "2", "-p", "no:cacheprovider", "-q", "-rs",
            ],
            cwd=root, env=environment, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        lines = run.stdout.splitlines()
        skipped = "SKIPPED [2] docs/examples/text_contract.py: an append-only log cannot delete"
        assert skipped in lines
        assert lines[-1].startswith("10 passed, 2 skipped in ")
