"""JSON Lines formatted by PostgreSQL itself, for the biggest table of an export.

Formatting a million verdicts in Python costs about 40 µs a row (reading the cursor,
turning timestamps and jsonb into objects and back into text, encoding the JSON): one
process tops out near 25,000 rows/s. Here PostgreSQL builds each line in the server's
own process and Python only copies text into the zip, so the two work side by side.

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

from collections.abc import Iterator

from django.db import connection

from evaluation.data import schema

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
    if kind == schema.JSON:  # JSON text in a string cell, as formats._json_text writes it
        return f"coalesce(to_json(({expression})::jsonb::text)::text, 'null')"
    raise ValueError(f"no SQL formatting for {kind} columns")


def line_sql(table: schema.Table, expressions: dict[str, str]) -> str:
    """The SQL expression of one JSON line of `table`, from an SQL expression per column."""
    parts = []
    for i, column in enumerate(table.columns):
        key = ("{" if i == 0 else ", ") + f'"{column.name}": '
        parts.append(f"'{key}' || {_json_value(column.type, expressions[column.name])}")
    return " || ".join(parts) + " || '}'"


def _pairs(mapping: dict[int, object], width: int) -> list[list]:
    """Columns of (id, *values) arrays for unnest(), from {id: value or tuple of values}."""
    ids = list(mapping)
    values = [v if isinstance(v, tuple) else (v,) for v in mapping.values()]
    return [ids, *([row[i] for row in values] for i in range(width))]


def verdict_lines(keys) -> Iterator[list[str]]:
    """The dataset's verdicts as JSON lines, in chunks, in the order `Exporter._verdicts`
    writes them (by id). `keys` is the exporter's Keys: items of checklists the user may not
    read are left out by the joins, as the Python path skips them."""
    table = schema.TABLE["verdicts"]
    expressions = {
        "run": "r.key", "system": "a.system", "system_version": "a.version",
        "query": "a.query", "run_label": "a.run_label", "author": "c.author",
        "criterion": "c.criterion", "judge": "j.name",
        **{name: f"v.{name}" for name in (
            "sample", "outcome", "failure_kind", "rationale", "raw_output", "error_kind",
            "error", "prompt_tokens", "completion_tokens", "latency_ms", "attempts",
            "cache_hit", "cache_key", "judge_params", "created_at",
        )},
    }  # fmt: skip
    sql = f"""
        SELECT {line_sql(table, expressions)}
        FROM evaluation_verdict v
        JOIN unnest(%s::bigint[], %s::text[]) AS r(id, key) ON r.id = v.run_id
        JOIN unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[])
            AS a(id, system, version, query, run_label) ON a.id = v.answer_id
        JOIN unnest(%s::bigint[], %s::text[], %s::text[])
            AS c(id, author, criterion) ON c.id = v.criterion_id
        JOIN unnest(%s::bigint[], %s::text[]) AS j(id, name) ON j.id = v.judge_id
        ORDER BY v.id
    """
    criteria = {pk: (author, key) for pk, (_query, author, key) in keys.criteria.items()}
    params = [
        *_pairs(keys.runs, 1),
        *_pairs(keys.answers, 4),
        *_pairs(criteria, 2),
        *_pairs(keys.judges, 1),
    ]
    # A server-side cursor: rows come in chunks as PostgreSQL makes them.
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            yield [row[0] for row in rows]
