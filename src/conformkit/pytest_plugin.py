"""
The pytest plugin: contracts as pytest items, one per implementation, case and backend.

pytest loads it through the ``pytest11`` entry point, and it does nothing until a
run asks for contracts::

    pytest --conformkit tests/contracts.py --conformkit-backend asyncio --conformkit-backend trio

or, in the project's configuration, ``conformkit_targets`` (one target a line)
and ``conformkit_backends``. The targets are those of ``conformkit run``:
``pkg.contracts``, ``pkg.contracts:name``, ``path/to/file.py[:name]``;
``--conformkit-installed`` adds the installed entry points. Each item's ID is
``feature::Implementation::case[backend]``, the case ID being the one reports use.

:func:`contract_test` is the same without the plugin: one call in a test file
returns the test function, parametrized over the cases and backends.

``import conformkit`` never imports this module, nor pytest; this module imports
the core only when a run asks for contracts.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar, final

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from . import ContractCase, ContractSuite, FeatureImplementation
    from ._collect import Pair
    from ._runner import Backend
    from ._watchdog import Watch

_API = TypeVar("_API")
_CaseName = TypeVar("_CaseName", bound=str)

__all__ = [
    "ContractItem",
    "Contracts",
    "ImplementationContract",
    "contract_test",
    "pytest_addoption",
    "pytest_configure",
    "pytest_make_collect_report",
    "pytest_runtest_call",
    "pytest_sessionfinish",
    "pytest_unconfigure",
]

_MARKER: Final = "conformkit"
"""The marker every contract item carries: ``-m conformkit`` selects them alone."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformkit", "conformance contracts (conformkit)")
    group.addoption(
        "--conformkit",
        action="append",
        dest="conformkit_targets",
        default=[],
        metavar="TARGET",
        help="collect the contracts of TARGET, as `conformkit run TARGET` would (repeatable): "
        "pkg.contracts, pkg.contracts:name or path/to/file.py[:name]",
    )
    group.addoption(
        "--conformkit-installed",
        action="store_true",
        default=None,
        help="also collect what installed distributions publish in the entry-point group "
        "'conformkit.contracts'",
    )
    group.addoption(
        "--conformkit-backend",
        action="append",
        dest="conformkit_backends",
        default=[],
        choices=("asyncio", "trio"),
        help="run each contract case on this event loop (repeatable; default: asyncio)",
    )
    parser.addini(
        "conformkit_targets",
        type="linelist",
        default=[],
        help="targets whose contracts are collected when --conformkit names none",
    )
    parser.addini(
        "conformkit_installed",
        type="bool",
        default=False,
        help="also collect the contracts of installed entry points",
    )
    parser.addini(
        "conformkit_backends",
        type="linelist",
        default=[],
        help="event loops each contract case runs on (default: asyncio)",
    )


@final
class _Request:
    """What a run asked for: the targets, the installed entry points, the backends."""

    __slots__ = ("backends", "installed", "targets")

    def __init__(self, config: pytest.Config) -> None:
        self.targets: list[str] = list(
            config.option.conformkit_targets or config.getini("conformkit_targets")
        )
        installed = config.option.conformkit_installed
        self.installed = bool(
            config.getini("conformkit_installed") if installed is None else installed
        )
        backends = config.option.conformkit_backends or config.getini("conformkit_backends")
        # Each once, in the order asked: an item per backend, whatever was repeated.
        self.backends: list[Backend] = list(dict.fromkeys(backends or ["asyncio"]))

    @property
    def active(self) -> bool:
        return bool(self.targets) or self.installed


_REQUEST: Final = pytest.StashKey[_Request]()


def pytest_configure(config: pytest.Config) -> None:
    request = _Request(config)
    if not request.active:
        return  # inert: nothing of conformkit is imported
    from ._runner import check_backend

    for backend in request.backends:
        try:
            check_backend(backend)
        except (ValueError, ImportError) as error:
            raise pytest.UsageError(f"conformkit: {error}") from error
    config.stash[_REQUEST] = request
    config.addinivalue_line("markers", f"{_MARKER}: a conformkit contract case")
    import threading

    config.stash[_THREADS] = set(threading.enumerate())


_THREADS: Final = pytest.StashKey["set[Any]"]()
"""The threads running before the contracts ran."""
_STATUS: Final = pytest.StashKey[int]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """
    Once pytest has said everything, a thread a contract case left running that
    never returns (one its background work was woken from, on asyncio) does not
    keep the process from ending, as Python would wait for it at exit.
    """
    running = config.stash.get(_THREADS, None)
    if running is not None:
        from ._watchdog import leave_threads_behind

        leave_threads_behind(running, config.stash.get(_STATUS, 0))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Add the contracts to what the session collects, after its own arguments."""
    report: pytest.CollectReport = yield
    if isinstance(collector, pytest.Session) and report.passed:
        request = collector.config.stash.get(_REQUEST, None)
        if request is not None:
            assert isinstance(report.result, list)
            report.result.append(Contracts.from_parent(collector, request=request))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """
    While a contract case runs, a stage or background task stuck beyond what can be
    interrupted ends the session, as it ends ``conformkit run``: pytest could only
    wait for it, forever, its output captured. Under pytest-xdist the worker ends
    instead, and the item fails as one that crashed its worker.
    """
    if not isinstance(item, ContractItem):
        return (yield)
    from ._watchdog import set_stuck_hook

    set_stuck_hook(functools.partial(_stuck, item))
    try:
        return (yield)
    finally:
        set_stuck_hook(None)


def _stuck(item: pytest.Item, watch: Watch) -> None:
    """In the watchdog's thread: show where the code is stuck, past the capture, and end."""
    import os

    from ._watchdog import print_stuck

    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=True)  # so that it is seen
    try:
        print_stuck(watch)
    finally:
        sys.stderr.write(
            f"conformkit: error: {item.nodeid}: {watch.label()} could not be interrupted; "
            f"the pytest session was stopped\n"
        )
        sys.stderr.flush()
        os._exit(2)


@final
class Contracts(pytest.Collector):
    """The contracts a run asked for: imports the targets and pairs their suites."""

    def __init__(self, *, request: _Request, **kwargs: Any) -> None:
        super().__init__(name="conformkit", nodeid="conformkit", **kwargs)
        self.request = request

    def collect(self) -> list[ImplementationContract]:
        from ._collect import collect, installed_entry_points, target_module

        # Bare asserts in contract modules get pytest's introspection, as in test
        # modules: rewriting must be registered before the first import.
        names = [target_module(target) for target in self.request.targets]
        if self.request.installed:
            names += [entry.module for entry in installed_entry_points("--conformkit-installed")]
        fresh = sorted({name for name in names if name is not None and name not in sys.modules})
        if fresh:
            pytest.register_assert_rewrite(*fresh)
        pairs = collect(self.request.targets, installed=self.request.installed)
        return [
            ImplementationContract.from_parent(self, pair=pair, backends=self.request.backends)
            for pair in pairs
        ]

    def repr_failure(  # type: ignore[override]  # as pytest.Collector's own
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        return _repr_definition_error(excinfo) or super().repr_failure(excinfo)


@final
class ImplementationContract(pytest.Collector):
    """One implementation checked against the suite of its feature."""

    def __init__(self, *, pair: Pair, backends: Sequence[Backend], **kwargs: Any) -> None:
        nodeid = f"{pair.feature_id}::{pair.name}"
        super().__init__(name=pair.name, nodeid=nodeid, **kwargs)
        self.pair = pair
        self.backends = backends

    def collect(self) -> list[ContractItem]:
        from . import contract_cases

        cases = contract_cases(self.pair.implementation, self.pair.suite)
        return [
            ContractItem.from_parent(self, case=case, backend=backend, suite=self.pair.suite)
            for case in cases
            for backend in self.backends
        ]

    def repr_failure(  # type: ignore[override]  # as pytest.Collector's own
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        return _repr_definition_error(excinfo) or super().repr_failure(excinfo)


@final
class ContractItem(pytest.Item):
    """One case of one implementation on one backend; ``case[backend]`` by name."""

    def __init__(
        self,
        *,
        case: ContractCase[Any],
        backend: Backend,
        suite: ContractSuite[Any, Any],
        **kwargs: Any,
    ) -> None:
        name = f"{case.id}[{backend}]"
        super().__init__(name=name, nodeid=f"{kwargs['parent'].nodeid}::{name}", **kwargs)
        self.case = case
        self.backend = backend
        self.function = suite[case.id.partition("[")[0]]  # a family member's is the family's
        self.add_marker(_MARKER)
        reason = getattr(case.coverage, "reason", None)
        if reason is not None:
            self.add_marker(pytest.mark.skip(reason=reason))

    def runtest(self) -> None:
        __tracebackhide__ = True
        from ._testing import run_case

        run_case(self.case, self.backend)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: TracebackStyle | None = None,
    ) -> str | TerminalRepr:
        """The failure from the code under test on: pytest's frames are not the story."""
        if not self.config.getoption("fulltrace", False):
            excinfo.traceback = excinfo.traceback.cut(path=Path(__file__)).filter(excinfo)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[str, int | None, str]:
        """Where the case function is, and the implementation and case the item runs."""
        return (*_where(self.function), f"{self.case.implementation}::{self.name}")


def _where(function: object) -> tuple[str, int | None]:
    """The file and the line (from 0, as pytest counts) where a function is defined."""
    code = getattr(inspect.unwrap(function), "__code__", None)  # type: ignore[arg-type]
    if code is None:
        return "", None
    return code.co_filename, code.co_firstlineno - 1


def _repr_definition_error(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """The one line of a bad target or definition, without a traceback through conformkit."""
    from . import ContractDefinitionError
    from ._exceptions import UsageError

    if isinstance(excinfo.value, UsageError | ContractDefinitionError):
        return f"conformkit: {excinfo.value}"
    return None


def contract_test(
    implementations: FeatureImplementation[_API, _CaseName]
    | Iterable[FeatureImplementation[_API, _CaseName]],
    suite: ContractSuite[_API, _CaseName],
    *,
    backends: Sequence[Backend] = ("asyncio",),
) -> Callable[..., None]:
    """
    A test function that runs every case of each implementation on each backend.

    Assign it to a name that pytest collects, in a test file::

        test_text_contract = contract_test(implementations, suite, backends=("asyncio", "trio"))

    Its IDs are ``test_text_contract[MemoryText-missing-asyncio]``; an unsupported
    case is a skip with its declared reason. The definitions are checked now, so
    a mistake fails the collection of the file.

    :raises ContractDefinitionError: as :func:`conformkit.contract_cases` would.
    """
    from . import ContractDefinitionError, FeatureImplementation, contract_cases
    from ._runner import check_backend
    from ._testing import run_case

    chosen = [check_backend(backend) for backend in dict.fromkeys(backends)]
    if not chosen:
        raise ValueError("contract_test() needs at least one backend")
    if isinstance(implementations, FeatureImplementation):
        implementations = [implementations]
    params = [
        pytest.param(
            case,
            backend,
            id=f"{case.implementation}-{case.id}-{backend}",
            marks=[pytest.mark.skip(reason=reason)] if reason is not None else [],
        )
        for implementation in implementations
        for case in contract_cases(implementation, suite)
        for backend in chosen
        for reason in [getattr(case.coverage, "reason", None)]
    ]
    if not params:
        raise ContractDefinitionError(
            f"contract_test() got no implementation of {suite.feature.id!r}"
        )

    @pytest.mark.parametrize(("case", "backend"), params)
    def test(case: ContractCase[_API], backend: Backend) -> None:
        __tracebackhide__ = True
        run_case(case, backend)

    # Reported (a skip's location, say) at the line of the test file that called,
    # not here; its own frame is hidden from tracebacks.
    caller = sys._getframe(1)
    test.__code__ = test.__code__.replace(
        co_filename=caller.f_code.co_filename, co_firstlineno=caller.f_lineno
    )
    test.__module__ = caller.f_globals.get("__name__", test.__module__)
    return test
