"""The workspace profile's case names, its feature and suite, and the cases."""

from __future__ import annotations

import builtins
import errno
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any, Final, Literal, get_args

from ..._feature import Feature
from ..._suite import ContractSuite
from ..._util import short_repr
from .._support import (
    NamedError,
    PointAt,
)
from ._api import (
    DirectoryNotEmpty,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    NotFound,
    WorkspaceAPI,
)

# --------------------------------------------------------------------------- case names

WorkspaceCase = Literal[
    "read_your_writes",
    "missing_reads_none",
    "overwrite_replaces",
    "bytes_cloned_on_write",
    "bytes_cloned_on_read",
    "nested_write_creates_parents",
    "listing_names_direct_children",
    "listing_is_sorted",
    "file_directory_conflicts_raise",
    "missing_list_and_remove_raise",
    "remove_is_precise",
    "remove_non_empty_needs_recursive",
    "remove_root_keeps_root",
    "invalid_paths_rejected",
]
"""The names of the profile's cases."""


# --------------------------------------------------------------------------- feature and suite

feature = Feature[WorkspaceAPI, WorkspaceCase](
    "conformkit.profiles.workspace",
    cases=get_args(WorkspaceCase),
    description=(
        "A byte store with POSIX-style paths rooted at '/': files hold bytes, directories "
        "are created by writing beneath them, listings name direct children in code-point "
        "order, and removal of a non-empty directory needs recursive=True."
    ),
    does_not_establish=(
        "Atomicity of a write under a crash, durability across processes, behaviour under "
        "concurrent writers, limits on file size, name length or depth, and how names compare "
        "on a file system that folds case or normalises Unicode."
    ),
)

suite = ContractSuite(feature)


# --------------------------------------------------------------------------- cases

_LARGE: Final = bytes(range(256)) * 1024  # 256 KiB: more than any one buffer or page
_SEE: Final = PointAt("docs/profile-workspace.md#failure-modes")

_INVALID_PATHS: Final = (
    "",
    "relative.txt",
    "a/b",
    "/a/",
    "/a//b",
    "//a",
    "/.",
    "/a/./b",
    "/..",
    "/../escape.txt",
    "/a/../../escape.txt",
    "/a\\b",
    "/..\\escape.txt",
    "/a\x00b",
    "/\ud800",
)


_INVALID: Final = NamedError(InvalidPath, (ValueError,))
_NOT_FOUND: Final = NamedError(NotFound, (FileNotFoundError,))
_NOT_A_DIRECTORY: Final = NamedError(NotADirectory, (NotADirectoryError,))
_IS_A_DIRECTORY: Final = NamedError(IsADirectory, (IsADirectoryError,))
# EEXIST: what rmdir() of a non-empty directory sets on some systems.
_NOT_EMPTY: Final = NamedError(DirectoryNotEmpty, (OSError,), (errno.ENOTEMPTY, errno.EEXIST))


async def _raises(
    expected: NamedError, call: str, operation: Callable[[], Awaitable[object]]
) -> Exception:
    """Await ``operation()`` and return the ``expected`` error it raises; fail otherwise."""
    try:
        outcome = await operation()
    except Exception as exc:
        if expected.matches(exc):
            return exc
        raise AssertionError(f"expected {call} to raise {expected}, it raised {exc!r}") from exc
    raise AssertionError(f"expected {call} to raise {expected}, it returned {outcome!r}")


# What the cases write before they check anything. read_your_writes writes each top-level
# path here, and nested_write_creates_parents each nested one, so that the case a blocked
# case names as the owner of a refused write fails on that same write.
_MISSING_SETUP: Final = ("/dir/file.txt",)
_OVERWRITTEN: Final = ("/overwritten.txt",)
_READ_SETUP: Final = ("/data.bin",)
_REFUSAL_SETUP: Final = ("/file.txt",)
_PRECISION_PATHS: Final = (
    "/a/x.txt",
    "/a/x.txt.bak",
    "/a/sub/y.txt",
    "/ab/z.txt",
    "/a.txt",
    "/a-b/w.txt",
)
# U+FF5E (a fullwidth tilde) sorts before U+1F600 (an emoji) by code point, and after it by
# UTF-16 code unit, as Java and JavaScript compare strings.
_LISTED_NAMES: Final = (
    "zulu",
    "9",
    "\U0001f600",
    "Alpha",
    "mid",
    "été",
    "10",
    "\uff5e",
    "_x",
    "beta",
    "a b",
)
_SORTED_PATHS: Final = tuple(
    "/mid/inner.txt" if name == "mid" else f"/{name}" for name in _LISTED_NAMES
)
_NAMES_PATHS: Final = tuple(f"/names/{name}" for name in _LISTED_NAMES)
_CONFLICT_SETUP: Final = ("/d/f.txt",)
_REFILL: Final = ("/a/q/r.txt",)
_NOT_EMPTY_SETUP: Final = ("/docs/a.txt", "/docs/sub/b.txt")
_ROOT_SETUP: Final = ("/a.txt", "/d/e/f.txt")
_INVALID_SETUP: Final = ("/a/kept.txt",)
_SETUP_PATHS: Final = (
    *_MISSING_SETUP,
    *_OVERWRITTEN,
    *_READ_SETUP,
    *_REFUSAL_SETUP,
    *_PRECISION_PATHS,
    *_SORTED_PATHS,
    *_NAMES_PATHS,
    *_CONFLICT_SETUP,
    *_REFILL,
    *_NOT_EMPTY_SETUP,
    *_ROOT_SETUP,
    *_INVALID_SETUP,
)
_TOP_LEVEL_SETUP: Final = tuple(dict.fromkeys(p for p in _SETUP_PATHS if p.count("/") == 1))
_NESTED_SETUP: Final = tuple(dict.fromkeys(p for p in _SETUP_PATHS if p.count("/") > 1))
_FIRST_WRITE: Final = ("/notes.txt", b"first note")  # read_your_writes' first


async def _setup(api: WorkspaceAPI, paths: Iterable[str]) -> None:
    """Write each path (its own name as bytes); a write that fails blocks the case."""
    for path in paths:
        try:
            await api.write(path, path.encode())
        except Exception as exc:
            owner = await _owner_of_refused_write(api, path)
            raise AssertionError(f"blocked: writing {path!r} raised {exc!r}; {owner}") from exc


async def _owner_of_refused_write(api: WorkspaceAPI, path: str) -> str:
    """
    Who owns a refused setup write, as the end of a blocked reason: read_your_writes for a
    top-level path, or when a plain top-level write fails too; else nested_write_creates_parents.
    """
    if path.count("/") == 1:
        return "read_your_writes owns that"
    probe, data = _FIRST_WRITE
    try:
        await api.write(probe, data)
    except Exception as exc:
        return f"read_your_writes owns that: write({probe!r}, ...) raised {exc!r} too"
    return "nested_write_creates_parents owns that"


async def _expect_read(api: WorkspaceAPI, path: str, expected: bytes, when: str) -> None:
    got = await api.read(path)
    if got != expected:
        raise AssertionError(
            f"expected read({path!r}) {when} to give {short_repr(expected)}, got {short_repr(got)}"
        )


def _names_of(listing: object) -> builtins.list[Any] | None:
    """The entries of what ``list()`` returned, whatever iterable it is; ``None`` if none."""
    if isinstance(listing, Iterable) and not isinstance(listing, str | bytes):
        return builtins.list(listing)
    return None


async def _expect_names(api: WorkspaceAPI, path: str, expected: list[str], when: str) -> list[str]:
    """
    The names ``list(path)`` gives, which must be ``expected`` in some order: for the cases
    whose property is the whole listing. Whether they come in a ``list`` is
    listing_names_direct_children's to check, and only its.
    """
    got = await api.list(path)
    names = _names_of(got)
    if names is None or sorted(names) != sorted(expected):
        raise AssertionError(
            f"expected list({path!r}) {when} to give the names {sorted(expected)!r}, in any "
            f"order; got {got!r}"
        )
    return names


async def _expect_listed(
    api: WorkspaceAPI,
    path: str,
    when: str,
    *,
    present: Iterable[str] = (),
    absent: Iterable[str] = (),
) -> None:
    """
    Check that ``list(path)`` gives each name in ``present`` and none in ``absent``: for the
    cases whose property is about those names. Which other names a listing gives (a
    directory marker, say) is listing_names_direct_children's to check, and only its.
    """
    got = await api.list(path)
    names = _names_of(got)
    present, absent = builtins.list(present), builtins.list(absent)
    for entry in names or ():
        name = entry.rstrip("/").rsplit("/", 1)[-1] if isinstance(entry, str) else entry
        if entry != name and name in present + absent:  # 'sub/' or '/a/sub' for 'sub'
            raise AssertionError(
                f"blocked: list({path!r}) {when} gives {entry!r} for the name {name!r}; "
                f"listing_names_direct_children owns that a listing gives names, not paths"
            )
    if (
        names is None
        or any(name not in names for name in present)
        or any(name in names for name in absent)
    ):
        wanted = " and ".join(
            part
            for part in (
                ", ".join(map(repr, present)),
                "not " + ", ".join(map(repr, absent)) if absent else "",
            )
            if part
        )
        raise AssertionError(f"expected list({path!r}) {when} to give {wanted}, got {got!r}")


async def _expect_exists(api: WorkspaceAPI, path: str, expected: bool, when: str) -> None:
    """Whether ``exists(path)`` is truthy as expected: that it is a bool is read_your_writes'."""
    got = await api.exists(path)
    if bool(got) is not expected:
        raise AssertionError(f"expected exists({path!r}) {when} to be {expected}, got {got!r}")


@suite.case("read_your_writes")
async def _read_your_writes(api: WorkspaceAPI) -> None:
    with _SEE:
        written: dict[str, bytes] = {}
        for path, data in (
            _FIRST_WRITE,
            ("/binary.bin", bytes(range(256))),
            ("/empty", b""),
            ("/large.bin", _LARGE),
            *((path, path.encode()) for path in _TOP_LEVEL_SETUP),  # each name the cases use
        ):
            await api.write(path, data)
            await _expect_read(api, path, data, "right after writing it")
            await _expect_exists(api, path, True, "right after writing it")
            written[path] = data
            for earlier, kept in written.items():
                await _expect_read(api, earlier, kept, f"after writing {path!r}")
        for path, expected in ((_FIRST_WRITE[0], True), ("/never-written", False)):
            got = await api.exists(path)
            if type(got) is not bool:
                raise AssertionError(
                    f"expected exists({path!r}) to return {expected}, a bool; got {got!r}"
                )


@suite.case("missing_reads_none")
async def _missing_reads_none(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _MISSING_SETUP)
        for path in (
            "/never-written",
            "/no/such/deep/path",
            "/dir/other.txt",
            "/dir/file.txt.bak",
            "/di",
            "/dir/file.txt/beneath",
        ):
            got = await api.read(path)
            if got is not None:
                raise AssertionError(
                    f"expected read({path!r}) of a path never written to give None, got "
                    f"{short_repr(got)}"
                )
            await _expect_exists(api, path, False, "of a path never written")


@suite.case("overwrite_replaces")
async def _overwrite_replaces(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _OVERWRITTEN)  # its own name, longer than what replaces it
        path = _OVERWRITTEN[0]
        await api.write(path, b"short")
        await _expect_read(api, path, b"short", "after overwriting a longer file")
        await api.write(path, b"")
        await _expect_read(api, path, b"", "after overwriting with empty bytes")
        longer = b"a version longer than any before it"
        await api.write(path, longer)
        await _expect_read(api, path, longer, "after overwriting an empty file with more")
        got = await api.list("/")
        names = _names_of(got)
        if names is None or names.count(path[1:]) != 1:
            raise AssertionError(
                f"expected list('/') after four writes of one path to give {path[1:]!r} once, "
                f"got {got!r}"
            )


@suite.case("bytes_cloned_on_write")
async def _bytes_cloned_on_write(api: WorkspaceAPI) -> None:
    with _SEE:
        buffer = bytearray(b"original")
        await api.write("/buffer.bin", buffer)
        buffer[:] = b"MUTATED!"
        await _expect_read(
            api, "/buffer.bin", b"original", "after the bytearray written was changed"
        )
        backing = bytearray(b"viewed")
        await api.write("/view.bin", memoryview(backing))
        backing[:] = b"CHANGE"
        await _expect_read(
            api, "/view.bin", b"viewed", "after the buffer under the memoryview written was changed"
        )


@suite.case("bytes_cloned_on_read")
async def _bytes_cloned_on_read(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _READ_SETUP)
        first = await api.read("/data.bin")
        if first is None:
            raise AssertionError("expected read('/data.bin') to give b'/data.bin', got None")
        with memoryview(first) as view:
            if not view.readonly:
                view[:1] = b"X"
        await _expect_read(
            api,
            "/data.bin",
            b"/data.bin",
            f"after changing the {type(first).__name__} a read returned",
        )
        if type(first) is not bytes:
            raise AssertionError(
                f"expected read() to return immutable bytes, got a {type(first).__name__}"
            )


@suite.case("nested_write_creates_parents")
async def _nested_write_creates_parents(api: WorkspaceAPI) -> None:
    with _SEE:
        await api.write("/a/b/c/d.txt", b"deep")
        for parent in ("/a", "/a/b", "/a/b/c"):
            await _expect_exists(api, parent, True, "after writing '/a/b/c/d.txt'")
        for path, names in (("/", ["a"]), ("/a", ["b"]), ("/a/b", ["c"]), ("/a/b/c", ["d.txt"])):
            await _expect_listed(api, path, "after writing '/a/b/c/d.txt'", present=names)
        await api.write("/a/b/e.txt", b"sibling")
        await _expect_listed(api, "/a/b", "after writing '/a/b/e.txt' too", present=["c", "e.txt"])
        await _expect_read(api, "/a/b/c/d.txt", b"deep", "after writing '/a/b/e.txt' too")
        for path in _NESTED_SETUP:  # what the other cases write beneath new directories
            await api.write(path, path.encode())
            await _expect_read(api, path, path.encode(), "right after writing it")


@suite.case("listing_names_direct_children")
async def _listing_names_direct_children(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _PRECISION_PATHS)
        when = f"after writing {', '.join(_PRECISION_PATHS)}"
        await _expect_names(api, "/", ["a", "a-b", "a.txt", "ab"], when)
        got = await api.list("/")
        if not isinstance(got, list):
            raise AssertionError(f"expected list('/') to return a list, got a {type(got).__name__}")
        await _expect_names(api, "/a", ["sub", "x.txt", "x.txt.bak"], when)
        await _expect_names(api, "/a/sub", ["y.txt"], when)
        await _expect_names(api, "/ab", ["z.txt"], when)
        await _setup(api, _NAMES_PATHS)  # the names listing_is_sorted lists: given back as written
        when = f"after writing a file under '/names' for each of {list(_LISTED_NAMES)!r}"
        await _expect_names(api, "/names", list(_LISTED_NAMES), when)


@suite.case("listing_is_sorted")
async def _listing_is_sorted(api: WorkspaceAPI) -> None:
    with _SEE:
        names = list(_LISTED_NAMES)
        await _setup(api, _SORTED_PATHS)
        when = f"after writing {names!r} in that order"
        try:
            got = await _expect_names(api, "/", names, when)
        except AssertionError as exc:
            raise AssertionError(
                f"blocked: {exc}; listing_names_direct_children owns which names a listing gives"
            ) from exc
        if got != sorted(names):
            raise AssertionError(
                f"expected list('/') {when} to give the names in code-point order, "
                f"{sorted(names)!r}; got {got!r}"
            )


@suite.case("file_directory_conflicts_raise")
async def _file_directory_conflicts_raise(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _CONFLICT_SETUP)
        await _raises(
            _IS_A_DIRECTORY, "write('/d', ...) over a directory", partial(api.write, "/d", b"x")
        )
        await _raises(_IS_A_DIRECTORY, "write('/', ...)", partial(api.write, "/", b"x"))
        await _raises(_IS_A_DIRECTORY, "read('/d') of a directory", partial(api.read, "/d"))
        await _raises(_IS_A_DIRECTORY, "read('/')", partial(api.read, "/"))
        for beneath in ("/d/f.txt/g", "/d/f.txt/g/h"):  # a parent, or a grandparent, is a file
            await _raises(
                _NOT_A_DIRECTORY,
                f"write({beneath!r}, ...) beneath a file",
                partial(api.write, beneath, b"x"),
            )
        await _raises(_NOT_A_DIRECTORY, "list('/d/f.txt') of a file", partial(api.list, "/d/f.txt"))
        when = "after the refused operations"
        await _expect_listed(api, "/d", when, present=["f.txt"])
        await _expect_read(api, "/d/f.txt", b"/d/f.txt", when)


@suite.case("missing_list_and_remove_raise")
async def _missing_list_and_remove_raise(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _REFUSAL_SETUP)
        for path in ("/missing", "/missing/deeper", "/file.txt/beneath"):
            await _raises(_NOT_FOUND, f"list({path!r})", partial(api.list, path))
            await _raises(_NOT_FOUND, f"remove({path!r})", partial(api.remove, path))
            await _raises(
                _NOT_FOUND,
                f"remove({path!r}, recursive=True)",
                partial(api.remove, path, recursive=True),
            )
        await _expect_read(api, "/file.txt", b"/file.txt", "after the refused operations")


@suite.case("remove_is_precise")
async def _remove_is_precise(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _PRECISION_PATHS)
        await api.remove("/a/x.txt")
        await _expect_exists(api, "/a/x.txt", False, "after removing it")
        when = "after removing '/a/x.txt'"
        await _expect_read(api, "/a/x.txt.bak", b"/a/x.txt.bak", when)
        await _expect_read(api, "/a/sub/y.txt", b"/a/sub/y.txt", when)
        await api.remove("/a/sub/y.txt")
        # Its parent must still list it: a store that lists any missing path as [] would list
        # a vanished '/a/sub' as [] too. (Whether exists() sees directories is nested_write's.)
        when = "after removing '/a/sub/y.txt', the only file in '/a/sub' (directories persist)"
        await _expect_listed(api, "/a", when, present=["sub"])
        await _expect_listed(api, "/a/sub", when, absent=["y.txt"])
        await api.remove("/a/sub")
        await _expect_exists(api, "/a/sub", False, "after removing the empty directory")
        await _setup(api, _REFILL)
        await api.remove("/a", recursive=True)
        when = "after remove('/a', recursive=True)"
        await _expect_exists(api, "/a", False, when)
        await _expect_exists(api, "/a/q/r.txt", False, when)
        for kept in ("/ab/z.txt", "/a-b/w.txt", "/a.txt"):
            await _expect_read(api, kept, kept.encode(), when)
        await _expect_listed(api, "/", when, present=["a-b", "a.txt", "ab"], absent=["a"])
        await api.remove("/a.txt", recursive=True)
        await _expect_exists(api, "/a.txt", False, "after removing it with recursive=True")
        await _expect_listed(
            api, "/", "after removing '/a.txt' too", present=["a-b", "ab"], absent=["a.txt"]
        )


@suite.case("remove_non_empty_needs_recursive")
async def _remove_non_empty_needs_recursive(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _NOT_EMPTY_SETUP)
        error = await _raises(
            _NOT_EMPTY, "remove('/docs') of a non-empty directory", partial(api.remove, "/docs")
        )
        if "/docs" not in str(error):
            raise AssertionError(f"expected the error to name the path '/docs', got {str(error)!r}")
        when = "after the refused remove('/docs')"
        await _expect_read(api, "/docs/a.txt", b"/docs/a.txt", when)
        await _expect_read(api, "/docs/sub/b.txt", b"/docs/sub/b.txt", when)
        await _expect_listed(api, "/docs", when, present=["a.txt", "sub"])
        await _raises(_NOT_EMPTY, "remove('/') of a non-empty root", partial(api.remove, "/"))
        when = "after the refused remove('/')"
        await _expect_listed(api, "/", when, present=["docs"])
        for path in _NOT_EMPTY_SETUP:
            await _expect_read(api, path, path.encode(), when)
        await api.remove("/docs", recursive=True)
        await _expect_exists(api, "/docs", False, "after remove('/docs', recursive=True)")


@suite.case("remove_root_keeps_root")
async def _remove_root_keeps_root(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _ROOT_SETUP)
        await api.remove("/", recursive=True)
        when = "after remove('/', recursive=True)"
        await _expect_exists(api, "/", True, when)
        await _expect_names(api, "/", [], when)
        await _expect_exists(api, "/a.txt", False, when)
        await _expect_exists(api, "/d", False, when)
        await api.remove("/")  # an empty root: nothing to do, and still no error
        await _expect_exists(api, "/", True, "after remove('/') of the empty root")
        await api.write("/again.txt", b"again")
        await _expect_read(api, "/again.txt", b"again", "after emptying the root and writing again")


@suite.case("invalid_paths_rejected")
async def _invalid_paths_rejected(api: WorkspaceAPI) -> None:
    with _SEE:
        await _setup(api, _INVALID_SETUP)
        before = {path: _names_of(await api.list(path)) or [] for path in ("/", "/a")}
        for path in _INVALID_PATHS:
            for call, operation in (
                (f"write({path!r}, ...)", partial(api.write, path, b"escaped")),
                (f"read({path!r})", partial(api.read, path)),
                (f"exists({path!r})", partial(api.exists, path)),
                (f"list({path!r})", partial(api.list, path)),
                (f"remove({path!r})", partial(api.remove, path)),
                (f"remove({path!r}, recursive=True)", partial(api.remove, path, recursive=True)),
            ):
                await _raises(_INVALID, call, operation)
        when = "after every operation on invalid paths was refused"
        for path, names in before.items():  # whatever the store lists, the same as before
            await _expect_names(api, path, names, when)
        await _expect_read(api, "/a/kept.txt", b"/a/kept.txt", when)
