"""McNemar's test of two judges graded on the same items: pure Python, no scipy.

Each item is right or wrong for each judge (its verdict against the human reference). Only
the discordant items say which is better:

    b = items the first judge got right and the second wrong
    c = items the first judge got wrong and the second right

Under the null hypothesis (both equally often right) each discordant item falls either way
with probability ½. With few discordant items (b + c < EXACT_BELOW) the two-sided exact
binomial test:

    p = min(1, 2 · Σ_{i=0}^{min(b, c)} C(b + c, i) / 2^(b + c))

otherwise the chi-square statistic with Edwards' continuity correction, one degree of
freedom:

    χ² = (|b - c| - 1)² / (b + c)        p = P(χ²₁ ≥ χ²) = erfc(√(χ² / 2))

McNemar (1947), "Note on the sampling error of the difference between correlated
proportions or percentages", Psychometrika 12(2); Edwards (1948); the threshold of 25 is
the usual one for the exact test (e.g. Fagerland, Lydersen and Laake, 2013). With no
discordant item the judges cannot be told apart: p = 1. See docs/metrics.md#mcnemar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EXACT_BELOW = 25


@dataclass(frozen=True)
class McNemar:
    b: int  # first right, second wrong
    c: int  # first wrong, second right
    method: str  # "exact" (binomial) or "chi-square" (with continuity correction)
    statistic: float | None  # χ² for "chi-square"; None for "exact"
    p_value: float

    @property
    def discordant(self) -> int:
        return self.b + self.c


def mcnemar(b: int, c: int) -> McNemar:
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be counts, got {b} and {c}")
    n = b + c
    if n < EXACT_BELOW:
        tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
        return McNemar(b, c, "exact", None, min(1.0, 2 * tail))
    statistic = (abs(b - c) - 1) ** 2 / n
    return McNemar(b, c, "chi-square", statistic, math.erfc(math.sqrt(statistic / 2)))
