"""A judge's tuning (instructions and worked examples) as it enters the verdict prompt, its
version, its validation and the excerpt rule for examples taken from adjudications. Plain
Python (docs/judging.md#instructions-and-examples).

The tuning is appended to the system message, after the fixed verdict instructions: it is
the same for every call of the judge's version, so it stays inside the prefix that providers
cache, and the query, answer and criterion follow it in the user message as before. A judge
with neither instructions nor examples adds nothing: its prompt, version and cache keys are
exactly the untuned ones.

The version of a tuned prompt is the judge's base version plus "+tuned-" and the first 12
hex digits of the SHA-256 of the tuning's canonical JSON (`version`): a change of one
character is a new version, a new cache key and, through JudgeVersion, a prompt that stays
rebuildable from the version a verdict records.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TUNED = "tuned"  # the version part of a tuned prompt: "verdict-v1+tuned-<12 hex>"
DIGEST_CHARS = 12

# Bounds (docs/judging.md#limits): the tuning is sent with every call of the judge, so it
# is kept to a size that costs little against the answer itself.
MAX_INSTRUCTIONS = 8000  # characters
MAX_EXAMPLES = 20
MAX_CRITERION = 1000
MAX_EXCERPT = 3000
MAX_REASON = 1000
MAX_EXAMPLES_CHARS = 24000  # all examples as rendered (about 6,000 tokens)
DECISIONS = ("pass", "fail")
EXAMPLE_FIELDS = ("criterion", "excerpt", "decision", "reason")
SOURCE_FIELDS = ("adjudication", "answer", "criterion")

INSTRUCTIONS_TITLE = "Instructions for this judge (they take precedence on how to read criteria):"
EXAMPLES_TITLE = (
    "Worked examples (decisions reviewers made on other answers; read criteria the same way):"
)


@dataclass(frozen=True)
class Tuning:
    """What a judge's version adds to the prompt. `version` is the base version for an
    untuned judge."""

    version: str
    instructions: str = ""
    examples: tuple[Mapping[str, Any], ...] = ()

    @property
    def tuned(self) -> bool:
        return bool(self.instructions.strip() or self.examples)

    @property
    def system(self) -> str:
        """The text appended to the system message ("" when untuned)."""
        return system_addition(self.instructions, self.examples)


def is_tuned(instructions: str, examples: Sequence[Mapping[str, Any]]) -> bool:
    return bool(instructions.strip() or examples)


def canonical(instructions: str, examples: Sequence[Mapping[str, Any]]) -> str:
    """The tuning as one canonical JSON text: what the version's digest is taken of."""
    return json.dumps(
        {"instructions": instructions, "examples": list(examples)},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )  # fmt: skip


def digest(instructions: str, examples: Sequence[Mapping[str, Any]]) -> str:
    text = canonical(instructions, examples)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def version(base: str, instructions: str, examples: Sequence[Mapping[str, Any]]) -> str:
    """The prompt version of a judge with this tuning: `base` itself when untuned."""
    if not is_tuned(instructions, examples):
        return base
    return f"{base}+{TUNED}-{digest(instructions, examples)}"


_TUNED_PART = re.compile(rf"^(?P<base>.+?)\+{TUNED}-(?P<digest>[0-9a-f]{{{DIGEST_CHARS}}})")


def judge_version(recorded: str) -> str:
    """The judge's version within a verdict's recorded version, the variants (evidence,
    conversation) left out: "verdict-v1+tuned-0123456789ab+context-v1" gives
    "verdict-v1+tuned-0123456789ab"; an untuned one gives its first part."""
    found = _TUNED_PART.match(recorded)
    if found:
        return found.group(0)
    return recorded.split("+", 1)[0]


def system_addition(instructions: str, examples: Sequence[Mapping[str, Any]]) -> str:
    """The tuning's block of the system message: the instructions, then the examples."""
    blocks = []
    if instructions.strip():
        blocks.append(f"{INSTRUCTIONS_TITLE}\n{instructions.strip()}")
    if examples:
        rendered = "\n\n".join(render_example(n, e) for n, e in enumerate(examples, 1))
        blocks.append(f"{EXAMPLES_TITLE}\n\n{rendered}")
    return "\n\n".join(blocks)


def render_example(number: int, example: Mapping[str, Any]) -> str:
    return (
        f"Example {number}\nCriterion: {example['criterion']}\n"
        f"Answer excerpt: {example['excerpt']}\nDecision: {example['decision']}\n"
        f"Reason: {example.get('reason', '')}"
    )


# --- validation ----------------------------------------------------------------------------


def instructions_problems(instructions: object) -> list[str]:
    if not isinstance(instructions, str):
        return ["Instructions must be text."]
    if len(instructions) > MAX_INSTRUCTIONS:
        return [
            f"Instructions hold {len(instructions):,} characters; at most {MAX_INSTRUCTIONS:,}."
        ]
    return []


def examples_problems(examples: object) -> list[str]:
    """Every problem of a list of examples, each naming the example (1-based) and its field;
    empty when the list is valid."""
    if not isinstance(examples, list):
        return ["Examples must be a list of objects (criterion, excerpt, decision, reason)."]
    if len(examples) > MAX_EXAMPLES:
        return [f"{len(examples)} examples; at most {MAX_EXAMPLES}."]
    problems: list[str] = []
    for n, example in enumerate(examples, 1):
        problems += [f"Example {n}: {p}" for p in _example_problems(example)]
    if not problems:
        total = len(system_addition("", examples))
        if total > MAX_EXAMPLES_CHARS:
            problems.append(
                f"The examples take {total:,} characters in the prompt; at most "
                f"{MAX_EXAMPLES_CHARS:,} (about {MAX_EXAMPLES_CHARS // 4:,} tokens)."
            )
    return problems


def _example_problems(example: object) -> list[str]:
    if not isinstance(example, dict):
        return ["must be an object with criterion, excerpt, decision and reason."]
    problems = []
    unknown = sorted(set(example) - {*EXAMPLE_FIELDS, "source"})
    if unknown:
        problems.append(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}.")
    limits = {"criterion": MAX_CRITERION, "excerpt": MAX_EXCERPT, "reason": MAX_REASON}
    for field, limit in limits.items():
        value = example.get(field, "" if field == "reason" else None)
        if not isinstance(value, str) or (field != "reason" and not value.strip()):
            problems.append(f"{field} is required (text)." if field != "reason" else
                            "reason must be text.")  # fmt: skip
        elif len(value) > limit:
            problems.append(f"{field} holds {len(value):,} characters; at most {limit:,}.")
    if example.get("decision") not in DECISIONS:
        problems.append('decision must be "pass" or "fail".')
    if "source" in example:
        source = example["source"]
        if (
            not isinstance(source, dict)
            or set(source) - set(SOURCE_FIELDS)
            or not all(
                isinstance(source.get(k), int) and not isinstance(source.get(k), bool)
                for k in SOURCE_FIELDS
            )
        ):
            problems.append("source must be {adjudication, answer, criterion}, all ids.")
    return problems


def example_items(examples: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """The (answer, criterion) of the examples taken from items, in order, once each."""
    seen: list[list[int]] = []
    for example in examples:
        source = example.get("source") or {}
        item = [source.get("answer"), source.get("criterion")]
        if all(isinstance(v, int) for v in item) and item not in seen:
            seen.append(item)
    return seen


# --- excerpts ------------------------------------------------------------------------------

_WORD = re.compile(r"[\w$%.,]+", re.UNICODE)
_QUOTED = re.compile(r"[\"“']([^\"”']{12,})[\"”']")
_STOP = frozenset(
    {
        "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "by", "is", "are",
        "was", "were", "be", "that", "this", "it", "as", "at", "from", "its", "their", "which",
        "provides", "states", "includes", "presents", "answer",
    }
)  # fmt: skip


def _words(text: str) -> set[str]:
    return {w.lower().strip(".,") for w in _WORD.findall(text)} - _STOP - {""}


def excerpt(answer: str, *, criterion: str, reason: str = "", limit: int = MAX_EXCERPT) -> str:
    """The part of an answer an example shows: the whole answer when it fits `limit`
    characters; else a window of `limit` characters around the passage the adjudicator's
    reason quotes, or failing that the paragraph sharing most words with the criterion and
    reason, marked "[…]" where it was cut."""
    text = answer.strip()
    if len(text) <= limit:
        return text
    centre = _quoted_at(text, reason)
    if centre is None:
        centre = _best_paragraph(text, _words(f"{criterion} {reason}"))
    room = limit - 6  # the two markers
    start = max(0, min(centre - room // 2, len(text) - room))
    end = start + room
    # Cut at white space where one is near, so that no word is broken.
    if start > 0 and (space := text.find(" ", start, start + 40)) != -1:
        start = space + 1
    if end < len(text) and (space := text.rfind(" ", end - 40, end)) != -1:
        end = space
    piece = text[start:end].strip()
    return f"{'[…] ' if start > 0 else ''}{piece}{' […]' if end < len(text) else ''}"


def _quoted_at(text: str, reason: str) -> int | None:
    for quote in _QUOTED.findall(reason):
        at = text.find(quote.strip())
        if at != -1:
            return at + len(quote) // 2
    return None


def _best_paragraph(text: str, words: set[str]) -> int:
    best, best_score, at = 0, -1, 0
    for paragraph in re.split(r"(\n\s*\n|(?<=[.!?])\s+)", text):
        score = len(_words(paragraph) & words)
        if score > best_score:
            best, best_score = at + len(paragraph) // 2, score
        at += len(paragraph)
    return best
