"""Warm every kept figure (run scores, analytics, agreement, review queues) in the
background, or here with --now, so that no page's first reader counts one:

    python manage.py warm_figures              # queue the warm-up task, every dataset
    python manage.py warm_figures 3 --now      # dataset 3, in this process
    python manage.py warm_figures --unpaced    # every run's figures queued at once

The newest run of each panel and every run's scores are queued at once; the older runs'
other figures are counted one at a time with a pause between (the paced steps,
evaluation.analytics.warmup), so that a warm-up never holds the workers' cores while
people read. --unpaced queues them all at once: for a quiet window, or a benchmark.

`migrate` and each start of the web server queue it already (evaluation.analytics.warmup);
this is for after a cache flush, or to watch it run. DATASET is an id or a name.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.analytics import warmup
from evaluation.management.commands.export_dataset import find_dataset


class Command(BaseCommand):
    help = "Warm every kept figure (queued, or here with --now), before the pages' readers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", nargs="?", help="A dataset's id or name (all: omit).")
        parser.add_argument(
            "--now",
            action="store_true",
            help="Warm here: agreement and queues counted in this process; the runs' scores "
            "and analytics still go to the workers, as their own refreshes.",
        )
        parser.add_argument(
            "--unpaced",
            action="store_true",
            help="Queue every run's cold figures at once, not the older runs' one at a time.",
        )

    def handle(self, *args, **options) -> None:
        dataset_id = find_dataset(options["dataset"]).pk if options["dataset"] else None
        paced = not options["unpaced"]
        if not options["now"]:
            if not warmup.queue(dataset_id, why="warm_figures command", asked=True, paced=paced):
                raise CommandError("Could not queue the warm-up: is the broker reachable?")
            self.stdout.write("Warm-up queued.")
            return
        warmed = warmup.warm(dataset_id, paced=paced)
        self.stdout.write(
            f"Warmed {len(warmed.datasets)} dataset(s); {len(warmed.queued)} run refresh(es) "
            f"queued: {warmed.queued}; older runs paced for dataset(s) {warmed.paced}"
        )
        if warmed.failed:
            raise CommandError(f"Warm-up failed for {warmed.failed} (the log has why).")
