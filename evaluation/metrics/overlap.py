"""Cross-evaluation overlap between experts' checklists: no Django (numpy draws the bootstrap).

Expert A writes a perfect answer that satisfies all of A's criteria; that answer is graded
against expert B's checklist exactly as a system answer would be. overlap(A→B) is the share
of B's scored criteria the answer passes. See docs/cross-evaluation.md.

Inputs are one verdict per (perfect answer, criterion), after vote aggregation and
adjudication: "pass", "fail" or "undecided". Undecided criteria (no valid vote, a tied
panel, an unparseable or failed judge call, a tie among human labels) are excluded from the
denominator and counted apart: an unparseable judge output must never lower an overlap,
and must not raise it either. A→A is the perfect answer checked against its own checklist;
it is reported apart and never enters the dataset mean.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Literal, get_args

import numpy as np

from evaluation.metrics.intervals import quantile

VerdictOutcome = Literal["pass", "fail", "undecided"]
_OUTCOMES = frozenset(get_args(VerdictOutcome))

# The dataset interval: a percentile bootstrap over queries, reproducible run to run.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
# A criterion other experts' perfect answers cover at least this often is "shared core".
CORE_THRESHOLD = 0.5
HISTOGRAM_BINS = 10


def _check(outcome: str, where: object) -> None:
    # A typo such as "Pass" must not silently become an undecided criterion.
    if outcome not in _OUTCOMES:
        raise ValueError(f"unknown verdict outcome {outcome!r} for {where}")


@dataclass(frozen=True)
class PairOverlap:
    """A's perfect answer graded against B's scored criteria."""

    source: Hashable  # A: the checklist whose perfect answer was graded
    target: Hashable  # B: the checklist whose criteria graded it
    passed: int
    failed: int
    undecided: int

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.undecided

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    @property
    def overlap(self) -> float | None:
        """passed / decided; None when no criterion of B was decided."""
        return self.passed / self.decided if self.decided else None

    @property
    def is_self(self) -> bool:
        return self.source == self.target


def pair_overlap(
    source: Hashable, target: Hashable, outcomes: Iterable[VerdictOutcome]
) -> PairOverlap:
    """overlap(source→target) from the verdicts on each of target's scored criteria."""
    counts = {"pass": 0, "fail": 0, "undecided": 0}
    for outcome in outcomes:
        _check(outcome, f"pair {source}→{target}")
        counts[outcome] += 1
    return PairOverlap(source, target, counts["pass"], counts["fail"], counts["undecided"])


@dataclass(frozen=True)
class OverlapMatrix:
    """The N × N overlap of one query's checklists; `cells` holds only the pairs whose
    source has a perfect answer (a row without one is empty)."""

    checklists: tuple[Hashable, ...]
    cells: Mapping[tuple[Hashable, Hashable], PairOverlap]

    def cell(self, source: Hashable, target: Hashable) -> PairOverlap | None:
        return self.cells.get((source, target))

    def pairs(self) -> list[PairOverlap]:
        """Ordered pairs A ≠ B, row by row."""
        return [
            cell
            for a in self.checklists
            for b in self.checklists
            if a != b and (cell := self.cells.get((a, b))) is not None
        ]

    def self_checks(self) -> list[PairOverlap]:
        return [cell for a in self.checklists if (cell := self.cells.get((a, a))) is not None]


def overlap_matrix(
    checklists: Sequence[Hashable],
    criteria: Mapping[Hashable, Sequence[Hashable]],
    verdicts: Mapping[tuple[Hashable, Hashable], VerdictOutcome],
    with_answer: Iterable[Hashable],
) -> OverlapMatrix:
    """Build a query's matrix.

    `criteria[b]` lists B's scored criteria; `verdicts[(a, criterion)]` is the verdict on
    A's perfect answer for that criterion (missing: undecided, it was not graded yet);
    `with_answer` are the checklists that have a perfect answer (the matrix's rows).
    """
    rows = set(with_answer)
    cells: dict[tuple[Hashable, Hashable], PairOverlap] = {}
    for a in checklists:
        if a not in rows:
            continue
        for b in checklists:
            outcomes = [verdicts.get((a, c), "undecided") for c in criteria.get(b, ())]
            cells[a, b] = pair_overlap(a, b, outcomes)
    return OverlapMatrix(tuple(checklists), cells)


@dataclass(frozen=True)
class Interval:
    mean: float | None
    low: float | None
    high: float | None
    n_pairs: int
    n_queries: int
    method: str


def mean_overlap(
    pairs_by_query: Mapping[Hashable, Sequence[PairOverlap]],
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """The mean of overlap(A→B) over ordered pairs A ≠ B with a defined overlap (every pair
    counts once), with a percentile bootstrap interval that resamples whole queries.

    Pairs of one query share perfect answers and criteria, so they are not independent;
    resampling queries (clusters) keeps that dependence inside each resample. With fewer
    than two queries there is nothing to resample: the interval is None.
    """
    values = {
        q: [p.overlap for p in pairs if not p.is_self and p.overlap is not None]
        for q, pairs in pairs_by_query.items()
    }
    values = {q: v for q, v in values.items() if v}
    flat = [x for v in values.values() for x in v]
    method = f"percentile bootstrap over queries, {resamples} resamples, seed {seed}"
    if not flat:
        return Interval(None, None, None, 0, 0, method)
    mean = math.fsum(flat) / len(flat)
    if len(values) < 2:
        return Interval(mean, None, None, len(flat), len(values), method)
    clusters = [
        (math.fsum(v), len(v)) for _, v in sorted(values.items(), key=lambda kv: str(kv[0]))
    ]
    sums = [s for s, _ in clusters]
    counts = np.array([n for _, n in clusters], dtype=np.int64)
    means = []
    for drawn in _draws(seed, len(clusters), resamples):
        means.append(math.fsum(itemgetter(*drawn.tolist())(sums)) / int(counts[drawn].sum()))
    means.sort()
    alpha = (1 - confidence) / 2
    low = quantile(means, alpha)
    high = quantile(means, 1 - alpha)
    return Interval(mean, low, high, len(flat), len(values), method)


def _draws(seed: int, size: int, resamples: int, block: int = 64) -> Iterator[np.ndarray]:
    """`resamples` rows of `size` draws from range(size): exactly the numbers
    `[random.Random(seed).randrange(size) for _ in range(size)]` drew row after row (as
    this module did), generated by numpy from the same Mersenne Twister state.

    randrange(n) takes k = n.bit_length() bits of each 32-bit output (`output >> (32 - k)`)
    and rejects values ≥ n; numpy's MT19937 set to Python's state gives the same outputs,
    so the accepted values, in order, are the same draws: 6,000,000 of them in about
    0.1 s instead of 5 (3,000 queries × 2,000 resamples). Made `block` rows at a time,
    the accepted values left over carried to the next block: all 6,000,000 at once took a
    web worker 200 MB past its size.
    """
    state = random.Random(seed).getstate()[1]  # noqa: S311 - reproducibility
    generator = np.random.MT19937()
    generator.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]},
    }
    shift = np.uint64(32 - size.bit_length())
    pending = np.empty(0, dtype=np.int64)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        need = rows * size
        while len(pending) < need:
            values = generator.random_raw(need + need // 2 + 64) >> shift
            pending = np.concatenate([pending, values[values < size].astype(np.int64)])
        yield from pending[:need].reshape(rows, size)
        pending = pending[need:]


@dataclass(frozen=True)
class Bin:
    low: float  # inclusive
    high: float  # exclusive, except the last bin which includes 1.0
    count: int


def histogram(values: Iterable[float], bins: int = HISTOGRAM_BINS) -> list[Bin]:
    """Counts of overlap values in equal bins over [0, 1]; 1.0 falls in the last bin."""
    counts = [0] * bins
    for value in values:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"an overlap must lie in [0, 1], got {value!r}")
        counts[min(int(value * bins), bins - 1)] += 1
    return [Bin(i / bins, (i + 1) / bins, counts[i]) for i in range(bins)]


@dataclass(frozen=True)
class CriterionCoverage:
    """How often other experts' perfect answers covered one criterion."""

    criterion: Hashable
    checklist: Hashable
    covered: int  # other experts' perfect answers that pass it
    decided: int  # other experts' perfect answers with a decided verdict on it
    undecided: int

    @property
    def share(self) -> float | None:
        return self.covered / self.decided if self.decided else None

    @property
    def is_core(self) -> bool:
        return self.share is not None and self.share >= CORE_THRESHOLD


def criterion_coverage(
    matrix_criteria: Mapping[Hashable, Sequence[Hashable]],
    verdicts: Mapping[tuple[Hashable, Hashable], VerdictOutcome],
    with_answer: Iterable[Hashable],
) -> list[CriterionCoverage]:
    """For each criterion of each checklist B of one query: how many perfect answers of the
    other checklists (A ≠ B) passed it. A's own answer is left out: it was written to pass."""
    sources = list(with_answer)
    result = []
    for b, criteria in matrix_criteria.items():
        for criterion in criteria:
            tally: dict[str, int] = defaultdict(int)
            for a in sources:
                if a == b:
                    continue
                outcome = verdicts.get((a, criterion), "undecided")
                _check(outcome, f"criterion {criterion}")
                tally[outcome] += 1
            result.append(
                CriterionCoverage(
                    criterion=criterion,
                    checklist=b,
                    covered=tally["pass"],
                    decided=tally["pass"] + tally["fail"],
                    undecided=tally["undecided"],
                )
            )
    return result


def core_and_tail(
    coverage: Iterable[CriterionCoverage],
) -> tuple[list[CriterionCoverage], list[CriterionCoverage]]:
    """Split criteria with a decided coverage into the shared core (covered by at least
    CORE_THRESHOLD of the other experts' perfect answers) and the long tail, each sorted by
    coverage, most covered first."""
    decided = [c for c in coverage if c.share is not None]
    ordered = sorted(decided, key=lambda c: (-(c.share or 0.0), -c.decided, str(c.criterion)))
    return [c for c in ordered if c.is_core], [c for c in ordered if not c.is_core]


def decided_outcome(
    *,
    adjudication: str | None = None,
    panel: VerdictOutcome | None = None,
    labels: Sequence[str] = (),
) -> VerdictOutcome:
    """One verdict for one (perfect answer, criterion) from whatever grading there is.

    An adjudication wins. Otherwise, from a run: the panel's aggregated verdict; from human
    grading: the majority of the reviewers' labels (a tie, or no label, is undecided).
    """
    if adjudication is not None:
        if adjudication not in ("pass", "fail"):
            raise ValueError(f"unknown adjudication label {adjudication!r}")
        return adjudication  # type: ignore[return-value]
    if panel is not None:
        _check(panel, "panel verdict")
        return panel
    passes = sum(1 for label in labels if label == "pass")
    fails = sum(1 for label in labels if label == "fail")
    if passes + fails != len(labels):
        raise ValueError(f"unknown human label in {list(labels)!r}")
    if passes > fails:
        return "pass"
    if fails > passes:
        return "fail"
    return "undecided"
