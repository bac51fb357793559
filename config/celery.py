"""The Celery app. Workers start with `celery -A config worker`."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Each app's tasks module, and the packages that keep tasks of their own.
app.autodiscover_tasks()
app.autodiscover_tasks(
    [
        "config",
        "evaluation.alerts",
        "evaluation.analytics",
        "evaluation.cross_evaluation",
        "evaluation.datasets",
        "evaluation.formality",
        "evaluation.pairwise",
        "evaluation.runs",
        "evaluation.schedules",
    ]
)


@app.on_after_configure.connect
def add_scheduler_heartbeat(sender: Celery, **kwargs) -> None:
    """Beat's heartbeat, registered in code so that every beat sends it with no setup:
    django-celery-beat's scheduler copies it into its table at start (a periodic task named
    after the task). The task does nothing; beat's own write of the row when it sends it is
    the heartbeat that /healthz and the Schedules page read (evaluation/schedules/beat.py).
    It expires after one interval, so that a queue nobody consumes keeps no backlog of them."""
    from django.conf import settings

    from evaluation import task_names

    every = settings.SCHEDULER_HEARTBEAT
    name = task_names.SCHEDULER_HEARTBEAT_TASK
    sender.add_periodic_task(every, sender.signature(name), name=name, expire_seconds=every)


@task_prerun.connect
@task_postrun.connect
def close_old_connections(sender=None, **kwargs) -> None:
    """Around each task, drop a broken or expired database connection, as Django does
    around each request. Celery would otherwise close every connection around every task
    (a new PostgreSQL connection per task); CELERY_DB_REUSE_MAX turns that off."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # an eager task runs inside the caller's transaction
    from django.db import close_old_connections

    close_old_connections()


def ensure_filesystem_broker_folders() -> None:
    """The embedded filesystem transport needs its folders before the first message."""
    from django.conf import settings

    for folder in getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}).values():
        if isinstance(folder, str) and settings.CELERY_BROKER_URL.startswith("filesystem://"):
            os.makedirs(folder, exist_ok=True)
