"""Nightly runs for tests: a run's items graded again a night later (the trend, the warm-up
of older runs)."""

from __future__ import annotations

from datetime import timedelta

from evaluation.runs.models import Run, Verdict


def next_night(run: Run, night: int, *, panel=None, **fields) -> Run:
    """The same items graded again a night later, every `night + 2`-th verdict flipped:
    each night's scores differ."""
    later = Run.objects.create(
        dataset=run.dataset, panel=panel or run.panel, kind=run.kind, name=f"Night {night}",
        status=Run.Status.DONE, snapshot=run.snapshot, created_by=run.created_by,
        started_at=run.finished_at + timedelta(days=night),
        finished_at=run.finished_at + timedelta(days=night, hours=1), **fields,
    )  # fmt: skip
    copies = []
    for n, vote in enumerate(Verdict.objects.filter(run=run).order_by("pk")):
        vote.pk, vote.run = None, later
        if n % (night + 2) == 0 and vote.outcome in ("pass", "fail"):
            vote.outcome = "fail" if vote.outcome == "pass" else "pass"
        copies.append(vote)
    Verdict.objects.bulk_create(copies)
    later.expected = len(copies)
    later.save(update_fields=["expected"])
    return Run.objects.select_related("dataset").get(pk=later.pk)
