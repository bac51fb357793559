from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Dataset, Query
from evaluation.answers.models import System
from evaluation.checks import trajectory
from evaluation.judges.models import Panel
from evaluation.runs import stability_pass
from evaluation.runs.access import raw_output_shown
from evaluation.runs.models import Run, Verdict


class RunCreateSerializer(serializers.Serializer):
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    panel = serializers.PrimaryKeyRelatedField(queryset=Panel.objects.all())
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    queries = serializers.PrimaryKeyRelatedField(
        queryset=Query.objects.all(), many=True, required=False
    )
    systems = serializers.PrimaryKeyRelatedField(
        queryset=System.objects.all(), many=True, required=False
    )
    answer_run_label = serializers.CharField(required=False, allow_blank=True, max_length=100)
    concurrency = serializers.IntegerField(required=False, min_value=1, max_value=256)
    scope = serializers.ChoiceField(
        choices=[(v, label) for v, label in Run.Scope.choices if v in Run.STARTED_SCOPES],
        required=False,
        help_text="`labelled`: a trial, grading only the items with a human label or an "
        "adjudication (docs/trials.md).",
    )
    baseline = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="A trial's baseline: a finished run of the dataset to compare it with "
        "(default: the latest finished run that is not a trial).",
    )


class EstimateJudgeSerializer(serializers.Serializer):
    judge = serializers.CharField()
    judge_id = serializers.IntegerField()
    samples = serializers.IntegerField()
    criteria_per_call = serializers.IntegerField()
    calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField(help_text="Typical.")
    completion_tokens_max = serializers.IntegerField(help_text="The bound: max tokens × calls.")
    cost = serializers.CharField(allow_null=True)
    cost_max = serializers.CharField(allow_null=True)


class EstimateSerializer(serializers.Serializer):
    """A run's cost before it starts (evaluation.runs.estimate; docs/trials.md)."""

    answers = serializers.IntegerField()
    items = serializers.IntegerField(help_text="(answer, criterion) items graded.")
    checked = serializers.IntegerField(help_text="Votes decided by deterministic checks.")
    calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField(help_text="Typical.")
    completion_tokens_max = serializers.IntegerField()
    cost = serializers.CharField(allow_null=True, help_text="Typical; null: a judge has no price.")
    cost_max = serializers.CharField(allow_null=True)
    unpriced = serializers.ListField(child=serializers.CharField())
    judges = EstimateJudgeSerializer(many=True)
    cache_predicted = serializers.BooleanField(help_text="Always false: cache hits cost nothing.")
    rule = serializers.CharField()


class ProgressSerializer(serializers.Serializer):
    tasks = serializers.IntegerField(help_text="The run's (answer × judge) tasks.")
    tasks_done = serializers.IntegerField()
    tasks_failed = serializers.IntegerField(help_text="Tasks that raised; see `errors`.")
    imported = serializers.BooleanField(
        help_text="The verdicts were made elsewhere and imported: no task of the run ran "
        "here, so `tasks` is 0 while `done` counts them."
    )
    expected = serializers.IntegerField()
    done = serializers.IntegerField()
    percent = serializers.FloatField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    unparseable = serializers.IntegerField()
    errors = serializers.IntegerField()
    errors_by_kind = serializers.DictField(child=serializers.IntegerField())
    cache_hits = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    elapsed_s = serializers.FloatField()
    rate_per_s = serializers.FloatField(allow_null=True)
    eta_s = serializers.FloatField(allow_null=True)


class RunSerializer(serializers.ModelSerializer):
    reason = serializers.CharField(
        read_only=True, help_text="Why the run failed, or a summary of its errors."
    )
    snapshot = serializers.JSONField(
        read_only=True,
        help_text="The panel as the run started: method, threshold, graded, members with "
        "their samples and temperatures. The run's figures use this, not the panel today.",
    )

    class Meta:
        model = Run
        fields = [
            "id", "name", "dataset", "panel", "kind", "status", "reason", "attempt", "expected",
            "concurrency", "answer_run_label", "scope", "baseline", "canary_for",
            "stability_for", "estimate", "snapshot", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


class PassRunningSerializer(DetailSerializer):
    running = serializers.IntegerField(help_text="The stability pass pending or running.")


class StabilityPassSerializer(serializers.Serializer):
    """A stability pass asked for (docs/judging.md#stability-pass); the bounds are the
    service's (evaluation.runs.stability_pass), which checks them again."""

    judge = serializers.IntegerField(help_text="One of the run's panel's LLM judges, by id.")
    k = serializers.IntegerField(
        min_value=stability_pass.MIN_K, max_value=stability_pass.MAX_K,
        help_text="Calls per item, 2 to 10.",
    )  # fmt: skip
    items = serializers.IntegerField(
        min_value=1, max_value=stability_pass.MAX_ITEMS,
        help_text="How many of the run's items the pass grades: a fixed sample.",
    )  # fmt: skip
    estimate_only = serializers.BooleanField(
        required=False, default=False, help_text="Answer the estimate; create nothing."
    )


class VerdictCheckSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="tool_set, tool_sequence, step_order, "
                                 "keyword_share or rouge1")  # fmt: skip
    params = serializers.DictField(help_text="The check's parameters as the run read them.")
    score = serializers.FloatField(allow_null=True, help_text="The check's score, 0 to 1.")
    threshold = serializers.FloatField(
        help_text="The score needed to pass: the check's own threshold, else its kind's default."
    )
    scoring = serializers.CharField(
        allow_null=True,
        help_text="tool_sequence and step_order: pass_fail or partial, as the run applied it "
        "(a check saved without one and a threshold below 1 gives partial credit); else null.",
    )


class VerdictSerializer(serializers.ModelSerializer):
    raw_output = serializers.SerializerMethodField(
        help_text="The judge's output. Null on an unparseable or error verdict for those who "
        "do not manage judges (the Admin group): it is whatever answered at the judge's URL."
    )
    check = serializers.SerializerMethodField(
        help_text="The deterministic check that decided the criterion, with its score and "
        "threshold (docs/no-llm-checks.md); null for a judge's vote."
    )

    class Meta:
        model = Verdict
        fields = [
            "id", "run", "answer", "criterion", "judge", "sample", "outcome", "failure_kind",
            "rationale", "raw_output", "check", "error_kind", "error", "prompt_tokens",
            "completion_tokens", "latency_ms", "attempts", "cache_hit", "created_at",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(VerdictCheckSerializer(allow_null=True))
    def get_check(self, verdict: Verdict) -> dict | None:
        params = verdict.judge_params if isinstance(verdict.judge_params, dict) else {}
        return trajectory.as_applied(params.get("check"), params.get("score"))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_raw_output(self, verdict: Verdict) -> str | None:
        request = self.context.get("request")
        user = request.user if request is not None else None
        return verdict.raw_output if raw_output_shown(user, verdict.outcome) else None
