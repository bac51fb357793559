"""How reliably a system answers: several answers of one system to one query (samples
0..k-1, an agent asked k times) graded in one run, read per query and per system.

Per (system, query), over its k graded samples:
- mean: the mean score;
- worst-of-k: the lowest score (HealthBench's worst-at-k: what a user meets on a bad day);
- spread: the highest score minus the lowest;
- pass^k: True when every sample passes the dataset's threshold (tau-bench's pass^k: the
  share of queries on which k tries all succeed), None without a threshold.

Per system: the mean over its queries of each of those, each with a percentile bootstrap
interval over queries (metrics.analytics.cluster_bootstraps, one value per query), so that a
query answered ten times counts as much as one answered once.

Plain Python: the run's scores (evaluation.runs.scores) hand each answer's value, pass/fail
and sample in; docs/metrics.md#reliability-of-systems gives the formulas.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from evaluation.metrics.analytics import Estimate, cluster_bootstraps


@dataclass(frozen=True)
class SampleScore:
    """One graded answer: its system, query, sample index, score and pass/fail."""

    system_id: int
    query_id: int
    sample: int
    value: float | None  # None: nothing decided (left out of every figure here)
    passed: bool | None  # None: no threshold, or no value


@dataclass(frozen=True)
class QueryReliability:
    system_id: int
    query_id: int
    k: int  # samples with a score
    samples: tuple[int, ...]  # their sample indexes, in order
    mean: float
    worst: float
    best: float
    spread: float
    pass_k: bool | None  # every sample passed; None: no threshold
    passes: int | None  # samples that passed; None: no threshold

    def as_dict(self) -> dict:
        return {
            "system_id": self.system_id, "query_id": self.query_id, "k": self.k,
            "samples": list(self.samples), "mean": self.mean, "worst": self.worst,
            "best": self.best, "spread": self.spread, "pass_k": self.pass_k,
            "passes": self.passes,
        }  # fmt: skip


@dataclass(frozen=True)
class SystemReliability:
    system_id: int
    queries: int
    samples: int
    k_min: int
    k_max: int
    mean: Estimate  # mean over queries of the per-query mean score
    worst: Estimate  # mean over queries of worst-of-k
    spread: Estimate  # mean over queries of the spread
    pass_k: Estimate  # share of queries whose every sample passed (None: no threshold)
    pass_1: float | None  # share of samples that passed (the plain pass rate, for contrast)

    def as_dict(self) -> dict:
        return {
            "system_id": self.system_id,
            "queries": self.queries,
            "samples": self.samples,
            "k_min": self.k_min,
            "k_max": self.k_max,
            "mean": self.mean.as_dict(),
            "worst": self.worst.as_dict(),
            "spread": self.spread.as_dict(),
            "pass_k": self.pass_k.as_dict(),
            "pass_1": self.pass_1,
        }


def per_query(scores: Iterable[SampleScore]) -> list[QueryReliability]:
    """Each (system, query)'s reliability over its scored samples, by system then query."""
    grouped: dict[tuple[int, int], list[SampleScore]] = defaultdict(list)
    for score in scores:
        if score.value is not None:
            grouped[score.system_id, score.query_id].append(score)
    out = []
    for (system_id, query_id), rows in sorted(grouped.items()):
        rows.sort(key=lambda r: r.sample)
        values = [r.value for r in rows]
        worst, best = min(values), max(values)
        # Without a threshold no sample has a pass/fail: pass^k is not defined.
        verdicts = [r.passed for r in rows]
        undefined = any(v is None for v in verdicts)
        pass_k = None if undefined else all(verdicts)
        found = QueryReliability(
            system_id=system_id, query_id=query_id, k=len(rows),
            samples=tuple(r.sample for r in rows), mean=math.fsum(values) / len(values),
            worst=worst, best=best, spread=best - worst, pass_k=pass_k,
            passes=None if undefined else sum(verdicts),
        )  # fmt: skip
        out.append(found)
    return out


def per_system(queries: Iterable[QueryReliability]) -> list[SystemReliability]:
    """Each system's means over its queries, with bootstrap intervals over queries: every
    figure of every system in one `cluster_bootstraps` call, which draws once per number of
    queries, where a call per figure drew eight times for two systems (half of a run's
    scores refresh after an adjudication, at 3,000 queries; 224 → 44 ms). The same draws
    either way; the one wider product sums in another order, so a bound may differ from a
    call per figure in its last digit (1e-16)."""
    grouped: dict[int, list[QueryReliability]] = defaultdict(list)
    for query in queries:
        grouped[query.system_id].append(query)
    systems = sorted(grouped.items())
    estimates = iter(
        cluster_bootstraps([_by_query(rows, pick) for _, rows in systems for pick in _FIGURES])
    )
    out = []
    for system_id, rows in systems:
        passes = [r.passes for r in rows]
        samples = sum(r.k for r in rows)
        mean, worst, spread, pass_k = (next(estimates) for _ in _FIGURES)
        out.append(
            SystemReliability(
                system_id=system_id,
                queries=len(rows),
                samples=samples,
                k_min=min(r.k for r in rows),
                k_max=max(r.k for r in rows),
                mean=mean,
                worst=worst,
                spread=spread,
                pass_k=pass_k,
                pass_1=None if None in passes else sum(passes) / samples,
            )
        )
    return out


# The figures with an interval over queries, in SystemReliability's order.
_FIGURES: tuple[Callable[[QueryReliability], float | bool | None], ...] = (
    lambda r: r.mean,
    lambda r: r.worst,
    lambda r: r.spread,
    lambda r: r.pass_k,
)


def _by_query(
    rows: list[QueryReliability], pick: Callable[[QueryReliability], float | bool | None]
) -> dict[int, list[float]]:
    """One figure's value per query (one value each), for its bootstrap over queries."""
    return {r.query_id: [float(v)] for r in rows if (v := pick(r)) is not None}
