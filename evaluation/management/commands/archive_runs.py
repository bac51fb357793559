"""Archive the runs that ended more than N days ago: their verdicts leave the verdict table
for one Parquet file per run under RUN_ARCHIVE_DIR; their scores and analytics stay on
every page (docs/operations.md, "Archiving old runs").

    python manage.py archive_runs --older-than 90            # every dataset
    python manage.py archive_runs --older-than 90 --dataset 3 --dry-run
    python manage.py archive_runs --restore 412              # the run's verdicts back

Each run is archived on its own: one that fails is reported and left as it was, and the
others go on. Exit code 1 when any failed.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.archive import services
from evaluation.management.commands.export_dataset import find_dataset
from evaluation.runs.models import Run


class Command(BaseCommand):
    help = "Archive runs older than N days to Parquet (or restore one with --restore RUN)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=int,
            metavar="DAYS",
            help="Archive the runs that ended more than DAYS days ago.",
        )
        parser.add_argument("--dataset", help="Only this dataset's runs (id or name).")
        parser.add_argument("--dry-run", action="store_true", help="List them; change nothing.")
        parser.add_argument("--restore", type=int, metavar="RUN",
                            help="Restore this archived run's verdicts instead.")  # fmt: skip

    def handle(self, *args, **options) -> None:
        if options["restore"] is not None:
            run = Run.objects.filter(pk=options["restore"]).first()
            if run is None:
                raise CommandError(f"No run {options['restore']}.")
            try:
                n = services.restore_run(run)
            except services.ArchiveError as error:
                raise CommandError(str(error)) from error
            self.stdout.write(f"Run {run.pk} restored: {n} verdicts.")
            return
        if options["older_than"] is None:
            raise CommandError("Say --older-than DAYS (or --restore RUN).")
        dataset_id = find_dataset(options["dataset"]).pk if options["dataset"] else None
        try:
            found = list(services.runs_older_than(options["older_than"], dataset_id=dataset_id))
        except services.ArchiveError as error:
            raise CommandError(str(error)) from error
        failed = 0
        for run in found:
            if options["dry_run"]:
                self.stdout.write(f"Would archive run {run.pk} ({run}), ended {run.finished_at}.")
                continue
            try:
                archive = services.archive_run(run)
            except services.ArchiveError as error:
                failed += 1
                self.stderr.write(f"Run {run.pk}: {error}")
                continue
            self.stdout.write(
                f"Run {run.pk} archived: {archive.verdicts} verdicts, {archive.size} bytes, "
                f"{archive.path}."
            )
        self.stdout.write(f"{len(found) - failed} of {len(found)} run(s) archived.")
        if failed:
            raise CommandError(f"{failed} run(s) could not be archived (above).")
