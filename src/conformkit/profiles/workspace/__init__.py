"""
The workspace profile: a byte store with POSIX-style paths.

Passing it establishes that a store keeps the behaviour a consumer of a small
file tree relies on: a write is visible as soon as it resolves and replaces
what was there; the bytes are copied in and out, so neither the caller's
buffer nor the object a read returned can change what is stored; writing a
nested path creates its parents, which then persist until removed; listings
give the names of direct children in code-point order; reads of missing paths
give ``None`` while listing or removing them raises :class:`NotFound`;
removal is precise (``/a`` never takes ``/ab`` with it), refuses a non-empty
directory without ``recursive=True`` and removes nothing when it refuses, and
recursive removal of ``/`` empties the workspace but keeps ``/``; a file and a
directory never stand in for each other; and every operation rejects a path
that is not in canonical form, so no path can reach outside ``/``.

It does not establish atomicity of a write under a crash, durability across
processes, behaviour under concurrent writers, limits on sizes, names or depth,
or how names compare on a file system that folds case or normalises Unicode.

Paths are ``str``: ``/`` is the root, and every other path is ``/`` followed by
names joined by ``/`` (``/a/b.txt``). A name is non-empty, is not ``.`` or
``..``, and holds no ``/``, backslash or NUL and no lone surrogate.
"""

from __future__ import annotations

from ._api import DirectoryNotEmpty as DirectoryNotEmpty
from ._api import InvalidPath as InvalidPath
from ._api import IsADirectory as IsADirectory
from ._api import NotADirectory as NotADirectory
from ._api import NotFound as NotFound
from ._api import WorkspaceAPI as WorkspaceAPI
from ._api import WorkspaceError as WorkspaceError
from ._cases import WorkspaceCase as WorkspaceCase
from ._cases import feature as feature
from ._cases import suite as suite
from ._reference import LocalDirectoryWorkspace as LocalDirectoryWorkspace
from ._reference import (
    LocalDirectoryWorkspaceImplementation as LocalDirectoryWorkspaceImplementation,
)
from ._reference import MemoryWorkspace as MemoryWorkspace
from ._reference import MemoryWorkspaceImplementation as MemoryWorkspaceImplementation
from ._reference import SqliteWorkspace as SqliteWorkspace
from ._reference import SqliteWorkspaceImplementation as SqliteWorkspaceImplementation
from ._reference import implementations as implementations

__all__ = [
    "DirectoryNotEmpty",
    "InvalidPath",
    "IsADirectory",
    "LocalDirectoryWorkspace",
    "LocalDirectoryWorkspaceImplementation",
    "MemoryWorkspace",
    "MemoryWorkspaceImplementation",
    "NotADirectory",
    "NotFound",
    "SqliteWorkspace",
    "SqliteWorkspaceImplementation",
    "WorkspaceAPI",
    "WorkspaceCase",
    "WorkspaceError",
    "feature",
    "implementations",
    "suite",
]

# Each class shows as conformkit.profiles.workspace.Name, whichever submodule defines it:
# in reprs, tracebacks, reports, and where implementations are collected by module.
for _public in (
    DirectoryNotEmpty,
    InvalidPath,
    IsADirectory,
    LocalDirectoryWorkspace,
    LocalDirectoryWorkspaceImplementation,
    MemoryWorkspace,
    MemoryWorkspaceImplementation,
    NotADirectory,
    NotFound,
    SqliteWorkspace,
    SqliteWorkspaceImplementation,
    WorkspaceAPI,
    WorkspaceError,
):
    _public.__module__ = __name__
del _public
