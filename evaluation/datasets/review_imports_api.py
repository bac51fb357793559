from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.access import access_dataset
from config.ids import MAX_ID
from config.uploads import validate_upload_size
from evaluation.answers.upload import decode_upload
from evaluation.datasets.review_imports import ImportRejected, import_labels, import_verdicts


class LabelsImportSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    file = serializers.FileField(
        help_text="JSONL or CSV, see docs/data-formats.md; at most IMPORT_MAX_BYTES.",
        validators=[validate_upload_size],
    )


class VerdictsImportSerializer(LabelsImportSerializer):
    panel = serializers.CharField(max_length=100, help_text="Panel name; created if missing.")
    run_name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class LabelsImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    raters = serializers.IntegerField()
    linked_to_users = serializers.IntegerField()


class VerdictsImportResultSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    run_created = serializers.BooleanField()
    panel_created = serializers.BooleanField()
    judges_created = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


def _upload(request: Request, serializer_class: type[serializers.Serializer]):
    payload = serializer_class(data=request.data)
    payload.is_valid(raise_exception=True)
    dataset = access_dataset(request.user, payload.validated_data["dataset"], roles.CHANGE)
    upload = payload.validated_data["file"]
    try:
        content = decode_upload(upload.name, upload.read())
    except ImportRejected as rejected:
        raise ValidationError({"file": rejected.errors}) from None
    return dataset, upload.name, content, payload.validated_data


class LabelsImportView(APIView):
    @extend_schema(
        request={"multipart/form-data": LabelsImportSerializer},
        responses={201: LabelsImportResultSerializer},
    )
    def post(self, request: Request) -> Response:
        """Import human labels (dataset admins). The whole file is checked first; any
        error rejects it with every error listed, and nothing is written."""
        dataset, name, content, _ = _upload(request, LabelsImportSerializer)
        try:
            result = import_labels(dataset=dataset, name=name, content=content)
        except ImportRejected as rejected:
            raise ValidationError({"file": rejected.errors}) from rejected
        return Response(LabelsImportResultSerializer(result).data, status=status.HTTP_201_CREATED)


class VerdictsImportView(APIView):
    @extend_schema(
        request={"multipart/form-data": VerdictsImportSerializer},
        responses={201: VerdictsImportResultSerializer},
    )
    def post(self, request: Request) -> Response:
        """Import external judges' verdicts into an imported run (dataset admins who may
        also create judges and panels: the import creates them by name)."""
        dataset, name, content, data = _upload(request, VerdictsImportSerializer)
        if not request.user.has_perms(("evaluation.add_judge", "evaluation.add_panel")):
            raise PermissionDenied(
                "Importing verdicts creates judges and panels by name: it needs the "
                "permissions to add judges and panels (the Admin group has them)."
            )
        try:
            result = import_verdicts(
                dataset=dataset,
                name=name,
                content=content,
                panel=data["panel"],
                run_name=data["run_name"],
            )
        except ImportRejected as rejected:
            raise ValidationError({"file": rejected.errors}) from rejected
        return Response(VerdictsImportResultSerializer(result).data, status=status.HTTP_201_CREATED)
