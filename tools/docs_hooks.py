"""
Hooks of the docs site (mkdocs.yml's ``hooks:``): the API reference page shows the
Sphinx roles of the docstrings (``:class:`Feature```, ``:meth:`defer```) as the code
they name, not as ``:class:`` before it.
"""

from __future__ import annotations

import re
from typing import Any, Final

_ROLE: Final = re.compile(r":(?:class|func|meth|attr|data|exc|mod|obj):(?=<code>)")
_SHORT: Final = re.compile(r"<code>~(?:[\w]+\.)*([\w]+)</code>")


def on_page_content(html: str, **kwargs: Any) -> str:
    """Drop each role's prefix, and show ``~pkg.mod.Name`` as ``Name``, as Sphinx does."""
    return _SHORT.sub(r"<code>\1</code>", _ROLE.sub("", html))
