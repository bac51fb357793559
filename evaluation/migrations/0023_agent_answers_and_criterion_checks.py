# Answers from agents (turns, context, metadata), how a panel grades conversations, a
# judge's evidence budget, and a criterion's deterministic check and evidence mode
# (evaluation.criterion_checks).

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_dataset_deleting_since"),
        ("evaluation", "0022_reward_batches"),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="context",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="answer",
            name="metadata",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="answer",
            name="turns",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="judge",
            name="context_tokens",
            field=models.PositiveIntegerField(
                default=8000,
                help_text="The most retrieved context, or earlier conversation, put in one prompt; the rest is cut by the stated rule and the verdict records it (docs/judging.md).",
                validators=[django.core.validators.MinValueValidator(100)],
                verbose_name="Evidence budget (tokens)",
            ),
        ),
        migrations.AddField(
            model_name="panel",
            name="conversation",
            field=models.CharField(
                choices=[
                    ("last_turn", "The last assistant turn"),
                    ("cumulative", "All assistant turns: met once in the conversation"),
                    ("average", "All assistant turns: the average of the turns"),
                ],
                default="last_turn",
                help_text="For answers with turns: which assistant turns each criterion is graded on (docs/judging.md#conversations). Plain answers have one turn.",
                max_length=12,
                verbose_name="Conversations",
            ),
        ),
        migrations.CreateModel(
            name="CriterionCheck",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("", "None (the criterion's text is judged)"),
                            ("tool_set", "Tool set: the expected tools were called, no others"),
                            ("tool_sequence", "Tool sequence: the expected calls, in a mode"),
                            ("step_order", "Step order: the agent's steps in the expected order"),
                            ("keyword_share", "Keyword share: the listed keywords in the answer"),
                            ("rouge1", "ROUGE-1 F1 against the reference answer"),
                        ],
                        default="",
                        max_length=20,
                    ),
                ),
                ("params", models.JSONField(blank=True, default=dict)),
                (
                    "threshold",
                    models.FloatField(
                        blank=True,
                        help_text="Pass at this score or more; empty for the kind's default.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(0.0),
                            django.core.validators.MaxValueValidator(1.0),
                        ],
                    ),
                ),
                (
                    "evidence",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("", "The answer alone"),
                            ("context", "Grounded in the answer's retrieved context"),
                            ("reference", "Equivalent to the query's reference answer"),
                        ],
                        default="",
                        help_text="What an LLM judge decides the criterion against (docs/judging.md).",
                        max_length=10,
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "criterion",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="evaluation_check",
                        to="annotation.criterion",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "kind__in",
                                [
                                    "",
                                    "tool_set",
                                    "tool_sequence",
                                    "step_order",
                                    "keyword_share",
                                    "rouge1",
                                ],
                            )
                        ),
                        name="criterion_check_kind_known",
                    )
                ],
            },
        ),
    ]
