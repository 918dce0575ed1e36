"""
The project's settings: the ``[tool.conformkit]`` table of its ``pyproject.toml``.

The file is the nearest ``pyproject.toml`` with such a table, from the current
directory upwards, as ruff and pytest find theirs. Its keys are the command
line's options, spelt as they are there; an option given on the command line
wins over the file. :mod:`tomllib` is imported only once a file is found.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, final

from .._exceptions import UsageError
from .._feature import suggest

__all__ = ["AUDIT_KEYS", "GATE_KEYS", "Settings", "apply_gate", "find_settings"]

GATE_KEYS: Final = (
    "require-full",
    "require-exercised",
    "reject-vacuous",
    "probe-unsupported",
    "reject-stale",
)
"""The keys of ``[tool.conformkit]``: ``conformkit run``'s gate options, each true or false."""

AUDIT_KEYS: Final = ("features", "suites", "protocols", "exempt", "exempt-protocols")
"""The keys of ``[tool.conformkit.audit]``: ``conformkit audit``'s arguments."""

_TABLE: Final = "[tool.conformkit]"
_AUDIT_TABLE: Final = "[tool.conformkit.audit]"


@final
@dataclass(frozen=True, slots=True)
class Settings:
    """
    What a project's ``[tool.conformkit]`` table says, checked.

    :ivar path: the ``pyproject.toml`` it was read from.
    :ivar gate: the gate options it sets, by option name (``"require-full"``).
    :ivar audit: the ``audit`` table's values, by key: strings, and for the
        exemptions a dict of strings.
    """

    path: Path
    gate: dict[str, bool] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)


def find_settings(start: Path | None = None) -> Settings | None:
    """
    The settings of the nearest ``pyproject.toml`` with a ``[tool.conformkit]``
    table, from ``start`` (the current directory) upwards; ``None`` if there is none.

    :raises UsageError: for a ``pyproject.toml`` on the way that is not valid
        TOML, or a table with an unknown key or a value of the wrong type, each
        named with the file.
    """
    folder = (start or Path(os.getcwd())).resolve()
    for directory in (folder, *folder.parents):
        path = directory / "pyproject.toml"
        if not path.is_file():
            continue
        table = _tool_table(path)
        if table is not None:
            return _check(table, path)
    return None


def _tool_table(path: Path) -> object:
    import tomllib  # only once a pyproject.toml is found

    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from error
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path} is not valid TOML: {error}") from error
    tool = data.get("tool")
    return tool.get("conformkit") if isinstance(tool, dict) else None


def _check(table: object, path: Path) -> Settings:
    if not isinstance(table, dict):
        raise UsageError(f"{path}: tool.conformkit must be a table, got {table!r}")
    gate: dict[str, bool] = {}
    audit: dict[str, Any] = {}
    for key, value in table.items():
        if key == "audit":
            audit = _check_audit(value, path)
        elif key in GATE_KEYS:
            if not isinstance(value, bool):
                raise UsageError(
                    f"{path}: {_TABLE} {key} must be true or false, got {_toml(value)}"
                )
            gate[key] = value
        else:
            raise _unknown(key, path, _TABLE, (*GATE_KEYS, "audit"))
    return Settings(path, gate, audit)


def _check_audit(table: object, path: Path) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise UsageError(f"{path}: tool.conformkit.audit must be a table, got {_toml(table)}")
    audit: dict[str, Any] = {}
    for key, value in table.items():
        if key in ("features", "suites", "protocols"):
            if not isinstance(value, str) or not value.strip():
                raise UsageError(
                    f"{path}: {_AUDIT_TABLE} {key} must be a dotted module name, got {_toml(value)}"
                )
            audit[key] = value
        elif key in ("exempt", "exempt-protocols"):
            if not isinstance(value, dict):
                raise UsageError(
                    f"{path}: {_AUDIT_TABLE} {key} must be a table of names and reasons, "
                    f"got {_toml(value)}"
                )
            for name, reason in value.items():
                if not isinstance(reason, str) or not reason.strip():
                    raise UsageError(
                        f"{path}: {_AUDIT_TABLE} {key}.{_toml(name)} needs a non-empty "
                        f"reason, got {_toml(reason)}"
                    )
            audit[key] = dict(value)
        else:
            raise _unknown(key, path, _AUDIT_TABLE, AUDIT_KEYS)
    return audit


def _unknown(key: str, path: Path, table: str, known: tuple[str, ...]) -> UsageError:
    hint = suggest(key, known) or suggest(key.replace("_", "-"), known)
    return UsageError(f"{path}: unknown key {key!r} in {table}{hint} (known: {', '.join(known)})")


def _toml(value: object) -> str:
    """A value as TOML spells it, for messages: ``true``, ``"yes"``, ``1``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def apply_gate(arguments: Any, settings: Settings | None) -> None:
    """
    Settle each gate option of ``arguments``: the command line's, else the
    file's, else false.
    """
    for key in GATE_KEYS:
        attribute = key.replace("-", "_")
        if getattr(arguments, attribute, None) is None:
            chosen = False if settings is None else settings.gate.get(key, False)
            setattr(arguments, attribute, chosen)
