"""Import the K-QA dataset (questions, checklists, LLM answers, three physicians' labels).

    python manage.py import_kqa --admin alice --reviewer bob
    python manage.py import_kqa --labelled-only
    python manage.py import_kqa --directory path/to/K-QA/dataset

Safe to run again: nothing is duplicated. Rows of the labels file whose question or
statement matches nothing are listed and skipped. See docs/data-formats.md#k-qa.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.datasets.kqa import DIRECTORY, LABELS_FILE, QUESTIONS_FILE, import_kqa
from evaluation.datasets.review_imports import ImportRejected

DEFAULT_DIRECTORY = DIRECTORY  # the copy in the repository


class Command(BaseCommand):
    help = "Import K-QA: queries, checklists, LLM answers and the physicians' labels."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--directory", type=Path, default=DEFAULT_DIRECTORY)
        parser.add_argument("--admin", action="append", default=[], help="Username; repeatable.")
        parser.add_argument("--reviewer", action="append", default=[], help="Username; repeatable.")
        parser.add_argument(
            "--labelled-only",
            action="store_true",
            help="Only the questions that have physicians' labels (50 of 201).",
        )

    def handle(self, *args: object, **options: object) -> None:
        directory: Path = options["directory"]
        for name in (QUESTIONS_FILE, LABELS_FILE):
            if not (directory / name).is_file():
                raise CommandError(f"{directory / name} not found.", returncode=2)
        users = get_user_model().objects
        try:
            admins = [users.get(username=u) for u in options["admin"]]
            reviewers = [users.get(username=u) for u in options["reviewer"]]
        except users.model.DoesNotExist as exc:
            raise CommandError(f"Unknown user: {exc}", returncode=2) from exc
        try:
            result = import_kqa(
                directory=directory,
                admins=admins,
                reviewers=reviewers,
                labelled_only=options["labelled_only"],
            )
        except ImportRejected as rejected:
            raise CommandError(str(rejected), returncode=2) from rejected
        labels = result.labels
        self.stdout.write(
            f"Dataset {result.dataset.pk} ({result.dataset.name}): {result.queries_created} "
            f"new queries, {result.criteria_created} new criteria, {result.answers_created} new "
            f"answers ({result.answers_updated} already there)."
        )
        self.stdout.write(
            f"Labels file: {result.rows} rows; statements matched exactly "
            f"{result.matched_exactly}, after normalising {result.matched_normalised}, "
            f"skipped {len(result.skipped)}."
        )
        for line in result.skipped:
            if line not in result.joined:
                self.stdout.write(f"  skipped {line}")
        if result.joined:
            self.stdout.write(f"Joined statements ({len(result.joined)}), skipped:")
            for line in result.joined:
                self.stdout.write(f"  {line}")
        if labels is not None:
            self.stdout.write(
                f"Human labels: {labels.created} new, {labels.updated} changed, "
                f"{labels.unchanged} unchanged, {labels.raters} raters."
            )
