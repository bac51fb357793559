"""Whether celery beat runs, as /healthz and the Schedules page tell it.

Beat sends `evaluation.scheduler_heartbeat` every SCHEDULER_HEARTBEAT seconds (registered in
config/celery.py). django-celery-beat keeps that entry as a PeriodicTask row named after the
task and writes the row when beat starts and, with CELERY_BEAT_SYNC_EVERY = 1, right after
each send; `date_changed` (auto_now) then says when beat last showed life. That is beat's
own state, so it reads the same from every web process and machine, needs no table of ours,
and stays true while the workers are down (the worker check says that). Two other signals
were left: a row written by the heartbeat task would go quiet when only the workers stop,
and Celery 5.7's beat remote control (a broker ping) needs a fanout exchange, which the
filesystem broker of `dev.py run` does not have.

Beat counts as seen within three heartbeats. Only enabled schedules need it: with none,
/healthz reports its absence as a warning, not a failure.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone
from django.utils.timesince import timesince
from django_celery_beat.models import PeriodicTask

from evaluation import task_names

MISSED_HEARTBEATS = 3


@dataclass(frozen=True)
class SchedulerState:
    seen_at: dt.datetime | None  # beat's last write of its heartbeat row; None: never
    now: dt.datetime

    @property
    def seen(self) -> bool:
        """Seen within three heartbeats."""
        allowed = dt.timedelta(seconds=MISSED_HEARTBEATS * settings.SCHEDULER_HEARTBEAT)
        return self.seen_at is not None and self.now - self.seen_at <= allowed

    @property
    def since(self) -> str:
        """How long ago it was seen, "12 seconds" or "14 minutes"; empty if never."""
        if self.seen_at is None:
            return ""
        seconds = max(int((self.now - self.seen_at).total_seconds()), 0)
        if seconds < 60:
            return f"{seconds} second{'' if seconds == 1 else 's'}"
        return timesince(self.seen_at, self.now, depth=1)

    def describe(self) -> str:
        """For example "seen 12 seconds ago", "not seen for 14 minutes", "never seen"."""
        if self.seen_at is None:
            return "never seen"
        return f"seen {self.since} ago" if self.seen else f"not seen for {self.since}"


def state(*, now: dt.datetime | None = None) -> SchedulerState:
    seen_at = (
        PeriodicTask.objects.filter(name=task_names.SCHEDULER_HEARTBEAT_TASK)
        .values_list("date_changed", flat=True)
        .first()
    )
    return SchedulerState(seen_at=seen_at, now=now or timezone.now())


def enabled_schedules() -> int:
    """Beat's enabled tasks that start scheduled runs: set on the Schedules pages or in the
    site administration."""
    return PeriodicTask.objects.filter(enabled=True, task=task_names.SCHEDULED_RUN_TASK).count()
