"""Import preference labels made elsewhere into a pairwise session, by query external ids.

    python manage.py import_preferences --session 4 preferences.jsonl

Exit status 2 on a file with errors (every error listed; nothing is imported).
File format: docs/data-formats.md#pairwise-votes.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.pairwise.imports import ImportRejected, import_preferences_file
from evaluation.pairwise.models import PairwiseSession


class Command(BaseCommand):
    help = "Import preference labels (JSONL or CSV) into a pairwise session."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--session", type=int, required=True, help="Pairwise session id.")

    def handle(self, *args: object, **options: object) -> None:
        session = PairwiseSession.objects.filter(pk=options["session"]).first()
        if session is None:
            raise CommandError(f"No pairwise session {options['session']}.", returncode=2)
        try:
            result = import_preferences_file(session=session, path=options["file"])
        except ImportRejected as rejected:
            raise CommandError(str(rejected), returncode=2) from rejected
        self.stdout.write(
            f"Preferences: {result.created} new, {result.updated} changed, "
            f"{result.unchanged} unchanged; {result.raters} raters."
        )
