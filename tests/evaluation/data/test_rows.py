"""The row-checking loop every import shares (evaluation.tables.rows.check_rows): every
error of every row, each naming the file and line; duplicates named by the earlier line;
one error rejects the file."""

from __future__ import annotations

import pytest

from evaluation.tables.rows import Checked, ImportRejected, check_rows


def check_one(line: int, row: dict, where: str) -> Checked | list[str]:
    if "id" not in row:
        return [f"{where}: field 'id' is required"]
    return Checked(row["id"] * 10, row["id"])


def test_checked_rows_come_back_in_file_order():
    raw = [(1, {"id": 2}), (2, {"id": 1})]
    assert check_rows("f.jsonl", raw, check_one, duplicate="same id as line {line}") == [20, 10]


def test_every_error_names_its_line_and_rejects_the_file():
    raw = [(1, {"id": 1}), (2, {}), (3, {"__not_an_object__": True}), (5, {"id": 1})]
    with pytest.raises(ImportRejected) as rejected:
        check_rows("f.jsonl", raw, check_one, duplicate="same id as line {line}; one each")
    assert rejected.value.errors == [
        "f.jsonl:2: field 'id' is required",
        "f.jsonl:3: each line must be a JSON object",
        "f.jsonl:5: same id as line 1; one each",
    ]
