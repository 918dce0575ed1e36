"""The documentation's examples run, and do what the pages say they do."""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "src" / "conformkit"
# The pages a repository shows first, which the docs site does not build.
FRONT_PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
EXAMPLES = DOCS / "examples"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

# The example files that are run as a user would run them (TestExamples), and
# the shared contract module that all of them import.
RUN_EXAMPLES = frozenset(
    {"pytest_loop.py", "unittest_loop.py", "script.py", "ci_gate.py", "typing_checks.py"}
)
SHARED_EXAMPLES = frozenset({"text_contract.py"})
# The pages with no example: the API reference (generated) and the glossary.
PAGES_WITHOUT_CODE = frozenset({"api.md", "glossary.md"})

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<language>[^\s`]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
# A block that shows a file of docs/examples/ (or a section of one) follows a
# comment naming it, which a rendered page hides:
#     <!-- docs/examples/text_contract.py -->
#     <!-- docs/examples/typing_checks.py:session -->
# The file keeps a section between `# [start:NAME]` and `# [end:NAME]` lines.
_MIRROR = re.compile(r"<!--\s*(?P<path>docs/examples/[^\s:]+)(?::(?P<section>[-_0-9a-z]+))?\s*-->")
_SECTION_MARK = re.compile(r"^\s*# \[(?P<kind>start|end):(?P<name>[-_0-9a-z]+)\]")
_RETIRED_INCLUDE = "--8<" + "--"  # pymdownx.snippets' mark: the pages no longer include files


@dataclass(frozen=True)
class Code:
    """Python source shown in the docs, and where it comes from for tracebacks."""

    filename: Path
    first_line: int
    source: str
    mirrors: tuple[Path, str | None] | None = None
    """The example file (and section) that the block shows, when it shows one."""

    def compile(self) -> types.CodeType:
        """Compile as a module of its own, its line numbers those of the page."""
        code = compile(self.source, str(self.filename), "exec", dont_inherit=True)
        return _shift_lines(code, self.first_line - 1)

    @property
    def where(self) -> str:
        return f"{self.filename.relative_to(ROOT)}:{self.first_line}"


def _shift_lines(code: types.CodeType, offset: int) -> types.CodeType:
    # Line tables are relative to co_firstlineno, so moving it moves every line;
    # a traceback then quotes the block from the page, starting at the block.
    constants = tuple(
        _shift_lines(constant, offset) if isinstance(constant, types.CodeType) else constant
        for constant in code.co_consts
    )
    return code.replace(co_firstlineno=code.co_firstlineno + offset, co_consts=constants)


def python_blocks(page: Path) -> Iterator[Code]:
    """Yield each ```python block of a page, with the example file it mirrors, if any."""
    text = page.read_text(encoding="utf-8")
    for fence in _FENCE.finditer(text):
        if fence["language"] != "python":
            continue
        line = text.count("\n", 0, fence.start("body")) + 1
        body = textwrap.dedent(fence["body"])
        before = text[: fence.start()].removesuffix("\n").rpartition("\n")[2]
        mark = _MIRROR.fullmatch(before.strip())
        mirrors = None if mark is None else (ROOT / mark["path"], mark["section"])
        yield Code(page, line, body, mirrors)


def mirror_comments(page: Path) -> list[tuple[int, str]]:
    """Each comment on a page that names an example file: its line, and the comment."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, mark.start()) + 1, mark[0]) for mark in _MIRROR.finditer(text)]


def section(path: Path, name: str | None) -> str:
    """The text of ``path``, or of its section ``name``, dedented."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if name is None:
        return "\n".join(lines) + "\n"
    inside = False
    kept: list[str] = []
    for line in lines:
        mark = _SECTION_MARK.match(line)
        if mark is not None and mark["name"] == name:
            if mark["kind"] == "end" and inside:
                return textwrap.dedent("\n".join(kept) + "\n")
            inside = mark["kind"] == "start"
            continue
        if inside and mark is None:
            kept.append(line)
    raise AssertionError(f"{path.name} has no complete section {name!r}")


def mirrored_files() -> set[str]:
    """Names of the example files that the pages show."""
    return {
        code.mirrors[0].name
        for page in PAGES
        for code in python_blocks(page)
        if code.mirrors is not None
    }


def run_example(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run ``python -W error ARGS`` as a user would, outside this test process."""
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")
    }
    environment["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ among the docs
    return subprocess.run(
        [sys.executable, "-W", "error", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class TestExamples:
    """The example files in docs/examples/, run the way the docs tell a user to run them."""

    def test_script_prints_one_report_per_implementation(self) -> None:
        """script.py prints each report: the counts, then each case that did not pass."""
        run = run_example("docs/examples/script.py")
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert len(lines) == 3, run.stdout
        assert lines[0].startswith("example.text × MemoryText: 3 passed in ")
        assert lines[1].startswith("example.text × AppendOnlyText: 2 passed, 1 unsupported in ")
        assert lines[2] == "  UNSUPPORTED delete: an append-only log cannot delete"

    def test_ci_gate_passes_a_declared_gap(self) -> None:
        """ci_gate.py exits 0: an unsupported case with a reason does not fail the gate."""
        run = run_example("docs/examples/ci_gate.py")
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines()[-1] == "gate: every contract holds"
        assert run.stderr == ""

    def test_ci_gate_fails_with_require_full(self) -> None:
        """ci_gate.py --require-full exits 1 and names the case that did not pass."""
        run = run_example("docs/examples/ci_gate.py", "--require-full")
        assert run.returncode == 1
        assert run.stdout.splitlines()[-1] == "gate: FAILED"
        assert run.stderr.splitlines() == [
            "contract 'example.text' does not hold for AppendOnlyText "
            "(require_full=True: every case must pass):",
            "  delete: unsupported: an append-only log cannot delete",
        ]

    def test_pytest_loop_passes_and_skips_the_unsupported_case(self) -> None:
        """pytest_loop.py runs every case on both backends; unsupported ones are skipped."""
        run = run_example(  # -n 0: in one process, as a plain pytest run prints each test
            "-m", "pytest", "docs/examples/pytest_loop.py", "-p", "no:cacheprovider", "-v", "-rs",
            "-n", "0",
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert "test_text_contract[asyncio-MemoryText-missing] PASSED" in run.stdout
        assert "test_text_contract[trio-AppendOnlyText-read_your_writes] PASSED" in run.stdout
        assert "test_text_contract[trio-AppendOnlyText-delete] SKIPPED" in run.stdout
        assert "AppendOnlyText: an append-only log cannot delete" in run.stdout
        assert "10 passed, 2 skipped" in run.stdout

    def test_unittest_loop_passes_and_skips_the_unsupported_subtest(self) -> None:
        """unittest_loop.py runs one subtest per case; the unsupported one is skipped."""
        run = run_example("-m", "unittest", "-v", "unittest_loop", cwd=EXAMPLES)
        assert run.returncode == 0, run.stderr
        assert (
            "(implementation='AppendOnlyText', case='delete') ... "
            "skipped 'AppendOnlyText: an append-only log cannot delete'"
        ) in run.stderr
        assert run.stderr.splitlines()[-1] == "OK (skipped=1)"

    def test_typing_checks_show_the_runtime_checks(self) -> None:
        """typing_checks.py runs; the runtime catches each mistake that it can see."""
        run = run_example("docs/examples/typing_checks.py")
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert lines[:2] == ["MemoryTextAPI", "WrongCreate at run time: 3 failed"]
        assert len([line for line in lines if line.startswith("run time: ")]) == 4
        assert "did you mean 'read_your_writes'?" in lines[3]

    def test_every_example_file_is_run_or_shared(self) -> None:
        """Each file in docs/examples/ is run by a test above, or imported by those that are."""
        files = {path.name for path in EXAMPLES.glob("*.py")}
        assert files == RUN_EXAMPLES | SHARED_EXAMPLES


@pytest.fixture
def examples_importable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Let code blocks import the shared example contract, as the pages tell readers to."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield
    for name in SHARED_EXAMPLES:
        sys.modules.pop(name.removesuffix(".py"), None)


class TestPages:
    """The python code blocks of README.md and docs/*.md."""

    @pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
    @pytest.mark.usefixtures("examples_importable")
    def test_python_blocks_run_in_order(self, page: Path) -> None:
        """Every python block of a page runs, in order, in one namespace per page."""
        namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
        blocks = list(python_blocks(page))
        if page.name in PAGES_WITHOUT_CODE:
            assert not blocks, f"{page.name} has python blocks: take it off PAGES_WITHOUT_CODE"
        else:
            assert blocks, f"{page.name} has no python block"
        for code in blocks:
            exec(code.compile(), namespace)

    @pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
    def test_blocks_that_show_an_example_file_equal_it(self, page: Path) -> None:
        """A block that shows a file of docs/examples/, or a section of one, is that text."""
        for code in python_blocks(page):
            if code.mirrors is None:
                continue
            path, name = code.mirrors
            assert path.parent == EXAMPLES, f"{code.where}: {path} is not in docs/examples/"
            assert path.is_file(), f"{code.where}: no file {path.relative_to(ROOT)}"
            expected = section(path, name)
            shown = f"{path.relative_to(ROOT)}" + ("" if name is None else f" section {name!r}")
            difference = "".join(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    code.source.splitlines(keepends=True),
                    shown,
                    code.where,
                )
            )
            assert code.source == expected, f"{code.where} differs from {shown}:\n{difference}"

    @pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
    def test_every_file_comment_heads_a_python_block(self, page: Path) -> None:
        """A comment that names an example file stands right above a python block."""
        heads = {code.first_line - 2 for code in python_blocks(page) if code.mirrors is not None}
        for line, comment in mirror_comments(page):
            assert line in heads, f"{page.name}:{line}: {comment} is not above a python block"

    @pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
    def test_no_page_includes_a_file(self, page: Path) -> None:
        """Every example is in the Markdown itself, so it reads the same on any viewer."""
        text = page.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            assert _RETIRED_INCLUDE not in line, (
                f"{page.name}:{number}: a snippet include; write the code in the page, "
                f"after a <!-- docs/examples/FILE --> comment if a file must hold it too"
            )

    @pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
    def test_installs_by_name_are_for_after_a_release(self, page: Path) -> None:
        """Until a release, `pip install conformkit` does not work: a page says so beside it."""
        by_name = re.compile(r"pip install '?conformkit\b")
        for paragraph in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            if by_name.search(paragraph):
                assert "release" in paragraph, f"{page.name}: {paragraph.strip()[:200]}"

    def test_shown_examples_are_all_run(self) -> None:
        """Every example file a page shows is one that TestExamples runs, or the contract."""
        assert mirrored_files() <= RUN_EXAMPLES | SHARED_EXAMPLES
        assert "text_contract.py" in mirrored_files()

    def test_the_api_page_shows_sphinx_roles_as_code(self) -> None:
        """The site's hook turns a docstring's :class:`X` (rendered) into plain code."""
        spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools/docs_hooks.py")
        assert spec is not None
        assert spec.loader is not None
        hooks = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hooks)
        html = (
            "An :class:<code>AssertionError</code>, "
            "see :meth:<code>~conformkit.Feature.coverage</code>"
        )
        assert hooks.on_page_content(html) == (
            "An <code>AssertionError</code>, see <code>coverage</code>"
        )
        assert hooks.on_page_content("ratio 1:2 <code>x:y</code>") == "ratio 1:2 <code>x:y</code>"

    def test_every_page_is_in_the_mkdocs_nav(self) -> None:
        """mkdocs.yml lists every page under docs/, so none is built unreachable."""
        config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
        assert re.search(r"^strict: true$", config, re.MULTILINE)
        for page in DOCS.glob("*.md"):
            assert re.search(rf"^  - [^:\n]+: {re.escape(page.name)}$", config, re.MULTILINE), page


_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^#+ (?P<title>.+)$", re.MULTILINE)
_CHANGELOG_HEADINGS = re.compile(
    r"# Changelog|## \[Unreleased\]|## \[\d+\.\d+\.\d+\] - \d{4}-\d\d-\d\d"
    r"|### (Added|Changed|Deprecated|Removed|Fixed|Security)"
)
# A changelog entry is a line or two for users; how a change was made, measured or
# tested goes in its commit, and how to develop in CONTRIBUTING.md.
ENTRY_WORDS = 40


def anchor(title: str) -> str:
    """The anchor a repository's page gives a heading: `## The load check` → the-load-check."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def console_lines(page: Path) -> list[str]:
    """The lines of a page's ```console blocks."""
    text = page.read_text(encoding="utf-8")
    return [
        line.strip()
        for fence in _FENCE.finditer(text)
        if fence["language"] == "console"
        for line in fence["body"].splitlines()
    ]


def changelog_entries(text: str) -> list[str]:
    """Each list item of a changelog, with its continuation lines."""
    return re.findall(r"^- (.*?)(?=\n- |\n\s*\n|\Z)", text, re.MULTILINE | re.DOTALL)


class TestFrontPages:
    """README.md, CONTRIBUTING.md and CHANGELOG.md: what a repository shows first."""

    def test_the_readme_gives_the_two_set_up_commands(self) -> None:
        """A user's command and a contributor's are console lines of the README, verbatim."""
        lines = console_lines(ROOT / "README.md")
        assert "pip install . && conformkit demo" in lines
        assert "pip install -e '.[test]' && pytest" in lines

    def test_the_readme_links_the_docs_the_guide_and_the_history(self) -> None:
        """The README leads to the docs, CONTRIBUTING.md and CHANGELOG.md."""
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        targets = {link["target"] for link in _LINK.finditer(readme)}
        assert {"docs/index.md", "CONTRIBUTING.md", "CHANGELOG.md"} <= targets

    def test_the_load_check_is_documented(self) -> None:
        """CONTRIBUTING.md says how to run tools/load_check.py, which CI does not run."""
        assert any(
            line.startswith("python tools/load_check.py")
            for line in console_lines(ROOT / "CONTRIBUTING.md")
        )

    @pytest.mark.parametrize("page", FRONT_PAGES, ids=lambda page: page.name)
    def test_local_links_name_what_there_is(self, page: Path) -> None:
        """Each relative link names a file there is, and each #anchor one of its headings."""
        text = re.sub(r"`[^`\n]*`", "", page.read_text(encoding="utf-8"))  # code is no link
        for link in _LINK.finditer(text):
            target = link["target"]
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, fragment = target.partition("#")
            where = ROOT / path if path else page
            assert where.exists(), f"{page.name} links {target!r}, which is not there"
            if fragment:
                headings = _HEADING.findall(where.read_text(encoding="utf-8"))
                assert fragment in {anchor(title) for title in headings}, (
                    f"{page.name} links {target!r}: {where.name} has no such heading"
                )

    def test_the_changelog_is_a_short_list_for_users(self) -> None:
        """Keep a Changelog's headings, no tables or code blocks, and no entry over 40 words."""
        text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
        for heading in re.findall(r"^#.*$", text, re.MULTILINE):
            assert _CHANGELOG_HEADINGS.fullmatch(heading), f"CHANGELOG.md: heading {heading!r}"
        for number, line in enumerate(text.splitlines(), start=1):
            assert not line.lstrip().startswith(("|", "```")), f"CHANGELOG.md:{number}: {line!r}"
        for entry in changelog_entries(text):
            words = len(entry.split())
            assert words <= ENTRY_WORDS, f"CHANGELOG.md: an entry of {words} words: {entry[:60]!r}"


def module_map() -> list[str]:
    """The first cell of each row of CONTRIBUTING.md's module table: `_feature.py`, `laws/`."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = text.partition("\n| module | job |\n")[2].partition("\n\n")[0]
    assert table, "CONTRIBUTING.md has no '| module | job |' table"
    return re.findall(r"^\| `([^`]+)` \|", table, re.MULTILINE)


class TestContributing:
    """CONTRIBUTING.md's map of the package, against the package as it is."""

    def test_the_module_map_has_a_line_for_each_module(self) -> None:
        """Each module and subpackage of src/conformkit is in the map, and each line names one."""
        named = module_map()
        modules = {
            path.name
            for path in PACKAGE.glob("*.py")
            if path.name not in {"__init__.py", "__main__.py"}
        }
        packages = {f"{path.parent.name}/" for path in PACKAGE.glob("*/__init__.py")}
        missing = sorted((modules | packages) - set(named))
        gone = sorted(name for name in named if not (PACKAGE / name).exists())
        assert not missing, f"CONTRIBUTING.md's module map has no line for {missing}"
        assert not gone, f"CONTRIBUTING.md's module map names {gone}, which src/conformkit lacks"
