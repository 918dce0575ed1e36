"""Reasons that say what happened: exception groups by their leaves, bare asserts by source."""

from __future__ import annotations

import importlib.util
import types

import pytest

from conformkit._explain import (
    assertion_detail,
    describe_exception,
    error_line,
    group_leaves,
    record_line,
)


def raised(function: object) -> BaseException:
    """The exception that calling ``function`` raises."""
    try:
        function()  # type: ignore[operator]
    except BaseException as exc:  # the exception under test, whatever it is
        return exc
    raise AssertionError("expected an exception")


class TestGroups:
    def test_leaves_are_listed_depth_first_in_order(self) -> None:
        """Nested groups flatten to their leaves, in the order they were raised."""
        a, b, c = ValueError("a"), KeyError("b"), OSError("c")
        group = ExceptionGroup("outer", [a, ExceptionGroup("inner", [b, c])])
        assert group_leaves(group) == [a, b, c]

    def test_a_group_is_described_by_its_leaves_deduplicated(self) -> None:
        """Repeated leaves are counted, not repeated; the group's own message is not shown."""
        group = ExceptionGroup(
            "unhandled errors in a TaskGroup",
            [ValueError("bad"), ValueError("bad"), KeyError("k")],
        )
        assert error_line(group) == "ValueError: bad (×2); KeyError: 'k'"

    def test_many_distinct_leaves_are_capped(self) -> None:
        """At most three distinct leaves are shown, then how many more there were."""
        group = ExceptionGroup("many", [ValueError(str(n)) for n in range(5)])
        assert error_line(group) == ("ValueError: 0; ValueError: 1; ValueError: 2; and 2 more")

    def test_a_leaf_message_keeps_to_one_line(self) -> None:
        """A multi-line leaf message is joined on one line."""
        group = ExceptionGroup("g", [ValueError("first\nsecond")])
        assert error_line(group) == "ValueError: first second"


CHECKS = """
def equal():
    got, expected = "a", "b"
    assert got == expected


def multi_line():
    items = [1, 2]
    assert (
        len(items)
        == 3
    )


def long_value():
    data = list(range(1000))
    assert not data


def with_message():
    value = 1
    assert value == 2, "value should be 2"
"""


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    """Functions with failing asserts, in a module pytest does not rewrite, as a user's is."""
    path = tmp_path_factory.mktemp("checks") / "explain_checks.py"
    path.write_text(CHECKS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("explain_checks", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestBareAssert:
    def test_shows_the_statement_and_the_locals_it_reads(self, checks: types.ModuleType) -> None:
        """A bare assert reads as its source, with the repr of each local name in it."""
        assert error_line(raised(checks.equal)) == (
            "AssertionError: assert got == expected (got='a', expected='b')"
        )

    def test_a_statement_over_several_lines_is_shown_whole(self, checks: types.ModuleType) -> None:
        """The whole statement is found from any of its lines, and joined on one line."""
        assert assertion_detail(raised(checks.multi_line)) == (
            "assert len(items) == 3 (items=[1, 2])"
        )

    def test_long_values_are_shortened(self, checks: types.ModuleType) -> None:
        """A long value is shown shortened, never whole."""
        detail = assertion_detail(raised(checks.long_value)) or ""
        assert detail.startswith("assert not data (data=[0, 1, 2")
        assert len(detail) < 120

    def test_an_assert_with_a_message_keeps_its_message(self, checks: types.ModuleType) -> None:
        """An assertion that says something is shown as it is."""
        assert error_line(raised(checks.with_message)) == "AssertionError: value should be 2"

    def test_a_raised_assertion_error_is_not_an_assert_statement(self) -> None:
        """``raise AssertionError`` with no message has no statement to show."""

        def check() -> None:
            raise AssertionError

        error = raised(check)
        assert assertion_detail(error) is None
        assert error_line(error) == "AssertionError"

    def test_source_that_cannot_be_read_gives_no_detail(self) -> None:
        """Code compiled from a string has no source file: the plain description stays."""
        namespace: dict[str, object] = {}
        exec("def check():\n    x = 1\n    assert x == 2\n", namespace)
        error = raised(namespace["check"])
        assert assertion_detail(error) is None
        assert error_line(error) == "AssertionError"

    @pytest.mark.parametrize("error", [ValueError("v"), KeyError("k"), AssertionError("said")])
    def test_other_errors_are_described_as_a_traceback_ends(self, error: BaseException) -> None:
        """Everything else reads ``TypeName: message``."""
        assert (
            error_line(error)
            == "".join(__import__("traceback").format_exception_only(error)).strip()
        )


class StoreError(Exception):
    """An exception of a library of its own, as a traceback names it: ``mystore.StoreError``."""


StoreError.__module__ = "mystore"


def store_error() -> StoreError:
    """A multi-line, module-qualified exception with a note."""
    error = StoreError("disk full\nretry later")
    error.add_note("while writing k")
    return error


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("the code under test's __str__ fails")


class TestOneSpelling:
    def test_the_line_joins_the_message_and_leaves_the_notes(self) -> None:
        """The one-line reason: qualified type, the message's lines joined, no note."""
        assert error_line(store_error()) == "mystore.StoreError: disk full retry later"

    def test_the_record_keeps_the_message_and_the_notes(self) -> None:
        """The full record: the JSON type and message, and a traceback ending as raised."""
        record = describe_exception(store_error())
        assert record["type"] == "mystore.StoreError"
        assert record["message"] == "disk full\nretry later"
        assert (
            record["traceback"] == "mystore.StoreError: disk full\nretry later\nwhile writing k\n"
        )

    def test_a_record_read_back_gives_the_same_line(self) -> None:
        """The line of a record read back from JSON is the line of the exception."""
        record = describe_exception(store_error())
        assert record_line(record["type"], record["message"]) == error_line(store_error())

    def test_a_syntax_error_is_its_message_and_place(self) -> None:
        """A SyntaxError reads as its message and place, not a caret drawing over lines."""
        with pytest.raises(SyntaxError) as raised_here:  # the source is cut short
            compile("f(", "broken.py", "exec")
        assert error_line(raised_here.value) == (
            "SyntaxError: '(' was never closed (broken.py, line 1)"
        )

    def test_a_failing_str_is_named_as_a_traceback_names_it(self) -> None:
        """An exception whose __str__ raises reads as a traceback shows it."""
        assert error_line(BadStr()) == "test_explain.BadStr: <exception str() failed>"
        assert describe_exception(BadStr())["message"] == "<exception str() failed>"

    def test_no_message_is_the_type_alone(self) -> None:
        """An exception without a message reads as its type's name."""
        assert error_line(StoreError()) == "mystore.StoreError"
        assert error_line(KeyError()) == "KeyError"
