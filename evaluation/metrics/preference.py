"""Figures of pairwise preference: pure Python, no Django, tested without a database.

A preference is "a", "b" or "tie" (which of two answers to one query a rater preferred).
Every figure carries its uncertainty: rates with Wilson score intervals; Bradley–Terry
strengths with bootstrap intervals that resample queries (a query's votes move together);
agreement between raters as Cohen's kappa (two raters) or Fleiss' kappa (more) on the three
categories. See docs/metrics.md ("Pairwise preference") for the formulas and references.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluation.metrics import intervals
from evaluation.metrics.agreement import Z_95, Kappa, cohen_kappa

PREFERENCES: tuple[str, str, str] = ("a", "b", "tie")


@dataclass(frozen=True)
class Rate:
    """`count` of `n` with its Wilson score interval; None figures when n is 0."""

    count: int
    n: int
    rate: float | None
    low: float | None
    high: float | None


def wilson(count: int, n: int, *, z: float = Z_95) -> Rate:
    """`count` of `n` with its Wilson score interval (intervals.wilson)."""
    if not 0 <= count <= n:
        raise ValueError(f"count must be between 0 and n, not {count} of {n}")
    return Rate(count, n, *intervals.wilson(count, n, z=z))


@dataclass(frozen=True)
class WinTieLoss:
    """A's wins, ties and B's wins over `n` votes, each a rate with its interval."""

    n: int
    a: Rate
    tie: Rate
    b: Rate


def win_tie_loss(preferences: Iterable[str]) -> WinTieLoss:
    counts = Counter(_checked(p) for p in preferences)
    n = sum(counts.values())
    return WinTieLoss(n, wilson(counts["a"], n), wilson(counts["tie"], n), wilson(counts["b"], n))


def _checked(preference: str) -> str:
    if preference not in PREFERENCES:
        raise ValueError(f"a preference is one of a, b, tie; not {preference!r}")
    return preference


# --- Bradley–Terry -------------------------------------------------------------------------

Comparison = tuple[Hashable, Hashable, str]  # (system of side A, system of side B, preference)


@dataclass(frozen=True)
class Strength:
    """A system's Bradley–Terry strength on the log scale (the systems' mean is 0; a gap of
    d means the stronger is preferred with probability 1 / (1 + e^-d)), with a bootstrap
    percentile interval."""

    system: Hashable
    strength: float
    low: float | None
    high: float | None


def _wins(comparisons: Iterable[Comparison]) -> tuple[dict, dict]:
    """wins[i][j]: how often i was preferred to j, a tie counting half to each."""
    wins: dict = defaultdict(lambda: defaultdict(float))
    systems: dict = {}
    for a, b, preference in comparisons:
        systems[a] = systems[b] = None
        if a == b:
            raise ValueError(f"a system compared with itself: {a!r}")
        score = {"a": 1.0, "b": 0.0, "tie": 0.5}[_checked(preference)]
        wins[a][b] += score
        wins[b][a] += 1.0 - score
    return wins, systems


def bradley_terry(
    comparisons: Iterable[Comparison], *, prior: float = 0.5, tolerance: float = 1e-10,
    max_iterations: int = 10_000,
) -> dict[Hashable, float]:  # fmt: skip
    """Log strengths (mean 0) by Hunter's MM algorithm (2004), ties as half a win each.

    `prior` adds that many tied comparisons between every two systems seen: without it a
    system that never won has strength minus infinity (the likelihood has no maximum), and
    one that never lost plus infinity. prior=0 gives the plain maximum-likelihood estimate.
    """
    wins, seen = _wins(comparisons)
    systems = list(seen)
    if len(systems) < 2:
        return {s: 0.0 for s in systems}
    if prior:
        for i in systems:
            for j in systems:
                if i != j:
                    wins[i][j] += prior / 2
    total_wins = {i: sum(wins[i].values()) for i in systems}
    games = {i: {j: wins[i][j] + wins[j][i] for j in systems if j != i} for i in systems}
    if any(w == 0 for w in total_wins.values()):
        raise ValueError("a system never preferred has no finite strength; use prior > 0")
    p = dict.fromkeys(systems, 1.0)
    for _ in range(max_iterations):
        new = {
            i: total_wins[i] / sum(n / (p[i] + p[j]) for j, n in games[i].items() if n)
            for i in systems
        }
        # Fix the scale (the likelihood only sees ratios): geometric mean 1.
        log_mean = sum(math.log(v) for v in new.values()) / len(new)
        new = {i: v / math.exp(log_mean) for i, v in new.items()}
        change = max(abs(math.log(new[i]) - math.log(p[i])) for i in systems)
        p = new
        if change < tolerance:
            break
    return {i: math.log(p[i]) for i in systems}


def bradley_terry_intervals(
    comparisons: Sequence[tuple[Hashable, Comparison]], *, resamples: int = 1000,
    confidence: float = 0.95, seed: int = 0, prior: float = 0.5,
) -> list[Strength]:  # fmt: skip
    """Strengths with percentile intervals from a cluster bootstrap: `comparisons` are
    (cluster, comparison), the cluster being the query, so that all votes on one query are
    drawn together. Strongest first."""
    point = bradley_terry((c for _, c in comparisons), prior=prior)
    clusters: dict = defaultdict(list)
    for cluster, comparison in comparisons:
        clusters[cluster].append(comparison)
    keys = list(clusters)
    draws: dict = defaultdict(list)
    rng = random.Random(seed)  # noqa: S311 - a seeded, reproducible resample
    for _ in range(resamples if keys else 0):
        sample = [c for k in rng.choices(keys, k=len(keys)) for c in clusters[k]]
        # A resample may lose a system altogether: it has no strength in that draw.
        for system, value in bradley_terry(sample, prior=prior).items():
            draws[system].append(value)
    tail = (1 - confidence) / 2
    found = []
    for system, value in point.items():
        values = sorted(draws[system])
        low = intervals.quantile(values, tail) if values else None
        high = intervals.quantile(values, 1 - tail) if values else None
        found.append(Strength(system, value, low, high))
    return sorted(found, key=lambda s: -s.strength)


# --- Agreement -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterAgreement:
    """Agreement of raters on the pairs at least two of them voted on: Cohen's kappa when
    exactly two raters voted, Fleiss' kappa for more. `kappa` is None when undefined."""

    method: str  # "cohen" or "fleiss"
    raters: int
    items: int
    kappa: float | None
    low: float | None = None  # Cohen's only: its 95% interval
    high: float | None = None


def fleiss_kappa(units: Iterable[Mapping[Hashable, int]]) -> float | None:
    """Fleiss' kappa (1971) over items rated by two or more raters each; `units` hold the
    count of raters per category for each item. With equal raters per item it is Fleiss'
    statistic exactly; with unequal counts each item's agreement is over its own pairs of
    raters. None when undefined (fewer than one item, or every rating in one category)."""
    agreements, totals, ratings = [], Counter(), 0
    for unit in units:
        n = sum(unit.values())
        if n < 2:
            continue
        agreements.append(sum(c * (c - 1) for c in unit.values()) / (n * (n - 1)))
        totals.update(unit)
        ratings += n
    if not agreements:
        return None
    observed = sum(agreements) / len(agreements)
    expected = sum((c / ratings) ** 2 for c in totals.values())
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def rater_agreement(votes: Mapping[Hashable, Mapping[str, str]]) -> RaterAgreement:
    """Agreement between raters; `votes` is item → rater → preference."""
    raters = {r for by_rater in votes.values() for r in by_rater}
    shared = {item: by_rater for item, by_rater in votes.items() if len(by_rater) >= 2}
    if len(raters) == 2:
        first, second = sorted(raters)
        pairs = [(v[first], v[second]) for v in shared.values()]
        kappa: Kappa = cohen_kappa(pairs, PREFERENCES)
        return RaterAgreement("cohen", 2, len(pairs), kappa.kappa, kappa.low, kappa.high)
    units = [Counter(by_rater.values()) for by_rater in shared.values()]
    return RaterAgreement("fleiss", len(raters), len(units), fleiss_kappa(units))


def judge_agreement(
    judge: Mapping[Hashable, str], reviewers: Mapping[Hashable, Mapping[str, str]]
) -> Kappa:
    """Cohen's kappa between a judge's preference and the reviewers' majority per item, on
    the items both have (an item whose reviewers split evenly has no majority: left out)."""
    pairs = []
    for item, verdict in judge.items():
        majority = _majority(reviewers.get(item, {}).values())
        if majority is not None:
            pairs.append((verdict, majority))
    return cohen_kappa(pairs, PREFERENCES)


def _majority(preferences: Iterable[str]) -> str | None:
    ranked = Counter(preferences).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def majority(preferences: Iterable[str]) -> str | None:
    """The raters' preference on one item: the most voted of a / b / tie, None when two
    lead equally (a split pair says nothing either way)."""
    return _majority(_checked(p) for p in preferences)


# --- Does the checklist predict preference? --------------------------------------------------

GAP_EDGES: tuple[float, ...] = (0.1, 0.25)  # score-gap buckets: < 10 points, 10–25, 25+


@dataclass(frozen=True)
class PredictedPair:
    """One pair with a human preference: that preference and the two answers' checklist
    scores (under the dataset's scoring strategy), and the query's category."""

    preference: str
    score_a: float | None
    score_b: float | None
    category: str = ""


@dataclass(frozen=True)
class Prediction:
    """Share of decided pairs whose higher-scoring answer is the preferred one. A pair is
    decided when the raters preferred one answer (not a tie) and the scores differ."""

    overall: Rate
    by_gap: tuple[tuple[str, Rate], ...]
    by_category: tuple[tuple[str, Rate], ...]
    ties: int  # pairs preferred as a tie: left out
    not_separated: int  # pairs whose answers scored the same (or were not both scored): left out


def _gap_label(gap: float, edges: Sequence[float]) -> str:
    lower = 0.0
    for edge in edges:
        if gap < edge:
            return f"{lower:.0%}–{edge:.0%}"
        lower = edge
    return f"{lower:.0%}+"


def checklist_prediction(
    pairs: Iterable[PredictedPair], *, gap_edges: Sequence[float] = GAP_EDGES
) -> Prediction:
    overall, by_gap, by_category = [0, 0], defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0])
    ties = equal = 0
    for pair in pairs:
        if _checked(pair.preference) == "tie":
            ties += 1
            continue
        if pair.score_a is None or pair.score_b is None or pair.score_a == pair.score_b:
            equal += 1
            continue
        agrees = (pair.score_a > pair.score_b) == (pair.preference == "a")
        for tally in (
            overall, by_gap[_gap_label(abs(pair.score_a - pair.score_b), gap_edges)],
            by_category[pair.category],
        ):  # fmt: skip
            tally[0] += agrees
            tally[1] += 1
    labels = [_gap_label(lower, gap_edges) for lower in (0.0, *gap_edges)]
    return Prediction(
        overall=wilson(*overall),
        by_gap=tuple((label, wilson(*by_gap[label])) for label in labels),
        by_category=tuple((c, wilson(*by_category[c])) for c in sorted(by_category)),
        ties=ties,
        not_separated=equal,
    )


# --- Pairwise judges: position bias ----------------------------------------------------------


def both_orders(ab: str, ba: str) -> tuple[str, bool]:
    """A judge's verdict on a pair asked in both orders (each reply already read back as a
    side) and whether it flipped: the same side both times is that side; anything else (a
    side then the other, or a side then a tie) flipped with the order and counts as a tie."""
    _checked(ab), _checked(ba)
    return (ab, False) if ab == ba else ("tie", True)


@dataclass(frozen=True)
class PositionBias:
    """Share of pairs whose verdict changed with the order, with its Wilson interval; and
    how often Answer 1 (the first position) was preferred over all replies."""

    flips: Rate
    first_preferred: Rate


def position_bias(replies: Iterable[tuple[str, str]]) -> PositionBias:
    """`replies` are (ab side, ba side) per pair and sample, for one judge."""
    flips = first = replies_n = pairs = 0
    for ab, ba in replies:
        pairs += 1
        flips += both_orders(ab, ba)[1]
        # Answer 1 is A in "ab" and B in "ba".
        first += (ab == "a") + (ba == "b")
        replies_n += 2
    return PositionBias(wilson(flips, pairs), wilson(first, replies_n))
