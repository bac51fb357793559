"""Comparing reports field by field, floats to a relative tolerance (1e-12 unless said): the
SQL scores and agreement figures against their oracles, kept slices against whole reports."""

from __future__ import annotations

import math


def same(expected, actual, path="", *, rel_tol: float = 1e-12) -> None:
    if isinstance(expected, dict):
        assert set(expected) == set(actual), path
        for key in expected:
            same(expected[key], actual[key], f"{path}/{key}", rel_tol=rel_tol)
    elif isinstance(expected, list | tuple):
        assert len(expected) == len(actual), path
        for n, (e, a) in enumerate(zip(expected, actual, strict=True)):
            same(e, a, f"{path}[{n}]", rel_tol=rel_tol)
    elif isinstance(expected, float) and isinstance(actual, float):
        assert math.isclose(expected, actual, rel_tol=rel_tol, abs_tol=1e-12), path
    else:
        assert expected == actual, path
