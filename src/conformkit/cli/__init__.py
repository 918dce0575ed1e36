"""
The ``conformkit`` command line: ``run``, ``list``, ``demo`` and ``merge``.

Exit status: 0 when the gate holds, 1 when it fails, 2 for a usage or definition
error, which is reported on one line of stderr (``--debug`` adds the traceback).
"""

from __future__ import annotations

from ._parser import main as main

__all__ = ["main"]
