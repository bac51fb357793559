"""JSON Lines formatted by PostgreSQL itself, for the biggest table of an export.

Formatting a million verdicts in Python costs about 40 µs a row (reading the cursor,
turning timestamps and jsonb into objects and back into text, encoding the JSON): one
process tops out near 25,000 rows/s. Here PostgreSQL formats each verdict's own columns in
the server's process, Python only puts the keys in front and copies text into the zip, so
the two work side by side. Rows are read run by run in the order of the verdicts' unique
index, so that PostgreSQL streams them without a sort (ordering a million formatted lines
by id first took 25 s before the first one came).

The lines are byte for byte those of `formats.JsonlWriter` (tests/data/
test_export_sql.py holds the two to each other): `to_json(text)` escapes exactly as
Python's `json.dumps(ensure_ascii=False)` does (`\\"`, `\\\\`, `\\n`, `\\r`, `\\t`, `\\b`,
`\\f`, other control characters as lowercase `\\u00XX`, everything else as is);
timestamps are written as `_iso` writes them (UTC, `Z`, microseconds only when there are
any); JSON cells are PostgreSQL's own jsonb text, which `formats._json_text` also writes.
Only the column types a verdict has are supported: floats are left to Python, whose
shortest repr (`1.0`) PostgreSQL does not print the same way (`1`).
"""

# SQL text here is built from the schema's column names and fixed text; every value is a
# query parameter.
# ruff: noqa: S608
from __future__ import annotations

import json
from collections.abc import Iterator

from django.db import connection, transaction

from evaluation.runs.access import RAW_OUTPUT_HIDDEN
from evaluation.tables import schema

FETCH = 5_000


def _iso(expression: str) -> str:
    utc = f"({expression}) AT TIME ZONE 'UTC'"
    return (
        f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN "
        f"extract(microseconds FROM {utc})::bigint %% 1000000 = 0 THEN '' "
        f"ELSE to_char({utc}, '.US') END || 'Z'"
    )


def _json_value(kind: str, expression: str) -> str:
    """SQL for the JSON text of one cell of the given column type."""
    if kind == schema.STR:
        return f"coalesce(to_json(({expression})::text)::text, 'null')"
    if kind == schema.INT:
        return f"coalesce(({expression})::bigint::text, 'null')"
    if kind == schema.BOOL:
        return (
            f"CASE WHEN {expression} THEN 'true' WHEN NOT {expression} THEN 'false' ELSE 'null' END"
        )
    if kind == schema.DATETIME:
        return f"coalesce(to_json({_iso(expression)})::text, 'null')"
    if kind == schema.JSON:  # nested, as formats.JsonlWriter writes it: jsonb's own text
        return f"coalesce(({expression})::jsonb::text, 'null')"
    raise ValueError(f"no SQL formatting for {kind} columns")


def line_sql(table: schema.Table, expressions: dict[str, str], *, start: int = 0) -> str:
    """SQL for the JSON line of `table` from its column `start` on, given an SQL expression
    per column: the whole line when start is 0, else its tail (`"name": value, …}`)."""
    parts = []
    for i, column in enumerate(table.columns[start:], start=start):
        key = ("{" if i == 0 else "" if i == start else ", ") + f'"{column.name}": '
        parts.append(f"'{key}' || {_json_value(column.type, expressions[column.name])}")
    return " || ".join(parts) + " || '}'"


# Each run's verdicts in the order of its unique index: read from the index, never sorted.
VERDICT_ORDER = ("answer_id", "criterion_id", "judge_id", "sample")
# The verdict's own columns, formatted by PostgreSQL; the keys before them come from Python.
OWN = (
    "sample", "outcome", "failure_kind", "rationale", "raw_output", "error_kind", "error",
    "prompt_tokens", "completion_tokens", "latency_ms", "attempts", "cache_hit", "cache_key",
    "judge_params", "created_at",
)  # fmt: skip


def _fragment(names: tuple[str, ...], values: tuple) -> str:
    return "".join(
        f", {json.dumps(n)}: {json.dumps(v, ensure_ascii=False)}"
        for n, v in zip(names, values, strict=True)
    )


# COPY's CSV format with a delimiter and a quote character that JSON text never holds raw
# (JSON writes every control character as an escape, and so do `to_json` and json.dumps):
# no field is ever quoted or escaped, so each row arrives as its line's own bytes plus a
# newline, and Python hands them on without looking at them. The text format would double
# every backslash.
COPY_OPTIONS = "(FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')"
BLOCK = 1 << 20  # bytes handed on at a time


def hidden_connection(expressions: dict[str, str]) -> dict[str, str]:
    """The verdict columns' expressions for someone who does not manage judges: the judge's
    base URL out of `judge_params`, and no raw output of a reply that was not a verdict
    (export._without_connection, in Python)."""
    hidden = ", ".join(f"'{o}'" for o in sorted(RAW_OUTPUT_HIDDEN))
    return {
        **expressions,
        "judge_params": "(v.judge_params - 'base_url')",
        "raw_output": f"CASE WHEN v.outcome IN ({hidden}) THEN '' ELSE v.raw_output END",
    }


# Where the external keys wait on the server for the COPYs of one export (set_config,
# local to the transaction): see verdict_bytes.
SETTINGS = ("answers", "criteria", "judges")
SETTING = "workbench_export.{}"
PIECE = 1 << 20  # characters of a map sent at a time


def _lookup(name: str) -> str:
    """SQL for a map of external keys kept in a setting, as jsonb: a scalar subquery, which
    PostgreSQL runs once per statement (an InitPlan), not once per row."""
    return f"(SELECT current_setting('{SETTING.format(name)}')::jsonb)"


def _json_pieces(fragments: Iterator[tuple[int, str]]) -> Iterator[str]:
    """A JSON object of text values keyed by id, in pieces of about PIECE characters cut
    between two members: neither the whole text nor a dict of every fragment is held."""
    piece, size, separator = ["{"], 1, ""
    for pk, fragment in fragments:
        member = f'{separator}"{pk}": {json.dumps(fragment, ensure_ascii=False)}'
        piece.append(member)
        size += len(member)
        separator = ", "
        if size >= PIECE:
            yield "".join(piece)
            piece, size = [], 0
    piece.append("}")
    yield "".join(piece)


def _send_keys(cursor, keys) -> None:
    """Put the maps from ids to JSON fragments of external keys into settings of this
    transaction, once for the whole export, a piece at a time (PostgreSQL puts the pieces
    together). Passed whole as parameters of each run's COPY instead, the criteria's map
    (120,000 criteria: 9 MB of JSON) was escaped and copied into a new statement for every
    run, beside the dicts it was made from: buffers of tens of MB each time, which the
    allocator kept, so the export's peak RSS grew with the number of criteria (about 60 MB
    at that size, docs/benchmarks.md). The raw cursor: with DEBUG on, Django's would keep
    each statement in its query log."""
    maps = {
        "answers": (
            (pk, _fragment(schema.ANSWER_KEY_NAMES, key)) for pk, key in keys.answers.items()
        ),
        "criteria": (
            (pk, _fragment(("author", "criterion"), (author, key)))
            for pk, (_query, author, key) in keys.criteria.items()
        ),
        "judges": ((pk, _fragment(("judge",), (name,)) + ", ") for pk, name in keys.judges.items()),
    }
    for name in SETTINGS:
        setting = SETTING.format(name)
        cursor.execute("SELECT set_config(%s, '', true)", [setting])
        for piece in _json_pieces(maps[name]):
            # length(): set_config returns the whole value, which libpq would receive and
            # hold (its buffer grown to the size of the map) at every piece.
            cursor.execute(
                "SELECT length(set_config(%s, current_setting(%s) || %s, true))",
                [setting, setting, piece],
            )


def verdict_bytes(keys, *, connection_shown: bool = True) -> Iterator[tuple[bytes, int]]:
    """The dataset's verdicts as JSON lines, in blocks of about BLOCK bytes with the number
    of lines in each, in the order `Exporter._verdicts` writes them. `keys` is the
    exporter's Keys. PostgreSQL makes every line whole: it formats each verdict's own
    columns (the text, the JSON, the timestamps) and puts the external keys in front from
    JSON fragments made here once per answer, criterion and judge, sent once as jsonb
    objects keyed by id (a binary search per look-up, and the rows keep the index order,
    which a join would not promise); a verdict whose answer or criterion is not among them
    comes as an empty line and is dropped. Python only copies bytes: formatting the keys in
    Python cost about 1 µs a line and held the GIL that deflating in another thread needs.
    Items of checklists the user may not read are left out, as the Python path does.

    The settings last until the transaction ends (`transaction.atomic`: a transaction when
    called outside one, else a savepoint, which does not end them): they are emptied after
    the last run, so that the tables written after the verdicts do not keep them."""
    table = schema.TABLE["verdicts"]
    start = table.names.index(OWN[0])
    assert table.names[start:] == OWN, "the verdicts table's columns changed: update OWN"
    expressions = {name: f"v.{name}" for name in OWN}
    if not connection_shown:
        expressions = hidden_connection(expressions)
    tail = line_sql(table, expressions, start=start)
    order = ", ".join(f"v.{column}" for column in VERDICT_ORDER)
    sql = (
        f"SELECT %(head)s || ({_lookup('answers')} ->> v.answer_id::text)"
        f" || ({_lookup('criteria')} ->> v.criterion_id::text)"
        f" || ({_lookup('judges')} ->> v.judge_id::text) || {tail} "
        # No other condition: one on answer_id or criterion_id would join the index scan's
        # conditions, and PostgreSQL would then sort a million rows before sending one.
        f"FROM evaluation_verdict v WHERE v.run_id = %(run)s ORDER BY {order}"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        _send_keys(cursor.cursor, keys)
        for run_id, run_key in keys.runs.items():
            head = '{"run": ' + json.dumps(run_key, ensure_ascii=False)
            yield from _run_bytes(cursor.cursor, sql, {"head": head, "run": run_id})
        for name in SETTINGS:
            cursor.cursor.execute("SELECT set_config(%s, '', true)", [SETTING.format(name)])


def _run_bytes(cursor, sql: str, params: dict) -> Iterator[tuple[bytes, int]]:
    # COPY, not a server-side cursor: PostgreSQL keeps sending rows while Python writes
    # the zip (a cursor's FETCH makes each side wait for the other: no overlap).
    with cursor.copy(f"COPY ({sql}) TO STDOUT {COPY_OPTIONS}", params) as copy:
        blocks: list[memoryview] = []
        size = 0
        for block in copy:  # one row, newline included
            if len(block) == 1:
                # NULL, an empty field: the answer or the criterion is not in the keys
                # (a checklist the user may not read), so a look-up gave NULL.
                continue
            blocks.append(block)
            size += len(block)
            if size >= BLOCK:
                yield b"".join(blocks), len(blocks)
                blocks, size = [], 0
        if blocks:
            yield b"".join(blocks), len(blocks)
