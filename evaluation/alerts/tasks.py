from __future__ import annotations

from celery import shared_task

from evaluation import task_names
from evaluation.alerts import services as alerts
from evaluation.models import Run


@shared_task(name=task_names.CHECK_REGRESSIONS_TASK, acks_late=True, reject_on_worker_lost=True)
def check_regressions(run_id: int) -> int:
    """Alerts for a run that just ended; returns how many regressions were sent. Safe to
    redeliver: each regression is recorded once (a unique constraint) before it is sent."""
    run = Run.objects.select_related("dataset").filter(pk=run_id).first()
    if run is None:
        return 0
    return len(alerts.check_run(run))
