"""The SQL forms of the satisfied rule and of the strategies' per-group counts
(evaluation.metrics.rubrics_sql) give the Python rule's answer (evaluation.metrics.rubrics)
on every case of a table: met and not met, a penalty or not, weight 0, undecided (and a
NULL outcome, the human reference of an unlabelled item). On the database the suite runs
on: SQLite by default, PostgreSQL with DATABASE_URL."""

from __future__ import annotations

from dataclasses import astuple
from decimal import Decimal

import pytest
from django.db import connection

from evaluation.metrics import rubrics, rubrics_sql
from evaluation.metrics.rubrics import GroupCounts, RubricCriterion

pytestmark = pytest.mark.django_db

OUTCOMES = ("pass", "fail", "undecided", None)
WEIGHTS = (Decimal("-10"), Decimal("-1"), Decimal("-0.25"), Decimal("0"), Decimal("0.25"),
           Decimal("1"), Decimal("2.5"))  # fmt: skip
CASES = [(outcome, weight) for outcome in OUTCOMES for weight in WEIGHTS]


def _select(expressions: list[str], cases, *, enabled=None) -> tuple:
    """`expressions` over a table of (outcome, weight, enabled) rows, one row back."""
    rows = " UNION ALL ".join(
        ["SELECT CAST(%s AS VARCHAR(20)) AS outcome, CAST(%s AS NUMERIC(6, 2)) AS weight, "
         "CAST(%s AS INTEGER) AS enabled"] * len(cases)
    )  # fmt: skip
    params = [v for n, (o, w) in enumerate(cases) for v in (o, w, enabled(n) if enabled else 1)]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(expressions)} FROM ({rows}) cases", params)
        return cursor.fetchone()


def _python(cases) -> GroupCounts:
    counts = GroupCounts()
    for outcome, weight in cases:
        RubricCriterion(outcome, weight).count(counts)
    return counts


@pytest.mark.parametrize(("outcome", "weight"), CASES)
def test_satisfied_in_sql_is_the_python_rule(outcome, weight):
    (found,) = _select([rubrics_sql.satisfied("outcome", "weight")], [(outcome, weight)])
    expected = rubrics.satisfied(outcome, weight)
    assert (None if found is None else bool(found)) == expected


@pytest.mark.parametrize(("outcome", "weight"), CASES)
def test_each_criterion_counts_the_same_in_sql(outcome, weight):
    found = rubrics_sql.counts_of(
        _select(rubrics_sql.group_counts("outcome", "weight"), [(outcome, weight)])
    )
    assert astuple(found) == astuple(_python([(outcome, weight)]))


def test_a_group_of_every_case_counts_the_same_in_sql_and_where_filters_rows():
    found = rubrics_sql.counts_of(_select(rubrics_sql.group_counts("outcome", "weight"), CASES))
    assert astuple(found) == pytest.approx(astuple(_python(CASES)), abs=1e-9)
    # Only the rows where `where` holds count (the run scores' enabled criteria).
    only = rubrics_sql.group_counts("outcome", "weight", where="enabled = 1")
    found = rubrics_sql.counts_of(_select(only, CASES, enabled=lambda n: n % 3 != 0))
    kept = [case for n, case in enumerate(CASES) if n % 3 != 0]
    assert astuple(found) == pytest.approx(astuple(_python(kept)), abs=1e-9)
