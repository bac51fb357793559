"""Batched grading: several criteria of one answer in one call, and the strict parser of the
list of verdicts that comes back. Plain Python (docs/judging.md#batched-grading).

A batched prompt is made from the single-criterion prompts of its criteria (prompts.messages,
with whatever a judge's tuning puts in them): their shared part, everything but the closing
"Criterion: …" line, is kept byte for byte, the system message gains BATCH_INSTRUCTIONS, and
the criteria are listed by number at the end. Calls whose prompts differ in anything but
the criterion are never put in one batch (evaluation.judging.engine.batches).

The reply is read strictly, item by item: an item whose number is not one of the batch's,
that repeats a number, or that is not a verdict of the agreed shape gives no verdict; the
engine then asks that criterion again, alone, with its single-criterion prompt. A verdict is
never guessed from a neighbour's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evaluation.judging import prompts

# Part of the cache key of every batched verdict (evaluation.judging.plan.key_extra) and of its
# provenance: changing the batched wording or schema means a new version.
BATCH_VERSION = "batch-v1"
MAX_CRITERIA_PER_CALL = 50  # what a judge's criteria_per_call may say (0: all)

BATCH_INSTRUCTIONS = (
    "Several criteria are given below, numbered. Grade the answer against each of them on "
    'its own, as described above, and reply with a JSON object whose "verdicts" list holds '
    'one object per criterion: "criterion" (its number), then "verdict", "failure_kind" and '
    '"rationale" as described above. Give every criterion exactly one object.'
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "criterion": {"type": "integer"},
                    **prompts.SCHEMA["properties"],
                },
                "required": ["criterion", *prompts.SCHEMA["required"]],
                "additionalProperties": False,
            },
        }
    },
    "required": ["verdicts"],
    "additionalProperties": False,
}

CRITERION_LINE = "\n\nCriterion: "


def head_of(messages: list[dict[str, str]], criterion: str) -> str | None:
    """What a single-criterion prompt holds besides its criterion, as one comparable string;
    None when the prompt does not end with the criterion (such a call is never batched)."""
    if not messages or not criterion:
        return None
    last = messages[-1]["content"]
    suffix = f"{CRITERION_LINE}{criterion}"
    if not last.endswith(suffix):
        return None
    shared = [*messages[:-1], {**messages[-1], "content": last[: -len(suffix)]}]
    return json.dumps(shared, sort_keys=True, ensure_ascii=False)


def messages(single: list[dict[str, str]], criteria: list[str]) -> list[dict[str, str]]:
    """The batched prompt for `criteria`, numbered from 1, from the single-criterion prompt
    of the first of them (`single`): the others share everything but their criterion."""
    suffix = f"{CRITERION_LINE}{criteria[0]}"
    if not single[-1]["content"].endswith(suffix):
        raise ValueError("The prompt does not end with its criterion: it cannot be batched.")
    listed = "\n".join(f"{number}. {text}" for number, text in enumerate(criteria, start=1))
    found: list[dict[str, str]] = []
    system_done = False
    for message in single[:-1]:
        if message.get("role") == "system" and not system_done:
            message = {**message, "content": f"{message['content']} {BATCH_INSTRUCTIONS}"}
            system_done = True
        found.append(message)
    user = single[-1]["content"][: -len(suffix)]
    found.append({**single[-1], "content": f"{user}\n\nCriteria:\n{listed}"})
    return found


@dataclass(frozen=True)
class BatchReply:
    """The verdicts a batched reply gave, by criterion number (from 1), with each one's item
    as received; `malformed` names the numbers whose item was there but unusable."""

    verdicts: dict[int, prompts.ParsedVerdict] = field(default_factory=dict)
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    malformed: frozenset[int] = frozenset()


def parse(data: dict[str, Any] | None, *, size: int) -> BatchReply | None:
    """None when the reply is not `{"verdicts": [...]}` at all (asked again as a whole, then
    every criterion alone); otherwise the verdicts of the items that are well formed."""
    if not data or not isinstance(data.get("verdicts"), list):
        return None
    seen: dict[int, int] = {}
    items: dict[int, dict[str, Any]] = {}
    for item in data["verdicts"]:
        number = item.get("criterion") if isinstance(item, dict) else None
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= size:
            continue  # not attributable to a criterion of the batch: ignored
        seen[number] = seen.get(number, 0) + 1
        items[number] = item
    verdicts: dict[int, prompts.ParsedVerdict] = {}
    malformed: set[int] = set()
    for number, item in items.items():
        parsed = prompts.parse(item) if seen[number] == 1 else None
        if parsed is None:
            malformed.add(number)  # a bad item, or one criterion answered twice
        else:
            verdicts[number] = parsed
    return BatchReply(verdicts, items, frozenset(malformed))


def split(total: int, parts: int) -> list[int]:
    """`total` shared over `parts` as evenly as whole numbers allow, the remainder to the
    first ones: the shares of a batched call's tokens add up to the call's."""
    base, rest = divmod(max(total, 0), parts)
    return [base + (1 if i < rest else 0) for i in range(parts)]
