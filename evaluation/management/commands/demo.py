from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from evaluation.demo.loader import load_demo


class Command(BaseCommand):
    help = "Load the demo dataset, users and answers. Safe to run again: nothing is doubled."

    def handle(self, *args: object, **options: object) -> None:
        dataset = load_demo()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo dataset “{dataset.name}” ready with {dataset.queries.count()} queries.\n"
                f"Log in as {settings.DEMO_ADMIN_USERNAME} / {settings.DEMO_PASSWORD} (admin); "
                f"experts alice and bob, reviewer rita use the same password.\n"
                f"Start a run on the dataset's Runs page with the “Offline checks” panel "
                f"(no-LLM checks, no API key needed); then label and adjudicate on its Review "
                f"page, and cross-evaluate the first query's two perfect answers on its "
                f"Cross-evaluation page."
            )
        )
