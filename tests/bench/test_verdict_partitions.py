"""bench.verdict_partitions on the month preset's shape at a tiny size (PostgreSQL only:
it declares partitions): it times every statement on both tables, and leaves no copy
behind unless asked."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest
from django.db import connection

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="declarative partitioning is PostgreSQL's"
)


def _url() -> str:
    s = connection.settings_dict
    return f"postgresql://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _copy_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('bench_verdict_by_run') IS NOT NULL")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_it_times_each_statement_on_the_table_and_its_copy_by_run(monkeypatch):
    from bench import verdict_partitions
    from bench.seed_scale import seed

    seed("month-tiny", seed_value=2, out=io.StringIO())
    monkeypatch.setenv("DATABASE_URL", _url())
    out = io.StringIO()
    with redirect_stdout(out):
        assert verdict_partitions.main(["--block", "2", "--repeat", "1"]) == 0
    printed = out.getvalue()
    for what in (
        "a run's votes per item",
        "verdicts API, a page deep in the run",
        "the judge cache's lookup",
        "remove a run (DELETE",
        "DROP a partition",
    ):
        assert what in printed
    assert "(2 partitions)" in printed  # 3 runs in blocks of 2
    assert not _copy_exists()
    # The DELETE and the upsert were rolled back: every verdict is still there, once.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), COUNT(DISTINCT (run_id, answer_id, criterion_id, "
            "judge_id, sample)) FROM evaluation_verdict"
        )
        total, distinct = cursor.fetchone()
    assert total == distinct == 3 * 6 * 2 * 2 * 3 * 3  # runs x queries x 2 checklists x ...


def test_it_refuses_a_database_that_is_not_postgresql(monkeypatch, capsys):
    from bench import verdict_partitions

    monkeypatch.setenv("DATABASE_URL", "sqlite:///x.sqlite3")
    assert verdict_partitions.main(["--repeat", "1"]) == 2
    assert "DATABASE_URL" in capsys.readouterr().err


@pytest.mark.django_db(transaction=True)
def test_reuse_without_a_kept_copy_says_so_and_changes_nothing(monkeypatch, capsys):
    from bench import verdict_partitions

    monkeypatch.setenv("DATABASE_URL", _url())
    assert verdict_partitions.main(["--reuse", "--repeat", "1"]) == 2
    assert "--keep" in capsys.readouterr().err
    assert not _copy_exists()
