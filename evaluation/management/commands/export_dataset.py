"""Export a dataset to a zip: one file per table and format, a data card, dataset.json.

    python manage.py export_dataset 3 --out k-qa.zip
    python manage.py export_dataset "K-QA (medical questions, physician labels)" --out k.zip \
        --include answers,labels --format jsonl,parquet

DATASET is an id or a name. By default everything is exported in every format; --include
keeps only the optional parts named (answers, verdicts, labels, adjudications, pairwise,
scores, overlaps; the structure is always there). See docs/data-formats.md#dataset-export.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Dataset
from evaluation.archive.services import ArchiveMissing
from evaluation.datasets.export import ExportOptions, check_archives, export_chunks


def _list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def find_dataset(value: str) -> Dataset:
    dataset = None
    if value.isdigit():
        dataset = Dataset.objects.filter(pk=int(value)).first()
    dataset = dataset or Dataset.objects.filter(name=value).first()
    if dataset is None:
        raise CommandError(f"No dataset with id or name {value!r}.", returncode=2)
    return dataset


class Command(BaseCommand):
    help = "Export a dataset (structure, answers, verdicts, labels, ...) to a zip."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="The dataset's id or name.")
        parser.add_argument("--out", type=Path, required=True, help="The zip to write.")
        parser.add_argument(
            "--include", type=_list, default=None,
            help="Optional parts, comma-separated (default: all of answers, verdicts, labels, "
            "adjudications, scores, overlaps).",
        )  # fmt: skip
        parser.add_argument(
            "--format", dest="formats", type=_list, default=None,
            help="jsonl, csv, parquet, comma-separated (default: all three).",
        )  # fmt: skip

    def handle(self, *args: object, **options: object) -> None:
        dataset = find_dataset(str(options["dataset"]))
        try:
            export = ExportOptions.parse(options["include"], options["formats"])
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        out: Path = options["out"]
        try:
            check_archives(dataset, export)  # before any byte is written
        except ArchiveMissing as missing:
            raise CommandError(str(missing)) from None
        partial = out.with_name(out.name + ".partial")
        started = time.monotonic()
        try:
            with partial.open("wb") as handle:
                for chunk in export_chunks(dataset, export):
                    handle.write(chunk)
            os.replace(partial, out)  # never leave a half-written zip under the asked name
        finally:
            partial.unlink(missing_ok=True)
        self.stdout.write(
            f"Exported dataset {dataset.pk} ({dataset.name}) to {out}: "
            f"{out.stat().st_size:,} bytes in {time.monotonic() - started:.1f} s."
        )
