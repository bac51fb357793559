from __future__ import annotations

import logging

from django.dispatch import receiver

from evaluation import task_names
from evaluation.alerts.models import RegressionAlert
from evaluation.runs.models import Run
from evaluation.runs.signals import run_ended

logger = logging.getLogger(__name__)


@receiver(run_ended, dispatch_uid="analytics-regressions-on-run-end")
def check_regressions_on_end(sender: object, run_id: int, **kwargs: object) -> None:
    try:
        found = Run.objects.filter(pk=run_id).values_list("dataset_id", "canary_for").first()
        if found is None:
            return
        dataset_id, canary_for = found
        # A judge canary is measured when it ends, alerts or not (the run page shows it).
        alerting = RegressionAlert.objects.filter(dataset_id=dataset_id, active=True).exists()
        if alerting or canary_for is not None:
            task_names.signature(task_names.CHECK_REGRESSIONS_TASK, (run_id,)).apply_async()
    except Exception:  # the run ended; an alert that cannot be queued must not undo that
        logger.exception("Could not queue the regression check of run %s", run_id)
