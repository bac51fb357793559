"""Agreement statistics: pure Python, no Django, no numpy, tested without a database.

Two raters (a judge and the human label, or two reviewers) are compared on the items both
labelled: percent agreement, Cohen's kappa with a 95% interval, and the confusion matrix.
Several raters with missing labels are compared with Krippendorff's alpha (nominal).

Labels are any hashable values; the workbench passes "pass" / "fail". Undefined figures
are None, never NaN: kappa when chance agreement is 1 (both raters used one and the same
category throughout), alpha when the pairable values hold a single category, anything on
no items. See docs/metrics.md for the formulas and their references.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

# Two-sided 95% normal quantile.
Z_95 = 1.959963984540054
PASS_FAIL: tuple[str, str] = ("pass", "fail")


@dataclass(frozen=True)
class ConfusionMatrix:
    """counts[i][j]: items the first rater labelled categories[i] and the second categories[j]."""

    categories: tuple[Hashable, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def n(self) -> int:
        return sum(sum(row) for row in self.counts)

    def cell(self, first: Hashable, second: Hashable) -> int:
        return self.counts[self.categories.index(first)][self.categories.index(second)]


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa with its large-sample standard error and 95% interval.

    `kappa`, `se`, `low` and `high` are None when kappa is undefined (no items, or chance
    agreement of 1). `observed` is p_o and `expected` p_e.
    """

    n: int
    observed: float | None
    expected: float | None
    kappa: float | None
    se: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Agreement:
    """Two raters compared on the items both labelled."""

    n: int
    agree: int
    percent: float | None  # agree / n; None on no items
    kappa: Kappa
    confusion: ConfusionMatrix


def confusion_matrix(
    pairs: Iterable[tuple[Hashable, Hashable]], categories: Sequence[Hashable] | None = None
) -> ConfusionMatrix:
    """Count (first, second) label pairs. Categories default to those seen, sorted.

    A label outside the given categories raises ValueError: it means the caller mixed
    label vocabularies, and dropping it silently would change every figure.
    """
    pairs = list(pairs)
    if categories is None:
        categories = sorted({label for pair in pairs for label in pair}, key=repr)
    cats = tuple(categories)
    if len(set(cats)) != len(cats):
        raise ValueError(f"categories repeat: {cats!r}")
    index = {c: i for i, c in enumerate(cats)}
    counts = [[0] * len(cats) for _ in cats]
    for first, second in pairs:
        if first not in index or second not in index:
            raise ValueError(f"label pair {(first, second)!r} outside categories {cats!r}")
        counts[index[first]][index[second]] += 1
    return ConfusionMatrix(cats, tuple(tuple(row) for row in counts))


def percent_agreement(pairs: Iterable[tuple[Hashable, Hashable]]) -> float | None:
    """Share of items on which both raters gave the same label; None on no items."""
    pairs = list(pairs)
    if not pairs:
        return None
    return sum(1 for a, b in pairs if a == b) / len(pairs)


def kappa_from_matrix(matrix: ConfusionMatrix, *, z: float = Z_95) -> Kappa:
    """Cohen's (1960) kappa, with the large-sample standard error of Fleiss, Cohen and
    Everitt (1969) and the interval kappa ± z·SE clipped to [-1, 1].

        p_o = Σ_i p_ii          p_e = Σ_i p_i. · p_.i          κ = (p_o - p_e) / (1 - p_e)

        SE(κ) = sqrt( [ Σ_i p_ii (1 - (p_i. + p_.i)(1 - κ))²
                        + (1 - κ)² Σ_{i≠j} p_ij (p_.i + p_j.)²
                        - (κ - p_e (1 - κ))² ] / (n (1 - p_e)²) )

    where p_ij = counts[i][j] / n, p_i. the first rater's and p_.j the second's margins.
    This SE is the one for an interval (it does not assume κ = 0, unlike the SE for a test
    of κ = 0). It is asymptotic: with few items the interval is only a guide.
    """
    n = matrix.n
    if n == 0:
        return Kappa(0, None, None, None, None, None, None)
    k = len(matrix.categories)
    p = [[c / n for c in row] for row in matrix.counts]
    rows = [sum(p[i]) for i in range(k)]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]
    observed = sum(p[i][i] for i in range(k))
    expected = sum(rows[i] * cols[i] for i in range(k))
    # p_e = 1 only when both raters used one and the same category for every item: they
    # agree, but nothing distinguishes that from chance, so kappa is undefined (0/0).
    if math.isclose(expected, 1.0, rel_tol=0.0, abs_tol=1e-12):
        return Kappa(n, observed, expected, None, None, None, None)
    kappa = (observed - expected) / (1 - expected)
    diagonal = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(k))
    off = (1 - kappa) ** 2 * sum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j
    )
    correction = (kappa - expected * (1 - kappa)) ** 2
    # The bracket is a variance times n(1 - p_e)²; rounding can push an exact 0 below zero.
    variance = max(diagonal + off - correction, 0.0) / (n * (1 - expected) ** 2)
    se = math.sqrt(variance)
    return Kappa(
        n=n,
        observed=observed,
        expected=expected,
        kappa=kappa,
        se=se,
        low=max(-1.0, kappa - z * se),
        high=min(1.0, kappa + z * se),
    )


def cohen_kappa(
    pairs: Iterable[tuple[Hashable, Hashable]], categories: Sequence[Hashable] | None = None
) -> Kappa:
    return kappa_from_matrix(confusion_matrix(pairs, categories))


def compare(
    pairs: Iterable[tuple[Hashable, Hashable]], categories: Sequence[Hashable] = PASS_FAIL
) -> Agreement:
    """Percent agreement, kappa and confusion matrix of two raters in one pass.

    `pairs` are (first rater's label, second rater's label) per item both labelled; for
    judge vs human the first is the judge.
    """
    return agreement_from_matrix(confusion_matrix(pairs, categories))


def matrix_from_counts(
    cells: Mapping[tuple[Hashable, Hashable], int], categories: Sequence[Hashable] = PASS_FAIL
) -> ConfusionMatrix:
    """The confusion matrix of already counted (first, second) cells, as a database GROUP BY
    returns them. A cell outside the categories raises ValueError, as in confusion_matrix."""
    cats = tuple(categories)
    for first, second in cells:
        if first not in cats or second not in cats:
            raise ValueError(f"label pair {(first, second)!r} outside categories {cats!r}")
    return ConfusionMatrix(
        cats, tuple(tuple(int(cells.get((a, b), 0)) for b in cats) for a in cats)
    )


def agreement_from_matrix(matrix: ConfusionMatrix) -> Agreement:
    """Percent agreement and kappa of a confusion matrix (compare() on counted pairs)."""
    agree = sum(matrix.counts[i][i] for i in range(len(matrix.categories)))
    n = matrix.n
    return Agreement(
        n=n,
        agree=agree,
        percent=agree / n if n else None,
        kappa=kappa_from_matrix(matrix),
        confusion=matrix,
    )


def krippendorff_alpha(units: Iterable[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's alpha for nominal data, any number of raters, missing values allowed.

    Each unit (item) is the sequence of labels it received, None for a rater who did not
    label it. Units with fewer than two labels are not pairable and are ignored.

        o_ck = Σ_u (number of ordered pairs (c, k) of labels in u) / (m_u - 1)
        n_c  = Σ_k o_ck            n = Σ_c n_c
        alpha = 1 - (n - 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c · n_k

    None when no unit is pairable or all pairable labels are one category (no expected
    disagreement: alpha is 0/0). Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability".
    """
    return krippendorff_alpha_counted(
        (Counter(v for v in unit if v is not None), 1) for unit in units
    )


def krippendorff_alpha_counted(
    units: Iterable[tuple[Mapping[Hashable, int], int]],
) -> float | None:
    """krippendorff_alpha() over units given as (label -> count in the unit, how many units
    look like that): alpha only depends on how many times each label occurs in each unit, so
    a database can count the units (GROUP BY passes, fails) instead of listing them."""
    coincidence: Counter[tuple[Hashable, Hashable]] = Counter()
    for counts, times in units:
        m = sum(counts.values())
        if m < 2 or times <= 0:
            continue
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nc - 1) if c == k else nc * nk
                if pairs:
                    coincidence[c, k] += times * pairs / (m - 1)
    totals: Counter[Hashable] = Counter()
    for (c, _k), value in coincidence.items():
        totals[c] += value
    n = sum(totals.values())
    if n <= 1:
        return None
    observed = sum(v for (c, k), v in coincidence.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if expected == 0:
        return None
    return 1 - (n - 1) * observed / expected


@dataclass(frozen=True)
class PairAgreement:
    first: str
    second: str
    agreement: Agreement


def pairwise(
    ratings: Mapping[str, Mapping[Hashable, Hashable]], categories: Sequence[Hashable] = PASS_FAIL
) -> list[PairAgreement]:
    """Every pair of raters (sorted by name) compared on the items both labelled.

    `ratings[rater][item]` is the rater's label on the item.
    """
    result = []
    for first, second in combinations(sorted(ratings), 2):
        a, b = ratings[first], ratings[second]
        shared = sorted(set(a) & set(b), key=repr)
        pairs = [(a[item], b[item]) for item in shared]
        result.append(PairAgreement(first, second, compare(pairs, categories)))
    return result


def alpha_over_raters(ratings: Mapping[str, Mapping[Hashable, Hashable]]) -> float | None:
    """Krippendorff's alpha over every rater and every item any of them labelled."""
    items = {item for labels in ratings.values() for item in labels}
    return krippendorff_alpha([labels.get(item) for labels in ratings.values()] for item in items)


def majority(labels: Iterable[Hashable]) -> Hashable | None:
    """The most frequent label; None on a tie for first place or no label.

    Used for the human reference when several reviewers labelled an item and nobody
    adjudicated: a tie is left out of judge-vs-human figures rather than broken by a guess.
    """
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def kappa_undefined_reason(matrix: ConfusionMatrix, first: str, second: str) -> str | None:
    """Why kappa says nothing on this matrix, in words for the page; None when it does.

    Kappa compares agreement with what chance gives from each rater's own label rates. When
    a rater gave one label throughout, chance agreement equals observed agreement, so kappa
    is 0 with a zero-width interval (or 0/0 when both did) whatever the other rater did:
    a number that looks like "no better than chance" but only says the rater never varied.
    `first` and `second` name the raters ("the judge", "the humans"). The figures
    themselves are not changed (kappa_from_matrix); this only says how to show them.
    """
    if matrix.n == 0:
        return "no items to compare"
    cats = matrix.categories
    rows = [sum(row) for row in matrix.counts]
    cols = [sum(matrix.counts[i][j] for i in range(len(cats))) for j in range(len(cats))]
    first_only = [c for c, n in zip(cats, rows, strict=True) if n == matrix.n]
    second_only = [c for c, n in zip(cats, cols, strict=True) if n == matrix.n]
    if first_only and second_only:
        if first_only == second_only:
            return f"both always said {first_only[0]}: nothing to tell from chance"
        return (
            f"{first} always said {first_only[0]} and {second} always said "
            f"{second_only[0]}: nothing to tell from chance"
        )
    if first_only:
        return f"{first} always said {first_only[0]}, so κ cannot tell agreement from chance"
    if second_only:
        return f"{second} always said {second_only[0]}, so κ cannot tell agreement from chance"
    return None
