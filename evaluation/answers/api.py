"""Systems (site-wide; the Admin group writes them) and answers (per dataset; written one by
one with `POST /api/answers/` or by the answers upload, `POST /api/answers/import/`), in the
API. An agent's answer carries `turns`, `context` and `metadata` (docs/data-formats.md)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import access, roles
from annotation.models import Dataset
from annotation.selectors import datasets_for_user
from config.ids import is_id
from config.pagination import CountlessPagination
from config.permissions import ModelPermsOrReadOnly
from config.uploads import validate_upload_size
from evaluation.answers.models import Answer, System
from evaluation.answers.upload import MAX_SAMPLE, decode_upload, import_answers, save_answer
from evaluation.tables.rows import ImportRejected


class SystemSerializer(serializers.ModelSerializer):
    class Meta:
        model = System
        fields = ["id", "name", "version", "description", "created_at"]
        read_only_fields = ["id", "created_at"]


class AnswerSerializer(serializers.ModelSerializer):
    class Meta:
        model = Answer
        fields = [
            "id", "system", "query", "text", "external_id", "run_label", "sample", "turns",
            "context", "metadata", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class AnswerWriteSerializer(serializers.Serializer):
    """The body of `POST /api/answers/`; checked by evaluation.answers.upload as an
    imported row is (the same fields, limits and messages)."""

    query = serializers.IntegerField(
        required=False, help_text="The query's id in the app (or give `query_external_id`)"
    )
    query_external_id = serializers.CharField(
        required=False,
        help_text="The query's external id, as the export and the reward API name it; "
        "with `dataset`, instead of `query`",
    )
    dataset = serializers.IntegerField(
        required=False, help_text="The dataset's id: required with `query_external_id`"
    )
    system = serializers.CharField(help_text="The system's name (created when new)")
    system_version = serializers.CharField(required=False, allow_blank=True)
    text = serializers.CharField(help_text="The final answer, Markdown")
    external_id = serializers.CharField(required=False, allow_blank=True)
    run_label = serializers.CharField(required=False, allow_blank=True)
    sample = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_SAMPLE,
        help_text="The sample index (default 0) when a system answers a query several times.",
    )
    turns = serializers.JSONField(required=False, help_text="The conversation, see docs")
    context = serializers.JSONField(required=False, help_text="Retrieved passages")
    metadata = serializers.JSONField(required=False, help_text="Model, latency, cost, steps")


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


class SystemViewSet(viewsets.ModelViewSet):
    queryset = System.objects.all()
    serializer_class = SystemSerializer
    permission_classes = [ModelPermsOrReadOnly]
    http_method_names = ["get", "post", "patch", "head", "options"]
    search_fields = ["name", "version"]


class AnswerViewSet(viewsets.ReadOnlyModelViewSet):
    """Answers of the datasets the user is a member of. Written by the import endpoint."""

    pagination_class = CountlessPagination

    serializer_class = AnswerSerializer
    filterset_fields = ["query", "system", "run_label", "sample", "query__dataset"]

    def get_queryset(self):
        visible = datasets_for_user(self.request.user)
        # Perfect answers restate blind checklists: they are served by /api/perfect-answers/
        # under the checklist's blind rule, never here.
        answers = Answer.objects.filter(query__dataset__in=visible, checklist__isnull=True)
        return answers.order_by("pk")

    def get_object(self) -> Answer:
        answer = Answer.objects.select_related("query__dataset").filter(
            pk=self.kwargs["pk"], checklist__isnull=True
        )
        answer = answer.first()
        if answer is None:
            raise Http404("No such answer.")
        access.check_dataset(self.request.user, answer.query.dataset, hidden="No such answer.")
        return answer

    @extend_schema(request=AnswerWriteSerializer, responses={201: AnswerSerializer})
    def create(self, request: Request) -> Response:
        """Add or replace one answer (its dataset's admins only): an answer is identified by
        its system, query, run label and sample. Every problem is listed, naming the field; a bad
        answer changes nothing."""
        body = request.data if isinstance(request.data, dict) else {}
        row = body.dict() if hasattr(body, "dict") else dict(body)  # a form: one value each
        dataset = self._dataset_of(row)
        try:
            answer, created = save_answer(dataset=dataset, row=row)
        except ImportRejected as rejected:
            raise ValidationError({"errors": rejected.errors}) from rejected
        return Response(
            AnswerSerializer(answer).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def _dataset_of(self, row: dict) -> Dataset:
        """The dataset the posted answer goes to, which the poster must administer: the
        query's (by `query`, its id in the app) or, for a query named by its external id,
        the `dataset` given beside it. A member without the right gets a 403, anyone else
        a 404, as for a missing query."""
        if "query_external_id" in row:
            if "query" in row:
                raise ValidationError(
                    {"query": ["answer: give 'query' or 'query_external_id', not both"]}
                )
            if not is_id(str(row.get("dataset"))):
                raise ValidationError(
                    {"dataset": ["answer: field 'dataset' (its id) is required with "
                                 "'query_external_id'"]}
                )  # fmt: skip
            return access.access_dataset(self.request.user, int(row["dataset"]), roles.CHANGE)
        if not is_id(str(row.get("query"))):
            raise ValidationError(
                {"query": ["answer: field 'query' must be a query id (or give "
                           "'query_external_id' with 'dataset')"]}
            )  # fmt: skip
        query = access.access_query(self.request.user, int(row["query"]), roles.CHANGE)
        if "dataset" in row and str(row["dataset"]) != str(query.dataset_id):
            raise ValidationError(
                {"dataset": [f"answer: query {query.pk} is not in dataset {row['dataset']}"]}
            )
        return query.dataset

    @extend_schema(
        request={"multipart/form-data": AnswerImportSerializer},
        responses={201: AnswerImportResultSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_file(self, request: Request) -> Response:
        """Import a JSONL or CSV file of answers into a dataset (its admins only). The whole
        file is checked first; any error rejects it with every error listed."""
        payload = AnswerImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        dataset = access.access_dataset(
            request.user, payload.validated_data["dataset"].pk, roles.CHANGE
        )
        upload = payload.validated_data["file"]
        try:
            content = decode_upload(upload.name, upload.read())
            result = import_answers(dataset=dataset, name=upload.name, content=content)
        except ImportRejected as rejected:
            raise ValidationError({"file": rejected.errors}) from rejected
        return Response(AnswerImportResultSerializer(result).data, status=status.HTTP_201_CREATED)
