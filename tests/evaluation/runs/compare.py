"""Comparing a run's reports field by field, floats to 1e-12: the SQL scores against their
oracle (test_scores_sql.py), the kept slices against the whole report (test_scores_kept.py)."""

from __future__ import annotations

import math


def same(expected, actual, path="") -> None:
    if isinstance(expected, dict):
        assert set(expected) == set(actual), path
        for key in expected:
            same(expected[key], actual[key], f"{path}/{key}")
    elif isinstance(expected, list | tuple):
        assert len(expected) == len(actual), path
        for n, (e, a) in enumerate(zip(expected, actual, strict=True)):
            same(e, a, f"{path}[{n}]")
    elif isinstance(expected, float) and isinstance(actual, float):
        assert math.isclose(expected, actual, rel_tol=1e-12, abs_tol=1e-12), path
    else:
        assert expected == actual, path
