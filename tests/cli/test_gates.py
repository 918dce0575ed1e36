"""
The command line's stricter gates (``--require-exercised``, ``--reject-vacuous``,
``--probe-unsupported``, ``--reject-stale``), the ``[tool.conformkit]`` table that
sets them, and ``conformkit audit``: each catching its defect, and passing a
correct project.

The runs are ``python -m conformkit`` in a subprocess, as a user runs it, in a
folder of its own whose ``pyproject.toml`` (if any) is the one it reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformkit.cli._config import GATE_KEYS, Settings, apply_gate, find_settings
from conformkit.cli._parser import build_parser

BACKENDS = ("asyncio", "trio")

COUNTER = '''
"""A counter, a suite that never calls reset(), and one that calls every operation."""

from __future__ import annotations

from typing import Protocol

import conformkit as ck


class Counter(Protocol):
    async def increment(self) -> int: ...
    async def value(self) -> int: ...
    async def reset(self) -> None: ...


counter = ck.Feature[Counter]("tests.counter", cases=("counts", "resets"))
suite = ck.ContractSuite(counter)


@suite.case
async def counts(api: Counter) -> None:
    await api.increment()
    assert await api.value() == 1


@suite.case
async def resets(api: Counter) -> None:
    await api.increment()
    {RESET}
    assert await api.value() == {AFTER}


class CounterAPI:
    def __init__(self) -> None:
        self.count = 0

    async def increment(self) -> int:
        self.count += 1
        return self.count

    async def value(self) -> int:
        return self.count

    async def reset(self) -> None:
        self.count = 0


class MemoryCounter(ck.FeatureImplementation[Counter]):
    feature = counter
    coverage = counter.coverage({UNSUPPORTED})

    def create(self, scope: ck.FeatureScope) -> Counter:
        return CounterAPI()
'''


def counter_module(*, calls_reset: bool = True, stale: bool = False) -> str:
    """The counter's module: its ``resets`` case calling reset() or not, declared unsupported."""
    return (
        COUNTER.replace("{RESET}", "await api.reset()" if calls_reset else "pass  # forgot reset")
        .replace("{AFTER}", "0" if calls_reset else "1")
        .replace("{UNSUPPORTED}", 'unsupported={"resets": "no reset yet"}' if stale else "")
    )


def environment() -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYTEST_") and name not in ("PYTHONPATH", "NO_COLOR")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def conformkit_many(
    runs: Sequence[tuple[Sequence[str], Path]],
) -> list[subprocess.CompletedProcess[str]]:
    """Run ``python -m conformkit ARGS`` in each folder, all at once; their outcomes in order."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "conformkit", *args],
            cwd=cwd,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        for args, cwd in runs
    ]
    done = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return done


def conformkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    [done] = conformkit_many([(args, cwd)])
    return done


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line a usage error writes to stderr, exit status 2."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("conformkit: error: ")
    return lines[0]


STRICT = ("--require-exercised", "--reject-vacuous")


class TestExerciseGate:
    @pytest.mark.parametrize("backend", BACKENDS)
    def test_catches_a_suite_that_never_calls_an_operation(
        self, tmp_path: Path, backend: str
    ) -> None:
        """Every case passes, but reset() is never called: only --require-exercised fails it."""
        write(tmp_path, {"forgetful.py": counter_module(calls_reset=False)})
        strict, lenient = conformkit_many(
            [
                (["run", "forgetful.py", *STRICT, "--backend", backend], tmp_path),
                (["run", "forgetful.py", "--reject-vacuous", "--backend", backend], tmp_path),
            ]
        )
        assert strict.returncode == 1, strict.stderr
        assert "OPERATIONS NO CASE EXERCISED: reset" in strict.stdout
        assert lenient.returncode == 0, lenient.stdout

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_holds_for_a_suite_that_calls_every_operation(
        self, tmp_path: Path, backend: str
    ) -> None:
        write(tmp_path, {"thorough.py": counter_module()})
        done = conformkit("run", "thorough.py", *STRICT, "--backend", backend, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "every contract holds" in done.stdout

    def test_without_recording_it_fails_and_says_how_to_record(self, tmp_path: Path) -> None:
        write(tmp_path, {"thorough.py": counter_module()})
        done = conformkit("run", "thorough.py", "--require-exercised", cwd=tmp_path)
        assert done.returncode == 1
        assert "OPERATIONS NOT RECORDED" in done.stdout
        assert "--reject-vacuous" in done.stdout

    def test_the_json_report_keeps_the_options_and_the_operations(self, tmp_path: Path) -> None:
        write(tmp_path, {"forgetful.py": counter_module(calls_reset=False)})
        done = conformkit(
            "run", "forgetful.py", *STRICT, "--format", "json", "-o", "r.json", cwd=tmp_path
        )
        assert done.returncode == 1
        report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
        assert report["verdict"] == "fails"
        run = report["run"]
        assert (run["require_exercised"], run["reject_vacuous"]) == (True, True)
        assert (run["reject_stale"], run["probe_unsupported"], run["require_full"]) == (
            False,
            False,
            False,
        )
        [entry] = report["reports"]
        assert (entry["unexercised"], entry["holds"]) == (["reset"], False)

    def test_a_shard_leaves_the_rule_to_the_merge(self, tmp_path: Path) -> None:
        """Each shard calls only some operations; the merge of both judges them all."""
        write(
            tmp_path,
            {
                "forgetful.py": counter_module(calls_reset=False),
                "thorough.py": counter_module(),
            },
        )
        runs = [
            (["run", name, *STRICT, "--shard", f"{k}/2", "-q", "-o", f"{name}.{k}.json"], tmp_path)
            for name in ("forgetful.py", "thorough.py")
            for k in (1, 2)
        ]
        shards = conformkit_many(runs)
        assert [done.returncode for done in shards] == [0, 0, 0, 0], [d.stdout for d in shards]
        forgetful, thorough = conformkit_many(
            [
                (["merge", "forgetful.py.1.json", "forgetful.py.2.json", "-q"], tmp_path),
                (["merge", "thorough.py.1.json", "thorough.py.2.json", "-q"], tmp_path),
            ]
        )
        assert forgetful.returncode == 1
        assert "OPERATIONS NO CASE EXERCISED: reset" in forgetful.stdout
        assert thorough.returncode == 0, thorough.stdout

    def test_merge_refuses_reports_of_different_gates(self, tmp_path: Path) -> None:
        write(tmp_path, {"thorough.py": counter_module()})
        conformkit_many(
            [
                (["run", "thorough.py", "-q", "-o", "strict.json", *STRICT], tmp_path),
                (["run", "thorough.py", "-q", "-o", "plain.json"], tmp_path),
            ]
        )
        line = one_error_line(conformkit("merge", "strict.json", "plain.json", cwd=tmp_path))
        assert "different --require-exercised options" in line


class TestVacuousAndStale:
    def test_reject_vacuous_fails_a_case_that_never_calls_the_api(self, tmp_path: Path) -> None:
        vacuous = counter_module().replace(
            "    await api.increment()\n    assert await api.value() == 1",
            "    assert True  # never calls the API",
        )
        write(tmp_path, {"vacuous.py": vacuous})
        strict, lenient = conformkit_many(
            [
                (["run", "vacuous.py", "--reject-vacuous"], tmp_path),
                (["run", "vacuous.py"], tmp_path),
            ]
        )
        assert strict.returncode == 1
        assert "FAILED counts: vacuous: the case never called the API" in strict.stdout
        assert lenient.returncode == 0

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_reject_stale_fails_a_declared_gap_that_passes(
        self, tmp_path: Path, backend: str
    ) -> None:
        """resets is declared unsupported, yet passes when probed."""
        write(tmp_path, {"stale.py": counter_module(stale=True)})
        probe = ["run", "stale.py", "--probe-unsupported", "--backend", backend]
        strict, lenient, unprobed = conformkit_many(
            [
                ([*probe, "--reject-stale"], tmp_path),
                (probe, tmp_path),
                (["run", "stale.py", "--reject-stale", "--backend", backend], tmp_path),
            ]
        )
        assert strict.returncode == 1, strict.stdout
        assert "UNSUPPORTED (--reject-stale) resets" in strict.stdout
        assert "declared unsupported but passed" in strict.stdout
        assert lenient.returncode == 0, lenient.stdout
        assert unprobed.returncode == 0, unprobed.stdout  # nothing probed, nothing stale

    def test_reject_stale_holds_for_a_gap_that_is_real(self, tmp_path: Path) -> None:
        broken = counter_module(stale=True).replace(
            "    async def reset(self) -> None:\n        self.count = 0",
            "    async def reset(self) -> None:\n        pass  # not written: the gap is real",
        )
        assert "the gap is real" in broken
        write(tmp_path, {"gap.py": broken})
        done = conformkit(
            "run", "gap.py", "--probe-unsupported", "--reject-stale", "-q", cwd=tmp_path
        )
        assert done.returncode == 0, done.stdout


class TestPyprojectSettings:
    def test_the_table_sets_the_gate_from_a_parent_folder(self, tmp_path: Path) -> None:
        """A pyproject.toml with no table nearer does not hide the project's."""
        write(
            tmp_path,
            {
                "pyproject.toml": """\
                    [tool.conformkit]
                    require-exercised = true
                    reject-vacuous = true
                """,
                "sub/pyproject.toml": "[project]\nname = 'sub'\n",
                "sub/deeper/forgetful.py": counter_module(calls_reset=False),
            },
        )
        here = tmp_path / "sub" / "deeper"
        gated, overridden = conformkit_many(
            [
                (["run", "forgetful.py", "-q"], here),
                (["run", "forgetful.py", "-q", "--no-require-exercised"], here),
            ]
        )
        assert gated.returncode == 1
        assert "OPERATIONS NO CASE EXERCISED: reset" in gated.stdout
        assert overridden.returncode == 0, overridden.stdout

    @pytest.mark.parametrize(
        ("table", "message"),
        [
            pytest.param(
                "[tool.conformkit]\nrequire_exercised = true\n",
                "unknown key 'require_exercised' in [tool.conformkit]; did you mean "
                "'require-exercised'?",
                id="unknown-key",
            ),
            pytest.param(
                '[tool.conformkit]\nreject-stale = "yes"\n',
                '[tool.conformkit] reject-stale must be true or false, got "yes"',
                id="wrong-type",
            ),
            pytest.param(
                "[tool.conformkit]\nreject-stale = true\nreject-stale = false\n",
                "is not valid TOML: ",  # in tomllib's words, which differ by version
                id="bad-toml",
            ),
            pytest.param(
                "[tool.conformkit.audit]\nfeatures = 3\n",
                "[tool.conformkit.audit] features must be a dotted module name, got 3",
                id="audit-wrong-type",
            ),
        ],
    )
    def test_a_bad_table_is_one_line_naming_the_key_and_the_file(
        self, tmp_path: Path, table: str, message: str
    ) -> None:
        write(tmp_path, {"pyproject.toml": table, "thorough.py": counter_module()})
        line = one_error_line(conformkit("run", "thorough.py", cwd=tmp_path))
        assert f"{tmp_path / 'pyproject.toml'}" in line
        assert message in line
        if "TOML" in message:
            assert "line 3" in line


class TestSettingsUnit:
    """The table's reading, in this process."""

    def test_no_table_means_no_settings(self, tmp_path: Path) -> None:
        write(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 99\n"})
        assert find_settings(tmp_path) is None

    def test_the_nearest_table_wins(self, tmp_path: Path) -> None:
        write(
            tmp_path,
            {
                "pyproject.toml": "[tool.conformkit]\nrequire-full = true\n",
                "inner/pyproject.toml": "[tool.conformkit]\nreject-stale = true\n",
            },
        )
        settings = find_settings(tmp_path / "inner")
        assert settings == Settings(tmp_path / "inner" / "pyproject.toml", {"reject-stale": True})

    def test_the_command_line_wins_and_the_rest_is_false(self, tmp_path: Path) -> None:
        settings = Settings(
            tmp_path / "pyproject.toml", {"require-full": True, "reject-stale": True}
        )
        arguments = build_parser().parse_args(["run", "x.py", "--no-require-full"])
        assert all(getattr(arguments, key.replace("-", "_")) is None for key in GATE_KEYS[1:])
        apply_gate(arguments, settings)
        assert (arguments.require_full, arguments.reject_stale) == (False, True)
        assert (arguments.require_exercised, arguments.reject_vacuous) == (False, False)
        assert arguments.probe_unsupported is False

    def test_audit_exemptions_need_reasons(self, tmp_path: Path) -> None:
        from conformkit._exceptions import UsageError

        write(tmp_path, {"pyproject.toml": '[tool.conformkit.audit.exempt]\n"a.b" = ""\n'})
        with pytest.raises(UsageError, match=r"exempt\.\"a\.b\" needs a non-empty reason"):
            find_settings(tmp_path)


PLUGINS = {
    "proj/__init__.py": "",
    "proj/plugins.py": """\
        from typing import Protocol


        class Storage(Protocol):
            async def put(self, key: str) -> None: ...


        class Notifier(Protocol):
            def notify(self, text: str) -> None: ...
    """,
    "proj/features.py": """\
        import conformkit as ck
        from proj.plugins import Storage


        async def put(api: Storage) -> None:
            await api.put("k")


        storage = ck.Feature[Storage]("proj.storage", cases=("put",))
        storage_suite = ck.ContractSuite(storage, {"put": put})
    """,
}
NOTIFIER_FEATURE = {
    "proj/notify.py": """\
        import conformkit as ck
        from proj.plugins import Notifier


        def sends(api: Notifier) -> None:
            api.notify("hi")


        notify = ck.Feature[Notifier]("proj.notify", cases=("sends",))
        notify_suite = ck.ContractSuite(notify, {"sends": sends})
    """
}


class TestAuditCommand:
    def test_exit_statuses(self, tmp_path: Path) -> None:
        """0 holds, 1 for a Protocol without a feature or a stale exemption, 2 for bad input."""
        bare = write(tmp_path / "bare", PLUGINS)
        full = write(tmp_path / "full", {**PLUGINS, **NOTIFIER_FEATURE})
        exempt = "--exempt-protocol=proj.plugins.Notifier=not pluggable yet"
        missing, exempted, stale, holds, plain, unknown, no_reason, no_protocols = conformkit_many(
            [
                (["audit", "proj", "--protocols", "proj.plugins"], bare),
                (["audit", "proj", "--protocols", "proj.plugins", exempt], bare),
                (["audit", "proj", "--protocols", "proj.plugins", exempt], full),
                (["audit", "proj", "--protocols", "proj.plugins"], full),
                (["audit", "proj"], bare),
                (["audit", "proj_nope"], bare),
                (["audit", "proj", "--exempt", "proj.storage"], bare),
                (["audit", "proj", exempt], bare),
            ]
        )
        assert missing.returncode == 1
        assert missing.stdout.splitlines() == [
            "suite audit failed (1 problem):",
            "  Protocol 'proj.plugins.Notifier': is the API type of no feature; declare a "
            "Feature[Notifier] with a suite, or exempt it with a reason",
        ]
        assert exempted.returncode == 0, exempted.stdout
        assert stale.returncode == 1
        assert "is exempt but now is the API type of feature 'proj.notify'" in stale.stdout
        assert holds.returncode == 0, holds.stdout + holds.stderr
        assert (
            holds.stdout
            == "suite audit holds: every feature has a suite, every Protocol a feature\n"
        )
        assert plain.returncode == 0  # without --protocols, no Protocol is audited
        assert "cannot import 'proj_nope'" in one_error_line(unknown)
        assert "--exempt needs ID=REASON" in one_error_line(no_reason)
        assert "Protocol exemptions need --protocols PACKAGE" in one_error_line(no_protocols)

    def test_reads_its_arguments_from_pyproject(self, tmp_path: Path) -> None:
        table = """\
            [tool.conformkit.audit]
            features = "proj"
            protocols = "proj.plugins"

            [tool.conformkit.audit.exempt-protocols]
            "proj.plugins.Notifier" = "not pluggable yet"
        """
        bare = write(tmp_path / "bare", {**PLUGINS, "pyproject.toml": table})
        full = write(tmp_path / "full", {**PLUGINS, **NOTIFIER_FEATURE, "pyproject.toml": table})
        holds, stale, nothing = conformkit_many(
            [(["audit"], bare), (["audit"], full), (["audit"], tmp_path)]
        )
        assert holds.returncode == 0, holds.stdout + holds.stderr
        assert stale.returncode == 1
        assert "'proj.plugins.Notifier': is exempt but now" in stale.stdout
        assert "name the PACKAGE that defines the features" in one_error_line(nothing)


def test_parser_groups_the_gate_options() -> None:
    """run and demo take every gate option, each with a --no- form, unset by default."""
    parser = build_parser()
    for command in ("run", "demo"):
        extra: list[str] = ["x.py"] if command == "run" else []
        unset = parser.parse_args([command, *extra])
        assert {key: getattr(unset, key.replace("-", "_")) for key in GATE_KEYS} == dict.fromkeys(
            GATE_KEYS
        )
        given: list[Any] = [command, *extra]
        given += [f"--{key}" for key in GATE_KEYS]
        chosen = parser.parse_args(given)
        assert all(getattr(chosen, key.replace("-", "_")) is True for key in GATE_KEYS)
