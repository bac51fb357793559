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
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from threadpoolctl import ThreadpoolController

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
CONFIDENCE = 0.95
DEFAULT_EDGES: tuple[int, ...] = (10, 15, 20, 25, 30, 35)


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
    return cluster_bootstraps(
        [values_by_cluster], confidence=confidence, resamples=resamples, seed=seed
    )[0]


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def query_means(values_by_query: Mapping[Hashable, Sequence[float]]) -> dict[Hashable, list[float]]:
    """Each query's values (the scores of a system's samples of it) as their mean alone:
    given to `cluster_bootstraps`, a query answered k times counts once, not k times
    (docs/metrics.md#a-query-counts-once)."""
    return {q: [mean(v)] for q, v in values_by_query.items() if len(v)}


def mean_of_means(groups: Iterable[Sequence[float]]) -> float:
    """The mean of each group's mean: every group counts once, whatever its size."""
    return mean([mean(g) for g in groups if len(g)])


def cluster_bootstraps(
    many: Sequence[Mapping[Hashable, Sequence[float]]],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[Estimate]:
    """`cluster_bootstrap` of each mapping, in one pass per number of clusters: every
    mapping with k clusters is resampled with the same draws (the same seed gives the same
    draws for the same k), so one matrix product gives all their resampled sums. A page's
    hundred intervals over 2,000 queries cost one bootstrap, not a hundred."""
    _check_confidence(confidence)
    method = f"percentile bootstrap over queries, {resamples} resamples, seed {seed}"
    out: list[Estimate | None] = [None] * len(many)
    by_size: dict[int, list[tuple[int, list[list[float]]]]] = {}
    for n, values_by_cluster in enumerate(many):
        kept = {k: v for k, v in values_by_cluster.items() if len(v)}
        flat = list(itertools.chain.from_iterable(kept.values()))
        if not flat:
            out[n] = Estimate(None, None, None, 0, 0, method)
            continue
        mean = math.fsum(flat) / len(flat)
        if len(kept) < 2:
            out[n] = Estimate(mean, None, None, len(flat), len(kept), method)
            continue
        out[n] = Estimate(mean, None, None, len(flat), len(kept), method)
        ordered = [kept[key] for key in sorted(kept, key=str)]
        by_size.setdefault(len(ordered), []).append((n, ordered))
    for group in by_size.values():
        columns = []
        for _, ordered in group:
            columns += [[math.fsum(v) for v in ordered], [len(v) for v in ordered]]
        sums = resampled_sums(columns, resamples, seed)
        for j, (n, _) in enumerate(group):
            totals, counts = sums[2 * j], sums[2 * j + 1]
            low, high = np.quantile(totals / counts, [(1 - confidence) / 2, (1 + confidence) / 2])
            e = out[n]
            out[n] = Estimate(e.mean, float(low), float(high), e.n, e.clusters, method)
    return out  # type: ignore[return-value]


_threadpools: ThreadpoolController | None = None


def _one_blas_thread():
    # Finding the loaded BLAS libraries reads /proc/self/maps (5 ms): once per process, not
    # once per bootstrap (a page draws sixty of them).
    global _threadpools
    if _threadpools is None:
        _threadpools = ThreadpoolController()
    return _threadpools.limit(limits=1, user_api="blas")


def resampled_sums(
    columns: Sequence[Sequence[float]], resamples: int, seed: int, *, cells: int = 400_000
) -> np.ndarray:
    """The bootstrap's core: `resamples` times, draw as many clusters as there are (with
    replacement, numpy's PCG64 seeded with `seed`) and sum each column over the drawn
    clusters. Returns an array (columns × resamples). Vectorised: each resample's draws
    are counted per cluster, and one product (columns × clusters by clusters × resamples)
    sums every column at once, so many columns cost about as much as one.
    Draws are made in chunks of about `cells` indices, so memory stays flat whatever the
    number of queries. The counts depend only on (clusters, resamples, seed, chunk), so
    they are kept per process (`_counts`): a recompute of the same run's figures draws
    nothing again."""
    data = np.asarray(columns, dtype=float)
    k = data.shape[1]
    out = np.empty((data.shape[0], resamples))
    # One BLAS thread: a threaded BLAS on a busy machine (web workers, other requests)
    # spends more time waiting for its threads than multiplying.
    with _one_blas_thread():
        start = 0
        for kept in _counts(k, resamples, seed, max(1, cells // k)):
            counts = _unpacked(kept, k)
            stop = start + counts.shape[0]
            # The same float matrix, laid out the same way, as when the counts are drawn
            # here: the product, and so every interval, is bit-identical on a kept hit.
            out[:, start:stop] = data @ counts.T.astype(float)
            start = stop
    return out


class _CountsCache:
    """Resampling count matrices by (clusters, resamples, seed, chunk), least recently
    used first out, at most `limit` bytes. Drawing them (numpy's generator and a bincount)
    is most of a bootstrap's cost; a page's 135 intervals use a few dozen cluster counts,
    the same ones on every recompute of a run's figures (65 at 200,000 items, about
    100,000 clusters in all). Kept packed (`_packed`): two counts a byte, so 1,000
    resamples of those 100,000 clusters take 48 MB and fit, where bytes (95 MB) would make
    the least recently used order drop each matrix just before it is used again."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: OrderedDict[tuple[int, int, int, int], list[np.ndarray]] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key: tuple[int, int, int, int]) -> list[np.ndarray] | None:
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def put(self, key: tuple[int, int, int, int], chunks: list[np.ndarray]) -> None:
        size = sum(c.nbytes for c in chunks)
        if size > self.limit:
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = chunks
            self.size += size
            while self.size > self.limit:
                _, dropped = self.entries.popitem(last=False)
                self.size -= sum(c.nbytes for c in dropped)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0


def _packed(counts: np.ndarray) -> np.ndarray:
    """Counts (resamples × clusters) two a byte (high nibble, low nibble) when every count
    is under 16 (a cluster drawn 16 times in one resample is rare) and there are at least
    two clusters: then ceil(k / 2) columns, fewer than k, which is how `_unpacked` tells.
    Else as the smallest unsigned type that holds them."""
    if counts.shape[1] >= 2 and counts.max() < 16:
        if counts.shape[1] % 2:
            counts = np.pad(counts, ((0, 0), (0, 1)))
        return ((counts[:, 0::2] << 4) | counts[:, 1::2]).astype(np.uint8)
    dtype = np.uint8 if counts.max() <= np.iinfo(np.uint8).max else np.uint32
    return counts.astype(dtype)


def _unpacked(kept: np.ndarray, k: int) -> np.ndarray:
    """The (resamples × k) counts, C-contiguous as when drawn (so the product is too)."""
    if kept.shape[1] == k:
        return kept
    out = np.empty((kept.shape[0], kept.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = kept >> 4
    out[:, 1::2] = kept & 15
    return np.ascontiguousarray(out[:, :k])


COUNTS_CACHE_BYTES = 64 * 1024 * 1024
_counts_cache = _CountsCache(COUNTS_CACHE_BYTES)


def _counts(k: int, resamples: int, seed: int, step: int) -> list[np.ndarray]:
    """Each chunk's (resamples in the chunk × k) counts of how often each cluster is drawn,
    drawn exactly as `resampled_sums` always drew them (one generator, chunk after chunk)."""
    key = (k, resamples, seed, step)
    found = _counts_cache.get(key)
    if found is not None:
        return found
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        drawn = rng.integers(0, k, size=(stop - start, k))
        rows = np.arange(stop - start)[:, None] * k
        counts = np.bincount((drawn + rows).ravel(), minlength=(stop - start) * k)
        chunk = _packed(counts.reshape(stop - start, k))
        chunk.setflags(write=False)  # shared by every caller of the process
        chunks.append(chunk)
    _counts_cache.put(key, chunks)
    return chunks


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
        means = resampled_sums([diffs], resamples, seed)[0] / n
        low, high = (
            float(q) for q in np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
        )
        below, above = int((means <= 0).sum()), int((means >= 0).sum())
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
    that draw no labelled or no unlabelled item are dropped.
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
    rect, n, imp, big_n = resampled_sums(list(zip(*rows, strict=True)), resamples, seed)
    # A resample that drew no labelled (or, when there are some, no unlabelled) item has
    # no estimate: it is dropped.
    valid = (n > 0) & ((big_n > 0) | (not need_unlabelled))
    if valid.sum() < 2:
        return None, None
    safe_n = np.where(big_n[valid] > 0, big_n[valid], 1.0)
    estimates = lam * imp[valid] / safe_n + rect[valid] / n[valid]
    low, high = np.quantile(estimates, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def ppi_mean_weighted(
    labelled: Sequence[tuple[Hashable, float, float, float, int]],
    population: Sequence[tuple[Hashable, float, int]],
    *,
    confidence: float = CONFIDENCE,
    lam: float | None = None,
    clustered: bool = False,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PPIEstimate:
    """PPI++ of the mean human label when the labelled items were drawn with unequal,
    known chances (active inference: Zrnic and Candès 2024): each labelled item weighs
    the inverse of its chance, and the judge's mean is taken over the whole population.

    `labelled`: (cluster, Y, Ŷ, weight, count) rows, `count` items alike; `population`:
    (cluster, Ŷ, count) rows of every item, the labelled ones included. With w̃ the weights
    scaled to mean 1 over the labelled items (a ratio estimator, as `ppi_py` with `w`):

    θ̂ = λ · mean(Ŷ over the population) + mean(w̃ · (Y - λŶ) over the labelled items)

    λ power-tuned as `ppi_py.ppi_mean_pointestimate(Y, Ŷ, Ŷ_population, w=weights)` does,
    unless given. Interval, unclustered: θ̂ ± z · sqrt(Var₀(λŶ_population)/N +
    Var₀(w̃(Y - λŶ))/n), as `ppi_py.ppi_mean_ci`; clustered: a percentile bootstrap over
    clusters of θ̂ with λ held, from per-cluster sums (Σ w(Y - λŶ), Σ w, ΣŶ, N), dropping a
    resample that draws no labelled item. Equal weights give `ppi_mean` with the
    population as its unlabelled items."""
    _check_confidence(confidence)
    lab = np.array([(y, h, w, c) for _, y, h, w, c in labelled], dtype=float).reshape(-1, 4)
    pop = np.array([(h, c) for _, h, c in population], dtype=float).reshape(-1, 2)
    y, h, w, c = lab.T
    hp, cp = pop.T
    n, big_n = float(c.sum()), float(cp.sum())
    clusters = {k for k, *_ in population} | {k for k, *_ in labelled}
    method = "PPI++ (power-tuned) with design weights, " + (
        f"percentile bootstrap over queries, {resamples} resamples, seed {seed}"
        if clustered
        else "normal interval"
    )
    if n == 0 or big_n == 0 or (w * c).sum() <= 0:
        return PPIEstimate(None, None, None, None, int(n), int(big_n - n), len(clusters), method)
    wt = w * n / (w * c).sum()
    pop_mean = float((hp * cp).sum() / big_n)
    if lam is None:
        lam = _weighted_lambda(y, h, wt, c, hp, cp, pop_mean) if n >= 2 else 1.0
    mean = lam * pop_mean + float((c * wt * (y - lam * h)).sum() / n)
    low = high = None
    if n >= 2 and not clustered:
        z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
        rect = wt * (y - lam * h)
        var_rect = float((c * (rect - (c * rect).sum() / n) ** 2).sum() / n)
        var_imp = float((cp * (lam * hp - lam * pop_mean) ** 2).sum() / big_n)
        se = math.sqrt(var_imp / big_n + var_rect / n)
        low, high = mean - z * se, mean + z * se
    elif n >= 2 and len(clusters) >= 2:
        sums: dict[Hashable, list[float]] = {k: [0.0, 0.0, 0.0, 0.0] for k in clusters}
        for k, y_, h_, w_, c_ in labelled:
            sums[k][0] += c_ * w_ * (y_ - lam * h_)
            sums[k][1] += c_ * w_
        for k, h_, c_ in population:
            sums[k][2] += c_ * h_
            sums[k][3] += c_
        rows = [sums[k] for k in sorted(sums, key=str)]
        rect, weight, imp, count = resampled_sums(list(zip(*rows, strict=True)), resamples, seed)
        valid = (weight > 0) & (count > 0)
        if valid.sum() >= 2:
            estimates = lam * imp[valid] / count[valid] + rect[valid] / weight[valid]
            q = np.quantile(estimates, [(1 - confidence) / 2, (1 + confidence) / 2])
            low, high = float(q[0]), float(q[1])
    return PPIEstimate(mean, low, high, lam, int(n), int(big_n - n), len(clusters), method)


def _weighted_lambda(y, h, wt, c, hp, cp, pop_mean: float) -> float:
    """ppi_py's `_calc_lam_glm` for a one-dimensional mean with weights, from counts: the
    gradients at the λ = 1 estimate, Cov_n of the labelled ones over (1 + n/N) times the
    variance (n + N - 1) of the predicted ones, labelled and population together."""
    n, big_n = c.sum(), cp.sum()
    theta = pop_mean + (c * wt * (y - h)).sum() / n
    g, g_hat, g_pop = wt * (y - theta), wt * (h - theta), hp - theta
    cov = (c * (g - (c * g).sum() / n) * (g_hat - (c * g_hat).sum() / n)).sum() / n
    every = n + big_n
    m = ((c * g_hat).sum() + (cp * g_pop).sum()) / every
    var = ((c * (g_hat - m) ** 2).sum() + (cp * (g_pop - m) ** 2).sum()) / (every - 1)
    if var <= 0:
        return 0.0  # the judge says the same of every item: it carries no information
    return float(min(1.0, max(0.0, cov / ((1 + n / big_n) * var))))


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


# -- saturation ---------------------------------------------------------------------------

FULL = 1 - 1e-9  # a score this close to 1 is full (float noise from averaging checklists)


def saturated_queries(scores: Mapping[Hashable, Mapping[Hashable, float | None]]) -> list:
    """Queries every system answers fully: each system with a score on the query scored 1
    (every decided criterion of every checklist passed). Too easy: they separate no
    system. `scores[query][system]`; a query with no scored answer is not saturated."""
    out = []
    for query, by_system in scores.items():
        values = [v for v in by_system.values() if v is not None]
        if values and all(v >= FULL for v in values):
            out.append(query)
    return sorted(out, key=str)
