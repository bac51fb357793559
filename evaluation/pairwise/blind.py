"""The blind rule in plain Python: which side a reviewer sees first, and what their 1 / 2 /
tie means once the sides are known again.

Positions are *balanced* random draws: the first reviewer of a pair gets a fair coin; every
later reviewer gets the side that has been shown first less often so far, and a fair coin
again when both have been first equally often. Each reviewer's order is still unpredictable
to them (they cannot see how others were shown), while over a pair's reviewers each side
leads about half the time, so position bias cancels in the pair's tally instead of adding
noise to it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

CHOICES = ("1", "2", "tie")
# Keys a reviewer may press, and the choice each means ("0" is a tie as well as "t").
KEYS = {"1": "1", "2": "2", "t": "tie", "0": "tie"}


def coin() -> bool:
    return secrets.randbelow(2) == 1


def draw_first_is_a(
    shown_a_first: int, shown_b_first: int, flip: Callable[[], bool] = coin
) -> bool:
    """Whether the next reviewer of a pair sees A as "Answer 1", given how often A and B have
    been shown first to its earlier reviewers."""
    if shown_a_first < shown_b_first:
        return True
    if shown_b_first < shown_a_first:
        return False
    return flip()


def preference_for(choice: str, first_is_a: bool) -> str:
    """The side preferred ("a", "b" or "tie") for a choice made on the blind page."""
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {', '.join(CHOICES)}, not {choice!r}")
    if choice == "tie":
        return "tie"
    first, second = ("a", "b") if first_is_a else ("b", "a")
    return first if choice == "1" else second


def choice_for(preference: str, first_is_a: bool) -> str:
    """The blind choice ("1", "2" or "tie") that a preference was, for the reviewer's own
    page (their vote shown back after undo, never anyone else's)."""
    if preference == "tie":
        return "tie"
    return "1" if (preference == "a") == first_is_a else "2"
