"""What a dataset's tuning of a judge changes in the calls made for that dataset (issues 25
and 38).

A judge is site-wide and holds configuration only. The instructions and worked examples
that tune it belong to a dataset (`JudgeTuning`, one row per dataset and judge): they are
read and edited under the dataset's permissions and sent only in the prompts of that
dataset's runs, trials and rewards. A judge shared by datasets A and B grades B exactly as
if A had never tuned it.

Every version ever used keeps a JudgeVersion row of its dataset, made when the tuning is
saved and again, race safe, when a run starts with it (`ensure_version`), so the prompt a
verdict was made with is rebuilt from the version the verdict records and the dataset of
its run (evaluation.runs.rebuild), however the tuning was edited since.

Worked examples may come from the dataset's adjudicated items (evaluation.judges.examples);
a run records, in each member of its panel snapshot, the (answer, criterion) items its
judge's examples were taken from (`"example_items"`), and every agreement figure of that
run leaves them out: a judge shown an item's decision is not measured on it.

This one module holds all of it: first, in plain Python, the tuning as it enters the
verdict prompt, its version, its validation and the excerpt rule for examples taken from
adjudications (docs/judging.md#instructions-and-examples); then the dataset's rows.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.models import Dataset
from evaluation.judges.models import Judge, JudgeTuning, JudgeVersion

if TYPE_CHECKING:  # a type only: judges sit below runs
    from evaluation.runs.models import Run

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


# --- a dataset's tuning of a judge (the models) ---------------------------------------------


def excluded_items(run: Run) -> set[tuple[int, int]]:
    """(answer id, criterion id) of the items shown to the run's judges as examples."""
    items: set[tuple[int, int]] = set()
    for member in (run.snapshot or {}).get("members", ()):
        for answer_id, criterion_id in member.get("example_items", ()):
            items.add((int(answer_id), int(criterion_id)))
    return items


def stored(judge: Judge, dataset_id: int | None) -> JudgeTuning | None:
    """The dataset's tuning row of the judge, if it has one (one query; none without a
    dataset)."""
    if dataset_id is None:
        return None
    return JudgeTuning.objects.filter(judge=judge, dataset_id=dataset_id).first()


def current(judge: Judge, dataset_id: int | None) -> Tuning:
    """The judge's tuning on the dataset as it is now (untuned where it has none)."""
    return current_from(judge, stored(judge, dataset_id))


def current_of(judges: Iterable[Judge], dataset_id: int) -> dict[int, Tuning]:
    """`current` for several judges in one query, by judge id."""
    judges = list(judges)
    rows = {
        t.judge_id: t for t in JudgeTuning.objects.filter(dataset_id=dataset_id, judge__in=judges)
    }
    return {j.pk: current_from(j, rows.get(j.pk)) for j in judges}


def current_from(judge: Judge, row: JudgeTuning | None) -> Tuning:
    """The tuning a stored row (or none) gives the judge (no query)."""
    if row is None or not is_tuned(row.instructions, row.examples):
        return Tuning(judge.prompt_version)
    tuned_version = version(judge.prompt_version, row.instructions, row.examples)
    return Tuning(tuned_version, row.instructions, tuple(row.examples))


def pinned_of(judges: Iterable[Judge], dataset_id: int) -> dict[int, Tuning]:
    """`current_of`, each tuned version kept as a JudgeVersion row of the dataset (made if
    missing): the tunings a run started now would snapshot. A reward request grades with
    these (evaluation.rewards.services), so that it and such a run plan the same calls
    (evaluation.judging.plan) and the reward is answered by that run's verdicts."""
    judges = list(judges)
    tunings = current_of(judges, dataset_id)
    for judge in judges:
        ensure_version(judge, dataset_id, tunings[judge.pk])
    return tunings


def ensure_version(
    judge: Judge, dataset_id: int, tuning: Tuning, *, by: AbstractBaseUser | None = None
) -> None:
    """The version row of a tuned `tuning` on the dataset, made if missing (one query when
    it exists). Race safe: two starts of runs with the same new tuning make one row (the
    unique constraint; the loser reads the winner's)."""
    if judge.kind != Judge.Kind.LLM or not tuning.tuned:
        return
    found = JudgeVersion.objects.filter(judge=judge, dataset_id=dataset_id, version=tuning.version)
    if found.exists():
        return
    try:
        with transaction.atomic():
            JudgeVersion.objects.create(
                judge=judge, dataset_id=dataset_id, version=tuning.version,
                instructions=tuning.instructions, examples=list(tuning.examples),
                created_by=by if by is not None and by.is_authenticated else None,
            )  # fmt: skip
    except IntegrityError:
        pass  # made meanwhile by another start or save: the same tuning, by its digest


def tuning_of(judge: Judge, version: str, dataset_id: int) -> Tuning:
    """The tuning of the judge's prompt `version` on the dataset (the base version when "":
    untuned). Raises JudgeVersion.DoesNotExist for a tuned version with no row of that
    dataset: another dataset's version is never read."""
    own = judge_version(version or judge.prompt_version)
    if f"+{TUNED}-" not in own:
        return Tuning(own)
    return _recorded(judge.pk, dataset_id, own)


@lru_cache(maxsize=512)
def _recorded(judge_id: int, dataset_id: int, version: str) -> Tuning:
    """A recorded version's tuning, read once per process: every grading task of a tuned
    judge asks for it, and a version's row never changes (the version is the digest of its
    instructions and examples), so what was read once stays true."""
    row = JudgeVersion.objects.get(judge_id=judge_id, dataset_id=dataset_id, version=version)
    return Tuning(row.version, row.instructions, tuple(row.examples))


def snapshot_fields(judge: Judge, dataset_id: int | None) -> dict[str, Any]:
    """What a run's panel snapshot records about a member's tuning on the run's dataset:
    its prompt version and the items its examples came from, each only when there is one
    (the snapshots of untuned judges stay what they were). Makes the version's row if
    missing."""
    if judge.kind != Judge.Kind.LLM or dataset_id is None:
        return {}
    tuning = current(judge, dataset_id)
    if not tuning.tuned:
        return {}
    ensure_version(judge, dataset_id, tuning)
    fields: dict[str, Any] = {"prompt_version": tuning.version}
    if items := example_items(tuning.examples):
        fields["example_items"] = items
    return fields


@transaction.atomic
def tuning_save(
    *,
    judge: Judge,
    dataset: Dataset,
    by: AbstractBaseUser | None,
    instructions: str | None = None,
    examples: Sequence[dict] | None = None,
) -> JudgeTuning:
    """Set the dataset's instructions and/or examples for the judge (None: kept as they
    are). Raises ValidationError naming the field when the tuning breaks the bounds; a
    change is a new prompt version, kept (JudgeVersion, made by `by`)."""
    row = JudgeTuning.objects.select_for_update().filter(
        judge=judge, dataset=dataset
    ).first() or JudgeTuning(judge=judge, dataset=dataset)
    if instructions is not None:
        row.instructions = instructions
    if examples is not None:
        row.examples = list(examples)
    problems = {
        "instructions": instructions_problems(row.instructions),
        "examples": examples_problems(row.examples),
    }
    if any(problems.values()):
        raise ValidationError({k: v for k, v in problems.items() if v})
    row.updated_by = by if by is not None and by.is_authenticated else None
    row.save()
    ensure_version(judge, dataset.pk, current_from(judge, row), by=by)
    return row


def versions(judge: Judge, dataset_id: int, limit: int = 10) -> list[JudgeVersion]:
    """The dataset's kept versions of the judge, the newest first."""
    return list(
        JudgeVersion.objects.filter(judge=judge, dataset_id=dataset_id).order_by("-created_at")[
            :limit
        ]
    )
