"""Examples.from_dir: a fixture folder with one example per file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import conformkit as ck


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


class TestLoading:
    def test_one_example_per_file_with_the_stem_as_id(self, tmp_path: Path) -> None:
        """Each JSON or TOML file is a row whose ID is its name without the suffix."""
        write(tmp_path, "negative.json", '{"input": "-2", "expected": -2}')
        write(tmp_path, "zero.toml", 'input = "0"\nexpected = 0\n')
        write(tmp_path, "nothing.json", '{"input": "", "expected": null}')
        examples = ck.Examples.from_dir(tmp_path)
        assert [(row.id, row.input, row.expected) for row in examples.rows] == [
            ("negative", "-2", -2),
            ("nothing", "", None),
            ("zero", "0", 0),
        ]

    def test_the_order_is_sorted_by_id(self, tmp_path: Path) -> None:
        """Rows come in the order of their IDs, whatever order the folder lists them in."""
        for name in ("b", "B", "a10", "a2", "_", "é"):
            write(tmp_path, f"{name}.json", '{"input": 1, "expected": 1}')
        ids = [row.id for row in ck.Examples.from_dir(str(tmp_path)).rows]
        assert ids == ["B", "_", "a10", "a2", "b", "é"]

    def test_other_files_and_hidden_files_are_not_examples(self, tmp_path: Path) -> None:
        """A README, an upper-case suffix, a dot file and a subfolder's files are left alone."""
        write(tmp_path, "one.json", '{"input": 1, "expected": 1}')
        write(tmp_path, "README.md", "# examples")
        write(tmp_path, "LOUD.JSON", "not read")
        write(tmp_path, ".#one.json", "an editor's lock file")
        (tmp_path / "more").mkdir()
        write(tmp_path / "more", "two.json", '{"input": 2, "expected": 2}')
        assert [row.id for row in ck.Examples.from_dir(tmp_path).rows] == ["one"]

    def test_a_folder_feeds_a_family(self, tmp_path: Path) -> None:
        """The loaded table is a family's parameters: one case per file."""
        write(tmp_path, "one.toml", 'input = "1"\nexpected = 1\n')
        write(tmp_path, "two.toml", 'input = "2"\nexpected = 2\n')
        parsing = ck.Feature[int]("test.examples_dir", cases=(), families={
            "parses": ck.Examples.from_dir(tmp_path)
        })  # fmt: skip
        suite = ck.ContractSuite(parsing)

        @suite.family("parses")
        def parses(api: int, example: ck.Example) -> None:
            assert int(example.input) == example.expected

        class Ints(ck.FeatureImplementation[int]):
            feature = parsing
            coverage = parsing.coverage()

            def create(self, scope: ck.FeatureScope) -> int:
                return 0

        report = ck.run_contract_sync(Ints(), suite)
        assert [(result.case_id, result.status.value) for result in report.results] == [
            ("parses[one]", "passed"),
            ("parses[two]", "passed"),
        ]


def error_of(path: str | Path) -> str:
    with pytest.raises(ck.ContractDefinitionError) as raised:
        ck.Examples.from_dir(path)
    message = str(raised.value)
    assert "\n" not in message
    return message


class TestErrors:
    def test_an_empty_folder_is_an_error(self, tmp_path: Path) -> None:
        """No example file is an error, not a family without members."""
        write(tmp_path, "notes.txt", "nothing here")
        assert error_of(tmp_path) == (
            f"examples folder {str(tmp_path)!r} holds no example: no *.json or *.toml file"
        )

    def test_a_missing_folder_is_an_error(self, tmp_path: Path) -> None:
        """A folder that is not there is named with the reason."""
        missing = tmp_path / "absent"
        assert error_of(missing) == (
            f"cannot read the examples folder {str(missing)!r}: No such file or directory"
        )

    def test_a_file_instead_of_a_folder_is_an_error(self, tmp_path: Path) -> None:
        """A file path is not a folder of examples."""
        table = write(tmp_path, "table.json", "[]")
        assert error_of(table).startswith(f"cannot read the examples folder {str(table)!r}: ")

    @pytest.mark.parametrize(
        ("name", "text", "message"),
        [
            pytest.param(
                "bad.json",
                '{\n  "input": 1,\n  "expected": \n}\n',
                "bad.json:4: Expecting value",
                id="json-syntax",
            ),
            pytest.param(
                "bad.toml",
                "input = 1\nexpected = \n",
                "bad.toml:2: Invalid value",
                id="toml-syntax",
            ),
            pytest.param(
                "bad.toml",
                "input = 1\nexpected = [",
                "bad.toml:2: ",
                id="toml-at-the-end",
            ),
            pytest.param(
                "bad.json",
                b'{"input": 1,\n"expected": "caf\xe9"}',
                "bad.json:2: is not UTF-8 text (byte 0xe9)",
                id="not-utf-8",
            ),
            pytest.param(
                "bad.json",
                '{"input": 1, "expected": 1, "id": "x"}',
                "bad.json: must hold an object with exactly the keys 'input' and 'expected', "
                "got ['expected', 'id', 'input']",
                id="extra-key",
            ),
            pytest.param(
                "bad.toml",
                "input = 1\n",
                "bad.toml: must hold an object with exactly the keys 'input' and 'expected', "
                "got ['input']",
                id="missing-key",
            ),
            pytest.param(
                "bad.json",
                "[1, 1]",
                "bad.json: must hold an object with exactly the keys 'input' and 'expected', "
                "got 'list'",
                id="not-an-object",
            ),
            pytest.param(
                "bad.json",
                '{"input": 1, "expected": 1, "input": 2}',
                "bad.json: key 'input' appears twice",
                id="json-key-twice",
            ),
            pytest.param(
                "bad.toml",
                "input = 1\nexpected = 1\ninput = 2\n",
                "bad.toml:3: ",
                id="toml-key-twice",
            ),
            pytest.param(
                "two words.json",
                '{"input": 1, "expected": 1}',
                "two words.json: the file name is the example's ID, which must be without "
                "whitespace or brackets",
                id="bad-id",
            ),
        ],
    )
    def test_a_malformed_file_is_named_with_its_line(
        self, tmp_path: Path, name: str, text: str | bytes, message: str
    ) -> None:
        """A file that does not parse, or holds the wrong shape, is named (with the line)."""
        write(tmp_path, "good.json", '{"input": 1, "expected": 1}')
        write(tmp_path, name, text)
        assert error_of(tmp_path).startswith(os.path.join(tmp_path, message))

    def test_a_toml_error_gives_its_line_once(self, tmp_path: Path) -> None:
        """tomllib's "(at line N, column M)" becomes the line after the path, not a repeat."""
        write(tmp_path, "bad.toml", "input = 1\nexpected = \n")
        assert error_of(tmp_path) == f"{tmp_path / 'bad.toml'}:2: Invalid value"

    def test_an_id_may_hold_any_character_but_whitespace_and_brackets(self, tmp_path: Path) -> None:
        write(tmp_path, "X-ray_2.0.json", '{"input": 1, "expected": 1}')
        assert [row.id for row in ck.Examples.from_dir(tmp_path).rows] == ["X-ray_2.0"]

    def test_the_same_id_in_json_and_toml_is_an_error(self, tmp_path: Path) -> None:
        """one.json and one.toml would be two examples with one ID."""
        write(tmp_path, "one.json", '{"input": 1, "expected": 1}')
        write(tmp_path, "one.toml", "input = 1\nexpected = 1\n")
        assert error_of(tmp_path) == (
            f"{tmp_path / 'one.toml'}: example ID 'one' is also the ID of "
            f"{tmp_path / 'one.json'}; each ID is one file"
        )

    def test_an_entry_that_is_not_a_file_is_an_error(self, tmp_path: Path) -> None:
        """A folder, or a broken link, with an example's name is not silently skipped."""
        (tmp_path / "odd.json").mkdir()
        assert error_of(tmp_path) == (
            f"{tmp_path / 'odd.json'}: is not a file; an examples folder holds one example per file"
        )
        (tmp_path / "odd.json").rmdir()
        (tmp_path / "odd.json").symlink_to(tmp_path / "nowhere")
        assert error_of(tmp_path).startswith(f"{tmp_path / 'odd.json'}: is not a file")

    def test_an_unreadable_file_is_an_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file that cannot be opened is named with the reason (root reads any file: faked)."""
        locked = write(tmp_path, "locked.json", '{"input": 1, "expected": 1}')
        real_open = open

        def refusing_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(file) == str(locked):
                raise PermissionError(13, "Permission denied", str(locked))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr("builtins.open", refusing_open)
        assert error_of(tmp_path) == f"{locked}: cannot read it: Permission denied"
