"""The agreement figures' counts, computed in the database.

One SQL statement derives every labelled or adjudicated item of a dataset (its human
reference, the run panel's verdict, each judge's label, its criterion's kind and source
types, its query's category, its answer's system) and returns only counts: the
confusion-matrix cells of every figure, the item counts, and the (passes, fails) histogram
of multiply-labelled items that Krippendorff's alpha needs. Nothing per item reaches
Python; the statistics are then computed from the cells by evaluation.metrics.agreement.

The rules are those of docs/metrics.md#agreement, as the previous Python code applied them
(kept as the test oracle in tests/evaluation/agreement/oracle.py):
- human reference: the adjudication, else the majority of the labels; a tie has none;
- panel: the run's method and threshold (its snapshot) over the valid votes of all its
  judges; no vote at all: none (NULL); no valid vote or a majority tie: "undecided";
- a judge's label: the majority of its valid samples; a tie has none;
- unparseable and errored votes are counted apart, never as a label.

The statement runs on PostgreSQL and SQLite (the development default).
"""

# SQL text here is built from this module's constants; every value is a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection, transaction

from evaluation.metrics import votes_sql

NO_VALUE = "(none)"


@dataclass(frozen=True)
class Cell:
    figure: str  # panel, kind, source, category, system, judge, pair, rater, rater-judges,
    # rater-others, alpha, count
    value: str  # the group (kind, source type, judge, first rater...); count: its name
    other: str  # pair: the second rater
    first: str | None
    second: str | None
    n: int


def items_sql(
    *,
    with_run: bool,
    method: str,
    threshold: float,
    window: bool = False,
    one: bool = False,
    excluded: int = 0,
) -> str:
    """The CTEs `hl` (labels), `jv` (votes per item and judge) and `item` (one row per
    labelled or adjudicated item). Parameters: %(dataset)s, and %(run)s with a run. With
    `window`, only the items after (%(lo_a)s, %(lo_c)s) up to answer %(hi_a)s; with `one`,
    only the item (%(one_a)s, %(one_c)s). With `excluded` items (the run's judges were shown
    them as worked examples: evaluation.judges.tuning), the CTE `ex` holds them
    (`excluded_params`) and they are no item: every figure leaves them out alike.

    Longer than most functions on purpose: it is one SQL statement, and a recount
    (`dataset_cells`) and one item's counts (`item_cells`, which moves the kept counts after
    a label) must read the same CTEs, so they are written once, here, whole."""
    only = ""
    if window:
        only = (
            "AND (a.id > %(lo_a)s OR (a.id = %(lo_a)s AND {t}.criterion_id > %(lo_c)s)) "
            "AND a.id <= %(hi_a)s"
        )
    elif one:
        only = "AND a.id = %(one_a)s AND {t}.criterion_id = %(one_c)s"
    panel = votes_sql.panel_outcome(method, threshold, "iv.p", "iv.f")
    human = votes_sql.majority_label("coalesce(lab.lp, 0)", "coalesce(lab.lf, 0)")
    keys = """
keys AS (
  SELECT answer_id, criterion_id FROM lab UNION SELECT answer_id, criterion_id FROM adj
)"""
    if excluded:
        rows = ", ".join(
            f"(CAST(%(ex_a{n})s AS BIGINT), CAST(%(ex_c{n})s AS BIGINT))" for n in range(excluded)
        )
        keys = f"""
ex(answer_id, criterion_id) AS (VALUES {rows}),
labelled AS (
  SELECT answer_id, criterion_id FROM lab UNION SELECT answer_id, criterion_id FROM adj
),
keys AS (
  SELECT answer_id, criterion_id FROM labelled
  EXCEPT SELECT answer_id, criterion_id FROM ex
)"""
    votes = (
        """
jv AS (
  SELECT v.answer_id, v.criterion_id, v.judge_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f,
         sum(CASE WHEN v.outcome IN ('unparseable', 'error') THEN 1 ELSE 0 END) AS inv
  FROM evaluation_verdict v
  JOIN keys k ON k.answer_id = v.answer_id AND k.criterion_id = v.criterion_id
  WHERE v.run_id = %(run)s
  GROUP BY v.answer_id, v.criterion_id, v.judge_id
),"""
        if with_run
        else """
jv AS (
  SELECT answer_id, criterion_id, 0 AS judge_id, 0 AS p, 0 AS f, 0 AS inv FROM keys WHERE 1 = 0
),"""
    )
    return f"""
WITH
hl AS (
  SELECT l.answer_id, l.criterion_id, l.rater, l.label
  FROM evaluation_humanlabel l
  JOIN evaluation_answer a ON a.id = l.answer_id
  JOIN annotation_query q ON q.id = a.query_id
  WHERE q.dataset_id = %(dataset)s {only.format(t="l")}
),
lab AS (
  SELECT answer_id, criterion_id,
         sum(CASE WHEN label = 'pass' THEN 1 ELSE 0 END) AS lp,
         sum(CASE WHEN label = 'fail' THEN 1 ELSE 0 END) AS lf
  FROM hl GROUP BY answer_id, criterion_id
),
adj AS (
  SELECT d.answer_id, d.criterion_id, d.label
  FROM evaluation_adjudication d
  JOIN evaluation_answer a ON a.id = d.answer_id
  JOIN annotation_query q ON q.id = a.query_id
  WHERE q.dataset_id = %(dataset)s {only.format(t="d")}
),
{keys},{votes}
iv AS (
  SELECT answer_id, criterion_id, sum(p) AS p, sum(f) AS f, sum(inv) AS inv
  FROM jv GROUP BY answer_id, criterion_id
),
item AS (
  SELECT k.answer_id, k.criterion_id, cq.id AS query_id, c.kind,
         coalesce(qc.name, '{NO_VALUE}') AS category, s.name AS system,
         coalesce(lab.lp, 0) AS lp, coalesce(lab.lf, 0) AS lf, adj.label AS adjudication,
         coalesce(adj.label, {human}) AS human,
         CASE WHEN iv.answer_id IS NULL THEN NULL ELSE {panel} END AS panel,
         coalesce(iv.inv, 0) AS invalid
  FROM keys k
  JOIN annotation_criterion c ON c.id = k.criterion_id
  JOIN annotation_checklist cl ON cl.id = c.checklist_id
  JOIN annotation_query cq ON cq.id = cl.query_id
  LEFT JOIN annotation_querycategory qc ON qc.id = cq.category_id
  JOIN evaluation_answer a ON a.id = k.answer_id
  JOIN evaluation_system s ON s.id = a.system_id
  LEFT JOIN lab ON lab.answer_id = k.answer_id AND lab.criterion_id = k.criterion_id
  LEFT JOIN adj ON adj.answer_id = k.answer_id AND adj.criterion_id = k.criterion_id
  LEFT JOIN iv ON iv.answer_id = k.answer_id AND iv.criterion_id = k.criterion_id
  WHERE cq.dataset_id = %(dataset)s
)"""


def _judge_label() -> str:
    return votes_sql.majority_label("jv.p", "jv.f")


def _others() -> str:
    others_p = "(i.lp - CASE WHEN h.label = 'pass' THEN 1 ELSE 0 END)"
    others_f = "(i.lf - CASE WHEN h.label = 'fail' THEN 1 ELSE 0 END)"
    return votes_sql.majority_label(others_p, others_f)


# Every part: (figure, value, other, first, second, n). Text columns are cast so that the
# UNION has one type per column on both databases.
_PARTS = (
    "SELECT 'count', 'items', '', NULL, NULL, count(*) FROM item",
    "SELECT 'count', 'adjudicated', '', NULL, NULL, count(adjudication) FROM item",
    "SELECT 'count', 'human_ties', '', NULL, NULL, count(*) FROM item "
    "WHERE adjudication IS NULL AND lp + lf > 0 AND lp = lf",
    "SELECT 'count', 'without_votes', '', NULL, NULL, count(*) FROM item "
    "WHERE human IS NOT NULL AND panel IS NULL",
    "SELECT 'count', 'panel_undecided', '', NULL, NULL, count(*) FROM item "
    "WHERE human IS NOT NULL AND panel = 'undecided'",
    "SELECT 'count', 'invalid_votes', '', NULL, NULL, coalesce(sum(invalid), 0) FROM item",
    "SELECT 'count', 'alpha_items', '', NULL, NULL, count(*) FROM item WHERE lp + lf >= 2",
    "SELECT 'panel', '', '', panel, human, count(*) FROM item GROUP BY panel, human",
    "SELECT 'kind', kind, '', panel, human, count(*) FROM item GROUP BY kind, panel, human",
    "SELECT 'category', category, '', panel, human, count(*) FROM item "
    "GROUP BY category, panel, human",
    "SELECT 'system', system, '', panel, human, count(*) FROM item GROUP BY system, panel, human",
    f"SELECT 'source', coalesce(st.name, '{NO_VALUE}'), '', i.panel, i.human, count(*) "
    "FROM item i "
    "LEFT JOIN annotation_criterion_source_types cs ON cs.criterion_id = i.criterion_id "
    "LEFT JOIN annotation_sourcetype st ON st.id = cs.sourcetype_id "
    f"GROUP BY coalesce(st.name, '{NO_VALUE}'), i.panel, i.human",
    f"SELECT 'judge', j.name, '', {_judge_label()}, i.human, count(*) FROM jv "
    "JOIN item i ON i.answer_id = jv.answer_id AND i.criterion_id = jv.criterion_id "
    f"JOIN evaluation_judge j ON j.id = jv.judge_id GROUP BY j.name, {_judge_label()}, i.human",
    "SELECT 'rater', h.rater, '', NULL, NULL, count(*) FROM hl h "
    "JOIN item i ON i.answer_id = h.answer_id AND i.criterion_id = h.criterion_id "
    "GROUP BY h.rater",
    "SELECT 'pair', x.rater, y.rater, x.label, y.label, count(*) FROM hl x "
    "JOIN hl y ON y.answer_id = x.answer_id AND y.criterion_id = x.criterion_id "
    "AND y.rater <> x.rater "
    "JOIN item i ON i.answer_id = x.answer_id AND i.criterion_id = x.criterion_id "
    "GROUP BY x.rater, y.rater, x.label, y.label",
    "SELECT 'rater-judges', h.rater, '', i.panel, h.label, count(*) FROM hl h "
    "JOIN item i ON i.answer_id = h.answer_id AND i.criterion_id = h.criterion_id "
    "GROUP BY h.rater, i.panel, h.label",
    f"SELECT 'rater-others', h.rater, '', {_others()}, h.label, count(*) FROM hl h "
    "JOIN item i ON i.answer_id = h.answer_id AND i.criterion_id = h.criterion_id "
    f"GROUP BY h.rater, {_others()}, h.label",
    "SELECT 'alpha', CAST(lp AS VARCHAR(12)), CAST(lf AS VARCHAR(12)), NULL, NULL, count(*) "
    "FROM item WHERE lp + lf >= 2 GROUP BY lp, lf",
)


def cells(
    dataset_id: int,
    run_id: int | None,
    *,
    method: str,
    threshold: float,
    excluded: Sequence[tuple[int, int]] = (),
) -> list[Cell]:
    """Every count behind the dataset's agreement figures for the run (or without one),
    the `excluded` items left out (and counted: "count", "excluded")."""
    sql = items_sql(
        with_run=run_id is not None, method=method, threshold=threshold, excluded=len(excluded)
    )
    body = "\nUNION ALL\n".join(_parts(excluded))
    params = {"dataset": dataset_id, "run": run_id, **excluded_params(excluded)}
    with _planned() as cursor:
        cursor.execute(f"{sql}\n{body}", params)
        return _cells(cursor.fetchall())


def item_cells(
    dataset_id: int,
    run_id: int | None,
    *,
    method: str,
    threshold: float,
    answer_id: int,
    criterion_id: int,
    excluded: Sequence[tuple[int, int]] = (),
) -> list[Cell]:
    """What one item adds to `cells()`: every part is a count over items (or over the
    labels and votes of an item), so the dataset's cells are the sum of its items' cells,
    and a change to one item moves them by its cells after minus its cells before
    (evaluation.agreement.delta). Index look-ups for one item: no planner settings."""
    sql = items_sql(
        with_run=run_id is not None, method=method, threshold=threshold, one=True,
        excluded=len(excluded),
    )  # fmt: skip
    body = "\nUNION ALL\n".join(_parts(excluded))
    params = {
        "dataset": dataset_id, "run": run_id, "one_a": answer_id, "one_c": criterion_id,
        **excluded_params(excluded),
    }  # fmt: skip
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and connection.in_atomic_block:
            # One item's rows: JIT compilation never pays here. Without statistics (a new or
            # freshly written table before autovacuum's ANALYZE) the CTEs look costly enough
            # for it, and compiling took about 1.5 s per call, twice per label write, on the
            # test database. For the rest of the write's transaction (SET LOCAL); outside a
            # transaction, where SET LOCAL does nothing, delta never calls this.
            cursor.execute("SET LOCAL jit = off")
        cursor.execute(f"{sql}\n{body}", params)
        return _cells(cursor.fetchall())


def excluded_params(excluded: Sequence[tuple[int, int]]) -> dict[str, int]:
    """The parameters of the `ex` CTE (`items_sql(excluded=len(excluded))`)."""
    params: dict[str, int] = {}
    for n, (answer_id, criterion_id) in enumerate(sorted(excluded)):
        params[f"ex_a{n}"], params[f"ex_c{n}"] = int(answer_id), int(criterion_id)
    return params


def _parts(excluded: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    """The parts; with excluded items, also how many labelled items they are (a count over
    items like the others, so that the kept counts move by it too)."""
    if not excluded:
        return _PARTS
    return (
        *_PARTS,
        "SELECT 'count', 'excluded', '', NULL, NULL, count(*) FROM labelled l "
        "JOIN ex ON ex.answer_id = l.answer_id AND ex.criterion_id = l.criterion_id",
    )


def _cells(rows: list[tuple]) -> list[Cell]:
    return [Cell(f, v or "", o or "", a, b, int(n)) for f, v, o, a, b, n in rows]


@contextmanager
def _planned() -> Iterator:
    """A cursor for the item statements. On PostgreSQL, for one transaction: hash joins and
    enough memory. PostgreSQL cannot estimate how many rows the CTEs hold (it guesses a few
    hundred where there are 200,000), and left alone picks nested loops that join 200,000
    rows to 200,000 rows, for minutes (docs/benchmarks.md#agreement); hash joins are right
    at every size here, and the memory keeps hashes and sorts off the disk."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_nestloop = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        yield cursor


@dataclass(frozen=True)
class ItemRow:
    answer_id: int
    criterion_id: int
    query_id: int
    system: str
    kind: str
    category: str
    adjudication: str | None
    human: str | None
    panel: str | None
    invalid: int
    lp: int
    lf: int


def item_rows(
    dataset_id: int,
    run_id: int | None,
    *,
    method: str,
    threshold: float,
    where: str,
    params: dict,
    after: tuple[int, int],
    until_answer: int,
    limit: int,
    excluded: Sequence[tuple[int, int]] = (),
) -> list[ItemRow]:
    """Items matching `where` (SQL over the `item` CTE as `i`, with `params`) after the
    keyset `after` (answer, criterion) up to answer `until_answer`, in (answer, criterion)
    order, at most `limit`. Only that window of items is derived, so a page costs what its
    window holds, wherever it is."""
    sql = items_sql(
        with_run=run_id is not None, method=method, threshold=threshold, window=True,
        excluded=len(excluded),
    )  # fmt: skip
    query = f"""{sql}
SELECT i.answer_id, i.criterion_id, i.query_id, i.system, i.kind, i.category,
       i.adjudication, i.human, i.panel, i.invalid, i.lp, i.lf
FROM item i WHERE ({where})
ORDER BY i.answer_id, i.criterion_id LIMIT %(limit)s"""
    all_params = {
        "dataset": dataset_id, "run": run_id, "limit": limit, "lo_a": after[0],
        "lo_c": after[1], "hi_a": until_answer, **params, **excluded_params(excluded),
    }  # fmt: skip
    # A window is a few thousand items at most: index lookups (nested loops) suit it, so no
    # planner settings here, unlike the whole-dataset count.
    with connection.cursor() as cursor:
        cursor.execute(query, all_params)
        return [
            ItemRow(*row[:9], int(row[9]), int(row[10]), int(row[11])) for row in cursor.fetchall()
        ]
