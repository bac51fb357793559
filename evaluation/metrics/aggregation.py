"""Vote aggregation: one verdict per (answer, criterion) from the votes of a judge panel.

A panel is either several models voting once each (votes from different judges, sample 0) or
one model sampled several times (one judge, samples 0..N-1). Aggregation does not care which:
it counts valid votes. See docs/metrics.md for the formulas.

The invariant that shapes everything here: a vote whose judge output could not be parsed
("unparseable") or whose call failed ("error") is never a fail. It is counted apart as
invalid and excluded, so a flaky endpoint can lower the number of votes, never the score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Literal, get_args

Outcome = Literal["pass", "fail", "unparseable", "error"]
VerdictOutcome = Literal["pass", "fail", "undecided"]

OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))
INVALID_OUTCOMES: frozenset[str] = frozenset({"unparseable", "error"})


@dataclass(frozen=True)
class Vote:
    """One judge's verdict on one (answer, criterion), for one sample."""

    judge: str
    sample: int
    outcome: Outcome

    def __post_init__(self) -> None:
        # A typo such as "Pass" must not silently become an excluded vote.
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown vote outcome {self.outcome!r}; expected one of {OUTCOMES}")


class Method(StrEnum):
    MAJORITY = "majority"
    UNANIMITY = "unanimity"
    MEAN_THRESHOLD = "mean_threshold"


@dataclass(frozen=True)
class CriterionVerdict:
    """The panel's verdict on one criterion, with the vote counts behind it.

    `outcome` is "undecided" when no valid vote was cast, or on a tie under majority.
    `invalid` counts unparseable and errored votes; they are reported, never counted.
    """

    outcome: VerdictOutcome
    passes: int
    fails: int
    invalid: int

    @property
    def valid(self) -> int:
        return self.passes + self.fails

    @property
    def pass_share(self) -> float | None:
        """Share of valid votes that pass; None without a valid vote."""
        return self.passes / self.valid if self.valid else None

    @property
    def split(self) -> bool:
        """The valid votes disagree: worth a reviewer's look even when a verdict was reached."""
        return self.passes > 0 and self.fails > 0

    @property
    def vote_split(self) -> str:
        """Passes–fails for display, e.g. "2–1"; invalid votes are shown apart."""
        return f"{self.passes}–{self.fails}"


def aggregate(
    votes: Sequence[Vote], method: Method | str, *, threshold: float = 0.5
) -> CriterionVerdict:
    """Aggregate a panel's votes on one criterion into one verdict.

    - majority: pass if passes > fails, fail if fails > passes, undecided on a tie;
    - unanimity: fail if any valid vote fails, pass if there is at least one valid vote and
      all valid votes pass;
    - mean_threshold: pass if passes / (passes + fails) >= threshold, else fail.

    Every method returns "undecided" when there is no valid vote. `threshold` is only used
    by mean_threshold and must lie in [0, 1].
    """
    method = Method(method)  # accepts the stored string; raises ValueError on an unknown one
    _check_unique(votes)
    passes = sum(1 for v in votes if v.outcome == "pass")
    fails = sum(1 for v in votes if v.outcome == "fail")
    invalid = sum(1 for v in votes if v.outcome in INVALID_OUTCOMES)

    if method is Method.MAJORITY:
        outcome = _majority(passes, fails)
    elif method is Method.UNANIMITY:
        outcome = _unanimity(passes, fails)
    else:
        outcome = _mean_threshold(passes, fails, exact_threshold(threshold))
    return CriterionVerdict(outcome=outcome, passes=passes, fails=fails, invalid=invalid)


def _check_unique(votes: Sequence[Vote]) -> None:
    # A vote counted twice (a retried task stored twice) would silently tip a majority; the
    # caller must deduplicate, so say so loudly instead of guessing which copy is right.
    seen: set[tuple[str, int]] = set()
    for vote in votes:
        key = (vote.judge, vote.sample)
        if key in seen:
            raise ValueError(f"duplicate vote for judge {vote.judge!r}, sample {vote.sample}")
        seen.add(key)


def _majority(passes: int, fails: int) -> VerdictOutcome:
    if passes > fails:
        return "pass"
    if fails > passes:
        return "fail"
    return "undecided"  # a tie, including no valid vote at all


def _unanimity(passes: int, fails: int) -> VerdictOutcome:
    if fails:
        return "fail"
    return "pass" if passes else "undecided"


def _mean_threshold(passes: int, fails: int, threshold: Fraction) -> VerdictOutcome:
    valid = passes + fails
    if not valid:
        return "undecided"
    return "pass" if Fraction(passes, valid) >= threshold else "fail"


def exact_threshold(threshold: float) -> Fraction:
    """The threshold as the decimal the user wrote, so that 7 of 10 votes meet 0.7.

    Fraction(0.7) is 0.69999…; Fraction("0.7") is exactly 7/10. Comparing exact fractions
    avoids a float rounding deciding a verdict.
    """
    value = float(threshold)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"threshold must lie in [0, 1], got {threshold!r}")
    return Fraction(repr(value))
