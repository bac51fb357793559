"""A judge's tuning moves from the site-wide judge to the datasets (issue 38).

Instructions and worked examples were fields of `Judge`, so one dataset's adjudications
reached every signed-in user and every other dataset's prompts. They become `JudgeTuning`
rows, one per (dataset, judge), and every kept `JudgeVersion` gains the dataset that owns
it. Where each piece goes:

- Examples taken from adjudications name their source; the dataset of that adjudication
  (or, if it is gone, of that answer) owns them. A tuning whose examples come from one
  dataset moves to it.
- A tuning without sourced examples (instructions, typed examples) is copied to each
  dataset whose runs used it: for a kept version, the runs whose snapshot names that
  version; for a judge's current tuning, the runs that had the judge in their panel.
- A tuning whose examples come from several datasets, or from items no longer found, is
  dropped: moving it anywhere would show one dataset's content to another. So is a tuning
  no dataset used. The verdicts made with a dropped version keep their version string;
  their prompt page says its instructions and examples are not kept.

Every move and drop is printed, one line each, when the migration runs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import migrations, models

import django.db.models.deletion


def _datasets_of(examples, apps) -> set:
    """The datasets the examples were taken from; None stands for a source not found."""
    Adjudication = apps.get_model("evaluation", "Adjudication")
    Answer = apps.get_model("evaluation", "Answer")
    found: set = set()
    for example in examples or ():
        source = example.get("source") if isinstance(example, dict) else None
        if not isinstance(source, dict):
            continue  # typed by hand: no dataset's item
        dataset = (
            Adjudication.objects.filter(pk=source.get("adjudication"))
            .values_list("answer__query__dataset_id", flat=True)
            .first()
        )
        if dataset is None:
            dataset = (
                Answer.objects.filter(pk=source.get("answer"))
                .values_list("query__dataset_id", flat=True)
                .first()
            )
        found.add(dataset)
    return found


def _runs_with(apps, judge_id: int, version: str | None) -> set[int]:
    """Datasets of the runs whose panel snapshot has the judge (at `version` if given)."""
    Run = apps.get_model("evaluation", "Run")
    found = set()
    for dataset_id, snap in Run.objects.values_list("dataset_id", "snapshot").iterator():
        for member in (snap or {}).get("members", ()):
            if member.get("judge") != judge_id:
                continue
            if version is None or member.get("prompt_version") == version:
                found.add(dataset_id)
    return found


def _owners(apps, judge_id, instructions, examples, version) -> tuple[set[int], str]:
    """The datasets a tuning moves to, and why (for the printed report)."""
    sourced = _datasets_of(examples, apps)
    if None in sourced:
        return set(), "dropped: an example's adjudication and answer are gone"
    if len(sourced) > 1:
        listed = ", ".join(str(d) for d in sorted(sourced))
        return set(), f"dropped: its examples come from datasets {listed}"
    if sourced:
        return sourced, "moved to the dataset its examples come from"
    used = _runs_with(apps, judge_id, version)
    if not used:
        return set(), "dropped: no dataset's run used it"
    return used, "copied to the datasets whose runs used it"


def forwards(apps, schema_editor) -> None:
    Judge = apps.get_model("evaluation", "Judge")
    JudgeTuning = apps.get_model("evaluation", "JudgeTuning")
    JudgeVersion = apps.get_model("evaluation", "JudgeVersion")
    for judge in Judge.objects.order_by("pk"):
        if not ((judge.instructions or "").strip() or judge.examples):
            continue
        owners, why = _owners(apps, judge.pk, judge.instructions, judge.examples, None)
        for dataset_id in sorted(owners):
            JudgeTuning.objects.create(
                dataset_id=dataset_id, judge=judge, instructions=judge.instructions or "",
                examples=judge.examples or [],
            )  # fmt: skip
        _say(f"judge {judge.name!r}, current tuning: {why}", owners)
    for row in JudgeVersion.objects.filter(dataset__isnull=True).order_by("pk"):
        owners, why = _owners(apps, row.judge_id, row.instructions, row.examples, row.version)
        for dataset_id in sorted(owners):
            JudgeVersion.objects.create(
                judge_id=row.judge_id, dataset_id=dataset_id, version=row.version,
                instructions=row.instructions, examples=row.examples,
                created_by_id=row.created_by_id,
            )  # fmt: skip
        _say(f"judge {row.judge_id}, version {row.version}: {why}", owners)
        row.delete()


def _say(line: str, owners: set[int]) -> None:
    where = f" ({', '.join(f'dataset {d}' for d in sorted(owners))})" if owners else ""
    print(f"  Judge tuning: {line}{where}")  # noqa: T201 - the migration's report


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_rubric_groups_scoring_dimensions"),
        ("evaluation", "0024_judge_tuning_trials_and_batches"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="JudgeTuning",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "instructions",
                    models.TextField(
                        blank=True,
                        help_text="Added to the system prompt: domain rules, how exact a figure must be, what counts as a source (docs/judging.md#instructions).",
                    ),
                ),
                (
                    "examples",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="Worked examples shown to the judge before the answer to grade.",
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="judge_tunings",
                        to="annotation.dataset",
                    ),
                ),
                (
                    "judge",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tunings",
                        to="evaluation.judge",
                    ),
                ),
                (
                    "updated_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"ordering": ["dataset", "judge"]},
        ),
        migrations.AddConstraint(
            model_name="judgetuning",
            constraint=models.UniqueConstraint(fields=("dataset", "judge"), name="one_tuning_per_judge"),
        ),
        migrations.AddField(
            model_name="judgeversion",
            name="dataset",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judge_versions",
                to="annotation.dataset",
            ),
        ),
        migrations.RemoveConstraint(model_name="judgeversion", name="one_row_per_judge_version"),
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="judgeversion",
            name="dataset",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judge_versions",
                to="annotation.dataset",
            ),
        ),
        migrations.AddConstraint(
            model_name="judgeversion",
            constraint=models.UniqueConstraint(
                fields=("judge", "dataset", "version"), name="one_row_per_dataset_judge_version"
            ),
        ),
        migrations.RemoveField(model_name="judge", name="examples"),
        migrations.RemoveField(model_name="judge", name="instructions"),
    ]
