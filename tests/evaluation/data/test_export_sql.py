"""verdicts.jsonl made by PostgreSQL (evaluation/datasets/export_sql.py) is byte for byte what
the Python writer makes, on the text that is hardest to escape. PostgreSQL only: SQLite
exports go through the Python writer."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.db import connection

from annotation.models import Criterion, Query
from bench.data_io.generate import generate
from evaluation.datasets import export_sql
from evaluation.datasets.export import Exporter, ExportOptions, build_keys
from evaluation.runs.models import Verdict
from evaluation.tables import schema
from evaluation.tables.formats import JsonlWriter

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the SQL formatting is PostgreSQL's"
    ),
]

HOSTILE = [
    'quotes " and \\ backslashes \\n (not a newline)',
    "a newline\nand a CR\r and a tab\t and a form feed\f and a backspace\b",
    "control \x01 \x1f \x7f characters",
    "unicode é ü 中文 and an emoji 🦜 and a line separator \u2028 and /slashes/",
    "",
    "=SUM(A1) stays as is in JSON",
]


def _python_lines(exporter: Exporter) -> bytes:
    out = io.BytesIO()
    writer = JsonlWriter(schema.TABLE["verdicts"], out)
    writer.write(list(exporter._verdicts()))
    return out.getvalue()


def _sql_lines(exporter: Exporter) -> bytes:
    blocks = list(export_sql.verdict_bytes(exporter.keys))
    data = b"".join(block for block, _ in blocks)
    assert sum(lines for _, lines in blocks) == data.count(b"\n")
    return data


def test_sql_lines_equal_the_python_writer_on_hostile_text():
    dataset = generate("SQL lines", queries=2, systems=2, criteria=3, judges=2, samples=1)
    verdicts = list(Verdict.objects.filter(run__dataset=dataset).order_by("pk"))
    moments = [
        dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),  # no microseconds: none written
        dt.datetime(2026, 1, 2, 3, 4, 5, 120, tzinfo=dt.UTC),
        dt.datetime(2026, 6, 30, 23, 59, 59, 999999, tzinfo=dt.timezone(dt.timedelta(hours=5))),
    ]
    for i, verdict in enumerate(verdicts):
        verdict.rationale = HOSTILE[i % len(HOSTILE)]
        verdict.raw_output = HOSTILE[(i + 1) % len(HOSTILE)]
        verdict.error = HOSTILE[(i + 2) % len(HOSTILE)] if i % 4 == 0 else ""
        verdict.cache_hit = i % 2 == 0
        verdict.prompt_tokens = i * 1000
        verdict.judge_params = [
            {},
            {"model": "m", "temperature": 0.7, "seed": 7, "max_tokens": 300},
            {"nested": {"a": [1, 2.5, 'x"y', None, True]}, "unicode": "é\n"},
        ][i % 3]
        verdict.created_at = moments[i % len(moments)]
    # The external keys PostgreSQL puts in front of each line (from jsonb) are hostile too.
    for i, query in enumerate(Query.objects.filter(dataset=dataset).order_by("pk")):
        Query.objects.filter(pk=query.pk).update(external_id=f'q"{i}\\ é\x01\u2028')
    for i, criterion in enumerate(Criterion.objects.filter(checklist__query__dataset=dataset)):
        Criterion.objects.filter(pk=criterion.pk).update(external_id=f"c\t{i} 🦜 \\n")
    Verdict.objects.bulk_update(
        verdicts,
        ["rationale", "raw_output", "error", "cache_hit", "prompt_tokens", "judge_params",
         "created_at"],
    )  # fmt: skip
    exporter = Exporter(dataset, ExportOptions())
    exporter.keys = build_keys(dataset, None, exporter.options.include)
    python, sql = _python_lines(exporter), _sql_lines(exporter)
    assert python.count(b"\n") == len(verdicts)
    for ours, theirs in zip(python.splitlines(), sql.splitlines(), strict=True):
        assert ours == theirs
    row = json.loads(sql.splitlines()[1])
    assert row["created_at"] == "2026-01-02T03:04:05.000120Z"
    assert json.loads(sql.splitlines()[0])["created_at"] == "2026-01-02T03:04:05Z"


def test_the_export_writes_verdicts_jsonl_from_sql_with_the_same_rows():
    """The whole export on PostgreSQL: verdicts.jsonl holds every verdict, once, in id
    order, and agrees with verdicts.csv row for row."""
    import csv
    import zipfile

    from evaluation.datasets.export import export_chunks

    dataset = generate("SQL export", queries=3, systems=2, criteria=4, judges=2, samples=2)
    data = b"".join(export_chunks(dataset, ExportOptions.parse(["verdicts"], ["jsonl", "csv"])))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = {n.rsplit("/", 1)[-1]: n for n in archive.namelist()}
        jsonl = [json.loads(line) for line in archive.read(names["verdicts.jsonl"]).splitlines()]
        rows = list(csv.DictReader(io.StringIO(archive.read(names["verdicts.csv"]).decode())))
    assert len(jsonl) == len(rows) == Verdict.objects.filter(run__dataset=dataset).count()
    for a, b in zip(jsonl, rows, strict=True):
        assert (a["system"], a["criterion"], a["judge"], a["sample"], a["outcome"]) == (
            b["system"], b["criterion"], b["judge"], int(b["sample"]), b["outcome"]
        )  # fmt: skip


def test_sql_lines_leave_out_items_the_user_may_not_read():
    """Verdicts on an answer or a criterion missing from the exporter's keys (a checklist
    the user may not read) are left out by PostgreSQL as by the Python writer."""
    dataset = generate("SQL hidden", queries=2, systems=2, criteria=3, judges=2, samples=1)
    exporter = Exporter(dataset, ExportOptions())
    exporter.keys = build_keys(dataset, None, exporter.options.include)
    everything = _sql_lines(exporter).count(b"\n")
    del exporter.keys.answers[min(exporter.keys.answers)]
    del exporter.keys.criteria[max(exporter.keys.criteria)]
    python, sql = _python_lines(exporter), _sql_lines(exporter)
    assert python == sql
    assert 0 < sql.count(b"\n") < everything


class _Recording:
    """A cursor that notes the size of every statement's parameters."""

    def __init__(self, cursor) -> None:
        self.cursor = cursor
        self.sizes: list[int] = []

    def execute(self, sql, params):
        self.sizes.append(sum(len(str(p)) for p in params))
        return self.cursor.execute(sql, params)


def test_the_maps_of_external_keys_go_to_the_server_in_pieces(monkeypatch):
    """The maps from ids to external keys are sent once, in pieces of about PIECE
    characters, never whole (at 120,000 criteria one was 9 MB, copied into every run's
    statement), and PostgreSQL holds the whole map: the lines are the Python writer's."""
    dataset = generate("SQL pieces", queries=3, systems=2, criteria=4, judges=2, samples=1)
    exporter = Exporter(dataset, ExportOptions())
    exporter.keys = build_keys(dataset, None, exporter.options.include)
    monkeypatch.setattr(export_sql, "PIECE", 200)
    with connection.cursor() as cursor:
        recording = _Recording(cursor.cursor)
        export_sql._send_keys(recording, exporter.keys)
        cursor.execute("SELECT current_setting(%s)", [export_sql.SETTING.format("criteria")])
        criteria = json.loads(cursor.fetchone()[0])
    assert len(exporter.keys.criteria) == len(criteria) == 24
    assert len(recording.sizes) > 2 * len(export_sql.SETTINGS)  # several pieces a map
    assert max(recording.sizes) < 200 + 300  # a piece, one member past it, the names
    pk, (_query, author, key) = next(iter(exporter.keys.criteria.items()))
    assert json.loads("{" + criteria[str(pk)].lstrip(", ") + "}") == {
        "author": author,
        "criterion": key,
    }
    assert _python_lines(exporter) == _sql_lines(exporter)
    with connection.cursor() as cursor:  # emptied after the last run
        cursor.execute("SELECT current_setting(%s)", [export_sql.SETTING.format("criteria")])
        assert cursor.fetchone()[0] == ""
