"""
The ``conformkit`` command line: ``run``, ``list``, ``demo``, ``merge`` and ``audit``.

Exit status: 0 when the gate holds, 1 when it fails, 2 for a usage or definition
error, which is reported on one line of stderr (``--debug`` adds the traceback),
130 after Ctrl-C and 143 after SIGTERM.

Its private modules, in the order a command uses them: ``_parser`` (the
arguments, and :func:`main`), ``_config`` (the project's ``[tool.conformkit]``
in ``pyproject.toml``), ``_commands`` (each command, and the runner of
many pairs; the core's ``conformkit._collect`` turns targets into pairs),
``_matrix`` (the report of a run: each case's outcome, the baseline's marks and
the gate's verdict; a leaf, which imports nothing else of the command line but
``_characters``), ``_merge`` (the merge of shards' reports), ``_baseline``
(known failures), ``_outcome`` (what the report says of each case, worded
once), ``_grid`` (a feature's cases by its implementations, as the formats draw
the matrix), ``_outputs`` (the formats a command writes and where, files
written whole or not at all), ``_console`` (the console, whatever its encoding,
and the progress line), ``_characters`` (text that consoles and files can
hold), ``_interrupt`` (SIGTERM taken as Ctrl-C, and a stop that always ends)
and one module per format: ``_text``, ``_json`` (which reads reports back too),
``_junit``, ``_markdown``, ``_html``, chosen in ``_formats``.
"""

from __future__ import annotations

from ._parser import main as main

__all__ = ["main"]

main.__module__ = __name__  # shown as conformkit.cli.main, not by its private module
