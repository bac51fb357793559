"""Judges and panels in the API. Writes go through evaluation.judges.services, as the
pages' do: the same model checks, one transaction, the same audit history."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from config.site_permissions import manages_judges
from evaluation.judges import services, tuning
from evaluation.judges.models import Judge, JudgeTuning, Panel, PanelMember
from evaluation.judging.batched import MAX_CRITERIA_PER_CALL
from evaluation.judging.keys import api_key_env_problem, base_url_problem, shown_url

Saved = TypeVar("Saved", Judge, Panel)


def _saved(save: Callable[[], Saved]) -> Saved:
    """The service's result; the model checks it runs answer 400 like the serializer's."""
    try:
        return save()
    except DjangoValidationError as exc:
        raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None


class JudgeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Judge
        fields = [
            "id", "name", "kind", "base_url", "model", "api_key_env", "temperature",
            "max_tokens", "seed", "timeout", "rpm_limit", "tpm_limit", "prompt_version",
            "prompt_price", "completion_price", "context_tokens", "is_formality_judge",
            "criteria_per_call", "token_parameter", "response_format", "reasoning_effort",
            "cached_prompt_price",
        ]  # fmt: skip
        extra_kwargs = {
            "criteria_per_call": {
                "min_value": 0, "max_value": MAX_CRITERIA_PER_CALL,
                "help_text": "1: one call per criterion; k: up to k criteria of an answer "
                "per call; 0: the whole checklist in one call.",
            },
        }  # fmt: skip

    def to_representation(self, judge: Judge) -> dict:
        """Connection details only for those who manage judges, query values masked."""
        data = super().to_representation(judge)
        request = self.context.get("request")
        if request is None or not manages_judges(request.user):
            del data["base_url"], data["api_key_env"]
        else:
            data["base_url"] = shown_url(data["base_url"])
        return data

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
        for field in ("prompt_price", "completion_price", "cached_prompt_price"):
            if data.get(field) is not None and data[field] < 0:
                raise serializers.ValidationError({field: "A price cannot be negative."})
        return data

    def create(self, validated: dict) -> Judge:
        return _saved(lambda: services.judge_save(by=self._by(), **validated))

    def update(self, judge: Judge, validated: dict) -> Judge:
        return _saved(lambda: services.judge_save(judge=judge, by=self._by(), **validated))

    def _by(self) -> object:
        """The request's user (who made a new prompt version), None outside a request."""
        request = self.context.get("request")
        return request.user if request is not None else None


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
        fields = [
            "id", "name", "description", "method", "threshold", "graded", "conversation",
            "members",
        ]  # fmt: skip

    def validate_members(self, members: list[dict]) -> list[dict]:
        judges = [m["judge"].pk for m in members]
        if len(judges) != len(set(judges)):
            raise serializers.ValidationError("A judge may appear once; use samples instead.")
        return members

    def create(self, validated: dict) -> Panel:
        members = [
            {
                "judge": m["judge"],
                "samples": m["samples"],
                "temperatures": m.get("temperatures", []),
            }
            for m in validated.pop("members")
        ]
        return _saved(lambda: services.panel_save(members=members, **validated))


class TuningSerializer(serializers.ModelSerializer):
    """A dataset's tuning of one judge (evaluation.judges.tuning): read by the dataset's
    reviewers and admins, written by its admins."""

    judge = serializers.IntegerField(source="judge_id", read_only=True)
    dataset = serializers.IntegerField(source="dataset_id", read_only=True)
    version = serializers.SerializerMethodField(
        help_text="The prompt version this tuning gives "
        '(e.g. "verdict-v1+tuned-0123456789ab"; the judge\'s prompt_version when untuned).'
    )

    class Meta:
        model = JudgeTuning
        fields = ["dataset", "judge", "instructions", "examples", "version", "updated_at"]
        read_only_fields = ["updated_at"]

    def get_version(self, row: JudgeTuning) -> str:
        return tuning.current_from(row.judge, row).version

    def validate_instructions(self, value: str) -> str:
        if problems := tuning.instructions_problems(value):
            raise serializers.ValidationError(problems)
        return value

    def validate_examples(self, value: object) -> list:
        if problems := tuning.examples_problems(value):
            raise serializers.ValidationError(problems)
        return value  # type: ignore[return-value]
