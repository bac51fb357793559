"""Two interval pieces several figures share: the Wilson score interval of a proportion
(pairwise win rates, judges' flip rates) and the quantile of a sorted bootstrap
distribution (overlap, Bradley–Terry strengths). Plain Python, no model."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evaluation.metrics.agreement import Z_95


def wilson(count: int, n: int, *, z: float = Z_95) -> tuple[float | None, ...]:
    """(rate, low, high) of `count` of `n` with its Wilson score interval (Wilson 1927):
    unlike the normal approximation it stays inside [0, 1] and is honest at 0 of n and n of
    n, where its bounds are exactly 0 and 1 (not a rounding away). (None, None, None) when
    n is 0."""
    if n <= 0:
        return None, None, None
    p = count / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if count == 0 else max(0.0, centre - half)
    high = 1.0 if count == n else min(1.0, centre + half)
    return p, low, high


def quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values by linear interpolation between closest ranks
    (numpy's default)."""
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)
