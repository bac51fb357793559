from __future__ import annotations

from celery import shared_task
from django.db import Error

from evaluation import task_names, transient
from evaluation.alerts import delivery
from evaluation.alerts import services as alerts
from evaluation.runs.models import Run


@shared_task(
    name=task_names.CHECK_REGRESSIONS_TASK, bind=True, acks_late=True, reject_on_worker_lost=True
)
def check_regressions(self, run_id: int) -> int:
    """Alerts for a run that just ended; returns how many regressions it recorded. Safe to
    redeliver: each regression is recorded once (a unique constraint) and its sending is
    claimed before it is made. Waits out a database restart (transient.retry_task)."""
    try:
        run = Run.objects.select_related("dataset").filter(pk=run_id).first()
        if run is None:
            return 0
        return len(alerts.check_run(run))
    except Error as exc:
        transient.retry_task(self, exc)


# max_retries=None: the webhook's attempts are counted on its event (delivery.py).
@shared_task(
    name=task_names.SEND_ALERT_TASK, bind=True, acks_late=True, reject_on_worker_lost=True,
    max_retries=None,
)  # fmt: skip
def send_alert(self, event_id: int) -> None:
    """A regression's email and webhook (delivery.deliver); the task comes back for each
    further attempt of a failed webhook. Safe to redeliver: every send is claimed first."""
    try:
        wait = delivery.deliver(event_id=event_id)
    except Error as exc:
        transient.retry_task(self, exc)
    # Run eagerly (CELERY_TASK_ALWAYS_EAGER), a retry would run again at once, never
    # waiting: the webhook then stays "waiting to try again" without a worker to try.
    if wait is not None and not self.request.is_eager:
        raise self.retry(countdown=wait)
