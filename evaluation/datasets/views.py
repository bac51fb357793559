"""The Export page of a dataset, export downloads, and the Import page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import roles, selectors
from annotation.access import access_dataset
from evaluation.archive.services import ArchiveMissing
from evaluation.datasets import services
from evaluation.datasets.access import access_export, check_import
from evaluation.datasets.export import ExportOptions, check_archives, export_chunks, file_name
from evaluation.datasets.forms import ExportForm, ImportForm
from evaluation.datasets.import_target import NameTaken
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from evaluation.datasets.models import DatasetExport
from evaluation.datasets.storage import NotStored
from evaluation.datasets.uploads import received
from evaluation.tables.formats import FileRejected


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
        try:
            if not form.cleaned_data["job"] and services.should_stream(dataset, options):
                check_archives(dataset, options)  # before the response's first byte
                return stream_response(dataset, options, request.user)
            services.export_start(dataset=dataset, by=request.user, options=options)
        except ArchiveMissing as missing:
            form.add_error(None, str(missing))
        else:
            messages.success(
                request, "The export is being prepared; its download link appears below."
            )
            return redirect("dataset-export", pk=dataset.pk)
    exports = DatasetExport.objects.filter(dataset=dataset).select_related("requested_by")[:10]
    context = {"dataset": dataset, "form": form, "exports": exports}
    refused = request.method == "POST" and form.errors
    return render(
        request, "evaluation/datasets/dataset_export.html", context, status=409 if refused else 200
    )


@require_GET
@login_required
def export_status(request: HttpRequest, token) -> HttpResponse:
    export = access_export(request.user, token)
    return render(request, "evaluation/datasets/dataset_export.html#export-row", {"export": export})


@require_GET
@login_required
def export_download(request: HttpRequest, token) -> HttpResponse:
    export = access_export(request.user, token)
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
    may_create = user.has_perm("annotation.add_dataset")
    if not may_create and not administered.exists():
        raise PermissionDenied(
            "Importing needs the Admin role site-wide (the Admin group), to import a new "
            "dataset, or the admin role on a dataset, to import into it: ask a site "
            "administrator, or one of a dataset's admins."
        )
    form = ImportForm(
        request.POST or None, request.FILES or None, datasets=administered,
        may_create=may_create, initial=_import_initial(request, administered, may_create),
    )  # fmt: skip
    errors: list[str] = []
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        options = ImportOptions(
            dataset=data["dataset"], as_copy=data.get("name", ""), guideline=data["guideline"],
            on_guideline_errors=data["on_guideline_errors"], by=user,
            copy_members=data["copy_members"],
        )  # fmt: skip
        try:
            with received(data["file"]) as path:
                check_import(user, path, data["dataset"], options.as_copy)
                result = import_dataset(path, options)
        except NameTaken as taken:
            # On the page the new dataset's name, typed or the file's, is one field.
            form.add_error(
                "name",
                f"A dataset named “{taken.name}” already exists. Give the new dataset another "
                "name, or import into that dataset.",
            )
            status = 400
        except (ImportRejected, FileRejected) as rejected:
            errors, status = rejected.errors, 400
        except NotStored as failed:  # the server's disk, not the file: 507 when full
            errors, status = [failed.message], failed.status
        else:
            context = {
                "result": result,
                "name": data["file"].name,
                "roles": result.roles_said("ticking “Copy the members and their roles”"),
            }
            return render(request, "evaluation/datasets/dataset_import_done.html", context)
    elif request.method == "POST":
        status = 400
    context = {"form": form, "errors": errors}
    return render(request, "evaluation/datasets/dataset_import.html", context, status=status)


def _import_initial(request: HttpRequest, administered, may_create: bool) -> dict:
    """From a dataset's page (`?dataset=<id>`) the choice starts on importing into it; from
    anywhere else on a new dataset, which can change no existing one."""
    chosen = request.GET.get("dataset", "")
    if chosen.isdigit() and administered.filter(pk=int(chosen)).exists():
        return {"target": ImportForm.INTO, "dataset": int(chosen)}
    return {"target": ImportForm.NEW if may_create else ImportForm.INTO}
