"""Small pure helpers behind a run's score report: adjudicated outcomes, graded means, per
system means and pass rates. No Django. See docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from evaluation.metrics.scoring import VerdictOutcome, mean_grade

_LABELS = frozenset({"pass", "fail"})


def decided_outcome(panel: VerdictOutcome, adjudicated: str | None) -> VerdictOutcome:
    """An adjudication, where present, decides the criterion; the panel's verdict otherwise.

    The votes stay as they are (they are shown beside it); only the outcome that enters the
    score changes.
    """
    if adjudicated is None:
        return panel
    if adjudicated not in _LABELS:
        raise ValueError(f"an adjudication is pass or fail, got {adjudicated!r}")
    return adjudicated  # type: ignore[return-value]


def graded_mean(grades_by_judge: Mapping[str, Sequence[int | None]]) -> float | None:
    """Mean over judges of each judge's mean over its samples (None grades ignored).

    Each judge counts once, whatever its number of samples: a model sampled five times does
    not outvote two models sampled once. None without any grade.
    """
    means = [m for grades in grades_by_judge.values() if (m := mean_grade(grades)) is not None]
    return sum(means) / len(means) if means else None


def mean(values: Iterable[float | None]) -> float | None:
    """Plain mean ignoring None; None when nothing is left."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def pass_rate(outcomes: Iterable[bool | None]) -> float | None:
    """Share of answers that pass among those with a pass/fail (None: no score or no
    threshold, left out)."""
    decided = [o for o in outcomes if o is not None]
    return sum(decided) / len(decided) if decided else None
