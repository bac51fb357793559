"""When celery beat sends a schedule's task next, computed as beat computes it. Plain Python
on Celery's crontab (no Django, no database), tested in tests/evaluation/schedules.

Beat (django-celery-beat's DatabaseScheduler) asks the crontab `is_due(last_run_at)`, which
is Celery's `remaining(*remaining_delta(last_run_at))`: the crontab's first tick after the
last send, a wall-clock time in the crontab's zone (`start + delta`), minus now, in real
time. So beat sends the task at that tick, which is what `next_tick` returns. The page used
`now + remaining_estimate(...)` instead: its own `now` was read a few microseconds before
Celery's, so 02:30 came out as 02:29:59.99997 and was shown as 02:29; and a last send long
past gave a tick in the past.
"""

from __future__ import annotations

import datetime as dt

from celery.schedules import crontab


def next_tick(schedule: crontab, after: dt.datetime) -> dt.datetime:
    """The first tick of `schedule` after `after` (an aware time), in UTC. A wall-clock time
    that does not exist in the crontab's zone (02:30 on a spring-forward night) is read with
    the offset before the change, as Celery reads it: 03:30 summer time that night."""
    start, delta, _ = schedule.remaining_delta(after)
    return (start + delta).astimezone(dt.UTC)
