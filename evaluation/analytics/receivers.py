"""Regression checks and the analytics figures when a run ends. Connected in
EvaluationConfig.ready(); tasks are queued by name (the receiver never imports tasks): the
regression check only when the dataset has an alert, the figures for every run but a
cross-evaluation; a cross-evaluation's end refreshes at once the figures kept for the
dataset's runs, whose human line it moves."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from evaluation import task_names
from evaluation.analytics import warmup
from evaluation.kept import readers, refresh
from evaluation.kept.models import KeptFigure
from evaluation.runs import overview, scores
from evaluation.runs.models import Run
from evaluation.runs.signals import run_ended

logger = logging.getLogger(__name__)


@receiver(run_ended, dispatch_uid="analytics-warm-on-run-end")
def warm_figures_on_end(sender: object, run_id: int, **kwargs: object) -> None:
    """The run's analytics figures and its scores computed in the worker, so that the first
    reader of the analytics pages, the run page or its scores API finds them kept
    (evaluation.analytics.figures, evaluation.runs.scores)."""
    try:
        run = Run.objects.filter(pk=run_id).exclude(kind=Run.Kind.CROSS_EVALUATION).first()
        if run is not None:
            # The refresh marker, so that readers arriving while the task runs queue no
            # other recompute (taken or not, the run's end warms its figures).
            refresh.claim(run.dataset_id, run.pk, refresh.DEFAULT)
            task_names.signature(task_names.WARM_TASK, (run_id,)).apply_async()
            # Its scores too: counted in a request, the first read of a run of a million
            # votes over grouped checklists took 17 s (docs/benchmarks.md, issue 23).
            refresh.ensure(run.dataset_id, run.pk, scores.REFRESH_GROUP)
            # And the counts of its verdicts by outcome, tokens and errors (its page's
            # progress): never counted in a request once it has ended (runs.overview).
            refresh.ensure(run.dataset_id, run.pk, overview.REFRESH_GROUP)
    except Exception:  # as above: the run ended whatever happens here
        logger.exception("Could not queue the analytics figures of run %s", run_id)


# The runs whose figures a cross-evaluation's end refreshes at once, newest first: the others
# refresh when someone opens them (no spacing then: figures.served).
CROSS_EVALUATION_REFRESHES = 5


@receiver(run_ended, dispatch_uid="analytics-refresh-on-cross-evaluation-end")
def refresh_on_cross_evaluation_end(sender: object, run_id: int, **kwargs: object) -> None:
    """A finished cross-evaluation moves every run's human line (the experts' overlap):
    the figures kept for the dataset's runs are refreshed now, in the worker, so that the
    analytics page shows the new line within a refresh's time, marked "Updating" meanwhile,
    instead of "no cross-evaluation yet" until the refresh spacing runs out."""
    try:
        run = Run.objects.filter(pk=run_id, kind=Run.Kind.CROSS_EVALUATION).first()
        if run is None:
            return
        kept = (
            KeptFigure.objects.filter(
                dataset_id=run.dataset_id, kind=readers.ANALYTICS.kind, part="page"
            )
            .exclude(run_id=None)
            .values_list("run_id", flat=True)
            .distinct()
            .order_by("-run_id")[:CROSS_EVALUATION_REFRESHES]
        )
        for analysed in kept:
            refresh.now(run.dataset_id, analysed, refresh.DEFAULT)
    except Exception:  # as above: the run ended whatever happens here
        logger.exception("Could not refresh the analytics figures after run %s", run_id)


def warm_after_migrate(sender: object, plan: list | None = None, **kwargs: object) -> None:
    """`migrate` ran (connected for the evaluation app in EvaluationConfig.ready): queue the
    warm-up of every kept figure, since a migration or a new figure version leaves them
    cold. `plan` is None when a flush (not a migration) sends the signal: nothing moved."""
    if plan is not None:
        warmup.queue(why="migrate")
