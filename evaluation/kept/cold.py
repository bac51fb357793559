"""The one rule for a kept figure that a request needs and nobody has computed yet (a cold
figure): it is never computed inside the request.

A figure is cold after seeding, a migration, a deploy that changes a figure's version (its
shape moves, and rows kept by the release before are never served as this one's), or a
cache flush. Counting it may take seconds at a million verdicts and minutes at twenty
million: paid by whichever reader came first, it was the p99 of every page right after
seeding (issue 44). Instead the reader queues the figure's refresh (`evaluation.kept.
refresh`: one task however many readers ask, back-off after failures) and serves what it
has: an earlier state's figures marked "updating", or a placeholder that says the figures
are being computed. The warm-up task (evaluation.analytics.warmup) fills every figure
before the first reader when it can: queued by `migrate`, by each start of the web server
and by the seeders.

`settings.FIGURES_COLD_IN_REQUEST` keeps the old behaviour (the reader computes it) for the
test suite, whose tests mostly read a figure once, right after writing its data, without a
worker. With an eager Celery (a demo without a worker) the queued refresh has run by the
time `fill` returns, and the reader finds the figure kept.
"""

from __future__ import annotations

from enum import Enum

from django.conf import settings

from evaluation.kept import refresh


class Cold(Enum):
    """What a reader that found its figure cold does next."""

    # Compute it here, as before the rule (the test suite; a read-only snapshot, where
    # nothing can be kept and no task can be trusted to see the snapshot).
    COMPUTE = "compute"
    # The refresh ran inside the call (eager Celery): read the kept figure again.
    KEPT = "kept"
    # The refresh is queued (or already was, or waits out a failure's back-off): serve the
    # placeholder, marked updating.
    QUEUED = "queued"


def fill(dataset_id: int, run_id: int, group: str, *, read_only: bool = False) -> Cold:
    """The rule, for a run's figure of refresh group `group` found cold by a reader."""
    if read_only or settings.FIGURES_COLD_IN_REQUEST:
        return Cold.COMPUTE
    if refresh.ensure(dataset_id, run_id, group) and refresh.eager():
        return Cold.KEPT
    return Cold.QUEUED
