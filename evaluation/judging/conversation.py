"""Grading an answer that is a conversation. Plain Python, no Django.

A panel grades the last assistant turn (the answer's final `text`: the default, and all a
plain answer has), or every assistant turn, each judged with the conversation before it,
the votes of the turns becoming one verdict:

- cumulative: the whole conversation must meet the criterion once: pass when some turn
  passes;
- average: the share of turns that pass; pass when it is one half or more.

A turn that could not be judged (an error, an unparseable output) makes the verdict an error
or unparseable, so that "retry failed" asks again; it is never counted as a fail.
See docs/judging.md#conversations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

LAST_TURN, CUMULATIVE, AVERAGE = "last_turn", "cumulative", "average"
AVERAGE_PASSES_AT = Fraction(1, 2)


@dataclass(frozen=True)
class GradedTurn:
    number: int  # 1-based among the assistant turns
    of: int  # how many assistant turns are graded
    content: str
    before: tuple[dict[str, Any], ...]  # the turns before it, as stored


def graded_turns(mode: str, text: str, turns: Sequence[dict[str, Any]]) -> list[GradedTurn]:
    """The turns a criterion is graded on. The final `text` is always the last one: when the
    turns do not end with an assistant turn saying it, it follows them."""
    said = [
        (i, t.get("content") or "")
        for i, t in enumerate(turns)
        if t.get("role") == "assistant" and (t.get("content") or "").strip()
    ]
    if not said or said[-1][1].strip() != (text or "").strip():
        said.append((len(turns), text or ""))
    count = len(said)
    graded = [
        GradedTurn(number, count, content, tuple(turns[:index]))
        for number, (index, content) in enumerate(said, start=1)
    ]
    return graded[-1:] if mode == LAST_TURN else graded


@dataclass(frozen=True)
class TurnVote:
    number: int
    outcome: str  # pass, fail, unparseable, error
    failure_kind: str = ""
    rationale: str = ""


@dataclass(frozen=True)
class Aggregated:
    outcome: str
    failure_kind: str
    rationale: str


def aggregate(mode: str, votes: Sequence[TurnVote]) -> Aggregated:
    """One verdict from the votes of a criterion's turns (in turn order)."""
    if len(votes) == 1:
        v = votes[0]
        return Aggregated(v.outcome, v.failure_kind, v.rationale)
    count = len(votes)
    passed = [v for v in votes if v.outcome == "pass"]
    undecided = [v for v in votes if v.outcome not in ("pass", "fail")]
    if mode == CUMULATIVE and passed:
        first = passed[0]
        return Aggregated("pass", "", f"Met at turn {first.number} of {count}: {first.rationale}")
    if undecided:
        worst = next((v for v in undecided if v.outcome == "error"), undecided[0])
        return Aggregated(worst.outcome, "", f"Turn {worst.number} of {count}: {worst.rationale}")
    if mode == CUMULATIVE:
        last = votes[-1]
        return Aggregated(
            "fail", last.failure_kind,
            f"Not met in any of {count} turns; turn {last.number}: {last.rationale}",
        )  # fmt: skip
    share = Fraction(len(passed), count)
    per_turn = ", ".join(f"turn {v.number} {v.outcome}" for v in votes)
    ok = share >= AVERAGE_PASSES_AT
    failed = next((v for v in votes if v.outcome == "fail"), None)
    detail = f"Met in {len(passed)} of {count} turns ({float(share):.0%}; half needed): {per_turn}."
    if failed is not None:
        detail += f" Turn {failed.number}: {failed.rationale}"
    return Aggregated("pass" if ok else "fail", "" if ok else failed.failure_kind, detail)
