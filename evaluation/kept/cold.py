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

The refresh tasks and the warm-up count inside `counting()`: a figure they compute may read
another kept figure that is cold (a run's analytics read the cross-evaluation figures for
their human line), and there it is counted, not served as a placeholder that would then be
kept inside the figure that read it.

Figures kept per run take the run's refresh marker; figures kept per dataset (the review
queues, the cross-evaluation figures, the agreement counts without a run) the dataset's
(`run_id` None, evaluation.kept.refresh).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import Any

from django.conf import settings
from django.db.models import Case, IntegerField, Value, When

from evaluation.kept import figures as kept_figures
from evaluation.kept import refresh
from evaluation.kept.readers import State


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


# Set inside `counting()`, as kept.figures.read_only: the figure that finds another cold may
# be deep inside one that a task computes.
_background = kept_figures.ThreadFlag()


def counting() -> AbstractContextManager[None]:
    """Inside, a cold figure is counted where it is found (`fill` says COMPUTE): the
    refresh tasks and the warm-up, which are the background the rule sends counts to."""
    return _background.on()


def counted_here() -> bool:
    """A cold figure is counted by its reader: the test suite's setting, or a task."""
    return settings.FIGURES_COLD_IN_REQUEST or bool(_background)


def fill(dataset_id: int, run_id: int | None, group: str, *, read_only: bool = False) -> Cold:
    """The rule, for a figure of refresh group `group` found cold by a reader: a run's, or
    with `run_id` None a dataset's."""
    if read_only or counted_here():
        return Cold.COMPUTE
    if refresh.ensure(dataset_id, run_id, group) and refresh.eager():
        return Cold.KEPT
    return Cold.QUEUED


@dataclass(frozen=True)
class Served:
    """A run's kept figure as a request gets it: `figures` None while it is counted for the
    first time (the placeholder); `fresh` False while an earlier state's (or none) is
    served, its refresh queued."""

    figures: Any | None
    fresh: bool
    computed_at: datetime | None = None
    failure: refresh.Failure | None = None

    @property
    def updating(self) -> bool:
        return not self.fresh

    def facts(self) -> dict:
        """What an API answer carries about it (the keys of the scores' facts)."""
        return refresh.facts(
            updating=self.updating, computed_at=self.computed_at, failure=self.failure
        )


def latest(state: State) -> Served:
    """The value kept for `state` (fresh), else the latest of its slot, kept for an earlier
    state of the run (stale), else nothing: one query."""
    found = (
        kept_figures.slot(state)
        .order_by(
            Case(When(key=state.key, then=Value(0)), default=Value(1), output_field=IntegerField()),
            "-computed_at",
        )
        .values_list("key", "cells", "computed_at")
        .first()
    )
    if found is None:
        return Served(None, False)
    key, cells, computed_at = found
    return Served(cells, key == state.key, computed_at)


def served(state: State, group: str, compute: Callable[[], Any]) -> Served:
    """A figure of one ended run (`state`'s run) for a page or the API, under the rule: kept
    for the run's state; else the earlier state's, marked updating; else the placeholder
    (figures None). Either way the refresh of `group` is queued, once for every reader, and
    its task counts the figure (`compute`, kept under `state`). Counted here only where
    `fill` says so (the test suite, a read-only snapshot: without an earlier state's)."""
    dataset_id, run_id = state.dataset_id, state.basis.run_id
    found = latest(state)
    if found.fresh:
        return found
    # The test suite (FIGURES_COLD_IN_REQUEST) counts a figure that is not current, as
    # every reader did before the rule; production serves the earlier state's meanwhile.
    if found.figures is not None and not counted_here():
        if refresh.ensure(dataset_id, run_id, group, after=found.computed_at) and refresh.eager():
            found = latest(state)
    else:
        decided = fill(dataset_id, run_id, group, read_only=kept_figures.writes_refused())
        if decided is Cold.COMPUTE:  # found missing just now: no second read
            figures = compute()
            kept_figures.store(state, figures)
            return Served(figures, True)
        if decided is Cold.KEPT:
            found = latest(state)
    if found.fresh:
        return found
    return replace(found, failure=refresh.failure(dataset_id, run_id, group))
