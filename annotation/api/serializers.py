"""Input and output shapes of the annotation API. Writes go through annotation.services."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation import hooks
from annotation.models import (
    Checklist,
    Citation,
    Criterion,
    CriterionGroup,
    Dataset,
    Guideline,
    Query,
    QueryCategory,
    Scoring,
    SourceType,
    Undecided,
    query_dimensions_problem,
)
from annotation.services.checklists import CitationData, CriterionData
from annotation.services.datasets import DATASET_SETTINGS
from annotation.validation import Finding, Report
from config import limits


class SourceTypeSerializer(serializers.ModelSerializer):
    class Meta:
        model = SourceType
        fields = ["id", "slug", "name", "is_banned", "description"]


class GuidelineSerializer(serializers.ModelSerializer):
    class Meta:
        model = Guideline
        fields = ["id", "name", "version", "description", "config", "created_at"]


class GuidelineWriteSerializer(serializers.Serializer):
    """Create (name, and a preset and/or a config) or edit (description and/or config).

    `config` may be partial: missing keys come from the preset (on create) or from the
    edited version, and `rules` entries override one rule at a time. The checks are
    annotation.services.guidelines', the same as the pages'; errors name the field, a
    config's under `config` (`{"config": {"max_criteria": ["..."]}}`).
    """

    name = serializers.CharField(max_length=100, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    preset = serializers.ChoiceField(
        choices=["finance", "generic"], required=False,
        help_text="On create: the preset the config starts from (without it, give a full config).",
    )  # fmt: skip
    config = serializers.JSONField(required=False, help_text="See docs/guidelines.md.")


class GuidelineSavedSerializer(GuidelineSerializer):
    new_version = serializers.BooleanField(
        read_only=True,
        help_text="True when the edited version had submitted checklists, so a new version "
        "was saved (this object) and the datasets using the edited one moved to it.",
    )
    datasets_moved = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta(GuidelineSerializer.Meta):
        fields = [*GuidelineSerializer.Meta.fields, "new_version", "datasets_moved"]


class DatasetSerializer(serializers.ModelSerializer):
    query_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", *DATASET_SETTINGS, "query_count", "created_at"]
        read_only_fields = ["id", "created_at", "query_count"]


class DatasetDeletionSerializer(serializers.ModelSerializer):
    """The answer to DELETE: the deletion is accepted and runs in the background."""

    deleting_since = serializers.DateTimeField(
        read_only=True, help_text="When the dataset was marked for deletion."
    )

    class Meta:
        model = Dataset
        fields = ["id", "name", "deleting_since"]
        read_only_fields = fields


class QuerySerializer(serializers.ModelSerializer):
    category = serializers.SlugRelatedField(
        slug_field="name", queryset=QueryCategory.objects.all(), required=False, allow_null=True
    )
    tags = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True, help_text="Domain tags."
    )
    assigned_experts = serializers.SlugRelatedField(
        slug_field="username", many=True, read_only=True
    )
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Query
        fields = [
            "id",
            "dataset",
            "external_id",
            "text",
            "query_date",
            "category",
            "complexity",
            "tags",
            "reference_answer",
            "status",
            "assigned_experts",
            "dimensions",
            "created_by",
            "created_at",
            "external_id_fixed_by",
            "external_id_fixed_at",
        ]
        read_only_fields = [
            "id", "status", "created_by", "created_at", "external_id_fixed_by",
            "external_id_fixed_at",
        ]  # fmt: skip
        extra_kwargs = {
            "external_id": {
                "required": False,
                "allow_blank": True,
                "trim_whitespace": False,  # refused with a reason by the service, not trimmed
                "help_text": "The query's name outside the app (exports, imports, the reward "
                "API), unique in its dataset. Optional on create: `query-<id>` when not "
                "given. Changeable by the dataset's admins and the query's author until "
                "something outside may hold it (see `external_id_fixed_by`); a refused "
                "change is a 400 on `external_id` saying why.",
            },
            "external_id_fixed_by": {
                "help_text": "Empty while the external id may change; else what may hold it "
                "outside the app: export, import, rewards, labels or verdicts."
            },
        }
        # The (dataset, external_id) uniqueness is the service's check, with a message that
        # names the field; DRF's generic one would also demand `dataset` in every PATCH.
        validators: list = []

    def validate(self, attrs: dict) -> dict:
        dataset = attrs.get("dataset") or getattr(self.instance, "dataset", None)
        if "dimensions" in attrs and dataset is not None:
            problem = query_dimensions_problem(dataset.dimensions, attrs["dimensions"])
            if problem:
                raise serializers.ValidationError({"dimensions": problem})
        return attrs


class QueryWriteSerializer(QuerySerializer):
    tags = serializers.ListField(
        child=serializers.CharField(max_length=60), required=False, help_text="Domain tags."
    )

    class Meta(QuerySerializer.Meta):
        pass

    def to_representation(self, instance: Query) -> dict:
        return QuerySerializer(instance, context=self.context).data


class CitationSerializer(serializers.ModelSerializer):
    source_type = serializers.SlugRelatedField(
        slug_field="slug", queryset=SourceType.objects.all(), required=False, allow_null=True
    )

    class Meta:
        model = Citation
        fields = ["title", "url", "source_type", "published_on"]

    def to_data(self) -> CitationData:
        return CitationData(**self.validated_data)


class FindingSerializer(serializers.Serializer):
    rule = serializers.CharField(source="rule_id")
    severity = serializers.CharField()
    field = serializers.CharField()
    criterion = serializers.CharField(source="criterion_key", allow_null=True)
    criterion_number = serializers.IntegerField(
        allow_null=True, help_text="The criterion's row number in the checklist (1 = first)."
    )
    criterion_text = serializers.CharField(allow_blank=True)
    message = serializers.CharField()


class CriterionInputSerializer(serializers.Serializer):
    """One criterion as sent by a client (nested in a checklist, or alone)."""

    text = serializers.CharField(
        max_length=limits.CRITERION_TEXT, allow_blank=True, trim_whitespace=True
    )
    kind = serializers.ChoiceField(choices=Criterion.Kind.choices, default=Criterion.Kind.FACT)
    source_types = serializers.SlugRelatedField(
        slug_field="slug", queryset=SourceType.objects.all(), many=True, required=False
    )
    notes = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=limits.CRITERION_NOTES
    )
    weight = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("-9999.99"), default=1,
        help_text="Negative for a penalty: a pitfall, met when the answer does it.",
    )  # fmt: skip
    is_core = serializers.BooleanField(default=True)
    citations = CitationSerializer(many=True, required=False)

    def to_data(self, validated: dict | None = None) -> CriterionData:
        v = validated if validated is not None else self.validated_data
        return CriterionData(
            text=v["text"],
            kind=v["kind"],
            source_types=list(v.get("source_types", [])),
            notes=v.get("notes", ""),
            weight=v["weight"],
            is_core=v["is_core"],
            citations=tuple(CitationData(**c) for c in v.get("citations", [])),
        )


class FormalityAdviceSerializer(serializers.Serializer):
    status = serializers.CharField()
    ok = serializers.BooleanField()
    specific = serializers.BooleanField(allow_null=True)
    deterministic = serializers.BooleanField(allow_null=True)
    self_contained = serializers.BooleanField(allow_null=True)
    yes_no = serializers.BooleanField(allow_null=True)
    reason = serializers.CharField()
    error = serializers.CharField()


class CriterionSerializer(serializers.ModelSerializer):
    source_types = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    citations = CitationSerializer(many=True, read_only=True)
    formality = serializers.SerializerMethodField(
        help_text="The LLM formality advice on the present wording, if the dataset asks."
    )

    @extend_schema_field(FormalityAdviceSerializer(allow_null=True))
    def get_formality(self, criterion: Criterion) -> dict | None:
        advice = hooks.current_advice(criterion)
        return FormalityAdviceSerializer(advice).data if advice else None

    class Meta:
        model = Criterion
        fields = [
            "id",
            "checklist",
            "position",
            "text",
            "kind",
            "source_types",
            "notes",
            "weight",
            "group",
            "is_core",
            "scoring_enabled",
            "citations",
            "formality",
            "archived_at",
            "previous_version",
        ]
        read_only_fields = fields


class CriterionArchivedSerializer(serializers.Serializer):
    """DELETE of a criterion that carries reviewers' work: archived, with what it kept."""

    archived = serializers.BooleanField()
    id = serializers.IntegerField()
    labels = serializers.IntegerField()
    adjudications = serializers.IntegerField()
    verdicts = serializers.IntegerField()


class CriterionCreateSerializer(CriterionInputSerializer):
    checklist = serializers.PrimaryKeyRelatedField(queryset=Checklist.objects.all())


class CriterionUpdateSerializer(CriterionInputSerializer):
    """PATCH: every field optional; citations, when given, replace the criterion's own."""

    text = serializers.CharField(max_length=limits.CRITERION_TEXT, required=False)
    kind = serializers.ChoiceField(choices=Criterion.Kind.choices, required=False)
    weight = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("-9999.99"), required=False
    )
    group = serializers.PrimaryKeyRelatedField(
        queryset=CriterionGroup.objects.all(), required=False, allow_null=True,
        help_text="The group (of the same checklist) to move the criterion into; null: none.",
    )  # fmt: skip
    is_core = serializers.BooleanField(required=False)
    notes = serializers.CharField(
        required=False, allow_blank=True, max_length=limits.CRITERION_NOTES
    )


class GroupSerializer(serializers.ModelSerializer):
    """A group (aspect) of a checklist's criteria; groups nest through `parent`."""

    weight = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("0.01"), default=1
    )

    class Meta:
        model = CriterionGroup
        fields = ["id", "checklist", "external_id", "parent", "title", "description", "weight",
                  "position"]  # fmt: skip
        read_only_fields = ["id"]


class ChecklistSerializer(serializers.ModelSerializer):
    author = serializers.SlugRelatedField(slug_field="username", read_only=True)
    criteria = CriterionSerializer(many=True, read_only=True)
    groups = GroupSerializer(many=True, read_only=True)
    guideline = serializers.StringRelatedField()

    class Meta:
        model = Checklist
        fields = [
            "id",
            "query",
            "author",
            "status",
            "guideline",
            "first_submitted_at",
            "submitted_at",
            "created_at",
            "updated_at",
            "scoring",
            "undecided",
            "groups",
            "criteria",
        ]
        read_only_fields = fields


class ChecklistScoringSerializer(serializers.Serializer):
    """What `PATCH /api/checklists/{id}/` may change: the checklist's own scoring."""

    scoring = serializers.ChoiceField(
        choices=Scoring.choices, required=False, allow_blank=True,
        help_text="Its own strategy (docs/metrics.md#scoring-strategies); empty: the dataset's.",
    )  # fmt: skip
    undecided = serializers.ChoiceField(
        choices=Undecided.choices, required=False, allow_blank=True,
        help_text="What its undecided criteria count as, excluded or not_met "
        "(docs/metrics.md#undecided-criteria); empty: the dataset's setting.",
    )  # fmt: skip

    def validate(self, attrs: dict) -> dict:
        other = sorted(set(self.initial_data).difference(self.fields))
        if other:
            raise serializers.ValidationError(
                {name: ["only scoring and undecided can be changed here"] for name in other}
            )
        return attrs


class ChecklistCreateSerializer(serializers.Serializer):
    query = serializers.PrimaryKeyRelatedField(queryset=Query.objects.all())
    criteria = CriterionInputSerializer(many=True, allow_empty=True)
    submit = serializers.BooleanField(default=False, help_text="Submit at once if valid.")

    def criteria_data(self) -> list[CriterionData]:
        item = CriterionInputSerializer()
        return [item.to_data(c) for c in self.validated_data["criteria"]]


class ValidationResultSerializer(serializers.Serializer):
    blocking = serializers.BooleanField()
    errors = FindingSerializer(many=True)
    warnings = FindingSerializer(many=True)


def report_payload(report: Report, *, keys: dict[str, str] | None = None) -> dict:
    """Findings as JSON; `keys` maps criterion keys to request paths such as "criteria[2]"."""

    def one(f: Finding) -> dict:
        prefix = (keys or {}).get(f.criterion_key or "", "")
        field = f"{prefix}.{f.field}" if prefix and f.field else (prefix or f.field)
        return {
            "rule": f.rule_id,
            "severity": f.severity,
            "field": field,
            "criterion": f.criterion_key,
            "criterion_number": f.criterion_number,
            "criterion_text": f.criterion_text,
            "message": f.message,
        }

    return {
        "blocking": report.blocking,
        "errors": [one(f) for f in report.errors],
        "warnings": [one(f) for f in report.warnings],
    }
