"""
Runners: run a suite against an implementation, one fresh scope per case.

The package, by job:

- ``public``: ``run_contract``, ``run_contract_sync``, ``contract_cases`` and
  ``ContractCase``, what users call;
- ``plan``: the implementation and the suite checked against each other,
  before anything runs (:class:`RunPlan`);
- ``execution``: one run of a plan (:class:`Execution`): its lanes take the
  cases, each in a fresh scope, and judge them;
- ``lanes``: a lane, which is the watchdog's :class:`~conformkit._watchdog.Watch`
  of its stages, and the run's one task that cancels a lane past its deadline;
- ``isolation``: the second API that ``check_isolation`` creates beside a case's;
- ``interrupts``: the run's SIGINT handler (Ctrl-C, and the watchdog's signal);
- ``results``: the reasons and statuses of cases that did not simply pass;
- ``sync_cases``: sync case functions, and the coroutines they drop.

Speed tricks, each where it is and what undoing it costs. The figures are those
of ``benchmarks/overhead.py`` unless another file is named; a trivial case costs
about 2 to 3 µs under ``run_contract``, so 50 ns is about 2% of it.

- ``case_result()`` (``_report.py``) fills in a slotted twin of
  :class:`CaseResult` and swaps its ``__class__``: a frozen dataclass's
  ``object.__setattr__`` per field costs about four times as much. Figure:
  ``run_contract, N=..., timeout=None`` and ``default deadlines``, per case.
- ``Execution._cancel_scope()`` makes the running backend's cancel scope class
  directly, found once by its cancellation exception (``_SCOPE_TYPES``):
  ``anyio.CancelScope()``'s ``__new__`` looks up the running event loop at each
  call. Figure: ``await case.run()`` per case, and its ratio to the floor.
- A run of one case (``ContractCase.run()``) opens no task group (background
  work runs in :class:`~conformkit._scope.OwnTasks`) and starts no watchdog task:
  its lane's scope gets the deadline only when a stage first waits
  (``Lane.wait()``). Figure: ``await case.run()``, at most 15 µs and 5 times the
  floor; a task group alone costs more (``one task group per case``).
- In a run of several cases one task (``watch_lanes()``) keeps every lane's
  deadline; arming a stage records when it is due. Figures: ``default
  deadlines`` against ``timeout=None``, and the ``10 ms sleep`` cases against a
  task group (at most 1.1 times it).
- Stages arm and disarm through the watch's methods: a call each, about 50 ns
  more than writing the fields to arm and 40 ns more to disarm on the machine
  measured, three arms and two disarms per trivial case (``benchmarks/compare.py``
  against the tree that wrote them: 0.16 to 0.29 µs per case under default
  deadlines). ``Watch.start_case()`` repeats ``start()``'s four writes rather
  than calling it, and the scope's ``close_soon`` and ``close`` are its methods
  themselves, not wrappers. The execution sets a lane's own ``deadline`` and
  resets its ``fired`` and ``timed`` as attributes, which would be two calls
  more per case. Figure: ``default deadlines``, per case.
- Closing a scope that awaits nothing (sync cleanups, no background work)
  returns its failures at once, not a coroutine (``close_soon``). Figure:
  ``run_contract`` per case, either column.
- The hot loop (``Execution._stretch()``) holds what is the same for every case
  in local names, and module-level names for enum members; it tells a sync
  ``create`` by its function and a plain value by its type (``plan.plain``),
  remembers which case functions are sync (``plan.sync_cases``), and skips the
  shape check of a type known clean (``CLEAN``; ``benchmarks/create_check.py``).
  Figure: ``run_contract`` per case.
- :func:`~conformkit._watchdog.interruptible` drives the watched coroutine
  itself: one type check per step that carries no exception. Figure:
  ``default deadlines`` against ``timeout=None``.
- The SIGINT handler is installed through ``_signal``, the C module: ``signal``
  wraps each handler and number in an enum, and every run installs and restores
  it. Figure: ``await case.run()`` per case.
- A run's lanes let go of what refers back to them when it ends
  (``Watch.release()``): the cycles would be left to the garbage collector,
  whose passes grow with everything alive. Figure: the growth from the smaller
  size to the larger, at most 1.25 times the floor's.
- Imports pinned inside functions: ``_recording`` (a run that records),
  ``_skip`` (it imports unittest), ``traceback`` (an error described),
  ``importlib.util``, ``threading`` and ``trio`` (when needed). Figure:
  ``benchmarks/import_time.py``, ``import conformkit`` at most 1.5 times
  ``import anyio``, and the core's row.
"""

from __future__ import annotations

from .execution import Execution as Execution
from .interrupts import set_ctrl_c_hook as set_ctrl_c_hook
from .plan import RunPlan as RunPlan
from .public import Backend as Backend
from .public import ContractCase as ContractCase
from .public import check_backend as check_backend
from .public import contract_cases as contract_cases
from .public import run_contract as run_contract
from .public import run_contract_sync as run_contract_sync
