"""Verdicts partitioned by run, against the table as it is (issue 44, decision 0007).

    export DATABASE_URL=postgresql://postgres@127.0.0.1:5432/h_month
    .venv/bin/python -m bench.verdict_partitions --block 10 [--repeat 7] [--keep]

On a database seeded by ``bench.seed_scale`` (the month preset: 30 nightly runs of
720,000 verdicts), builds beside `evaluation_verdict` a copy of it declared
``PARTITION BY RANGE (run_id)``, one partition per `--block` runs, with the same indexes
(decision 0007's candidate: the unique vote key already holds the run, so the upsert that
makes a redelivered judge task idempotent is unchanged), then times, on both, the
statements the product runs against verdicts: a run's counts (scores, analytics, the run
page), the verdicts API's pages, an answer's verdicts in one run and across runs, the judge
cache's lookup, one upsert, and removing a run (DELETE) or a block of runs (DROP of its
partition on the copy); each the median of `--repeat` warm runs, DELETE and DROP inside a
transaction rolled back. Prints each statement's time on both and the ratio copy / table,
and the disk of each. The copy is dropped at the end unless `--keep`.

Nothing else should run beside it: every figure is a wall time on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import psycopg

PLAIN = "evaluation_verdict"
COPY = "bench_verdict_by_run"

# The indexes of evaluation_verdict (its migrations), made on the copy's parent: each
# partition gets its own.
INDEXES = (
    "UNIQUE (run_id, answer_id, criterion_id, judge_id, sample)",
    "(run_id, outcome)",
    "(run_id, id)",
    "(run_id, answer_id, criterion_id) INCLUDE (outcome, judge_id)",
    "(answer_id)",
    "(criterion_id)",
    "(judge_id)",
    "(cache_key)",
)


def build(cursor, block: int) -> list[tuple[int, int]]:
    """The partitioned copy, filled and indexed; its blocks' (low, high) run ids."""
    cursor.execute(f"DROP TABLE IF EXISTS {COPY}")
    cursor.execute(
        f"CREATE TABLE {COPY} (LIKE {PLAIN} INCLUDING DEFAULTS) PARTITION BY RANGE (run_id)"
    )
    cursor.execute(f"SELECT MIN(run_id), MAX(run_id) FROM {PLAIN}")
    low, high = cursor.fetchone()
    blocks = [(start, start + block) for start in range(low, high + 1, block)]
    for n, (start, stop) in enumerate(blocks):
        cursor.execute(
            f"CREATE TABLE {COPY}_{n} PARTITION OF {COPY} FOR VALUES FROM ({start}) TO ({stop})"
        )
    started = time.monotonic()
    cursor.execute(f"INSERT INTO {COPY} SELECT * FROM {PLAIN}")
    print(f"copied {cursor.rowcount:,} verdicts in {time.monotonic() - started:.0f} s", flush=True)
    started = time.monotonic()  # the indexes after the rows: built, not grown row by row
    cursor.execute(f"ALTER TABLE {COPY} ADD PRIMARY KEY (id, run_id)")
    for n, columns in enumerate(INDEXES):
        unique = "UNIQUE " if columns.startswith("UNIQUE") else ""
        columns = columns.removeprefix("UNIQUE ")
        cursor.execute(f"CREATE {unique}INDEX {COPY}_i{n} ON {COPY} {columns}")
    print(f"indexed in {time.monotonic() - started:.0f} s", flush=True)
    cursor.execute(f"VACUUM (ANALYZE) {COPY}")
    return blocks


def statements(cursor) -> list[tuple[str, str, tuple, bool]]:
    """(what, SQL with {table}, parameters, rolled back) for the newest run, one of its
    answers, a verdict id deep in it and a cache key."""
    cursor.execute(f"SELECT MAX(run_id) FROM {PLAIN}")
    (run,) = cursor.fetchone()
    cursor.execute(f"SELECT COUNT(*) FROM {PLAIN} WHERE run_id = %s", (run,))
    middle = cursor.fetchone()[0] // 2  # a verdict in the middle of the run, and its item
    cursor.execute(
        f"SELECT id, answer_id, criterion_id, judge_id, cache_key FROM {PLAIN} "
        "WHERE run_id = %s ORDER BY id OFFSET %s LIMIT 1",
        (run, middle),
    )
    deep, answer, criterion, judge, cache_key = cursor.fetchone()
    columns = "id, run_id, answer_id, criterion_id, judge_id, sample, outcome"
    return [
        (
            "a run's votes per item (scores, analytics)",
            "SELECT answer_id, criterion_id, SUM(CASE WHEN outcome = 'pass' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN outcome = 'fail' THEN 1 ELSE 0 END) FROM {table} WHERE run_id = %s "
            "GROUP BY answer_id, criterion_id",
            (run,),
            False,
        ),
        (
            "a run's verdicts by outcome (run page)",
            "SELECT outcome, COUNT(*) FROM {table} WHERE run_id = %s GROUP BY outcome",
            (run,),
            False,
        ),
        (
            "verdicts API, first page",
            f"SELECT {columns} FROM {{table}} WHERE run_id = %s ORDER BY id LIMIT 100",
            (run,),
            False,
        ),
        (
            "verdicts API, a page deep in the run",
            f"SELECT {columns} FROM {{table}} WHERE run_id = %s AND id > %s ORDER BY id LIMIT 100",
            (run, deep),
            False,
        ),
        (
            "an answer's verdicts in one run (answer page)",
            f"SELECT {columns} FROM {{table}} WHERE run_id = %s AND answer_id = %s",
            (run, answer),
            False,
        ),
        (
            "an answer's verdicts in every run",
            "SELECT run_id, COUNT(*) FROM {table} WHERE answer_id = %s GROUP BY run_id",
            (answer,),
            False,
        ),
        (
            "the judge cache's lookup",
            "SELECT id FROM {table} WHERE cache_key = %s LIMIT 1",
            (cache_key,),
            False,
        ),
        (
            "one verdict written again (the idempotent upsert)",
            "INSERT INTO {table} SELECT * FROM {table} WHERE run_id = %s AND answer_id = %s "
            "AND criterion_id = %s AND judge_id = %s AND sample = 0 "
            "ON CONFLICT (run_id, answer_id, criterion_id, judge_id, sample) "
            "DO UPDATE SET outcome = EXCLUDED.outcome",
            (run, answer, criterion, judge),
            True,
        ),
        (
            "remove a run (DELETE of its verdicts)",
            "DELETE FROM {table} WHERE run_id = %s",
            (run,),
            True,
        ),
    ]


def timed(connection, sql: str, params: tuple, rolled_back: bool, repeat: int) -> float:
    """The median wall time in ms of `repeat` runs, after one to warm the cache."""
    took = []
    for n in range(repeat + 1):
        with connection.transaction(force_rollback=rolled_back), connection.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute(sql, params)
            if cursor.description:
                cursor.fetchall()
            if n:
                took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verdict_partitions", description=__doc__)
    parser.add_argument("--block", type=int, default=10, help="runs per partition")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the partitioned copy")
    parser.add_argument("--reuse", action="store_true", help="time a copy kept by --keep")
    args = parser.parse_args(argv)
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        print("DATABASE_URL must name the seeded PostgreSQL database", file=sys.stderr)
        return 2
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.cursor()
        if not args.reuse:
            build(cursor, args.block)
        else:
            cursor.execute(f"SELECT to_regclass('{COPY}') IS NOT NULL")
            if not cursor.fetchone()[0]:
                print(f"--reuse: no {COPY} to time (build it with --keep)", file=sys.stderr)
                return 2
        cursor.execute(f"SELECT COUNT(*) FROM pg_inherits WHERE inhparent = '{COPY}'::regclass")
        partitions = cursor.fetchone()[0]
        print(f"\n{'statement':<52} {'table ms':>10} {'by run ms':>10} {'ratio':>6}")
        for what, sql, params, rolled_back in statements(cursor):
            plain = timed(connection, sql.format(table=PLAIN), params, rolled_back, args.repeat)
            copy = timed(connection, sql.format(table=COPY), params, rolled_back, args.repeat)
            print(f"{what:<52} {plain:>10.2f} {copy:>10.2f} {copy / plain:>6.2f}", flush=True)
        drop = timed(connection, f"DROP TABLE {COPY}_0", (), True, args.repeat)
        what = f"remove a block of {args.block} runs (DROP a partition)"
        print(f"{what:<52} {'':>10} {drop:>10.2f}")
        sizes = []
        for table in (PLAIN, COPY):
            cursor.execute(
                "SELECT SUM(pg_total_relation_size(c)) FROM (SELECT %s::regclass AS c UNION ALL "
                "SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = %s::regclass) t",
                (table, table),
            )
            sizes.append(cursor.fetchone()[0])
        cursor.execute(f"SELECT COUNT(*) FROM {PLAIN}")
        count = cursor.fetchone()[0]
        print(
            f"\ndisk with indexes: table {sizes[0] / count:.1f} bytes per verdict, "
            f"by run ({partitions} partitions) {sizes[1] / count:.1f}"
        )
        if not args.keep:
            cursor.execute(f"DROP TABLE {COPY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
