"""The recount of one run's kept figures of one refresh group, under the marker the caller
holds: what the refresh task does when a reader queued it, and what the warm-up's paced
steps do for the runs nobody has opened yet (evaluation.analytics.warmup)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from evaluation.agreement import kept as agreement_kept
from evaluation.analytics import figures
from evaluation.kept import cold, refresh
from evaluation.runs import overview, scores, stability
from evaluation.runs.models import Run

logger = logging.getLogger(__name__)


def recount_run(run: Run, group: str) -> bool:
    """Count the run's figures of `group` for its current state; False when the recount
    failed (logged, the marker kept as a failure) or the run is archived (the marker goes:
    its figures are those kept when it was archived, evaluation.archive)."""
    if run.archived_at is not None:
        refresh.release(run.dataset_id, run.pk, group)
        return False
    if group == scores.REFRESH_GROUP:
        return recompute(run, group, lambda: scores.refresh_scores(run))
    if group == stability.REFRESH_GROUP:
        return recompute(run, group, lambda: stability.run_stability(run))
    if group == overview.REFRESH_GROUP:
        return recompute(run, group, lambda: overview.keep_counts(run))
    if group == agreement_kept.REFRESH_GROUP:
        return recompute(run, group, lambda: agreement_kept.keep_cells(run.dataset, run))
    return recompute(run, group, lambda: figures.refresh_group(run, group))


def recompute(run: Run, group: str, compute: Callable[[], None]) -> bool:
    """Run `compute` under counting, then release the run's marker of `group`, or keep it
    as a failure that readers wait out (evaluation.kept.refresh)."""
    started = time.monotonic()
    try:
        with cold.counting():  # a figure it reads that is cold is counted here
            compute()
    except Exception as error:
        logger.exception("Analytics refresh of run %s (%s) failed", run.pk, group)
        failure = refresh.fail(run.dataset_id, run.pk, group, error)
        logger.warning(
            "Analytics refresh of run %s (%s): %d failed tries in a row, next at %s",
            run.pk, group, failure.tries, failure.retry_at.isoformat(),
        )  # fmt: skip
        return False
    refresh.release(run.dataset_id, run.pk, group)
    # What a refresh of each group costs, for operators (and bench.web) to read: the
    # spacing after labels grows with it (evaluation.kept.refresh.spacing).
    logger.info("Refreshed run %s (%s) in %.2f s", run.pk, group, time.monotonic() - started)
    return True
