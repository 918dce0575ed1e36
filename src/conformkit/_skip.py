"""``CaseUnsupported``, the one exception that needs :mod:`unittest`: imported on first use."""

from __future__ import annotations

import unittest
from typing import final

from ._exceptions import ConformkitError


@final
class CaseUnsupported(ConformkitError, unittest.SkipTest):
    """
    Raised by :meth:`ContractCase.run` for a case the implementation does not support.

    A case may raise it too, with a reason, when what the implementation declares
    through its API shows that the case's property does not apply to it (a store
    that keeps no such field, say). The case is then reported ``unsupported`` with
    that reason: a gap, never a pass, which ``require_full`` rejects. Raised from
    ``create`` or a cleanup, with no reason, or as a subclass, it fails the case,
    and :meth:`ContractCase.run` raises a :class:`ContractFailure` chained from
    it, which no test runner reads as a skip.

    Derives from :class:`unittest.SkipTest`, which both pytest and unittest report
    as a skip carrying the declared reason.
    """


# Shown as conformkit.CaseUnsupported, like every public name (see __init__.py),
# whichever way it was first imported.
CaseUnsupported.__module__ = "conformkit"
