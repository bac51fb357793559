"""Import a dataset from the export layout: a zip, or a folder of table files.

    python manage.py import_dataset finance-demo-20261122.zip
    python manage.py import_dataset finance-demo-20261122.zip --dataset "Finance demo"
    python manage.py import_dataset finance-demo-20261122.zip --as-copy "Finance demo (copy)"
    python manage.py import_dataset finance-demo-20261122.zip --copy-members
    python manage.py import_dataset ./my-benchmark/ --guideline Generic \
        --on-guideline-errors refuse

Where the rows go is said, never guessed: `--dataset ID|NAME` imports into that dataset
(rows matched by their keys, only what differs written: the export of a dataset imported
back into it changes nothing); `--as-copy NAME` makes a new dataset of that name, every row
new; with neither, a new dataset named as in dataset.json. A new dataset's name that is
taken is refused, nothing written (exit status 2). The files' members get their roles only
with `--copy-members`; the output says how many roles were granted. Every file is checked
first; any error rejects the import with every error listed and nothing written (exit
status 2). See docs/data-formats.md#dataset-import.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Guideline
from evaluation.datasets.import_target import NameTaken
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from evaluation.datasets.storage import NotStored
from evaluation.management.commands.export_dataset import find_dataset


def find_guideline(value: str) -> Guideline:
    """An id, a name (its newest version) or NAME:VERSION."""
    name, _, version = value.rpartition(":") if ":" in value else (value, "", "")
    guidelines = Guideline.objects.all()
    if value.isdigit():
        found = guidelines.filter(pk=int(value)).first()
    elif version.isdigit():
        found = guidelines.filter(name=name, version=int(version)).first()
    else:
        found = guidelines.filter(name=value).order_by("-version").first()
    if found is None:
        raise CommandError(f"No guideline {value!r}.", returncode=2)
    return found


class Command(BaseCommand):
    help = (
        "Import a dataset (zip or folder in the export layout): into the dataset named with "
        "--dataset, or as a new dataset (--as-copy NAME, else the name in dataset.json; a "
        "taken name is refused). Rows are matched by external ids."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="A zip or a folder.")
        target = parser.add_mutually_exclusive_group()
        target.add_argument(
            "--dataset",
            help="Import into this existing dataset (id or name): rows are matched by their "
            "keys and only what differs is written.",
        )
        target.add_argument(
            "--as-copy", metavar="NAME", default="",
            help="Import as a new dataset of this name (every row new), whatever dataset.json "
            "calls it. Without --dataset or --as-copy the new dataset takes dataset.json's "
            "name; a taken name is refused.",
        )  # fmt: skip
        parser.add_argument(
            "--guideline",
            help="The dataset's guideline: an id, a name (newest version) or NAME:VERSION.",
        )
        parser.add_argument(
            "--copy-members", action="store_true",
            help="Give the files' members (members.csv) their roles on the dataset, to those "
            "who hold none there yet. Without it nobody is given a role.",
        )  # fmt: skip
        parser.add_argument(
            "--on-guideline-errors", choices=("warn", "refuse"), default="warn",
            help="Submitted checklists that break the guideline: import them and list the "
            "findings (warn, the default), or refuse the import.",
        )  # fmt: skip

    def handle(self, *args: object, **options: object) -> None:
        path: Path = options["path"]
        if not path.exists():
            raise CommandError(f"{path} not found.", returncode=2)
        as_copy = options["as_copy"].strip()
        if options["as_copy"] and not as_copy:
            raise CommandError("--as-copy needs a name.", returncode=2)
        import_options = ImportOptions(
            dataset=find_dataset(options["dataset"]) if options["dataset"] else None,
            as_copy=as_copy,
            guideline=find_guideline(options["guideline"]) if options["guideline"] else None,
            on_guideline_errors=options["on_guideline_errors"],
            copy_members=options["copy_members"],
        )
        started = time.monotonic()
        try:
            result = import_dataset(path, import_options)
        except NameTaken as taken:
            fix = (
                "choose another name"
                if taken.as_copy
                else f"--dataset {taken.name!r} to import into it, or --as-copy NAME"
            )
            raise CommandError(
                f"{taken.errors[0]} ({fix}); nothing was imported.", returncode=2
            ) from taken
        except ImportRejected as rejected:
            raise CommandError(str(rejected), returncode=2) from rejected
        except NotStored as failed:
            raise CommandError(failed.message) from failed
        dataset = result.dataset
        if result.dataset_created:
            verb = "Created"
        else:
            verb = "Updated" if result.changed else "Nothing changed in"
        copy = f", a copy of {result.copy_of!r}," if result.copy_of else ""
        self.stdout.write(
            f"{verb} dataset {dataset.pk} ({dataset.name}){copy} from {path.name} in "
            f"{time.monotonic() - started:.1f} s."
        )
        for table in sorted(set(result.created) | set(result.updated) | set(result.unchanged)):
            self.stdout.write(
                f"  {table}: {result.created.get(table, 0)} new, "
                f"{result.updated.get(table, 0)} changed, "
                f"{result.unchanged.get(table, 0)} unchanged"
            )
        self.stdout.write(result.roles_said("--copy-members"))
        for warning in result.warnings:
            self.stdout.write(f"  warning: {warning}")
        if not result.changed:
            self.stdout.write("Nothing changed: everything was already there.")
