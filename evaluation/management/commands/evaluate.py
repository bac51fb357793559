"""Nightly automation: load answers, run a panel over them, wait, print a summary.

    python manage.py evaluate --dataset 1 --panel "GPT panel" --answers nightly.jsonl \
        --run-label 2026-11-22

Exit status: 0 when every verdict was collected; 1 when the run did not end "done" (it ended
with errors, failed, or did not end in time); 2 for bad input (unknown dataset or panel, a
file with errors: nothing is imported then; a run refused at start, with the reason).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Dataset
from evaluation.answers.upload import import_answers_file
from evaluation.judges.models import Panel
from evaluation.runs import scores, selectors
from evaluation.runs import services as runs
from evaluation.runs.costs import run_cost_estimate
from evaluation.runs.models import Run
from evaluation.tables.rows import ImportRejected


class Command(BaseCommand):
    help = "Import answers, start a run, wait for it and print a summary (for nightly jobs)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=int, required=True, help="Dataset id.")
        parser.add_argument("--panel", required=True, help="Panel name.")
        parser.add_argument("--answers", type=Path, help="JSONL or CSV file of answers.")
        parser.add_argument("--run-label", default="", help="Grade only answers with it.")
        parser.add_argument("--name", default="", help="Name of the run.")
        parser.add_argument("--concurrency", type=int, default=16)
        parser.add_argument("--timeout", type=float, default=3600, help="Seconds to wait.")

    def handle(self, *args: object, **options: object) -> None:
        dataset = Dataset.objects.filter(pk=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"No dataset {options['dataset']}.", returncode=2)
        panel = Panel.objects.filter(name=options["panel"]).first()
        if panel is None:
            raise CommandError(f"No panel named {options['panel']!r}.", returncode=2)
        if options["answers"]:
            try:
                result = import_answers_file(dataset=dataset, path=options["answers"])
            except ImportRejected as rejected:
                raise CommandError(str(rejected), returncode=2) from rejected
            self.stdout.write(
                f"Answers: {result.created} new, {result.updated} updated "
                f"({result.systems_created} new systems)."
            )
        try:
            run = runs.run_create_and_start(
                dataset=dataset, panel=panel, name=options["name"],
                answer_run_label=options["run_label"], concurrency=options["concurrency"],
            )  # fmt: skip
        except (runs.RunStateError, runs.RunRefused) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(f"{run} started: {run.expected} verdicts to collect.")
        run = runs.wait_for(run, timeout=options["timeout"], poll=1.0)
        self._summary(run)
        progress = selectors.run_progress(run)
        if run.status != Run.Status.DONE:
            state = run.get_status_display().lower() if run.ended else "did not end in time"
            raise CommandError(
                f"{run} {state}: {progress.done}/{run.expected} verdicts, "
                f"{progress.errors} errors.{' ' + run.reason if run.reason else ''}",
                returncode=1,
            )

    def _summary(self, run: Run) -> None:
        p = selectors.run_progress(run)
        self.stdout.write(
            f"{run}: {run.get_status_display()} · {p.done}/{p.expected} verdicts · "
            f"{p.passed} pass, {p.failed} fail, {p.unparseable} unparseable, {p.errors} errors · "
            f"{p.cache_hits} from cache · {p.prompt_tokens + p.completion_tokens} tokens"
        )
        cost = run_cost_estimate(run, done=p.done, expected=p.expected)
        if cost.known:
            self.stdout.write(f"  estimated cost {cost.so_far} {settings.COST_CURRENCY}")
        else:
            self.stdout.write(f"  estimated cost unknown: no price for {', '.join(cost.unpriced)}")
        for system in scores.run_report(run).systems:
            if system.score is None:
                continue
            line = f"  {system.system}: mean score {system.score:.1%} over {system.answers} answers"
            if system.pass_rate is not None:
                line += f", {system.pass_rate:.0%} pass"
            if system.graded is not None:
                line += f", graded {system.graded:.2f}/5"
            self.stdout.write(line)
