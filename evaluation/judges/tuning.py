"""What a dataset's tuning of a judge changes in the calls made for that dataset (issues 25
and 38).

A judge is site-wide and holds configuration only. The instructions and worked examples
that tune it belong to a dataset (`JudgeTuning`, one row per dataset and judge): they are
read and edited under the dataset's permissions and sent only in the prompts of that
dataset's runs, trials and rewards. A judge shared by datasets A and B grades B exactly as
if A had never tuned it. evaluation.judging.tuned renders, versions and validates a tuning.

Every version ever used keeps a JudgeVersion row of its dataset, made when the tuning is
saved and again, race safe, when a run starts with it (`ensure_version`), so the prompt a
verdict was made with is rebuilt from the version the verdict records and the dataset of
its run (evaluation.judges.rebuild), however the tuning was edited since.

Worked examples may come from the dataset's adjudicated items (evaluation.judges.examples);
a run records, in each member of its panel snapshot, the (answer, criterion) items its
judge's examples were taken from (`"example_items"`), and every agreement figure of that
run leaves them out: a judge shown an item's decision is not measured on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.models import Dataset
from evaluation.judging import tuned
from evaluation.models import Judge, JudgeTuning, JudgeVersion, Run


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


def current(judge: Judge, dataset_id: int | None) -> tuned.Tuning:
    """The judge's tuning on the dataset as it is now (untuned where it has none)."""
    return current_from(judge, stored(judge, dataset_id))


def current_of(judges: Iterable[Judge], dataset_id: int) -> dict[int, tuned.Tuning]:
    """`current` for several judges in one query, by judge id."""
    judges = list(judges)
    rows = {
        t.judge_id: t for t in JudgeTuning.objects.filter(dataset_id=dataset_id, judge__in=judges)
    }
    return {j.pk: current_from(j, rows.get(j.pk)) for j in judges}


def current_from(judge: Judge, row: JudgeTuning | None) -> tuned.Tuning:
    """The tuning a stored row (or none) gives the judge (no query)."""
    if row is None or not tuned.is_tuned(row.instructions, row.examples):
        return tuned.Tuning(judge.prompt_version)
    version = tuned.version(judge.prompt_version, row.instructions, row.examples)
    return tuned.Tuning(version, row.instructions, tuple(row.examples))


def ensure_version(
    judge: Judge, dataset_id: int, tuning: tuned.Tuning, *, by: AbstractBaseUser | None = None
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


def tuning_of(judge: Judge, version: str, dataset_id: int) -> tuned.Tuning:
    """The tuning of the judge's prompt `version` on the dataset (the base version when "":
    untuned). Raises JudgeVersion.DoesNotExist for a tuned version with no row of that
    dataset: another dataset's version is never read."""
    own = tuned.judge_version(version or judge.prompt_version)
    if f"+{tuned.TUNED}-" not in own:
        return tuned.Tuning(own)
    return _recorded(judge.pk, dataset_id, own)


@lru_cache(maxsize=512)
def _recorded(judge_id: int, dataset_id: int, version: str) -> tuned.Tuning:
    """A recorded version's tuning, read once per process: every grading task of a tuned
    judge asks for it, and a version's row never changes (the version is the digest of its
    instructions and examples), so what was read once stays true."""
    row = JudgeVersion.objects.get(judge_id=judge_id, dataset_id=dataset_id, version=version)
    return tuned.Tuning(row.version, row.instructions, tuple(row.examples))


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
    if items := tuned.example_items(tuning.examples):
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
        "instructions": tuned.instructions_problems(row.instructions),
        "examples": tuned.examples_problems(row.examples),
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
