"""CSV exports never hand a spreadsheet a formula: text starting with = + - @ tab or CR is
quoted; numbers and ordinary text pass unchanged."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.cross_evaluation.export import COLUMNS, csv_safe, write_csv


@pytest.mark.parametrize(
    "text", ['=HYPERLINK("http://x")', "+1+2", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]
)
def test_formula_starts_are_quoted(text):
    assert csv_safe(text) == "'" + text


@pytest.mark.parametrize("value", ["Revenue 4.1", "alice", 0.5, -0.25, 3, None, ""])
def test_other_values_pass_unchanged(value):
    assert csv_safe(value) == value


def test_written_rows_are_safe_in_every_text_cell():
    row = dict.fromkeys(COLUMNS, 1)
    row.update(dataset="=cmd|' /C calc'!A0", a_author="@alice", b_author="bob")
    out = io.StringIO()
    write_csv([row], out)
    written = next(csv.DictReader(io.StringIO(out.getvalue())))
    assert written["dataset"] == "'=cmd|' /C calc'!A0"
    assert written["a_author"] == "'@alice"
    assert written["b_author"] == "bob"
