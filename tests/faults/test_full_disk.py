"""A full disk and a killed export, on a real small filesystem (a 256 KiB tmpfs mounted for
the test): an export job that hits the full disk fails saying so, leaves no file and offers
no download, and the export pressed again once there is room is whole; an export whose
worker is killed half way offers nothing until its redelivery writes it whole; an upload
that cannot be stored, or an import whose database write fails half way, changes nothing
and says what happened. docs/operations.md, "A full disk", is the operator's side."""

from __future__ import annotations

import io
import multiprocessing
import os
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections
from guardian.models import UserObjectPermission

from annotation.models import Checklist, Criterion, Dataset, Query
from bench.data_io.generate import generate
from evaluation.answers.models import Answer
from evaluation.datasets import services, tasks
from evaluation.datasets.importer import import_dataset
from evaluation.datasets.models import DatasetExport
from evaluation.datasets.storage import NotStored
from tests.evaluation.data.imports import META, checklist_files, write, zipped

DISK_SIZE = "256k"
FULL_EXPORTS = "The disk holding exports is full (DATA_EXPORT_DIR)"
FULL_IMPORTS = "The disk holding uploaded imports is full (DATA_IMPORT_DIR)"


class SmallDisk:
    """A tmpfs of DISK_SIZE: `fill` takes its space, `free` gives it back."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def available(self) -> int:
        stats = os.statvfs(self.root)
        return stats.f_bavail * stats.f_frsize

    def fill(self, leave: int = 0) -> None:
        """Write a file until only `leave` bytes are free (0: until the disk refuses)."""
        with self.filler.open("ab") as out:
            try:
                while (room := self.available() - leave) > 0:
                    out.write(b"\0" * min(room, 64 * 1024))
                    out.flush()
            except OSError:
                pass  # full: what we wanted
        assert self.available() <= leave

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def files(self, folder: str) -> list[str]:
        path = self.root / folder
        return sorted(p.name for p in path.iterdir()) if path.exists() else []


@pytest.fixture
def small_disk(tmp_path, settings):
    """DATA_EXPORT_DIR and DATA_IMPORT_DIR on a real 256 KiB tmpfs (needs root)."""
    root = tmp_path / "disk"
    root.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(root)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"cannot mount a small tmpfs here: {exc} {detail.decode().strip()}")
    settings.DATA_EXPORT_DIR = root / "exports"
    settings.DATA_IMPORT_DIR = root / "imports"
    try:
        yield SmallDisk(root)
    finally:
        # Lazy: a file a failed test left open must not keep the mount behind.
        subprocess.run(["umount", "-l", str(root)], check=False, capture_output=True)


class _Unqueued:
    def apply_async(self) -> None:
        return None


@pytest.fixture
def unqueued(monkeypatch):
    """Export jobs are started but not sent to the broker: the test runs each one itself, in
    this process, where a worker would (and no worker of another test takes it)."""
    monkeypatch.setattr(services.task_names, "signature", lambda *a, **k: _Unqueued())


def start_export(client, dataset: Dataset) -> DatasetExport:
    """What pressing Export does for a big export: a job, shown on the page."""
    response = client.post(
        f"/datasets/{dataset.pk}/export/",
        {"formats": ["jsonl", "csv", "parquet"], "include": ["answers", "labels"], "job": "on"},
    )
    assert response.status_code == 302
    return DatasetExport.objects.filter(dataset=dataset).first()


def download_link(export: DatasetExport) -> bytes:
    return f"/exports/{export.token}/download/".encode()


def assert_nothing_offered(client, dataset: Dataset, export: DatasetExport) -> dict:
    """No download on the page nor in the API, and both download URLs refuse: the job's
    status as the API shows it."""
    page = client.get(f"/datasets/{dataset.pk}/export/")
    assert page.status_code == 200 and download_link(export) not in page.content
    status = client.get(f"/api/exports/{export.token}/").json()
    assert status["download_url"] is None
    assert client.get(f"/exports/{export.token}/download/").status_code == 410
    assert client.get(f"/api/exports/{export.token}/download/").status_code == 410
    return status


def assert_whole_zip(data: bytes, dataset: Dataset) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None  # every member's CRC matches
        names = {Path(n).name for n in archive.namelist()}
        manifest = archive.read(next(n for n in archive.namelist() if n.endswith("manifest.json")))
    for table in ("queries", "criteria", "answers", "labels"):
        assert {f"{table}.jsonl", f"{table}.csv", f"{table}.parquet"} <= names
    assert {"dataset.json", "README.md", "manifest.json"} <= names
    assert b'"queries": {\n      "rows": ' + str(dataset.queries.count()).encode() in manifest


@pytest.mark.django_db(transaction=True)
def test_an_export_on_a_full_disk_fails_saying_so_and_succeeds_once_there_is_room(
    small_disk, unqueued, client, owner
):
    dataset = generate("Full disk export", admin=owner)
    client.force_login(owner)
    # Room for the first bytes of the zip but not the rest: the disk fills half way.
    small_disk.fill(leave=8 * 1024)
    export = start_export(client, dataset)
    tasks.export_dataset(export.pk)  # the task's body, as the worker runs it

    status = assert_nothing_offered(client, dataset, export)
    assert status["status"] == "failed"
    assert status["error"].startswith(FULL_EXPORTS)
    assert "Traceback" not in status["error"] and "Errno" not in status["error"]
    page = client.get(f"/datasets/{dataset.pk}/export/").content.decode()
    assert "Failed" in page and FULL_EXPORTS in page
    download = client.get(f"/api/exports/{export.token}/download/").json()
    assert FULL_EXPORTS in download["detail"]
    assert small_disk.files("exports") == []  # no .partial, no zip
    # A redelivery of the failed job leaves it failed: the user presses Export again.
    tasks.export_dataset(export.pk)
    export.refresh_from_db()
    assert export.status == "failed" and small_disk.files("exports") == []

    small_disk.free()
    again = start_export(client, dataset)
    assert again.pk != export.pk
    tasks.export_dataset(again.pk)
    status = client.get(f"/api/exports/{again.token}/").json()
    assert status["status"] == "done" and status["error"] == "", status["error"]
    response = client.get(f"/api/exports/{again.token}/download/")
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    assert len(data) == status["size"]
    assert_whole_zip(data, dataset)
    assert small_disk.files("exports") == [f"{again.token}.zip"]  # one file, nothing doubled
    page = client.get(f"/datasets/{dataset.pk}/export/").content
    assert download_link(again) in page and download_link(export) not in page


def _export_until_killed(export_id: int, paused) -> None:
    """A worker's export that stops for good after writing four tables: the parent
    kills it there (SIGKILL: no clean-up code of ours runs)."""
    connections.close_all()  # the parent's connection is not ours to share

    tables = []

    def stop_here(export_id: int, rows: int) -> None:
        tables.append(rows)
        if len(tables) == 4:  # past the write buffer: bytes are on the disk
            paused.set()
            time.sleep(600)

    services._save_progress = stop_here
    services.PROGRESS_EVERY = 0.0
    services.export_run(export_id=export_id)


@pytest.mark.django_db(transaction=True)
def test_a_killed_export_offers_nothing_until_its_redelivery_writes_it_whole(
    small_disk, unqueued, client, owner
):
    dataset = generate("Killed export", admin=owner)
    client.force_login(owner)
    export = start_export(client, dataset)
    connections.close_all()  # the child process must not inherit our connection
    fork = multiprocessing.get_context("fork")
    paused = fork.Event()
    worker = fork.Process(target=_export_until_killed, args=(export.pk, paused))
    worker.start()
    try:
        assert paused.wait(60), "the export never reached its fourth table"
        written = [small_disk.root / "exports" / name for name in small_disk.files("exports")]
        assert len(written) == 1 and written[0].suffix == ".partial"
        assert written[0].stat().st_size > 0  # killed half way through writing
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.join()
    assert worker.exitcode == -signal.SIGKILL

    status = assert_nothing_offered(client, dataset, export)
    assert status["status"] == "running"  # what the page shows until the redelivery
    assert not any(name.endswith(".zip") for name in small_disk.files("exports"))

    tasks.export_dataset(export.pk)  # acks_late: the broker delivers the task again
    status = client.get(f"/api/exports/{export.token}/").json()
    assert status["status"] == "done", status["error"]
    response = client.get(f"/exports/{export.token}/download/")
    assert response.status_code == 200
    assert_whole_zip(b"".join(response.streaming_content), dataset)
    assert small_disk.files("exports") == [f"{export.token}.zip"]  # the half file is gone


def import_counts() -> dict[str, int]:
    return {
        "datasets": Dataset.objects.count(),
        "queries": Query.objects.count(),
        "checklists": Checklist.objects.count(),
        "criteria": Criterion.objects.count(),
        "answers": Answer.objects.count(),
        "permissions": UserObjectPermission.objects.count(),
    }


def test_an_upload_on_a_full_disk_is_refused_saying_so_and_changes_nothing(
    small_disk, client, owner, dataset, tmp_path
):
    files = {**checklist_files(), "dataset.json": {**META, "name": dataset.name}}
    data = zipped(write(tmp_path / "in", files))
    before = import_counts()
    small_disk.fill()
    client.force_login(owner)

    into = {"dataset": dataset.pk}
    page = client.post(
        "/datasets/import/",
        {"file": SimpleUploadedFile("set.zip", data), "on_guideline_errors": "warn",
         "target": "into", **into},
    )  # fmt: skip
    assert page.status_code == 507
    assert FULL_IMPORTS in page.content.decode() and b"Nothing was imported" in page.content
    upload = SimpleUploadedFile("set.zip", data)
    api = client.post("/api/datasets/import/", {"file": upload, **into})
    assert api.status_code == 507 and api.json()["detail"].startswith(FULL_IMPORTS)
    assert import_counts() == before
    assert small_disk.files("imports") == []  # no half-received upload left behind

    small_disk.free()
    api = client.post(
        "/api/datasets/import/", {"file": SimpleUploadedFile("set.zip", data), **into}
    )
    assert api.status_code == 201 and api.json()["created"]["queries"] == 1
    assert small_disk.files("imports") == []


@pytest.fixture
def database_full_on_answers(transactional_db):
    """PostgreSQL refuses every answer written, as it does when its own disk is full
    (SQLSTATE 53100, disk_full): a real error from the database, half way through an import
    that has already written the dataset, its queries and checklists."""
    if connection.vendor != "postgresql":
        pytest.skip("the trigger that plays a full database disk is PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION fault_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'could not extend file: No space left on device' "
            "USING ERRCODE = 'disk_full'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER fault_disk_full BEFORE INSERT ON evaluation_answer "
            "FOR EACH ROW EXECUTE FUNCTION fault_disk_full()"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS fault_disk_full ON evaluation_answer")
            cursor.execute("DROP FUNCTION IF EXISTS fault_disk_full()")


@pytest.mark.django_db(transaction=True)
def test_an_import_whose_database_fills_half_way_writes_nothing_and_says_so(
    database_full_on_answers, small_disk, client, owner, tmp_path
):
    answers = [
        {"system": "Atlas", "query": "q1", "run_label": f"run-{n}", "text": f"Answer {n}."}
        for n in range(3)
    ]
    folder = write(tmp_path / "in", {**checklist_files(), "answers.jsonl": answers})
    before = import_counts()

    with pytest.raises(NotStored) as failed:
        import_dataset(folder)
    assert "database" in failed.value.message and "nothing was imported" in failed.value.message
    assert import_counts() == before

    client.force_login(owner)
    upload = SimpleUploadedFile("set.zip", zipped(folder))
    api = client.post("/api/datasets/import/", {"file": upload})
    assert api.status_code == 507 and "database" in api.json()["detail"]
    assert import_counts() == before
    assert not Dataset.objects.filter(name=META["name"]).exists()
    assert small_disk.files("imports") == []
