"""What tuning a judge changes in the runs that use it (issue 25).

A judge may carry instructions and worked examples (evaluation.judging.tuned renders,
versions and validates them). Every version ever used keeps a JudgeVersion row, made when
the judge is saved with new tuning and again, race safe, when a run starts with it
(`ensure_version`), so the prompt a verdict was made with is rebuilt from the version the
verdict records (evaluation.judges.rebuild), however the judge was edited since.

A judge's worked examples may come from the dataset's adjudicated items; a run records, in
each member of its panel snapshot, the (answer, criterion) items its judge's examples were
taken from (`"example_items"`), and every agreement figure of that run leaves them out: a
judge shown an item's decision is not measured on it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from evaluation.judging import tuned
from evaluation.models import Judge, JudgeVersion, Run


def excluded_items(run: Run) -> set[tuple[int, int]]:
    """(answer id, criterion id) of the items shown to the run's judges as examples."""
    items: set[tuple[int, int]] = set()
    for member in (run.snapshot or {}).get("members", ()):
        for answer_id, criterion_id in member.get("example_items", ()):
            items.add((int(answer_id), int(criterion_id)))
    return items


def judge_version(judge: Judge) -> str:
    """The prompt version the judge's current tuning gives (no query)."""
    return tuned.version(judge.prompt_version, judge.instructions, judge.examples)


def ensure_version(judge: Judge, *, by: AbstractBaseUser | None = None) -> str:
    """The judge's current prompt version, with its JudgeVersion row made if it is tuned and
    the row is missing (one query when it exists). Race safe: two starts of runs with the
    same new tuning make one row (the unique constraint; the loser reads the winner's)."""
    version = judge_version(judge)
    if judge.kind != Judge.Kind.LLM or version == judge.prompt_version:
        return version
    if JudgeVersion.objects.filter(judge=judge, version=version).exists():
        return version
    try:
        with transaction.atomic():
            JudgeVersion.objects.create(
                judge=judge, version=version, instructions=judge.instructions,
                examples=judge.examples, created_by=by if by and by.is_authenticated else None,
            )  # fmt: skip
    except IntegrityError:
        pass  # made meanwhile by another start or save: the same tuning, by its digest
    return version


def tuning_of(judge: Judge, version: str) -> tuned.Tuning:
    """The tuning of the judge's prompt `version` (the base version when "": untuned).
    Raises JudgeVersion.DoesNotExist for a tuned version with no row (never made by this
    code: a version is recorded before any run or verdict can name it)."""
    own = tuned.judge_version(version or judge.prompt_version)
    if f"+{tuned.TUNED}-" not in own:
        return tuned.Tuning(own)
    return _recorded(judge.pk, own)


@lru_cache(maxsize=512)
def _recorded(judge_id: int, version: str) -> tuned.Tuning:
    """A recorded version's tuning, read once per process: every grading task of a tuned
    judge asks for it, and a version's row never changes (the version is the digest of its
    instructions and examples), so what was read once stays true."""
    row = JudgeVersion.objects.get(judge_id=judge_id, version=version)
    return tuned.Tuning(row.version, row.instructions, tuple(row.examples))


def live_tuning(judge: Judge) -> tuned.Tuning:
    """The judge's tuning as it is now (no query): for calls outside runs (rewards)."""
    return tuned.Tuning(judge_version(judge), judge.instructions, tuple(judge.examples))


def snapshot_fields(judge: Judge) -> dict[str, Any]:
    """What a run's panel snapshot records about a member's tuning: its prompt version and
    the items its examples came from, each only when there is one (the snapshots of
    untuned judges stay what they were). Makes the version's row if missing."""
    if judge.kind != Judge.Kind.LLM:
        return {}
    version = ensure_version(judge)
    if version == judge.prompt_version:
        return {}
    fields: dict[str, Any] = {"prompt_version": version}
    if items := tuned.example_items(judge.examples):
        fields["example_items"] = items
    return fields
