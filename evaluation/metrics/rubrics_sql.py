"""The satisfied rule and the per-group counts of evaluation.metrics.rubrics as SQL
expressions, for the reads that count a run's verdicts in the database (run scores,
analytics) instead of bringing every criterion into Python.

`satisfied` is `rubrics.satisfied` under `excluded` (the counts keep undecided criteria
apart, with what they weigh; `GroupCounts.read_as` then counts them as the checklist's
setting says); `group_counts` gives one SUM per field of `rubrics.GroupCounts`, in its field
order, each the sum over the grouped rows of what `RubricCriterion.count` adds for one
criterion. tests/evaluation/test_rubrics_sql.py holds both to the Python rule on the same
table of cases (met and not, penalty or not, weight 0, undecided), on SQLite and PostgreSQL.
As in evaluation.metrics.votes_sql, only column names and constants of our own go into the
text.
"""

from __future__ import annotations

from dataclasses import fields

from evaluation.metrics.rubrics import GroupCounts


def satisfied(outcome: str, weight: str) -> str:
    """True or false for a decided criterion, NULL for an undecided one (an outcome that is
    neither pass nor fail, NULL included), as rubrics.satisfied."""
    return (
        f"(CASE WHEN {outcome} = 'pass' THEN {weight} >= 0 "
        f"WHEN {outcome} = 'fail' THEN {weight} < 0 END)"
    )


def group_counts(
    outcome: str, weight: str, *, where: str = "", is_satisfied: str = ""
) -> list[str]:
    """The SUMs of rubrics.GroupCounts' fields, in its order, over the grouped rows of a
    verdict column `outcome` and a criterion weight `weight`. `where`: only the rows where it
    holds (say, enabled criteria) count. `is_satisfied`: a column that already holds
    satisfied(outcome, weight) for the row (computed once in a CTE), else the expression."""
    sat = is_satisfied or satisfied(outcome, weight)
    size = f"abs({weight})"
    amounts = {
        "satisfied": (sat, "1"),
        "unsatisfied": (f"NOT {sat}", "1"),
        "undecided": (f"{sat} IS NULL", "1"),
        "weight_satisfied": (sat, size),
        "weight_decided": (f"{sat} IS NOT NULL", size),
        "points_met": (f"{weight} >= 0 AND {outcome} = 'pass'", weight),
        "penalty_met": (f"{weight} < 0 AND {outcome} = 'pass'", f"-{weight}"),
        "points_decided": (f"{weight} >= 0 AND {sat} IS NOT NULL", weight),
        "weight_undecided": (f"{sat} IS NULL", size),
        "points_undecided": (f"{weight} >= 0 AND {sat} IS NULL", weight),
        "undecided_penalties": (f"{weight} < 0 AND {sat} IS NULL", "1"),
    }
    names = [f.name for f in fields(GroupCounts)]
    if list(amounts) != names:  # a field added to GroupCounts must be counted here too
        raise AssertionError(f"GroupCounts fields {names} != counted {list(amounts)}")
    only = f"{where} AND " if where else ""
    return [
        f"SUM(CASE WHEN {only}{when} THEN {then} ELSE 0 END)" for when, then in amounts.values()
    ]


def counts_of(row: tuple | list) -> GroupCounts:
    """The GroupCounts of a row of group_counts' sums (a Decimal or a float per weight sum,
    from PostgreSQL or SQLite; NULL, a sum over no row, as 0)."""
    # Called once per (answer, checklist, group) row: 250,000 times for a run of a million
    # verdicts, so a list and map() rather than generators (a tenth of the reports' time).
    values = [value or 0 for value in row]
    return GroupCounts(
        int(values[0]), int(values[1]), int(values[2]), *map(float, values[3:-1]),
        int(values[-1]),
    )  # fmt: skip
