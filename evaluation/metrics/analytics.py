"""Statistics behind the analytics pages: plain Python, no Django, tested without a database.

- `cluster_bootstrap`: a mean with a seeded percentile bootstrap interval that resamples
  whole clusters (queries), so the answers and checklists of one query stay together;
- `complexity_buckets` / `bucket_of`: the number of criteria of a checklist put into
  buckets (default <10, 10–14, 15–19, 20–24, 25–29, 30–34, ≥35);
- `paired_comparison`: two runs compared query by query, with a paired bootstrap interval
  and p-value and an exact sign test;
- `ppi_mean`: PPI++ (Angelopoulos, Duchi and Zrnic 2023), the mean of human labels
  estimated from judge verdicts on every item and human labels on some, power-tuned;
- `criterion_health`: which criteria no system passes, every system passes, split the
  judges or disagree with people most.

Formulas and references: docs/metrics.md, "Analytics".
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
CONFIDENCE = 0.95
DEFAULT_EDGES: tuple[int, ...] = (10, 15, 20, 25, 30, 35)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")


# -- the mean with a cluster bootstrap interval ---------------------------------------


@dataclass(frozen=True)
class Estimate:
    mean: float | None
    low: float | None
    high: float | None
    n: int  # units (answers, items)
    clusters: int  # queries
    method: str

    def as_dict(self) -> dict:
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "clusters": self.clusters,
            "method": self.method,
        }


def cluster_bootstrap(
    values_by_cluster: Mapping[Hashable, Sequence[float]],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Estimate:
    """The mean of every value (each counts once) with a percentile bootstrap interval
    over clusters: each resample draws as many clusters as there are, with replacement,
    and takes the mean of all their values. Fewer than two clusters: no interval.

    Clusters are visited in the order of `str(key)`, so the same data and seed give the
    same interval whatever order the caller built the mapping in."""
    _check_confidence(confidence)
    kept = {k: list(v) for k, v in values_by_cluster.items() if len(v)}
    flat = [x for v in kept.values() for x in v]
    method = f"percentile bootstrap over queries, {resamples} resamples, seed {seed}"
    if not flat:
        return Estimate(None, None, None, 0, 0, method)
    mean = math.fsum(flat) / len(flat)
    if len(kept) < 2:
        return Estimate(mean, None, None, len(flat), len(kept), method)
    sums = [(math.fsum(v), len(v)) for _, v in sorted(kept.items(), key=lambda kv: str(kv[0]))]
    rng = random.Random(seed)  # noqa: S311 - reproducibility, not secrecy
    k = len(sums)
    totals = [s for s, _ in sums]
    counts = [c for _, c in sums]
    indices = range(k)
    means = []
    for _ in range(resamples):
        # random.choices draws k indices in one call, several times faster than randrange.
        drawn = rng.choices(indices, k=k)
        means.append(math.fsum(totals[i] for i in drawn) / sum(counts[i] for i in drawn))
    means.sort()
    alpha = (1 - confidence) / 2
    return Estimate(
        mean, _quantile(means, alpha), _quantile(means, 1 - alpha), len(flat), k, method
    )


# -- complexity buckets ----------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """Checklists with low ≤ criteria < high (an open end is None)."""

    low: int | None
    high: int | None

    @property
    def key(self) -> str:
        if self.low is None:
            return f"lt{self.high}"
        if self.high is None:
            return f"ge{self.low}"
        return f"{self.low}-{self.high - 1}"

    @property
    def label(self) -> str:
        if self.low is None:
            return f"<{self.high}"
        if self.high is None:
            return f"≥{self.low}"
        return f"{self.low}–{self.high - 1}"

    def contains(self, count: int) -> bool:
        return (self.low is None or count >= self.low) and (self.high is None or count < self.high)


def complexity_buckets(edges: Sequence[int] = DEFAULT_EDGES) -> tuple[Bucket, ...]:
    """Edges e1 < e2 < … < ek give <e1, e1..e2-1, …, ≥ek."""
    edges = list(edges)
    if not edges:
        raise ValueError("at least one bucket edge is needed")
    if any(not isinstance(e, int) or isinstance(e, bool) or e < 1 for e in edges):
        raise ValueError("bucket edges are positive whole numbers of criteria")
    if any(b <= a for a, b in itertools.pairwise(edges)):
        raise ValueError("bucket edges must increase")
    bounds: list[int | None] = [None, *edges, None]
    return tuple(Bucket(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1))


def parse_edges(text: str) -> tuple[int, ...]:
    """ "10,15,20" → (10, 15, 20); ValueError naming what is wrong."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        edges = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"bucket edges are whole numbers separated by commas: {text!r}") from None
    complexity_buckets(edges)
    return edges


def bucket_of(count: int, buckets: Sequence[Bucket]) -> Bucket:
    for bucket in buckets:
        if bucket.contains(count):
            return bucket
    raise ValueError(f"no bucket holds {count}")  # unreachable with complexity_buckets()


# -- two runs compared query by query -----------------------------------------------


@dataclass(frozen=True)
class PairedComparison:
    n: int  # queries scored in both
    mean_a: float | None
    mean_b: float | None
    difference: float | None  # mean of b - a over the paired queries
    low: float | None
    high: float | None
    bootstrap_p: float | None
    gains: int  # queries where b > a
    losses: int  # queries where b < a
    ties: int
    sign_p: float | None
    method: str

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def sign_test(gains: int, losses: int) -> float | None:
    """Exact two-sided sign test (ties already dropped): under H0 the number of gains is
    Binomial(m, ½), m = gains + losses; p = min(1, 2 · P(X ≤ min(gains, losses)))."""
    m = gains + losses
    if m == 0:
        return None
    tail = sum(math.comb(m, k) for k in range(min(gains, losses) + 1))
    return min(1.0, 2 * tail / 2**m)


def paired_comparison(
    a: Mapping[Hashable, float],
    b: Mapping[Hashable, float],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedComparison:
    """Per-query scores of run A and run B; only queries scored in both are paired.

    Paired bootstrap: resample the paired queries with replacement, take the mean
    difference; the interval is its percentiles and the two-sided p-value is
    min(1, 2 · min((1 + #{d* ≤ 0}) / (B + 1), (1 + #{d* ≥ 0}) / (B + 1))).
    """
    _check_confidence(confidence)
    keys = sorted(set(a) & set(b), key=str)
    method = (
        f"paired percentile bootstrap over queries, {resamples} resamples, seed {seed}; "
        "exact sign test"
    )
    diffs = [b[k] - a[k] for k in keys]
    gains = sum(d > 0 for d in diffs)
    losses = sum(d < 0 for d in diffs)
    ties = len(diffs) - gains - losses
    if not diffs:
        return PairedComparison(0, None, None, None, None, None, None, 0, 0, 0, None, method)
    n = len(diffs)
    mean_a = math.fsum(a[k] for k in keys) / n
    mean_b = math.fsum(b[k] for k in keys) / n
    difference = math.fsum(diffs) / n
    low = high = p = None
    if n >= 2:
        rng = random.Random(seed)  # noqa: S311 - reproducibility, not secrecy
        means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
        alpha = (1 - confidence) / 2
        low, high = _quantile(means, alpha), _quantile(means, 1 - alpha)
        below = sum(m <= 0 for m in means)
        above = sum(m >= 0 for m in means)
        p = min(1.0, 2 * min((1 + below) / (resamples + 1), (1 + above) / (resamples + 1)))
    return PairedComparison(
        n, mean_a, mean_b, difference, low, high, p, gains, losses, ties,
        sign_test(gains, losses), method,
    )  # fmt: skip


# -- PPI++ -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PPIItem:
    """One item (answer × criterion): the judge's verdict (1 pass, 0 fail) and, where a
    person labelled it, the human reference (1 pass, 0 fail)."""

    cluster: Hashable  # the query
    prediction: float
    label: float | None = None


@dataclass(frozen=True)
class PPIEstimate:
    mean: float | None
    low: float | None
    high: float | None
    lam: float | None  # the power-tuning parameter λ in [0, 1]
    labelled: int  # n
    unlabelled: int  # N
    clusters: int
    method: str

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def ppi_lambda(labelled: Sequence[tuple[float, float]], unlabelled: Sequence[float]) -> float:
    """The power-tuned λ for a mean (PPI++, eq. for the mean estimator), as `ppi_py`:

    λ = Cov_n(Y, Ŷ) / ((1 + n/N) · Var(Ŷ over all n + N items)), clipped to [0, 1],
    with Cov_n dividing by n and Var by n + N - 1.
    """
    n, big_n = len(labelled), len(unlabelled)
    ys = [y for y, _ in labelled]
    hats = [h for _, h in labelled]
    my, mh = _mean(ys), _mean(hats)
    cov = math.fsum((y - my) * (h - mh) for y, h in labelled) / n
    every = [*hats, *unlabelled]
    if len(every) < 2:
        return 0.0
    m_all = _mean(every)
    var = math.fsum((h - m_all) ** 2 for h in every) / (len(every) - 1)
    if var == 0:
        return 0.0  # the judge says the same of every item: it carries no information
    return min(1.0, max(0.0, cov / ((1 + n / big_n) * var)))


def _ppi_point(labelled: Sequence[tuple[float, float]], unlabelled: Sequence[float], lam: float):
    return lam * _mean(unlabelled) + _mean([y - lam * h for y, h in labelled])


def ppi_mean(
    items: Iterable[PPIItem],
    *,
    confidence: float = CONFIDENCE,
    lam: float | None = None,
    clustered: bool = False,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PPIEstimate:
    """PPI++ estimate of the mean human label over every item.

    θ̂ = λ · mean(Ŷ on the N unlabelled items) + mean(Y - λ·Ŷ on the n labelled items),
    λ power-tuned (`ppi_lambda`) unless given. Interval, unclustered: θ̂ ± z · sqrt(
    Var₀(λŶᵤ)/N + Var₀(Y - λŶ)/n), variances dividing by their count (as `ppi_py`).
    Clustered (items of one query are not independent): λ and θ̂ as above, the interval a
    percentile bootstrap over queries of θ̂ with λ held, from per-query sums; resamples
    that draw no labelled or no unlabelled item are drawn again.
    With no unlabelled item, θ̂ is the human mean (λ = 0); with fewer than two labelled
    items there is no interval.
    """
    _check_confidence(confidence)
    items = list(items)
    labelled = [(i.label, i.prediction) for i in items if i.label is not None]
    unlabelled = [i.prediction for i in items if i.label is None]
    clusters = {i.cluster for i in items}
    method = "PPI++ (power-tuned), " + (
        f"percentile bootstrap over queries, {resamples} resamples, seed {seed}"
        if clustered
        else "normal interval"
    )
    n, big_n = len(labelled), len(unlabelled)
    if n == 0:
        return PPIEstimate(None, None, None, None, 0, big_n, len(clusters), method)
    if big_n == 0:
        lam = 0.0
    elif lam is None:
        lam = ppi_lambda(labelled, unlabelled) if n >= 2 else 1.0
    mean = _ppi_point(labelled, unlabelled or [0.0], lam)
    low = high = None
    if n >= 2 and not clustered:
        z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
        rect = [y - lam * h for y, h in labelled]
        mr = _mean(rect)
        var_rect = math.fsum((r - mr) ** 2 for r in rect) / n
        var_imp = 0.0
        if big_n:
            mu = _mean(unlabelled)
            var_imp = lam**2 * math.fsum((h - mu) ** 2 for h in unlabelled) / big_n
        se = math.sqrt(var_imp / (big_n or 1) + var_rect / n)
        low, high = mean - z * se, mean + z * se
    elif n >= 2 and len(clusters) >= 2:
        low, high = _ppi_cluster_interval(items, lam, confidence, resamples, seed)
    return PPIEstimate(mean, low, high, lam, n, big_n, len(clusters), method)


def _ppi_cluster_interval(
    items: Sequence[PPIItem], lam: float, confidence: float, resamples: int, seed: int
) -> tuple[float | None, float | None]:
    # Per query: Σ(Y - λŶ) and n over labelled items, ΣŶ and N over unlabelled ones.
    stats: dict[Hashable, list[float]] = {}
    for i in items:
        s = stats.setdefault(i.cluster, [0.0, 0.0, 0.0, 0.0])
        if i.label is None:
            s[2] += i.prediction
            s[3] += 1
        else:
            s[0] += i.label - lam * i.prediction
            s[1] += 1
    rows = [stats[k] for k in sorted(stats, key=str)]
    need_unlabelled = any(r[3] for r in rows)
    rng = random.Random(seed)  # noqa: S311 - reproducibility, not secrecy
    k = len(rows)
    estimates: list[float] = []
    attempts = 0
    while len(estimates) < resamples and attempts < resamples * 20:
        attempts += 1
        rect = n = imp = big_n = 0.0
        for r in rng.choices(rows, k=k):
            rect += r[0]
            n += r[1]
            imp += r[2]
            big_n += r[3]
        if n == 0 or (need_unlabelled and big_n == 0):
            continue
        estimates.append((lam * imp / big_n if big_n else 0.0) + rect / n)
    if len(estimates) < 2:
        return None, None
    estimates.sort()
    alpha = (1 - confidence) / 2
    return _quantile(estimates, alpha), _quantile(estimates, 1 - alpha)


def labels_needed(estimate: PPIEstimate, half_width: float) -> int | None:
    """About how many labelled items bring the interval's half-width to `half_width`,
    if the width shrinks as 1/√n (the rectifier term dominates when n ≪ N)."""
    if estimate.low is None or estimate.high is None or half_width <= 0:
        return None
    current = (estimate.high - estimate.low) / 2
    if current <= half_width:
        return estimate.labelled
    return math.ceil(estimate.labelled * (current / half_width) ** 2)


# -- criterion health --------------------------------------------------------------------


@dataclass(frozen=True)
class CriterionItems:
    """What happened to one criterion over a run's answers."""

    criterion: Hashable
    passed: int  # decided outcomes (adjudications first)
    failed: int
    split: int  # items whose valid judge votes disagreed
    judged: int  # items with at least one valid vote
    compared: int  # items with both a panel verdict and a human reference
    disagreed: int  # of those, the panel and the human reference differ
    systems_passing: int  # systems with at least one answer passing it
    systems: int  # systems with a decided outcome on it


@dataclass(frozen=True)
class CriterionHealth:
    criterion: Hashable
    flags: tuple[str, ...]  # "never passed", "always passed", "split", "disagrees"
    pass_rate: float | None
    split_rate: float | None
    disagreement_rate: float | None
    items: CriterionItems


SPLIT_FLAG = 0.25  # a criterion whose judges split on at least this share of items
DISAGREE_FLAG = 0.25  # a criterion the panel and people disagree on this often


def criterion_health(
    rows: Iterable[CriterionItems],
    *,
    split_flag: float = SPLIT_FLAG,
    disagree_flag: float = DISAGREE_FLAG,
) -> list[CriterionHealth]:
    """Flags per criterion; sorted with the flagged first, then by disagreement and split."""
    out = []
    for r in rows:
        decided = r.passed + r.failed
        pass_rate = r.passed / decided if decided else None
        split_rate = r.split / r.judged if r.judged else None
        disagreement = r.disagreed / r.compared if r.compared else None
        flags = []
        if decided and r.passed == 0:
            flags.append("never passed")
        if decided and r.failed == 0 and r.systems_passing == r.systems:
            flags.append("always passed")
        if split_rate is not None and split_rate >= split_flag:
            flags.append("split")
        if disagreement is not None and disagreement >= disagree_flag:
            flags.append("disagrees")
        out.append(
            CriterionHealth(r.criterion, tuple(flags), pass_rate, split_rate, disagreement, r)
        )
    return sorted(
        out,
        key=lambda h: (
            not h.flags,
            -(h.disagreement_rate or 0.0),
            -(h.split_rate or 0.0),
            str(h.criterion),
        ),
    )
