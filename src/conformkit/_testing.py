"""
Test runners' side: a contract as a unittest TestCase, one test method per case;
and one case run so that a failure's traceback starts at the code under test.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._exceptions import ContractDefinitionError
from ._feature import API, CaseName
from ._implementation import DEFAULT_TIMEOUT, FeatureImplementation
from ._runner import Backend, ContractCase, check_backend, contract_cases
from ._suite import ContractSuite

if TYPE_CHECKING:
    import asyncio
    import unittest
    from types import TracebackType

# unittest leaves out of a failure's traceback the frames of modules that set this:
# the test method and run_case() below are not what failed.
__unittest = True


def contract_test_case(
    implementations: FeatureImplementation[API, CaseName]
    | Iterable[FeatureImplementation[API, CaseName]],
    suite: ContractSuite[API, CaseName],
    *,
    name: str | None = None,
    backend: Backend = "asyncio",
    timeout: float | None = DEFAULT_TIMEOUT,
) -> type[unittest.TestCase]:
    """
    A :class:`unittest.TestCase` with one test method per implementation and case.

    Assign it to a name in a test module, and unittest discovers it::

        TestText = contract_test_case(implementations, suite)

    Its methods are ``test_<implementation>_<case ID>`` (``test_MemoryText_missing``),
    so discovery, ``-k`` and every runner count the cases one by one. Each runs on
    an event loop of its own, without asyncio's debug mode (which
    ``IsolatedAsyncioTestCase`` turns on); an unsupported case is a skip with its
    declared reason. The definitions are checked now, when the module is imported.

    :param name: the class's name; ``TestExampleText`` for the feature ``example.text``.
    :param backend: ``"asyncio"`` or ``"trio"``.
    :param timeout: as for :func:`run_contract`.
    :raises ContractDefinitionError: as :func:`contract_cases` would, and when two
        cases would make the same method name.
    """
    import unittest  # only the code that builds a TestCase pays for it

    backend = check_backend(backend)
    if isinstance(implementations, FeatureImplementation):
        implementations = [implementations]
    class_name = name if name is not None else _class_name(suite.feature.id)
    if not isinstance(class_name, str) or not class_name.isidentifier():
        raise ContractDefinitionError(
            f"contract_test_case() needs a class name that is an identifier, got {class_name!r}"
        )
    methods: dict[str, Any] = {}
    shown: dict[str, str] = {}
    for implementation in implementations:
        for case in contract_cases(implementation, suite, timeout=timeout):
            method = _method_name(case)
            if method in methods:
                raise ContractDefinitionError(
                    f"{shown[method]} and {case.implementation} × {case.id} both make the test "
                    f"method {method!r}; give the implementations distinct names"
                )
            shown[method] = f"{case.implementation} × {case.id}"
            methods[method] = _test_method(case, backend, method, unittest)
    if not methods:
        raise ContractDefinitionError(
            f"contract_test_case() got no implementation of {suite.feature.id!r}"
        )
    caller = sys._getframe(1).f_globals.get("__name__", __name__)
    namespace = {
        "__module__": caller,
        "__qualname__": class_name,
        "__doc__": f"The contract {suite.feature.id!r}: a test per implementation and case.",
        **methods,
    }
    if backend == "asyncio":
        namespace["setUpClass"] = classmethod(_set_up_class)
    return type(class_name, (unittest.TestCase,), namespace)


_RUNNER = "_conformkit_runner"
"""The attribute of a contract's TestCase class that holds its asyncio event loop."""


def _set_up_class(cls: type[unittest.TestCase]) -> None:
    """
    Start the class's asyncio event loop, debug mode off, for its tests to share:
    starting one per test would cost each about as much as debug mode does.
    """
    import asyncio

    runner = asyncio.Runner(debug=False)
    cls.addClassCleanup(runner.close)
    setattr(cls, _RUNNER, runner)


def _class_name(feature_id: str) -> str:
    """``TestExampleText`` for ``example.text``."""
    words = [word for word in re.split(r"[^0-9A-Za-z]+", feature_id) if word]
    name = "Test" + "".join(word[0].upper() + word[1:] for word in words)
    return name if name.isidentifier() else "TestContract"


def _method_name(case: ContractCase[Any]) -> str:
    """``test_MemoryText_missing``; dots, which unittest reads as a path, become ``_``."""
    return f"test_{case.implementation}_{case.id}".replace(".", "_")


def _test_method(case: ContractCase[Any], backend: Backend, name: str, unittest: Any) -> Any:
    def test(self: unittest.TestCase) -> None:
        run_case(case, backend, getattr(self, _RUNNER, None))

    test.__name__ = test.__qualname__ = name
    test.__doc__ = None  # unittest would show a docstring's line in place of the ID
    reason = getattr(case.coverage, "reason", None)
    return test if reason is None else unittest.skip(reason)(test)


def run_case(
    case: ContractCase[Any], backend: Backend, runner: asyncio.Runner | None = None
) -> None:
    """
    Run a case on an event loop of its own, as :meth:`ContractCase.run_sync` does, or
    on ``runner``'s for asyncio; a failure's traceback starts at the code under test
    or the contract, not in the event loop and the runner around them.
    """
    __tracebackhide__ = True  # pytest's flag; unittest's is the module's __unittest
    try:
        if backend == "asyncio" and runner is not None:
            # Not runner.run(): the SIGINT handler it installs and restores at each
            # call would cost more than the case; the run installs its own.
            runner.get_loop().run_until_complete(case.run())
        else:
            case.run_sync(backend=backend)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit from the code under test fails its test too
        host = _host_paths()
        first = error.__traceback__
        while first is not None and first.tb_next is not None and _is_host(first, host):
            first = first.tb_next
        raise error.with_traceback(first)  # noqa: B904  # the same error, its frames trimmed


def _is_host(entry: TracebackType, host: list[Path]) -> bool:
    path = Path(entry.tb_frame.f_code.co_filename)
    return any(path == place or place in path.parents for place in host)


def _host_paths() -> list[Path]:
    """What runs a case around the code under test: the event loops and the runner."""
    here = Path(__file__).parent
    folders = []
    for name in ("anyio", "asyncio", "trio", "outcome", "sniffio"):
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if file:
            folders.append(Path(file).parent)
    return [*folders, here / "_runner", here / "_scope.py", Path(__file__)]


# Shown as conformkit.Name, like every export, whichever way it was first imported.
contract_test_case.__module__ = "conformkit"
