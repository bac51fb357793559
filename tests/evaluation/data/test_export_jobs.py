"""Big exports run as a Celery job (a real worker): progress, a download link that checks
access when used, refuses other people's and expires."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.test import override_settings
from django.utils import timezone

from annotation import roles, services
from bench.data_io.generate import generate
from evaluation.datasets.models import DatasetExport
from evaluation.datasets.services import export_dir as services_dir
from tests.evaluation.data.zips import members


def _wait(export: DatasetExport, timeout: float = 60) -> DatasetExport:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        export.refresh_from_db()
        if export.status in (DatasetExport.Status.DONE, DatasetExport.Status.FAILED):
            return export
        time.sleep(0.2)
    pytest.fail(f"export still {export.status} after {timeout} s")


@override_settings(DATA_EXPORT_STREAM_MAX_ROWS=10)
def test_a_big_export_becomes_a_job_whose_link_checks_access_and_expires(
    celery_worker, client, owner, collaborator, outsider
):
    dataset = generate("Job export", admin=owner)
    services.dataset_set_role(dataset=dataset, user=collaborator, role=roles.DatasetRole.EXPERT)
    client.force_login(owner)
    response = client.post(
        f"/datasets/{dataset.pk}/export/",
        {"formats": ["jsonl", "parquet"], "include": ["verdicts"]},
    )
    assert response.status_code == 302
    export = _wait(DatasetExport.objects.get(dataset=dataset))
    assert export.status == "done", export.error
    assert export.rows_done == export.rows_total > 144 and export.expires_at > timezone.now()
    page = client.get(f"/datasets/{dataset.pk}/export/")
    assert f"/exports/{export.token}/download/".encode() in page.content
    download = client.get(f"/exports/{export.token}/download/")
    assert download.status_code == 200
    files = members(b"".join(download.streaming_content))
    assert "verdicts.parquet" in files and "labels.jsonl" not in files

    api = client.get(f"/api/exports/{export.token}/")
    assert api.json()["status"] == "done" and api.json()["download_url"].endswith("/download/")

    # Another person's link: an expert of the dataset, an outsider.
    for user, code in ((collaborator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(f"/exports/{export.token}/download/").status_code == code
        assert client.get(f"/api/exports/{export.token}/download/").status_code == code
    # The requester demoted to expert loses the link too.
    services.dataset_set_role(dataset=dataset, user=owner, role=roles.DatasetRole.EXPERT)
    client.force_login(owner)
    assert client.get(f"/exports/{export.token}/download/").status_code == 403
    services.dataset_set_role(dataset=dataset, user=owner, role=roles.DatasetRole.ADMIN)
    # Expired: 410, and the file is removed by the next purge.
    DatasetExport.objects.filter(pk=export.pk).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    assert client.get(f"/exports/{export.token}/download/").status_code == 410
    assert client.get(f"/api/exports/{export.token}/download/").status_code == 410
    from evaluation.datasets.services import exports_purge_expired

    assert exports_purge_expired() >= 1
    assert not (services_dir() / f"{export.token}.zip").exists()


@override_settings(DATA_EXPORT_STREAM_MAX_ROWS=10)
def test_the_api_answers_202_with_the_job_and_its_status(celery_worker, client, owner):
    dataset = generate("Job export API", admin=owner)
    client.force_login(owner)
    response = client.get(f"/api/datasets/{dataset.pk}/export/?formats=csv")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending" and body["download_url"] is None
    export = _wait(DatasetExport.objects.get(token=body["token"]))
    assert export.status == "done"
    status = client.get(f"/api/exports/{export.token}/").json()
    assert status["progress"] == 1.0


def test_progress_is_written_while_the_export_reads_its_snapshot(
    transactional_db, owner, monkeypatch
):
    """On PostgreSQL the export reads in a read-only snapshot; progress goes out on a
    connection of its own, so the job neither fails nor hides its progress."""
    from evaluation.datasets import services as data_services
    from evaluation.datasets.export import ExportOptions

    monkeypatch.setattr(data_services, "PROGRESS_EVERY", 0.0)
    dataset = generate("Progress export", admin=owner)
    monkeypatch.setattr(data_services.task_names, "signature", lambda *a, **k: _Nothing())
    export = data_services.export_start(dataset=dataset, by=owner, options=ExportOptions())
    data_services.export_run(export_id=export.pk)
    export.refresh_from_db()
    assert export.status == "done", export.error
    assert export.rows_done == export.rows_total


class _Nothing:
    def apply_async(self) -> None:
        return None
