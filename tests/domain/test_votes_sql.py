"""The SQL forms of the vote rules (evaluation.metrics.votes_sql) give aggregate()'s outcome for
every count of pass and fail votes up to ten, for every method (on SQLite, in memory)."""

from __future__ import annotations

import sqlite3

import pytest

from evaluation.metrics.aggregation import Vote, aggregate
from evaluation.metrics.agreement import majority
from evaluation.metrics.votes_sql import majority_label, panel_outcome

COUNTS = [(p, f) for p in range(11) for f in range(11)]


def votes(passes: int, fails: int) -> list[Vote]:
    return [Vote(f"j{n}", 0, "pass" if n < passes else "fail") for n in range(passes + fails)]


@pytest.mark.parametrize(
    ("method", "threshold"),
    [
        ("majority", 0.5), ("unanimity", 0.5), ("mean_threshold", 0.5),
        ("mean_threshold", 0.7), ("mean_threshold", 1 / 3), ("mean_threshold", 0.0),
        ("mean_threshold", 1.0),
    ],
)  # fmt: skip
def test_panel_outcome_matches_aggregate(method, threshold):
    db = sqlite3.connect(":memory:")
    expression = panel_outcome(method, threshold, "p", "f")
    for p, f in COUNTS:
        (found,) = db.execute(
            f"SELECT {expression} FROM (SELECT ? AS p, ? AS f)", (p, f)
        ).fetchone()
        assert found == aggregate(votes(p, f), method, threshold=threshold).outcome, (p, f)


def test_majority_label_matches_majority():
    db = sqlite3.connect(":memory:")
    expression = majority_label("p", "f")
    for p, f in COUNTS:
        (found,) = db.execute(
            f"SELECT {expression} FROM (SELECT ? AS p, ? AS f)", (p, f)
        ).fetchone()
        assert found == majority(["pass"] * p + ["fail"] * f), (p, f)


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError):
        panel_outcome("plurality", 0.5, "p", "f")
