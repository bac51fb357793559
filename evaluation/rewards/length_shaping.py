"""Anti-gaming shaping of a checklist reward: length normalisation and an over-length
penalty. Plain Python; see docs/rewards.md#shaping.

A policy trained on a checklist reward learns that a longer answer touches more criteria:
listing every figure it can think of passes fact criteria by sheer coverage. Both knobs
below take the raw checklist score s in [0, 1] and the completion's length in words w:

    normalised = s × min(1, (R / w) ^ a)           when a reference length R is set
    penalised  = max(0, normalised - P × (w - M) / M)   when w > M, a maximum length M

so answers up to R words keep their score, longer ones are scaled down by (R / w) ^ a, and
every M words past M cost P. Words are whitespace-separated runs: tokenizer-independent and
the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shaping:
    """Off when `length_reference` and `max_words` are 0."""

    length_reference: int = 0  # R, in words; 0: no length normalisation
    length_exponent: float = 0.5  # a
    max_words: int = 0  # M, in words; 0: no over-length penalty
    over_length_penalty: float = 1.0  # P, per M words over M

    def __post_init__(self) -> None:
        if self.length_reference < 0 or self.max_words < 0:
            raise ValueError("lengths are counts of words, never negative")
        if not 0.0 <= self.length_exponent <= 4.0:
            raise ValueError(f"length_exponent must lie in [0, 4], got {self.length_exponent!r}")
        if not 0.0 <= self.over_length_penalty <= 1.0:
            raise ValueError(
                f"over_length_penalty must lie in [0, 1], got {self.over_length_penalty!r}"
            )

    @property
    def active(self) -> bool:
        return bool(self.length_reference or self.max_words)


def words(text: str) -> int:
    return len(text.split())


def shaped(score: float | None, length: int, shaping: Shaping) -> float | None:
    """The reward from the checklist score and the completion's length in words; None (no
    score) stays None: shaping never invents a reward."""
    if score is None:
        return None
    reward = score
    if shaping.length_reference and length > shaping.length_reference:
        reward *= (shaping.length_reference / length) ** shaping.length_exponent
    if shaping.max_words and length > shaping.max_words:
        over = (length - shaping.max_words) / shaping.max_words
        reward = max(0.0, reward - shaping.over_length_penalty * over)
    return reward
