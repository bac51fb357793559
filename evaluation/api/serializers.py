from __future__ import annotations

from django.db import transaction
from rest_framework import serializers

from annotation.models import Dataset, Query
from config.uploads import validate_upload_size
from evaluation.judging.keys import api_key_env_problem, base_url_problem
from evaluation.models import Answer, Judge, Panel, PanelMember, Run, System, Verdict


class JudgeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Judge
        fields = [
            "id", "name", "kind", "base_url", "model", "api_key_env", "temperature",
            "max_tokens", "seed", "timeout", "rpm_limit", "tpm_limit", "prompt_version",
            "prompt_price", "completion_price", "is_formality_judge",
        ]  # fmt: skip

    def validate_api_key_env(self, value: str) -> str:
        # The same rules as the page form: see evaluation/judging/keys.py.
        if problem := api_key_env_problem(value.strip()):
            raise serializers.ValidationError(problem)
        return value.strip()

    def validate_base_url(self, value: str) -> str:
        if problem := base_url_problem(value):
            raise serializers.ValidationError(problem)
        return value

    def validate(self, data: dict) -> dict:
        kind = data.get("kind", getattr(self.instance, "kind", Judge.Kind.LLM))
        if kind == Judge.Kind.LLM:
            for field in ("base_url", "model"):
                if not data.get(field, getattr(self.instance, field, "")):
                    raise serializers.ValidationError({field: "Required for an LLM judge."})
        for field in ("prompt_price", "completion_price"):
            if data.get(field) is not None and data[field] < 0:
                raise serializers.ValidationError({field: "A price cannot be negative."})
        return data


class PanelMemberSerializer(serializers.ModelSerializer):
    judge = serializers.PrimaryKeyRelatedField(queryset=Judge.objects.all())

    samples = serializers.IntegerField(min_value=1, max_value=20, default=1)

    class Meta:
        model = PanelMember
        fields = ["judge", "samples", "temperatures"]

    def validate(self, data: dict) -> dict:
        temps = data.get("temperatures") or []
        if not isinstance(temps, list) or not all(isinstance(t, int | float) for t in temps):
            raise serializers.ValidationError({"temperatures": "A list of numbers."})
        if temps and len(temps) != data.get("samples", 1):
            raise serializers.ValidationError(
                {"temperatures": "Give one temperature per sample, or none."}
            )
        return data


class PanelSerializer(serializers.ModelSerializer):
    members = PanelMemberSerializer(many=True, allow_empty=False)
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.5)

    class Meta:
        model = Panel
        fields = ["id", "name", "description", "method", "threshold", "graded", "members"]

    def validate_members(self, members: list[dict]) -> list[dict]:
        judges = [m["judge"].pk for m in members]
        if len(judges) != len(set(judges)):
            raise serializers.ValidationError("A judge may appear once; use samples instead.")
        return members

    @transaction.atomic
    def create(self, validated: dict) -> Panel:
        members = validated.pop("members")
        panel = Panel.objects.create(**validated)
        PanelMember.objects.bulk_create(PanelMember(panel=panel, **m) for m in members)
        return panel


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


class ProgressSerializer(serializers.Serializer):
    tasks = serializers.IntegerField(help_text="The run's (answer × judge) tasks.")
    tasks_done = serializers.IntegerField()
    tasks_failed = serializers.IntegerField(help_text="Tasks that raised; see `errors`.")
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
            "concurrency", "answer_run_label", "snapshot", "created_at", "started_at",
            "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


class VerdictSerializer(serializers.ModelSerializer):
    class Meta:
        model = Verdict
        fields = [
            "id", "run", "answer", "criterion", "judge", "sample", "outcome", "failure_kind",
            "rationale", "raw_output", "error_kind", "error", "prompt_tokens",
            "completion_tokens", "latency_ms", "attempts", "cache_hit", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class SystemSerializer(serializers.ModelSerializer):
    class Meta:
        model = System
        fields = ["id", "name", "version", "description", "created_at"]
        read_only_fields = ["id", "created_at"]


class AnswerSerializer(serializers.ModelSerializer):
    class Meta:
        model = Answer
        fields = ["id", "system", "query", "text", "external_id", "run_label", "created_at"]
        read_only_fields = fields


class AnswerImportSerializer(serializers.Serializer):
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    file = serializers.FileField(
        help_text="JSONL or CSV, see docs/data-formats.md; at most IMPORT_MAX_BYTES.",
        validators=[validate_upload_size],
    )


class AnswerImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    systems_created = serializers.IntegerField()
