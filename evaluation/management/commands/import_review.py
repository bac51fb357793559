"""Import externally produced human labels or judge verdicts into a dataset.

    python manage.py import_review labels --dataset 3 labels.csv
    python manage.py import_review verdicts --dataset 3 --panel "Team panel" \
        --run-name "Vendor verdicts 2026-11" verdicts.jsonl

Exit status 2 on a file with errors (every error listed; nothing is imported).
File formats: docs/data-formats.md#human-labels and #judge-verdicts.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Dataset
from evaluation.datasets.review_imports import (
    ImportRejected,
    import_labels_file,
    import_verdicts_file,
)


class Command(BaseCommand):
    help = "Import human labels or judge verdicts (JSONL or CSV) into a dataset."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("what", choices=["labels", "verdicts"])
        parser.add_argument("file", type=Path)
        parser.add_argument("--dataset", type=int, required=True, help="Dataset id.")
        parser.add_argument("--panel", default="", help="Verdicts: the panel's name.")
        parser.add_argument("--run-name", default="", help="Verdicts: the imported run's name.")

    def handle(self, *args: object, **options: object) -> None:
        dataset = Dataset.objects.filter(pk=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"No dataset {options['dataset']}.", returncode=2)
        path: Path = options["file"]
        try:
            if options["what"] == "labels":
                labels = import_labels_file(dataset=dataset, path=path)
                self.stdout.write(
                    f"Labels: {labels.created} new, {labels.updated} changed, "
                    f"{labels.unchanged} unchanged; {labels.raters} raters "
                    f"({labels.linked_to_users} linked to members)."
                )
                return
            if not options["panel"]:
                raise CommandError("--panel is required for verdicts.", returncode=2)
            result = import_verdicts_file(
                dataset=dataset, path=path, panel=options["panel"], run_name=options["run_name"]
            )
        except ImportRejected as rejected:
            raise CommandError(str(rejected), returncode=2) from rejected
        self.stdout.write(
            f"Run {result.run_id}{' (new)' if result.run_created else ''}: {result.created} new "
            f"verdicts, {result.updated} changed, {result.unchanged} unchanged; "
            f"{result.judges_created} new judges{'; new panel' if result.panel_created else ''}."
        )
