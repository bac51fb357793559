# Reward traffic (evaluation/rewards/): one row per request (RewardBatch), sampled full
# verdicts for audit (RewardAudit) and the compact reward cache (RewardVerdict).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_dataset_deleting_since"),
        ("evaluation", "0021_alert_deliveries"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="RewardBatch",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("token_id", models.PositiveBigIntegerField(blank=True, null=True)),
                (
                    "shape",
                    models.CharField(
                        choices=[
                            ("native", "Native"),
                            ("openrlhf", "OpenRLHF"),
                            ("verify", "NeMo-Gym verify"),
                        ],
                        default="native",
                        max_length=10,
                    ),
                ),
                ("items", models.PositiveIntegerField()),
                ("failed_items", models.PositiveIntegerField(default=0)),
                ("calls", models.PositiveIntegerField(default=0, help_text="Judge calls made.")),
                (
                    "cache_hits",
                    models.PositiveIntegerField(
                        default=0, help_text="Votes answered by a cache, without a call."
                    ),
                ),
                (
                    "checks",
                    models.PositiveIntegerField(
                        default=0, help_text="Votes of no-LLM checks (free)."
                    ),
                ),
                ("prompt_tokens", models.PositiveBigIntegerField(default=0)),
                ("completion_tokens", models.PositiveBigIntegerField(default=0)),
                (
                    "cost",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                ("latency_ms", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reward_batches",
                        to="annotation.dataset",
                    ),
                ),
                (
                    "panel",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="reward_batches",
                        to="evaluation.panel",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="RewardAudit",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("item", models.PositiveIntegerField(help_text="The item's index in its request.")),
                ("completion", models.TextField()),
                ("reward", models.FloatField(blank=True, null=True)),
                ("failed", models.BooleanField(default=False)),
                ("verdicts", models.JSONField(default=list)),
                (
                    "query",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="annotation.query",
                    ),
                ),
                (
                    "batch",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="audits",
                        to="evaluation.rewardbatch",
                    ),
                ),
            ],
            options={
                "ordering": ["batch_id", "item"],
            },
        ),
        migrations.CreateModel(
            name="RewardVerdict",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("cache_key", models.CharField(max_length=64, unique=True)),
                ("outcome", models.CharField(max_length=10)),
                ("failure_kind", models.CharField(blank=True, max_length=20)),
                ("rationale", models.TextField(blank=True)),
                ("made_at", models.DateTimeField()),
            ],
            options={
                "indexes": [models.Index(fields=["made_at"], name="rewardverdict_made_at")],
            },
        ),
        migrations.AddIndex(
            model_name="rewardbatch",
            index=models.Index(fields=["token_id", "created_at"], name="rewardbatch_token_time"),
        ),
        migrations.AddIndex(
            model_name="rewardbatch",
            index=models.Index(fields=["user", "created_at"], name="rewardbatch_user_time"),
        ),
        migrations.AddIndex(
            model_name="rewardbatch",
            index=models.Index(fields=["dataset", "created_at"], name="rewardbatch_dataset_time"),
        ),
    ]
