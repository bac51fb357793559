"""The Export page of a dataset, export downloads, and the Import page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import roles, selectors
from annotation.permissions import access_dataset
from evaluation.data import services
from evaluation.data.access import check_import
from evaluation.data.export import ExportOptions, export_chunks, file_name
from evaluation.data.formats import FileRejected
from evaluation.data.forms import ExportForm, ImportForm
from evaluation.data.importer import ImportOptions, ImportRejected, import_dataset
from evaluation.data.models import DatasetExport
from evaluation.data.storage import NotStored
from evaluation.data.uploads import received


def stream_response(dataset, options: ExportOptions, user) -> StreamingHttpResponse:
    """The zip, streamed as it is written: the first bytes leave at once."""
    response = StreamingHttpResponse(
        export_chunks(dataset, options, user=user), content_type="application/zip"
    )
    response["Content-Disposition"] = f'attachment; filename="{file_name(dataset)}"'
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@login_required
def dataset_export(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    form = ExportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        options = ExportOptions.parse(form.cleaned_data["include"], form.cleaned_data["formats"])
        if not form.cleaned_data["job"] and services.should_stream(dataset, options):
            return stream_response(dataset, options, request.user)
        services.export_start(dataset=dataset, by=request.user, options=options)
        messages.success(request, "The export is being prepared; its download link appears below.")
        return redirect("dataset-export", pk=dataset.pk)
    exports = DatasetExport.objects.filter(dataset=dataset).select_related("requested_by")[:10]
    context = {"dataset": dataset, "form": form, "exports": exports}
    return render(request, "evaluation/data/dataset_export.html", context)


@require_GET
@login_required
def export_status(request: HttpRequest, token) -> HttpResponse:
    export = services.access_export(request.user, token)
    return render(request, "evaluation/data/dataset_export.html#export-row", {"export": export})


@require_GET
@login_required
def export_download(request: HttpRequest, token) -> HttpResponse:
    export = services.access_export(request.user, token)
    try:
        path = services.export_file(export)
    except services.ExportGone as gone:
        return render(request, "410.html", {"message": str(gone)}, status=410)
    return FileResponse(path.open("rb"), as_attachment=True, filename=export.file_name)


@require_http_methods(["GET", "POST"])
@login_required
def dataset_import(request: HttpRequest) -> HttpResponse:
    user = request.user
    administered = selectors.datasets_for_user(user, roles.CHANGE).order_by("name")
    if not user.has_perm("annotation.add_dataset") and not administered.exists():
        raise PermissionDenied("Only admins import datasets.")
    initial = {"dataset": request.GET.get("dataset")} if request.GET.get("dataset") else None
    form = ImportForm(request.POST or None, request.FILES or None, datasets=administered,
                      initial=initial)  # fmt: skip
    errors: list[str] = []
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        options = ImportOptions(
            dataset=data["dataset"], guideline=data["guideline"],
            on_guideline_errors=data["on_guideline_errors"], by=user,
        )  # fmt: skip
        try:
            with received(data["file"]) as path:
                check_import(user, path, data["dataset"])
                result = import_dataset(path, options)
        except (ImportRejected, FileRejected) as rejected:
            errors, status = rejected.errors, 400
        except NotStored as failed:  # the server's disk, not the file: 507 when full
            errors, status = [failed.message], failed.status
        else:
            context = {"result": result, "name": data["file"].name}
            return render(request, "evaluation/data/dataset_import_done.html", context)
    elif request.method == "POST":
        status = 400
    context = {"form": form, "errors": errors}
    return render(request, "evaluation/data/dataset_import.html", context, status=status)
