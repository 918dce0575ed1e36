"""
Text that consoles and files can hold: control characters shown as escapes, and
lone surrogates, which no encoding can write, replaced.
"""

from __future__ import annotations

import re
from typing import Final

# C0 and C1 controls but tab and newline, lone surrogates and the noncharacters
# U+FFFE and U+FFFF: shown as escapes, never sent to a terminal or written into a document.
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def escape_control(match: re.Match[str]) -> str:
    """The escape that shows a matched character: ``\\x1b``, ``\\ud800``."""
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters (but tab and newline) shown as escapes."""
    return _CONTROL.sub(escape_control, text)


def clean(text: str) -> str:
    """``text`` without lone surrogates, which no file encoding can hold."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)
