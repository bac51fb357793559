"""Systems (site-wide; the Admin group writes them) and answers (per dataset; written by the
answers upload, `POST /api/answers/import/`), in the API."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import permissions as access
from annotation import roles
from annotation.models import Dataset
from annotation.selectors import datasets_for_user
from config.pagination import CountlessPagination
from config.permissions import ModelPermsOrReadOnly
from config.uploads import validate_upload_size
from evaluation.data.answers_upload import decode_upload, import_answers
from evaluation.data.rows import ImportRejected
from evaluation.models import Answer, System


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
    filterset_fields = ["query", "system", "run_label", "query__dataset"]

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
        access.check_dataset(self.request.user, answer.query.dataset)
        return answer

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
