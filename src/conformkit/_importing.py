"""Import a module by its dotted name, saying on one line why it could not be."""

from __future__ import annotations

import importlib
import types

from ._explain import error_line

__all__ = ["ImportByNameError", "import_module_named"]


class ImportByNameError(Exception):
    """A module named by a dotted name could not be imported; the message says why."""

    def __init__(self, message: str, *, missing: bool) -> None:
        super().__init__(message)
        #: the module itself (or a parent package) does not exist: the name is wrong
        self.missing = missing


def import_module_named(name: str) -> types.ModuleType:
    """
    Import a module by its absolute dotted name.

    :raises ImportByNameError: ``missing`` when the module itself (or a parent
        package) is absent, so the name is wrong; otherwise the module exists but
        importing it failed, and the message gives the error on one line.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        # A dependency missing inside an existing module is an import failure instead.
        if error.name is not None and (name == error.name or name.startswith(error.name + ".")):
            raise ImportByNameError(f"no module named {error.name!r}", missing=True) from error
        raise ImportByNameError(error_line(error), missing=False) from error
    except Exception as error:
        raise ImportByNameError(error_line(error), missing=False) from error
