"""API of dataset export and import. Same services and access checks as the pages."""

from __future__ import annotations

from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.access import access_dataset
from annotation.models import Dataset, Guideline
from evaluation.archive.services import ArchiveMissing
from evaluation.datasets import services
from evaluation.datasets.access import access_export, check_import
from evaluation.datasets.export import ExportOptions, check_archives
from evaluation.datasets.import_target import NAME_MAX, NameTaken
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from evaluation.datasets.models import DatasetExport
from evaluation.datasets.storage import NotStored
from evaluation.datasets.uploads import received
from evaluation.datasets.views import stream_response
from evaluation.tables import schema
from evaluation.tables.formats import FileRejected


class Gone(APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "This export is no longer available."
    default_code = "gone"


class StorageFailed(APIException):
    """An import the server could not store (evaluation.datasets.storage): 507 when its disk or
    the database's is full, 500 for another fault of the server; never the file's fault."""

    status_code = status.HTTP_507_INSUFFICIENT_STORAGE
    default_code = "insufficient_storage"

    def __init__(self, failed: NotStored) -> None:
        super().__init__(failed.message)
        self.status_code = failed.status


class ExportSerializer(serializers.ModelSerializer):
    progress = serializers.FloatField(read_only=True)
    status_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = DatasetExport
        fields = [
            "token", "dataset", "status", "include", "formats", "rows_total", "rows_done",
            "progress", "size", "error", "created_at", "finished_at", "expires_at",
            "status_url", "download_url",
        ]  # fmt: skip

    def get_status_url(self, export: DatasetExport) -> str:
        return self.context["request"].build_absolute_uri(f"/api/exports/{export.token}/")

    def get_download_url(self, export: DatasetExport) -> str | None:
        if export.status != DatasetExport.Status.DONE:
            return None
        return self.context["request"].build_absolute_uri(f"/api/exports/{export.token}/download/")


def _list(value: str | None) -> list[str] | None:
    return None if value is None else [p.strip() for p in value.split(",") if p.strip()]


class DatasetExportView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("include", str, description="Optional parts, comma-separated: "
                             f"{', '.join(schema.INCLUDES)} (default: all)."),
            OpenApiParameter("formats", str, description="jsonl, csv, parquet, comma-separated "
                             "(default: all three)."),
            OpenApiParameter("job", bool, description="Prepare it as a job even if small."),
        ],
        responses={
            200: OpenApiResponse(OpenApiTypes.BINARY, description="The zip, streamed."),
            202: ExportSerializer,
            409: OpenApiResponse(description="An archived run's verdicts file is missing: "
                                 "`detail` names the run and the file, and how to restore it."),
        },
    )  # fmt: skip
    def get(self, request: Request, pk: int) -> HttpResponse:
        """Export a dataset (its admins). Small exports stream back as a zip at once; bigger
        ones (or with job=true) start a job: 202 with its status and, when done, download URL."""
        dataset = access_dataset(request.user, pk, roles.CHANGE)
        try:
            options = ExportOptions.parse(
                _list(request.query_params.get("include")),
                _list(request.query_params.get("formats")),
            )
        except ValueError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        job = request.query_params.get("job", "").lower() in ("1", "true", "yes")
        try:
            if not job and services.should_stream(dataset, options):
                check_archives(dataset, options)  # before the response's first byte
                return stream_response(dataset, options, request.user)
            export = services.export_start(dataset=dataset, by=request.user, options=options)
        except ArchiveMissing as missing:
            return Response({"detail": str(missing)}, status=status.HTTP_409_CONFLICT)
        data = ExportSerializer(export, context={"request": request}).data
        return Response(data, status=status.HTTP_202_ACCEPTED)


class ExportStatusView(APIView):
    @extend_schema(responses={200: ExportSerializer})
    def get(self, request: Request, token: str) -> Response:
        """An export job's status and progress (the dataset's admins)."""
        export = access_export(request.user, token)
        return Response(ExportSerializer(export, context={"request": request}).data)


class ExportDownloadView(APIView):
    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.BINARY), 410: None})
    def get(self, request: Request, token: str) -> HttpResponse:
        """The finished zip; access is checked now, and the link expires."""
        export = access_export(request.user, token)
        try:
            path = services.export_file(export)
        except services.ExportGone as gone:
            raise Gone(str(gone)) from None
        return FileResponse(path.open("rb"), as_attachment=True, filename=export.file_name)


class ImportSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A zip in the export layout (docs/data-formats.md).")
    dataset = serializers.PrimaryKeyRelatedField(
        queryset=Dataset.objects.all(), required=False, allow_null=True,
        help_text="Import into this dataset (its admins): rows are matched by their keys and "
        "only what differs is written. Without it (and without `as_copy`) the files make a "
        "new dataset named as in dataset.json, refused when that name is taken.",
    )  # fmt: skip
    as_copy = serializers.CharField(
        required=False, allow_blank=True, max_length=NAME_MAX,
        help_text="Import as a new dataset of this name (a copy: every row new, the importer "
        "its admin), whatever dataset.json calls it. A taken name is refused.",
    )  # fmt: skip
    guideline = serializers.PrimaryKeyRelatedField(
        queryset=Guideline.objects.all(), required=False, allow_null=True,
        help_text="The dataset's guideline; submitted checklists are checked against it.",
    )  # fmt: skip
    on_guideline_errors = serializers.ChoiceField(
        choices=["warn", "refuse"], default="warn",
        help_text="Checklists that break the guideline: import with warnings, or refuse.",
    )  # fmt: skip
    copy_members = serializers.BooleanField(
        default=False,
        help_text="Give the files' members (members.csv) their roles on the dataset, to those "
        "who hold none there yet. Off by default: nobody but the importer is given access.",
    )

    def validate(self, data: dict) -> dict:
        if data.get("dataset") is not None and data.get("as_copy"):
            raise ValidationError(
                {"as_copy": ["Import into a dataset or as a copy, not both: leave out one."]}
            )
        return data


class ImportResultSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(source="dataset.pk")
    dataset_created = serializers.BooleanField()
    copy_of = serializers.CharField(
        help_text="Imported as a copy: the name in the files' dataset.json (else empty)."
    )
    changed = serializers.BooleanField(
        help_text="False when the import found everything already there and wrote nothing."
    )
    created = serializers.DictField(child=serializers.IntegerField())
    updated = serializers.DictField(child=serializers.IntegerField())
    unchanged = serializers.DictField(child=serializers.IntegerField())
    warnings = serializers.ListField(child=serializers.CharField())
    roles_granted = serializers.IntegerField(
        help_text="Roles given to the files' members (only with copy_members)."
    )
    members_not_copied = serializers.IntegerField(
        help_text="Members the files list, given no role because copy_members was off."
    )


class DatasetImportView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": ImportSerializer},
        responses={201: ImportResultSerializer, 200: ImportResultSerializer, 507: None},
    )
    def post(self, request: Request) -> Response:
        """Import files into the dataset chosen with `dataset` (its admins), or as a new
        dataset: named `as_copy`, else as in dataset.json (the Admin group). A new dataset's
        name that is taken is a 400 on `as_copy` (or on `dataset` when the name came from
        dataset.json), nothing written: an import never updates a dataset it was not told
        to. Everything is checked first: any error is a 400 listing every error, each
        naming file, row and field, and nothing is written. A 507 says the upload or the
        import could not be stored (a full disk); nothing is written then either."""
        payload = ImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        dataset = data.get("dataset")
        if dataset is not None:
            dataset = access_dataset(request.user, dataset.pk, roles.CHANGE)
        as_copy = data.get("as_copy", "").strip()
        options = ImportOptions(
            dataset=dataset, as_copy=as_copy, guideline=data.get("guideline"),
            on_guideline_errors=data["on_guideline_errors"], by=request.user,
            copy_members=data["copy_members"],
        )  # fmt: skip
        try:
            with received(data["file"]) as path:
                check_import(request.user, path, dataset, as_copy)
                result = import_dataset(path, options)
        except NameTaken as taken:
            raise ValidationError(
                {"as_copy" if taken.as_copy else "dataset": taken.errors}
            ) from None
        except (ImportRejected, FileRejected) as rejected:
            raise ValidationError({"file": rejected.errors}) from None
        except NotStored as failed:
            raise StorageFailed(failed) from None
        code = status.HTTP_201_CREATED if result.changed else status.HTTP_200_OK
        return Response(ImportResultSerializer(result).data, status=code)
