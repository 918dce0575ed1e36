"""The output formats: their names, the suffixes that imply them, and the renderer of each."""

from __future__ import annotations

TYPE_CHECKING = False  # as typing's, which `conformkit --help` does not load

if TYPE_CHECKING:
    from typing import Final

    from ._matrix import Matrix

FORMATS: Final = ("text", "json", "junit", "markdown", "html")
"""The formats ``--format`` takes."""

SUFFIXES: Final = {
    ".txt": "text",
    ".log": "text",
    ".json": "json",
    ".xml": "junit",
    ".md": "markdown",
    ".html": "html",
    ".htm": "html",
}
"""The format an ``--output`` path implies when no ``--format`` precedes it."""


def render(
    format: str,
    matrix: Matrix,
    *,
    verbosity: int = 0,
    colour: bool = False,
    matrix_view: bool = False,
) -> str:
    """Render a run in one of :data:`FORMATS`; a format's module loads when it is used."""
    if format == "json":
        from ._json import render_json

        return render_json(matrix)
    if format == "junit":
        from ._junit import render_junit

        return render_junit(matrix)
    if format == "markdown":
        from ._markdown import render_markdown

        return render_markdown(matrix)
    if format == "html":
        from ._html import render_html

        return render_html(matrix)
    from ._text import render_text

    return render_text(matrix, verbosity=verbosity, colour=colour, matrix_view=matrix_view)
