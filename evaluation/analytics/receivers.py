"""Regression checks and the analytics figures when a run ends. Connected in
EvaluationConfig.ready(); tasks are queued by name (the receiver never imports tasks): the
regression check only when the dataset has an alert, the figures for every run but a
cross-evaluation."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from evaluation import task_names
from evaluation.analytics import refresh
from evaluation.models import Run
from evaluation.runs.signals import run_ended

logger = logging.getLogger(__name__)


@receiver(run_ended, dispatch_uid="analytics-warm-on-run-end")
def warm_figures_on_end(sender: object, run_id: int, **kwargs: object) -> None:
    """The run's analytics figures computed in the worker, so that the first reader of the
    analytics pages finds them (evaluation.analytics.figures)."""
    try:
        run = Run.objects.filter(pk=run_id).exclude(kind=Run.Kind.CROSS_EVALUATION).first()
        if run is not None:
            # The refresh marker, so that readers arriving while the task runs queue no
            # other recompute (taken or not, the run's end warms its figures).
            refresh.claim(run.dataset_id, run.pk, refresh.DEFAULT)
            task_names.signature(task_names.WARM_TASK, (run_id,)).apply_async()
    except Exception:  # as above: the run ended whatever happens here
        logger.exception("Could not queue the analytics figures of run %s", run_id)
