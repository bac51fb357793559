"""The vote rules of evaluation.metrics.aggregation as SQL expressions, for reads that
aggregate in the database (agreement figures) instead of loading every vote.

Each function returns SQL text over two integer expressions, the pass and fail counts of
one item's valid votes; unparseable and errored votes are never among them. They give the
same outcome as `aggregate()` for every count (tests/domain/test_votes_sql.py checks all
of them up to ten votes, on SQLite, against the Python rules). Only constants of our own
go into the text: the method is checked and the threshold is turned into two integers.
"""

from __future__ import annotations

from fractions import Fraction

from evaluation.metrics.aggregation import Method, exact_threshold


def panel_outcome(method: str, threshold: float, passes: str, fails: str) -> str:
    """'pass', 'fail' or 'undecided' (no valid vote, or a majority tie), as aggregate()."""
    method = Method(method)
    if method is Method.MAJORITY:
        return (
            f"CASE WHEN {passes} > {fails} THEN 'pass' WHEN {fails} > {passes} THEN 'fail' "
            "ELSE 'undecided' END"
        )
    if method is Method.UNANIMITY:
        return (
            f"CASE WHEN {fails} > 0 THEN 'fail' WHEN {passes} > 0 THEN 'pass' ELSE 'undecided' END"
        )
    exact: Fraction = exact_threshold(threshold)
    num, den = int(exact.numerator), int(exact.denominator)
    # passes / (passes + fails) >= num / den, in integers: no float decides a verdict.
    return (
        f"CASE WHEN {passes} + {fails} = 0 THEN 'undecided' "
        f"WHEN {passes} * {den} >= {num} * ({passes} + {fails}) THEN 'pass' ELSE 'fail' END"
    )


def majority_label(passes: str, fails: str) -> str:
    """'pass' or 'fail' by simple majority, NULL on a tie or no vote (metrics.agreement.majority
    over pass/fail labels, and a judge's label over its samples)."""
    return f"CASE WHEN {passes} > {fails} THEN 'pass' WHEN {fails} > {passes} THEN 'fail' END"
