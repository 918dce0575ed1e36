"""Reusable laws to check inside any case: races, cancellation, round trips, call recording."""

from __future__ import annotations

from .._exceptions import LawViolation as LawViolation
from .._recording import Call as Call
from .._recording import CallRecorder as CallRecorder
from ._cancellation import assert_honours_cancellation as assert_honours_cancellation
from ._race import CallOutcome as CallOutcome
from ._race import RaceOutcomes as RaceOutcomes
from ._race import race as race
from ._race import race_in_threads as race_in_threads
from ._round_trip import assert_json_portable as assert_json_portable
from ._round_trip import json_portability_sample as json_portability_sample
from ._round_trip import round_trip as round_trip
from ._round_trip import round_trip_async as round_trip_async
from ._round_trip import strictly_equal as strictly_equal

__all__ = [
    "Call",
    "CallOutcome",
    "CallRecorder",
    "LawViolation",
    "RaceOutcomes",
    "assert_honours_cancellation",
    "assert_json_portable",
    "json_portability_sample",
    "race",
    "race_in_threads",
    "round_trip",
    "round_trip_async",
    "strictly_equal",
]

# Tracebacks, reprs and docs show ``conformkit.laws.Name``, not a private module.
for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith("conformkit."):
        _value.__module__ = __name__
del _name, _value
