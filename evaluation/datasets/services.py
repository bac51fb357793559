"""Export jobs: start one, run it (the Celery task's body), open its download, purge old files.

Small exports stream straight to the browser (evaluation.datasets.export); an export above
DATA_EXPORT_STREAM_MAX_ROWS rows becomes a job that a worker writes to DATA_EXPORT_DIR with
progress on the page. The download link names the job by an unguessable token and checks,
when it is used, that the user administers the dataset; it expires after
DATA_EXPORT_EXPIRY_HOURS.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from annotation.models import Dataset
from evaluation import task_names
from evaluation.datasets import storage
from evaluation.datasets.export import (
    ExportOptions,
    check_archives,
    count_rows,
    export_chunks,
    file_name,
)
from evaluation.datasets.models import DatasetExport

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


logger = logging.getLogger(__name__)

PROGRESS_EVERY = 1.0  # seconds between progress writes


class ExportGone(Exception):
    """The export's file expired or was never written."""


def export_dir() -> Path:
    folder = Path(settings.DATA_EXPORT_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def should_stream(dataset: Dataset, options: ExportOptions) -> bool:
    return count_rows(dataset, options.include) <= settings.DATA_EXPORT_STREAM_MAX_ROWS


@transaction.atomic
def export_start(
    *, dataset: Dataset, by: AbstractBaseUser, options: ExportOptions
) -> DatasetExport:
    """Record an export job and queue it once the record is committed. The caller has
    checked that `by` administers the dataset. An archived run whose file is missing is
    refused here (ArchiveMissing), before any job is recorded."""
    check_archives(dataset, options)
    export = DatasetExport.objects.create(
        dataset=dataset,
        requested_by=by,
        include=list(options.include),
        formats=list(options.formats),
        rows_total=count_rows(dataset, options.include),
    )
    # Queued by name: services never import tasks (evaluation/datasets/tasks.py).
    signature = task_names.signature(task_names.EXPORT_TASK, (export.pk,))
    transaction.on_commit(signature.apply_async)
    return export


def export_path(export: DatasetExport) -> Path:
    return export_dir() / f"{export.token}.zip"


def _partials(export: DatasetExport) -> list[Path]:
    """The half-written files of a job: of deliveries that were killed, or still write."""
    return list(Path(settings.DATA_EXPORT_DIR).glob(f"{export.token}.*.partial"))


def export_run(*, export_id: int) -> None:
    """Write the zip of one job. A finished or failed job is left alone; a redelivered one
    starts again from scratch (the file is renamed into place only when complete).

    Each delivery writes a file of its own (`<token>.<delivery>.partial`): a delivery whose
    worker was killed leaves its file behind, and one the broker handed out again while the
    first still ran (Redis's visibility timeout) must not write into the same file. The one
    that ends the job removes the others' files; the job's status changes only while it is
    running, so a delivery that ends second changes nothing."""
    export = (
        DatasetExport.objects.select_related("dataset", "requested_by").filter(pk=export_id).first()
    )
    if export is None or export.status in (DatasetExport.Status.DONE, DatasetExport.Status.FAILED):
        return
    unended = DatasetExport.objects.filter(
        pk=export.pk, status__in=(DatasetExport.Status.PENDING, DatasetExport.Status.RUNNING)
    )
    if not unended.update(
        status=DatasetExport.Status.RUNNING, started_at=timezone.now(), rows_done=0
    ):
        return  # ended by another delivery since it was read
    running = DatasetExport.objects.filter(pk=export.pk, status=DatasetExport.Status.RUNNING)
    options = ExportOptions.parse(export.include, export.formats)
    last = [time.monotonic()]

    def progress(rows: int) -> None:
        if time.monotonic() - last[0] >= PROGRESS_EVERY:
            # The export reads inside a read-only snapshot on PostgreSQL, and the page must
            # see progress now: write it on a connection of its own (another thread's).
            thread = threading.Thread(target=_save_progress, args=(export.pk, rows))
            thread.start()
            thread.join()
            last[0] = time.monotonic()

    partial = target = None
    try:
        target = export_path(export)  # creates DATA_EXPORT_DIR, which may fail too
        partial = target.with_name(f"{export.token}.{uuid.uuid4().hex[:12]}.partial")
        # As the requester sees the dataset (blind rule); they were an admin when asking.
        chunks = export_chunks(export.dataset, options, user=export.requested_by, progress=progress)
        # Closed on failure too: the generator holds the read-only snapshot transaction,
        # which the failure must not be written into.
        with contextlib.closing(chunks), partial.open("wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(partial, target)
    except Exception as exc:
        # This delivery's file and those of deliveries killed before it: on a full disk
        # they hold the space that the export pressed again will need.
        for path in [partial, *_partials(export)]:
            if path is not None:
                path.unlink(missing_ok=True)
        # The traceback is for operators (the log); the user reads what happened and what
        # to do, naming the setting when it is the disk (evaluation.datasets.storage).
        logger.exception("Export %s failed", export.pk)
        running.update(
            status=DatasetExport.Status.FAILED,
            error=storage.export_failure(exc)[:2000],
            finished_at=timezone.now(),
        )
        return
    finished = timezone.now()
    ended = running.update(
        status=DatasetExport.Status.DONE,
        rows_done=export.rows_total,
        file_name=file_name(export.dataset, finished),
        size=target.stat().st_size,
        finished_at=finished,
        expires_at=finished + dt.timedelta(hours=settings.DATA_EXPORT_EXPIRY_HOURS),
    )
    done = DatasetExport.objects.filter(pk=export.pk, status=DatasetExport.Status.DONE)
    if not ended and not done.exists():
        target.unlink(missing_ok=True)  # the job failed meanwhile, or is gone: no file
        return
    for leftover in _partials(export):  # of deliveries killed before this one
        leftover.unlink(missing_ok=True)
    exports_purge_expired()


def _save_progress(export_id: int, rows: int) -> None:
    try:
        DatasetExport.objects.filter(pk=export_id).update(rows_done=rows)
    finally:
        connections.close_all()


def export_file(export: DatasetExport) -> Path:
    """The finished zip; ExportGone when it failed, expired or is not written (yet)."""
    if export.status == DatasetExport.Status.FAILED:
        raise ExportGone(f"This export failed: {export.error}")
    if export.status != DatasetExport.Status.DONE:
        raise ExportGone("This export is not ready.")
    if export.expires_at and export.expires_at <= timezone.now():
        raise ExportGone("This download link has expired; export the dataset again.")
    path = export_path(export)
    if not path.exists():
        raise ExportGone("This export's file is gone; export the dataset again.")
    return path


def exports_purge_expired() -> int:
    """Remove the files of expired exports (the records stay, marked by their expiry)."""
    removed = 0
    for export in DatasetExport.objects.filter(
        status=DatasetExport.Status.DONE, expires_at__lte=timezone.now()
    ):
        path = export_path(export)
        if path.exists():
            path.unlink(missing_ok=True)
            removed += 1
    return removed
