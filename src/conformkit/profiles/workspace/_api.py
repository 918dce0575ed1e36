"""The workspace profile's API: the protocol a workspace implements and the errors it raises."""

from __future__ import annotations

import builtins
from typing import Protocol

from typing_extensions import Buffer

# --------------------------------------------------------------------------- API and errors


class WorkspaceAPI(Protocol):
    """
    What the consumers of a workspace rely on: bytes stored under POSIX-style paths.

    Directories are created by writing a path beneath them and exist until they
    are removed. Every method raises :class:`InvalidPath` for a path that is not
    in canonical form (see the module's documentation).
    """

    async def write(self, path: str, data: Buffer) -> None:
        """
        Store a copy of ``data`` at ``path``, replacing a file there; create missing parents.

        :raises IsADirectory: if ``path`` is a directory (``/`` included).
        :raises NotADirectory: if a parent of ``path`` is a file; nothing is created.
        """
        ...

    async def read(self, path: str) -> bytes | None:
        """
        Return the bytes of the file at ``path``, or ``None`` if nothing is there.

        A path beneath a file is missing too, and reads as ``None``.

        :raises IsADirectory: if ``path`` is a directory.
        """
        ...

    async def list(self, path: str) -> builtins.list[str]:
        """
        Return the names of the direct children of the directory ``path``, in code-point order.

        :raises NotFound: if nothing is at ``path``.
        :raises NotADirectory: if ``path`` is a file.
        """
        ...

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """
        Remove the file or directory at ``path``.

        A non-empty directory needs ``recursive=True``, which removes it and
        everything under it. ``/`` is never removed itself: removing it
        recursively removes everything under it.

        :raises NotFound: if nothing is at ``path``.
        :raises DirectoryNotEmpty: for a non-empty directory without ``recursive``;
            nothing is removed.
        """
        ...

    async def exists(self, path: str) -> bool:
        """Tell whether a file or a directory is at ``path``; ``/`` always exists."""
        ...


class WorkspaceError(Exception):
    """
    Base class of the errors a workspace raises.

    Each subclass also derives from the standard type that fits it, so that
    ``except FileNotFoundError`` or ``except ValueError`` work as expected. The
    :class:`OSError` subclasses take the usual ``(errno, strerror, filename)``
    arguments, the filename being the workspace path.
    """


class InvalidPath(WorkspaceError, ValueError):
    """A path is not in canonical form, or leads outside the workspace."""


class NotFound(WorkspaceError, FileNotFoundError):
    """Nothing is at the path that was listed or removed."""


class NotADirectory(WorkspaceError, NotADirectoryError):
    """A directory was needed where a file is: listing a file, writing beneath one."""


class IsADirectory(WorkspaceError, IsADirectoryError):
    """A file was needed where a directory is: reading or writing a directory."""


class DirectoryNotEmpty(WorkspaceError, OSError):
    """Removing a non-empty directory needs ``recursive=True``; ``errno`` is ``ENOTEMPTY``."""
