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

This migration makes the new table and column; 0026 moves the rows and prints one line per
move and drop; 0027 makes the dataset required and removes the judge's fields. Three steps,
because PostgreSQL cannot alter (or index) a table in the transaction that just wrote its
rows.
"""

from __future__ import annotations

from django.conf import settings
from django.db import migrations, models

import django.db.models.deletion


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
    ]
