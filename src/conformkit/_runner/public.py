"""The runner's public functions: ``run_contract``, ``run_contract_sync`` and ``contract_cases``."""

from __future__ import annotations

import functools
from typing import Final, Generic, Literal, final

import anyio

from .._exceptions import ContractFailure, LawViolation
from .._feature import API, CaseName, Coverage, Unsupported
from .._implementation import DEFAULT_TIMEOUT, FeatureImplementation
from .._report import CaseStatus, ContractReport
from .._suite import ContractSuite
from .execution import Execution
from .plan import RunPlan
from .results import misread

_PASSED: Final = CaseStatus.PASSED
_UNSUPPORTED: Final = CaseStatus.UNSUPPORTED

Backend = Literal["asyncio", "trio"]
_BACKENDS: Final = ("asyncio", "trio")


def _check_concurrency(max_concurrency: object) -> int:
    if (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or (max_concurrency < 1)
    ):
        raise ValueError(f"max_concurrency must be an int of at least 1, got {max_concurrency!r}")
    return max_concurrency


async def run_contract(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_concurrency: int = 1,
    reject_vacuous: bool = False,
    probe_unsupported: bool = False,
    keep_tracebacks: bool = False,
    check_isolation: bool = False,
) -> ContractReport:
    """
    Run every case of ``suite`` against ``implementation`` and report the outcome.

    Each supported case gets a fresh scope: ``create``, the case, then disposal,
    always. Unsupported cases are reported and never run. Results follow the
    feature's declared case order, whatever the concurrency.

    What ``create`` returned is checked before the case runs, and a mismatch
    fails the case at ``create``: when the feature's API type is a Protocol or
    an ABC, the object must have each member it declares, async where it says
    ``async def``; ``None`` fails unless the API type admits it; and an object
    that is still the API of another live scope of the run fails
    (``isolation broken: ...``).

    :param timeout: seconds each stage (create, the case, each cleanup) may take;
        by default, the implementation's own ``timeout`` (:data:`DEFAULT_TIMEOUT`,
        5 seconds, unless it declares another). A stage that overruns, or returns
        after its deadline, fails the case with a reason naming the feature, the
        case and the stage; a stuck one is interrupted where Python allows.
        ``None`` disables the deadlines.
    :param max_concurrency: how many cases may run at once.
    :param reject_vacuous: record the calls each case makes through the API (the
        case gets a recording proxy) and fail a case that passed without calling
        it: ``"vacuous: the case never called the API"``. The report then lists
        the API's operations that no case called, in ``report.unexercised``.
    :param probe_unsupported: run the cases declared unsupported too. They stay
        ``unsupported``; one that passes is marked ``stale`` ("declared
        unsupported but passed"), which ``assert_contract(reject_stale=True)``
        rejects.
    :param keep_tracebacks: keep the live tracebacks of the exceptions in the
        report, frames and local variables included, for a debugger. By default
        a report keeps each exception with its traceback as text (its
        ``to_dict()``), and lets its frames go: a report of many failures would
        otherwise keep every failing case's local variables alive.
    :param check_isolation: in each case's create stage, once the case's API is
        created, call ``create`` once more on a scope of its own and dispose of
        that second API at once: a ``create`` that returns an object another
        live scope has as its API fails the case (``isolation broken: ...``)
        even at ``max_concurrency=1``, where no two cases' scopes are live
        together. Each case then costs two ``create`` calls.
    :raises ContractDefinitionError: before anything runs, if the suite and the
        implementation do not belong to the same feature, the suite lacks a case
        or the coverage is incomplete.
    :raises KeyboardInterrupt: as itself, once every cleanup ran, on Ctrl-C or
        when the code under test raises it; the failures seen on the way out are
        in its ``__notes__``. Any other ``BaseException`` fails its case.
    """
    plan = RunPlan(
        implementation,
        suite,
        timeout,
        reject_vacuous=reject_vacuous,
        probe_unsupported=probe_unsupported,
        keep_tracebacks=keep_tracebacks,
        check_isolation=check_isolation,
    )
    execution = Execution(plan, plan.case_ids)
    await execution.run(_check_concurrency(max_concurrency))
    return execution.report()


def check_backend(backend: object) -> Backend:
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be 'asyncio' or 'trio', got {backend!r}")
    if backend == "trio" and not _installed("trio"):
        raise ModuleNotFoundError(
            "backend 'trio' needs trio installed: pip install 'conformkit[trio]'", name="trio"
        )
    return backend


def _installed(name: str) -> bool:
    import importlib.util  # imported on the rare path that needs it, not with conformkit

    return importlib.util.find_spec(name) is not None


def run_contract_sync(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    backend: Backend = "asyncio",
    timeout: float | None = DEFAULT_TIMEOUT,
    max_concurrency: int = 1,
    reject_vacuous: bool = False,
    probe_unsupported: bool = False,
    keep_tracebacks: bool = False,
    check_isolation: bool = False,
) -> ContractReport:
    """
    :func:`run_contract` from synchronous code, on an event loop of its own.

    :param backend: ``"asyncio"`` or ``"trio"`` (which needs the ``trio`` extra).
    """
    backend = check_backend(backend)
    runner = functools.partial(
        run_contract,
        implementation,
        suite,
        timeout=timeout,
        max_concurrency=max_concurrency,
        reject_vacuous=reject_vacuous,
        probe_unsupported=probe_unsupported,
        keep_tracebacks=keep_tracebacks,
        check_isolation=check_isolation,
    )
    return anyio.run(runner, backend=backend)


@final
class ContractCase(Generic[API]):
    """
    One case of one implementation, for a test runner's loop.

    ``str(case)`` is the stable case ID, so ``ids=str`` names pytest parameters.

    :ivar id: the stable case ID.
    :ivar feature_id: the feature's ID.
    :ivar implementation: a readable name of the implementation.
    :ivar coverage: ``Supported()``, or ``Unsupported(reason)``.
    """

    __slots__ = ("_plan", "coverage", "feature_id", "id", "implementation")

    def __init__(self, plan: RunPlan[API], case_id: str) -> None:
        self._plan = plan
        self.id = case_id
        self.feature_id = plan.feature_id
        self.implementation = plan.name
        self.coverage: Coverage = plan.coverage[case_id]

    def __repr__(self) -> str:
        return f"<ContractCase {self.id!r} of {self.implementation} ({self.feature_id!r})>"

    def __str__(self) -> str:
        return self.id

    async def run(self) -> None:
        """
        Run the case exactly as :func:`run_contract` would; return if it passed.

        :raises CaseUnsupported: a :class:`unittest.SkipTest` carrying the declared
            reason, when the case is outside the implementation's coverage, or the
            case's own reason, when it raised :class:`CaseUnsupported` itself.
        :raises Exception: the case's own error when it failed or was unavailable;
            an exception group when cleanups failed; :class:`TimeoutError` when a
            stage overran.
        :raises ContractFailure: when the case failed with an error that a test
            runner would read as something else than a failure (a skip, an
            expected failure, an exit, a cancellation, any ``BaseException`` that
            is not an ``Exception``), chained from that error, its message the
            case's reason.
        """
        __tracebackhide__ = True  # pytest shows the case's frames, not this one
        if isinstance(self.coverage, Unsupported):
            from .._skip import CaseUnsupported  # imports unittest: only when needed

            raise CaseUnsupported(f"{self.implementation}: {self.coverage.reason}")
        execution = Execution(self._plan, (self.id,))
        await execution.run(1)
        result = execution.results[0]
        if result is None:
            execution.report()  # raises, saying the result was lost
            raise AssertionError("unreachable")
        if result.status is _PASSED and not execution.stragglers:
            return
        if result.status is _UNSUPPORTED and not execution.stragglers:
            from .._skip import CaseUnsupported  # it was raised: already imported

            raise CaseUnsupported(f"{self.implementation}: {result.reason}")
        late_errors = execution.released(execution.late_errors())
        errors = [
            *([result.error] if result.error is not None else []),
            *result.cleanup_errors,
            *late_errors,
        ]
        if not errors:
            raise LawViolation(f"case {self.id!r}: {result.reason}")
        if len(errors) == 1 and result.error is not None:
            if misread(result.error):
                raise ContractFailure(
                    f"{self.implementation}: {result.reason}", execution.report()
                ) from result.error
            raise errors[0]
        raise BaseExceptionGroup(result.reason or f"case {self.id!r} failed", errors)

    def run_sync(self, *, backend: Backend = "asyncio") -> None:
        """:meth:`run` from synchronous code, on an event loop of its own."""
        __tracebackhide__ = True
        anyio.run(self.run, backend=check_backend(backend))


def contract_cases(
    implementation: FeatureImplementation[API, CaseName],
    suite: ContractSuite[API, CaseName],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    reject_vacuous: bool = False,
    check_isolation: bool = False,
) -> list[ContractCase[API]]:
    """
    Return one :class:`ContractCase` per declared case, for any test runner's loop.

    The definitions are checked now, so a mistake fails at collection time::

        @pytest.mark.parametrize("case", contract_cases(MemoryText(), suite), ids=str)
        async def test_text(case: ContractCase[TextAPI]) -> None:
            await case.run()

    A family yields one case per member the implementation claims.

    :param reject_vacuous: as for :func:`run_contract`; a vacuous case raises
        :exc:`LawViolation`.
    :param check_isolation: as for :func:`run_contract`. The cases of one call
        share a run: one whose ``create`` returns the API of another case still
        running (``asyncio.gather`` of two ``case.run()``) fails too.
    :raises ContractDefinitionError: as :func:`run_contract` would.
    """
    # Each case's error is raised at once, to a test runner or a debugger that
    # wants its frames: its traceback stays live.
    plan = RunPlan(
        implementation,
        suite,
        timeout,
        reject_vacuous=reject_vacuous,
        keep_tracebacks=True,
        check_isolation=check_isolation,
        shared=True,
    )
    return [ContractCase(plan, case_id) for case_id in plan.case_ids]


# Shown as conformkit.Name, like every export, whichever way it was first imported.
for _export in (ContractCase, contract_cases, run_contract, run_contract_sync):
    _export.__module__ = "conformkit"
del _export
