"""Beat's heartbeat row as celery beat leaves it (evaluation/schedules/beat.py), for tests
of what /healthz and the Schedules page say without a beat process; and the helpers of the
tests with a real one."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from evaluation import task_names


def beat_seen(ago: dt.timedelta) -> None:
    """Beat's last write of its heartbeat entry, `ago` before now."""
    every, _ = IntervalSchedule.objects.get_or_create(every=60, period=IntervalSchedule.SECONDS)
    name = task_names.SCHEDULER_HEARTBEAT_TASK
    task, _ = PeriodicTask.objects.get_or_create(name=name, task=name, interval=every)
    when = timezone.now() - ago
    # .update(): date_changed is auto_now, which save() would set to now.
    PeriodicTask.objects.filter(pk=task.pk).update(last_run_at=when, date_changed=when)


def coming_minute() -> dt.datetime:
    """The next whole minute, local time, at least 10 seconds away (a schedule saved at that
    minute's start would wait a day): a time of day the Schedules page accepts and beat
    sends within a minute."""
    now = timezone.localtime()
    if now.second >= 50:
        time.sleep(61 - now.second)
        now = timezone.localtime()
    return (now + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)


def wait_for(condition: Callable[[], object], timeout: float, failure: Callable[[], str]):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.3)
    raise AssertionError(failure())
