"""Archive an ended run's verdicts to Parquet, and restore them exactly (issue 44).

`archive_run`: the run's figures are made current first (its scores frozen into the
archive row, its analytics figures kept), then its verdicts are written to a file under
settings.RUN_ARCHIVE_DIR, the file is read back and checked (rows and checksum), and only
then, in one transaction, the verdicts leave the table and the run is marked archived. A
failure at any step leaves the run as it was (the partial file is removed).

`restore_run`: the file's rows go back by COPY with their own ids, their checksum must equal
the one taken when they left (else nothing is restored), the run is unmarked and the file
removed after the commit.

PostgreSQL only: the checksum and the COPY are its own. The run must have ended (a running
run still writes verdicts) and be no cross-evaluation (its verdicts are the experts'
overlap figures, read live).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from evaluation.analytics import figures
from evaluation.archive import parquet
from evaluation.runs import overview, scores, stability
from evaluation.runs.models import Run, RunArchive, Verdict

logger = logging.getLogger(__name__)


class ArchiveError(Exception):
    """A run that cannot be archived or restored, and why (shown as is to the admin)."""


class ArchiveMissing(ArchiveError):
    """An archived run's Parquet file is not where its archive row says: what reads its
    verdicts (a dataset export) refuses before writing anything, naming the run and file."""


@dataclass(frozen=True)
class Checksum:
    rows: int
    digest: str  # order-free: the sum of each row's md5 (60 bits of it)


def checksum(run_id: int) -> Checksum:
    """The run's verdict rows, every column, in one figure that a restore must give back:
    each row's text (PostgreSQL's form of the whole row) hashed, the hashes summed. Order-
    free, so that the restore's insertion order does not matter."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(sum(('x' || substr(md5(v::text), 1, 15))::bit(60)"
            "::bigint::numeric), 0)::text FROM evaluation_verdict v WHERE v.run_id = %s",
            [run_id],
        )
        rows, digest = cursor.fetchone()
    return Checksum(rows, digest)


def archive_dir() -> Path:
    return Path(settings.RUN_ARCHIVE_DIR)


def file_of(run: Run) -> Path:
    """Where the run's archive goes, relative to archive_dir()."""
    return Path(f"dataset-{run.dataset_id}") / f"run-{run.pk}-verdicts.parquet"


def check_files(dataset_id: int) -> None:
    """Refuse (ArchiveMissing) when the file of any archived run of the dataset is missing:
    its verdicts exist nowhere else, and an export without them would look complete. Says
    which run and file, and how to get them back."""
    archives = RunArchive.objects.filter(run__dataset_id=dataset_id).select_related("run")
    missing = [
        (archive.run, archive_dir() / archive.path)
        for archive in archives.order_by("run_id")
        if not (archive_dir() / archive.path).is_file()
    ]
    if not missing:
        return
    named = "; ".join(f"run {run.pk} ({run}): {path}" for run, path in missing)
    raise ArchiveMissing(
        f"The verdicts of {len(missing)} archived run{'s' if len(missing) > 1 else ''} are "
        f"missing from RUN_ARCHIVE_DIR ({named}). Nothing was exported. Put each file back at "
        "that path from your backup of RUN_ARCHIVE_DIR (or mount the store that holds it "
        "there), then export again; or export without verdicts."
    )


def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        raise ArchiveError("Archiving runs needs PostgreSQL (checksums and COPY).")


def _check_archivable(run: Run) -> None:
    if run.archived_at is not None:
        raise ArchiveError(f"Run {run.pk} is archived already.")
    if not run.ended:
        raise ArchiveError(f"Run {run.pk} is {run.status}: only an ended run is archived.")
    if run.kind == Run.Kind.CROSS_EVALUATION:
        raise ArchiveError(
            f"Run {run.pk} is a cross-evaluation: its verdicts are the experts' overlap, "
            "read live by the dataset's figures; it is not archived."
        )


def _batches(run_id: int):
    """The run's verdict rows in file order (by id), a batch at a time from a server-side
    cursor: flat memory whatever the run's size."""
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.execute(
            f"SELECT {parquet.select_list()} FROM evaluation_verdict "  # noqa: S608
            "WHERE run_id = %s ORDER BY id",
            [run_id],
        )  # only the table's own column names go into the text
        while rows := cursor.fetchmany(parquet.BATCH):
            yield rows


def archive_run(run: Run, *, by=None) -> RunArchive:
    """Move the run's verdicts to its Parquet file; its figures stay on every page."""
    _postgresql_only()
    run = Run.objects.select_related("dataset").get(pk=run.pk)
    _check_archivable(run)
    # The figures its pages read, current now, from the verdicts still here: the scores
    # frozen into the archive row, the analytics figures kept (served as current from then
    # on: analytics.figures._archived).
    frozen = scores.frozen(run)
    if not figures.default_kept(run):
        figures.warm(run)
    stability.run_stability(run)  # kept now, if it was not: the repeated calls move too
    overview.keep_counts(run)  # the run page's verdict counts by outcome, tokens, errors
    before = checksum(run.pk)
    relative = file_of(run)
    path = archive_dir() / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        written = parquet.write(partial, _batches(run.pk))
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        if written != before.rows or parquet.rows_in(partial) != before.rows:
            raise ArchiveError(
                f"Run {run.pk}: {written} rows written for {before.rows} verdicts; not archived."
            )
        os.replace(partial, path)
        with transaction.atomic():
            locked = Run.objects.select_for_update().get(pk=run.pk)
            _check_archivable(locked)
            # A verdict written since the file was (a resume): the file would miss it.
            if checksum(run.pk) != before:
                raise ArchiveError(f"Run {run.pk}'s verdicts changed while archiving; try again.")
            archive = RunArchive.objects.create(
                run=locked, path=str(relative), verdicts=before.rows, checksum=before.digest,
                size=path.stat().st_size, scores=frozen, archived_by=by,
            )  # fmt: skip
            Verdict.objects.filter(run_id=run.pk)._raw_delete(connection.alias)
            locked.archived_at = archive.archived_at
            locked.save(update_fields=["archived_at"])
    except BaseException:
        partial.unlink(missing_ok=True)
        if not RunArchive.objects.filter(run_id=run.pk).exists():
            path.unlink(missing_ok=True)
        raise
    logger.info("Run %s archived: %d verdicts to %s", run.pk, before.rows, path)
    return archive


def restore_run(run: Run) -> int:
    """Put the archived run's verdicts back, exactly; the rows restored."""
    _postgresql_only()
    archive = RunArchive.objects.filter(run_id=run.pk).first()
    if archive is None:
        raise ArchiveError(f"Run {run.pk} is not archived.")
    path = archive_dir() / archive.path
    if not path.exists():
        raise ArchiveError(f"Run {run.pk}'s archive {path} is missing; nothing restored.")
    columns = ", ".join(parquet.COLUMNS)
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY evaluation_verdict ({columns}) FROM STDIN") as copy,
        ):
            for rows in parquet.read(path):
                for row in rows:
                    copy.write_row(row)
        after = checksum(run.pk)
        if after != Checksum(archive.verdicts, archive.checksum):
            raise ArchiveError(
                f"Run {run.pk}: the restored rows ({after.rows}) differ from those archived "
                f"({archive.verdicts}); nothing restored."
            )
        archive.delete()
        locked.archived_at = None
        locked.save(update_fields=["archived_at"])
        transaction.on_commit(lambda: path.unlink(missing_ok=True))
    logger.info("Run %s restored: %d verdicts from %s", run.pk, after.rows, path)
    return after.rows


def runs_older_than(days: int, *, dataset_id: int | None = None):
    """The ended runs (no cross-evaluation, not archived) that finished more than `days`
    days ago, oldest first."""
    if days < 0:
        raise ArchiveError("The age in days must be 0 or more.")
    cutoff = timezone.now() - timedelta(days=days)
    found = Run.objects.filter(
        status__in=Run.ENDED, archived_at=None, finished_at__lt=cutoff
    ).exclude(kind=Run.Kind.CROSS_EVALUATION)
    if dataset_id is not None:
        found = found.filter(dataset_id=dataset_id)
    return found.order_by("finished_at", "pk")
