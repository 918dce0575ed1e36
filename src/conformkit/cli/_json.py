"""The JSON output: the versioned report of docs/report-format.md, and the JSON writer."""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._matrix import Matrix

__all__ = ["dumps", "render_json"]


def render_json(matrix: Matrix) -> str:
    """The versioned JSON report (docs/report-format.md)."""
    return dumps(matrix.to_json()) + "\n"


def dumps(value: object) -> str:
    """
    ``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)``, character
    for character, for JSON data: dicts with string keys, lists, strings, finite
    numbers, booleans and ``None``: always strict JSON (RFC 8259), which has no NaN
    and no infinity. With an indent, the standard library encodes in Python, token by
    token through nested generators; this writes each line whole, about twice as
    fast, which a report of many thousands of cases notices.

    :raises TypeError: for a value that is not JSON data.
    :raises ValueError: for a float that is NaN or infinite.
    """
    chunks: list[str] = []
    append = chunks.append

    def scalar(item: object) -> str | None:
        """The JSON of a value that needs no line of its own, or ``None``."""
        if type(item) is str:
            return encode_basestring(item)
        if item is None:
            return "null"
        if type(item) is float:
            text = float.__repr__(item)
            if text[-1] > "9":  # "nan", "inf", "-inf", which strict JSON cannot hold
                raise ValueError(f"Out of range float values are not JSON compliant: {text}")
            return text
        if type(item) is bool:
            return "true" if item else "false"
        if type(item) is int:
            return int.__repr__(item)
        if type(item) is list and not item:
            return "[]"
        if type(item) is dict and not item:
            return "{}"
        return None

    def walk(item: object, indent: str) -> None:
        text = scalar(item)
        if text is not None:
            append(text)
            return
        inner = indent + "  "
        separator = ",\n" + inner
        if type(item) is dict:
            append("{\n" + inner)
            first = True
            for key, member in item.items():
                if type(key) is not str:
                    raise TypeError(f"keys must be strings, not {type(key).__name__}")
                if first:
                    first = False
                else:
                    append(separator)
                text = scalar(member)
                if text is None:
                    append(encode_basestring(key) + ": ")
                    walk(member, inner)
                else:
                    append(encode_basestring(key) + ": " + text)
            append("\n" + indent + "}")
        elif type(item) is list:
            if all(type(member) is str for member in item):
                append("[\n" + inner + separator.join(map(encode_basestring, item)))
            else:
                append("[\n" + inner)
                first = True
                for member in item:
                    if first:
                        first = False
                    else:
                        append(separator)
                    walk(member, inner)
            append("\n" + indent + "]")
        else:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")

    walk(value, "")
    return "".join(chunks)
