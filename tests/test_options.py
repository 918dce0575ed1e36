"""
The run's options in one value: every entry point takes them as its keywords and
makes a :class:`RunOptions` of them, checked once, and passes it whole.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import SimpleNamespace
from typing import Any, cast

import pytest
import text_contract as _demo

import conformkit as ck
from conformkit import pytest_plugin
from conformkit._collect import collect_modules
from conformkit._options import RunOptions
from conformkit._report import Gate
from conformkit._testing import contract_test_case
from conformkit.cli._commands import run_options
from conformkit.cli._parser import build_parser

FIELDS = frozenset(field.name for field in dataclasses.fields(RunOptions))

NOT_OPTIONS = {"implementation", "suite", "implementations", "backend", "name"}
"""The parameters of the entry points that say what runs, or where, rather than how."""


def options_of(function: Any) -> dict[str, inspect.Parameter]:
    return {
        name: parameter
        for name, parameter in inspect.signature(function).parameters.items()
        if name not in NOT_OPTIONS
    }


class TestEntryPoints:
    """The public functions take the fields of RunOptions, and nothing else, as keywords."""

    @pytest.mark.parametrize("function", [ck.run_contract, ck.run_contract_sync])
    def test_a_run_takes_every_option(self, function: Any) -> None:
        """run_contract() and run_contract_sync() take exactly the fields, keyword-only."""
        parameters = options_of(function)
        assert set(parameters) == FIELDS
        assert {parameter.kind for parameter in parameters.values()} == {
            inspect.Parameter.KEYWORD_ONLY
        }

    @pytest.mark.parametrize(
        "function", [ck.run_contract, ck.run_contract_sync, ck.contract_cases, contract_test_case]
    )
    def test_each_option_defaults_as_the_value_does(self, function: Any) -> None:
        """An entry point's option, when not given, is the value's default, by identity."""
        parameters = options_of(function)
        assert set(parameters) <= FIELDS
        defaults = RunOptions()
        for name, parameter in parameters.items():
            assert parameter.default is getattr(defaults, name), name

    def test_the_gate_takes_the_fields_of_its_own_value(self) -> None:
        """assert_contract()'s keywords are Gate's fields, the gate's one value, defaults alike."""
        parameters = options_of(ck.assert_contract)
        del parameters["report"]
        gate = Gate()
        assert set(parameters) == {field.name for field in dataclasses.fields(Gate)}
        for name, parameter in parameters.items():
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
            assert parameter.default is getattr(gate, name), name

    def test_the_default_timeout_is_the_default_by_identity(self) -> None:
        """No timeout= keeps DEFAULT_TIMEOUT itself, so that an implementation's own applies."""
        assert RunOptions().timeout is ck.DEFAULT_TIMEOUT
        assert RunOptions(timeout=5).timeout is not ck.DEFAULT_TIMEOUT


class TestChecks:
    """The value is checked where it is made, with the entry points' messages."""

    @pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "5", True])
    def test_a_malformed_timeout(self, timeout: object) -> None:
        """A timeout that is not a positive, finite number (or None) is a definition error."""
        with pytest.raises(
            ck.ContractDefinitionError,
            match=r"^timeout must be a positive, finite number of seconds or None, got ",
        ):
            RunOptions(timeout=cast("float", timeout))

    @pytest.mark.parametrize("max_concurrency", [0, -2, 1.5, True, "2"])
    def test_a_malformed_max_concurrency(self, max_concurrency: object) -> None:
        """max_concurrency must be an int of at least 1, and the message names what it got."""
        with pytest.raises(
            ValueError, match=r"^max_concurrency must be an int of at least 1, got "
        ):
            RunOptions(max_concurrency=cast("int", max_concurrency))

    def test_an_int_timeout_is_a_float(self) -> None:
        """A timeout given as an int is kept as the float the runner reads."""
        assert RunOptions(timeout=2).timeout == 2.0
        assert isinstance(RunOptions(timeout=2).timeout, float)


class TestMakers:
    """The command line and the plugin make the value; it goes whole to the plans."""

    def test_the_command_line_sets_every_option(self) -> None:
        """Each field but keep_tracebacks (for a debugger, not a run's verdict) has its flag."""
        arguments = build_parser().parse_args(
            [
                "run",
                "x.py",
                "--timeout",
                "2",
                "--concurrency",
                "3",
                "--reject-vacuous",
                "--probe-unsupported",
                "--check-isolation",
            ]
        )
        built = run_options(arguments)
        assert built == RunOptions(
            timeout=2.0,
            max_concurrency=3,
            reject_vacuous=True,
            probe_unsupported=True,
            check_isolation=True,
        )
        changed = {name for name in FIELDS if getattr(built, name) != getattr(RunOptions(), name)}
        assert changed == FIELDS - {"keep_tracebacks"}

    def test_the_plugin_and_the_command_line_make_the_same_value(self) -> None:
        """With no setting, `pytest --conformkit T` and `conformkit run T` run alike."""
        config = SimpleNamespace(
            option=SimpleNamespace(
                conformkit_targets=["x.py"], conformkit_installed=None, conformkit_backends=[]
            ),
            getini=lambda name: False if name == "conformkit_installed" else [],
        )
        plugin = pytest_plugin._Request(cast("pytest.Config", config)).options
        arguments = build_parser().parse_args(["run", "x.py"])
        arguments.reject_vacuous = arguments.probe_unsupported = False  # as no pyproject sets
        command_line = run_options(arguments)
        assert plugin == command_line
        assert plugin.timeout is command_line.timeout is ck.DEFAULT_TIMEOUT

    def test_collection_passes_the_value_whole(self) -> None:
        """Each collected pair's plan holds the very value it was collected with."""
        options = RunOptions(timeout=7.0, reject_vacuous=True, check_isolation=True)
        pairs = collect_modules([_demo], options=options)
        assert pairs
        assert all(pair.plan.options is options for pair in pairs)
