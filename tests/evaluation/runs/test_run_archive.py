"""Retention (issue 44): an admin archives the runs older than N days. Their verdicts leave
the verdict table for a Parquet file, their figures stay on every page and chart (the
scores frozen in the archive, the analytics kept when archived), the dataset export still
holds them, and a restore puts back every row exactly. On PostgreSQL, as in production.

Failure paths: a running run, a cross-evaluation, a run archived twice, a tampered or
missing file, a run that is not archived: each refused with a message naming the run, and
nothing changed. An export of a run whose file is missing is refused before its first
byte, naming the run and the file; an adjudication after archiving moves none of the frozen
figures, and the run page says they are frozen."""

from __future__ import annotations

import io
import zipfile
from dataclasses import asdict
from datetime import timedelta

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q
from django.urls import reverse
from django.utils import timezone

from annotation.models import Criterion
from bench.data_io.generate import generate
from evaluation.analytics import figures
from evaluation.answers.models import Answer
from evaluation.archive import services
from evaluation.datasets.export import ExportOptions, export_chunks
from evaluation.kept.events import Event, bump
from evaluation.labels.models import Adjudication
from evaluation.runs import scores, stability
from evaluation.runs.models import Run, RunArchive, Verdict
from tests.support.compare import same

pytestmark = [
    pytest.mark.django_db,
    # Archiving needs PostgreSQL (COPY and its checksums); on SQLite it refuses, saying so.
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="run archives need PostgreSQL (COPY)"
    ),
]

FIELDS = [f.attname for f in Verdict._meta.concrete_fields]


@pytest.fixture
def archive_dir(settings, tmp_path):
    settings.RUN_ARCHIVE_DIR = tmp_path / "archive"
    return settings.RUN_ARCHIVE_DIR


@pytest.fixture
def old_run():
    dataset = generate("Archive", queries=3, systems=2, criteria=4, judges=2, samples=2)
    run = Run.objects.filter(dataset=dataset).exclude(kind=Run.Kind.CROSS_EVALUATION).first()
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now() - timedelta(days=100))
    return fresh(run)


def fresh(run: Run) -> Run:
    return Run.objects.select_related("dataset").get(pk=run.pk)


def rows(run: Run) -> list[dict]:
    return list(Verdict.objects.filter(run_id=run.pk).order_by("pk").values(*FIELDS))


def shown(run: Run) -> dict:
    """Every figure the run's pages and charts show: its scores (summary and every answer,
    as the run page, its API and the answers list read them) and its analytics parts."""
    kept = scores.run_scores(fresh(run))
    return {
        "threshold": kept.threshold,
        "systems": [asdict(s) for s in kept.systems],
        "answers": [asdict(a) for a in kept[0 : kept.count]],
        "report": [asdict(a) for a in scores.run_report(fresh(run)).answers],
        "analytics": {
            part: repr(figures.served(fresh(run), part).figures)
            for part in ("page", "buckets", "queries", "health-top")
        },
        "stability": stability.served(fresh(run)).figures,
    }


def services_grant(run: Run, client) -> None:
    """Log the client in as an admin of the run's dataset."""
    from annotation import roles
    from annotation.services import dataset_set_role
    from tests.factories import UserFactory

    admin = UserFactory(username="dataset-admin")
    dataset_set_role(dataset=run.dataset, user=admin, role=roles.DatasetRole.ADMIN)
    client.force_login(admin)


def exported_verdicts(run: Run, fmt: str) -> bytes:
    options = ExportOptions.parse(["verdicts"], [fmt])
    data = b"".join(export_chunks(run.dataset, options))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(f"verdicts.{fmt}")]
        return archive.read(name)


def test_archive_keeps_every_figure_and_restore_gives_back_every_row(
    old_run, archive_dir, client, django_capture_on_commit_callbacks
):
    run = old_run
    services_grant(run, client)
    scores.keep_scores(run)
    figures.warm(run)
    before_rows, before_figures = rows(run), shown(run)
    assert len(before_rows) > 50
    assert before_figures["stability"]["items"] > 0  # two samples per judge: repeated calls
    before_jsonl = exported_verdicts(run, "jsonl")  # the SQL path, from the table
    before_csv = exported_verdicts(run, "csv")

    out = io.StringIO()
    call_command("archive_runs", "--older-than", "90", stdout=out)
    assert f"Run {run.pk} archived: {len(before_rows)} verdicts" in out.getvalue()

    archived = RunArchive.objects.get(run_id=run.pk)
    path = archive_dir / archived.path
    assert path.exists() and pq.ParquetFile(path).metadata.num_rows == len(before_rows)
    assert not Verdict.objects.filter(run_id=run.pk).exists()
    assert fresh(run).archived_at is not None

    # Every chart and figure unchanged, read without a verdict.
    same(before_figures, shown(run))
    page = client.get(reverse("run-detail", args=[run.pk]))
    assert page.status_code == 200 and "Computing." not in page.content.decode()
    api = client.get(f"/api/runs/{run.pk}/scores/").json()
    assert api["updating"] is False and api["count"] == len(before_figures["answers"])
    # Still so after the counters move (an adjudication elsewhere): nothing recounts the
    # archived run, its figures are those kept when archived.
    bump(run.dataset_id, Event.ADJUDICATION)
    same(before_figures, shown(run))
    # The dataset export holds its verdicts: the same bytes, read from the Parquet file.
    assert exported_verdicts(run, "jsonl") == before_jsonl
    assert exported_verdicts(run, "csv") == before_csv

    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):  # the file goes after the commit
        call_command("archive_runs", "--restore", str(run.pk), stdout=out)
    assert f"Run {run.pk} restored: {len(before_rows)} verdicts." in out.getvalue()
    assert rows(run) == before_rows  # every row identical, ids included
    assert not RunArchive.objects.filter(run_id=run.pk).exists() and not path.exists()
    assert fresh(run).archived_at is None
    assert [asdict(a) for a in scores.run_report(fresh(run)).answers] == before_figures["report"]


def test_a_dry_run_lists_and_changes_nothing_and_young_runs_stay(old_run, archive_dir):
    out = io.StringIO()
    call_command("archive_runs", "--older-than", "90", "--dry-run", stdout=out)
    assert f"Would archive run {old_run.pk}" in out.getvalue()
    call_command("archive_runs", "--older-than", "200", stdout=io.StringIO())
    assert Verdict.objects.filter(run_id=old_run.pk).exists()
    assert not RunArchive.objects.exists() and not archive_dir.exists()


def test_runs_that_may_not_be_archived_are_refused_and_left_as_they_were(old_run, archive_dir):
    count = Verdict.objects.filter(run_id=old_run.pk).count()
    Run.objects.filter(pk=old_run.pk).update(status=Run.Status.RUNNING)
    with pytest.raises(services.ArchiveError, match=f"Run {old_run.pk} is running"):
        services.archive_run(old_run)
    Run.objects.filter(pk=old_run.pk).update(status=Run.Status.DONE)
    services.archive_run(old_run)
    with pytest.raises(services.ArchiveError, match="archived already"):
        services.archive_run(fresh(old_run))
    with pytest.raises(services.ArchiveError, match="not archived"):
        other = Run.objects.create(
            dataset=old_run.dataset, panel=old_run.panel, status=Run.Status.DONE
        )
        services.restore_run(other)
    with pytest.raises(CommandError, match="Say --older-than"):
        call_command("archive_runs")
    assert RunArchive.objects.get(run_id=old_run.pk).verdicts == count


def test_a_tampered_or_missing_file_restores_nothing(old_run, archive_dir):
    services.archive_run(old_run)
    archived = RunArchive.objects.get(run_id=old_run.pk)
    path = archive_dir / archived.path
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)  # one verdict lost
    with pytest.raises(services.ArchiveError, match="differ from those archived"):
        services.restore_run(fresh(old_run))
    assert not Verdict.objects.filter(run_id=old_run.pk).exists()
    assert fresh(old_run).archived_at is not None and path.exists()
    path.unlink()
    with pytest.raises(CommandError, match="is missing; nothing restored"):
        call_command("archive_runs", "--restore", str(old_run.pk))


def test_the_admin_archives_and_restores_from_the_runs_list(old_run, archive_dir, client):
    from tests.factories import UserFactory

    admin = UserFactory(username="site-admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    url = reverse("admin:evaluation_run_changelist")
    answer = client.post(
        url, {"action": "archive_runs", "_selected_action": [old_run.pk]}, follow=True
    )
    assert f"Run {old_run.pk} archived." in answer.content.decode()
    assert RunArchive.objects.get(run_id=old_run.pk).archived_by == admin
    answer = client.post(
        url, {"action": "restore_runs", "_selected_action": [old_run.pk]}, follow=True
    )
    assert f"Run {old_run.pk} restored." in answer.content.decode()
    assert Verdict.objects.filter(run_id=old_run.pk).exists()


def test_an_export_whose_archived_file_is_missing_is_refused_before_any_byte(
    old_run, archive_dir, client, tmp_path
):
    """The verdicts of an archived run exist only in its file: an export without them would
    look complete. Every way in refuses before writing a byte (and before recording a job),
    naming the run and the file and saying how to get them back."""
    from evaluation.archive.services import ArchiveMissing
    from evaluation.datasets.models import DatasetExport

    services.archive_run(old_run)
    path = archive_dir / RunArchive.objects.get(run_id=old_run.pk).path
    kept_aside = tmp_path / "backup.parquet"
    path.rename(kept_aside)
    services_grant(old_run, client)
    named = f"run {old_run.pk} ({old_run}): {path}"

    with pytest.raises(ArchiveMissing, match="Nothing was exported") as refused:
        next(iter(export_chunks(old_run.dataset, ExportOptions.parse(["verdicts"], ["jsonl"]))))
    assert named in str(refused.value) and "backup of RUN_ARCHIVE_DIR" in str(refused.value)

    url = reverse("dataset-export", args=[old_run.dataset_id])
    for job in (False, True):  # streamed, and as a job
        form = {"include": ["answers", "verdicts"], "formats": ["jsonl"], "job": job or ""}
        page = client.post(url, form)
        assert page.status_code == 409 and named in page.content.decode()
    answer = client.get(f"/api/datasets/{old_run.dataset_id}/export/", {"include": "verdicts"})
    assert answer.status_code == 409 and named in answer.json()["detail"]
    out = tmp_path / "export.zip"
    with pytest.raises(CommandError, match=f"run {old_run.pk} "):
        call_command("export_dataset", str(old_run.dataset_id), "--out", str(out))
    assert not out.exists() and not out.with_name("export.zip.partial").exists()
    assert not DatasetExport.objects.exists()  # no job recorded

    # Without verdicts nothing reads the file: the export goes ahead.
    answer = client.get(
        f"/api/datasets/{old_run.dataset_id}/export/", {"include": "answers", "formats": "csv"}
    )
    assert answer.status_code == 200 and b"".join(answer.streaming_content)[:2] == b"PK"

    # The file back where it was: the export holds the run's verdicts again.
    kept_aside.rename(path)
    assert exported_verdicts(old_run, "jsonl")


def test_a_job_whose_archived_file_goes_after_it_was_asked_fails_naming_the_run(
    old_run, archive_dir
):
    from evaluation.datasets import services as exports
    from evaluation.datasets.models import DatasetExport
    from tests.factories import UserFactory

    services.archive_run(old_run)
    options = ExportOptions.parse(["verdicts"], ["jsonl"])
    export = exports.export_start(dataset=old_run.dataset, by=UserFactory(), options=options)
    (archive_dir / RunArchive.objects.get(run_id=old_run.pk).path).unlink()
    exports.export_run(export_id=export.pk)
    export.refresh_from_db()
    assert export.status == DatasetExport.Status.FAILED
    assert f"run {old_run.pk} " in export.error and "Nothing was exported" in export.error
    assert not list(exports.export_dir().glob(f"{export.token}*"))  # no file, no partial


def test_an_adjudication_after_archiving_leaves_the_frozen_scores_and_the_page_says_so(
    old_run, archive_dir, client, django_capture_on_commit_callbacks
):
    """The choice (docs/operations.md, "Archiving old runs"): an archived run's figures are
    frozen as of its archive date. An adjudication made since changes none of them, the run
    page and the scores API say so (with how many), and a restore counts it."""
    from evaluation.review.services import adjudicate

    services_grant(old_run, client)
    # An item every vote passed: an adjudication "fail" lowers its answer's score.
    decided = Adjudication.objects.filter(
        answer_id=OuterRef("answer_id"), criterion_id=OuterRef("criterion_id")
    )
    item = (
        Verdict.objects.filter(run=old_run)
        .values("answer_id", "criterion_id")
        .annotate(fails=Count("pk", filter=~Q(outcome="pass")), votes=Count("pk"))
        .filter(fails=0, votes__gt=0)
        .exclude(Exists(decided))
        .order_by("answer_id", "criterion_id")
        .first()
    )
    before = scores.run_report(fresh(old_run)).answers
    services.archive_run(old_run)
    frozen = shown(old_run)
    answer = Answer.objects.get(pk=item["answer_id"])
    adjudicate(
        answer=answer, criterion=Criterion.objects.get(pk=item["criterion_id"]),
        by=User.objects.get(username="dataset-admin"), label="fail", expected_version=None,
    )  # fmt: skip

    same(frozen, shown(old_run))  # nothing recounted
    html = client.get(reverse("run-detail", args=[old_run.pk])).content.decode()
    assert "data-frozen" in html and "<span data-adjudicated-since>1</span>" in html
    assert f"archive_runs --restore {old_run.pk}" in html
    api = client.get(f"/api/runs/{old_run.pk}/scores/").json()
    assert api["frozen_at"] is not None and api["updating"] is False

    with django_capture_on_commit_callbacks(execute=True):
        services.restore_run(fresh(old_run))
    html = client.get(reverse("run-detail", args=[old_run.pk])).content.decode()
    assert "data-frozen" not in html
    assert client.get(f"/api/runs/{old_run.pk}/scores/").json()["frozen_at"] is None
    after = {a.answer_id: a for a in scores.run_report(fresh(old_run)).answers}
    was = {a.answer_id: a for a in before}
    assert after[answer.pk].score < was[answer.pk].score
