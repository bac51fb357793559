"""The next run the Schedules page shows is the one beat will send (issue 28, item 2): a
nightly run at 02:30 was shown as "02:29" (the page's `now` was read a few microseconds
before Celery's), and a last send long past gave a time already gone.

Each case is checked against django-celery-beat itself: its scheduler's entry (ModelEntry,
what DatabaseScheduler builds from the row) is not due a second before the time shown and
is due at it. Midnight, the time zone's own date, daylight saving time both ways (Paris)
and the weekday choices; no database needed."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from config.celery import app as celery_app
from evaluation import task_names
from evaluation.schedules import services as schedules
from evaluation.schedules import timing

UTC = dt.UTC
PARIS = ZoneInfo("Europe/Paris")


def task(at: str, *, days: str = "*", zone: str = "UTC", last=None, changed=None):
    """Beat's task as the Schedules page writes it (unsaved): `at` is "HH:MM"."""
    hour, minute = at.split(":")
    crontab = CrontabSchedule(
        minute=str(int(minute)), hour=str(int(hour)), day_of_week=days, day_of_month="*",
        month_of_year="*", timezone=zone,
    )  # fmt: skip
    return PeriodicTask(
        name="Dataset 1: Nightly", task=task_names.SCHEDULED_RUN_TASK, crontab=crontab,
        enabled=True, last_run_at=last, date_changed=changed,
    )  # fmt: skip


def beat_sends(periodic: PeriodicTask, at: dt.datetime) -> bool:
    """Whether django-celery-beat's scheduler finds the task due at `at`."""
    entry = ModelEntry(periodic, app=celery_app)
    entry.schedule.nowfun = lambda: at
    return entry.is_due().is_due


def next_run_as_beat_sees_it(periodic: PeriodicTask) -> dt.datetime:
    shown = schedules.next_run(periodic)
    assert not beat_sends(periodic, shown - dt.timedelta(seconds=1)), "beat sends it earlier"
    assert beat_sends(periodic, shown), "beat does not send it then"
    return shown


def paris(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=PARIS)


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


def test_0230_is_shown_as_0230_to_the_second_not_0229():
    created = utc(2026, 11, 26, 20, 0, 12, 345678)
    shown = next_run_as_beat_sees_it(task("02:30", changed=created))
    assert shown == utc(2026, 11, 27, 2, 30)
    assert (shown.second, shown.microsecond) == (0, 0)


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        (utc(2026, 11, 27, 1, 0), utc(2026, 11, 27, 2, 30)),  # later the same day
        (utc(2026, 11, 27, 2, 29, 59), utc(2026, 11, 27, 2, 30)),
        (utc(2026, 11, 27, 2, 30, 0, 1), utc(2026, 11, 28, 2, 30)),  # just sent: tomorrow
        (utc(2026, 11, 27, 15, 51), utc(2026, 11, 28, 2, 30)),  # already past today
    ],
)
def test_the_first_tick_after_the_last_send(since, expected):
    assert next_run_as_beat_sees_it(task("02:30", last=since)) == expected


def test_a_schedule_never_sent_counts_from_its_last_change_as_beat_does():
    created = utc(2026, 11, 27, 15, 51, 40)
    assert next_run_as_beat_sees_it(task("15:52", changed=created)) == utc(2026, 11, 27, 15, 52)
    assert next_run_as_beat_sees_it(task("15:51", changed=created)) == utc(2026, 11, 28, 15, 51)


def test_a_tick_beat_missed_is_shown_in_the_past_and_is_due_at_once():
    """Beat was not running on the night: the tick is overdue, and beat sends it as soon as
    it runs (the page marks it overdue)."""
    periodic = task("02:30", last=utc(2026, 11, 20, 2, 30, 1))
    shown = schedules.next_run(periodic)
    assert shown == utc(2026, 11, 21, 2, 30)
    assert beat_sends(periodic, utc(2026, 11, 27, 15, 51))


@pytest.mark.parametrize(
    ("at", "since", "expected"),
    [
        ("00:05", utc(2026, 11, 27, 23, 50), utc(2026, 11, 28, 0, 5)),
        ("23:59", utc(2026, 11, 27, 23, 59, 30), utc(2026, 11, 28, 23, 59)),
        ("00:00", utc(2026, 12, 31, 23, 59), utc(2027, 1, 1, 0, 0)),  # and the year
    ],
)
def test_across_midnight(at, since, expected):
    assert next_run_as_beat_sees_it(task(at, last=since)) == expected


def test_the_time_is_the_zones_own_not_utc():
    """00:30 in Paris on the 28th is 23:30 UTC on the 27th: the day is Paris's."""
    periodic = task("00:30", zone="Europe/Paris", last=paris(2026, 11, 28, 0, 10))
    assert next_run_as_beat_sees_it(periodic) == paris(2026, 11, 28, 0, 30)
    assert schedules.next_run(periodic) == utc(2026, 11, 27, 23, 30)
    # Sent at 00:30 Paris (23:30 UTC the day before): the next is Paris's next day.
    sent = task("00:30", zone="Europe/Paris", last=utc(2026, 11, 27, 23, 30, 1))
    assert next_run_as_beat_sees_it(sent) == utc(2026, 11, 28, 23, 30)


def test_spring_forward_the_hour_that_does_not_exist_and_the_day_after():
    """28 March 2027, Paris: 02:00 becomes 03:00. A nightly 02:30 is sent at 03:30 summer
    time that night (Celery reads the missing hour with winter's offset), then at 02:30."""
    nightly = task("02:30", zone="Europe/Paris", last=paris(2027, 3, 27, 2, 30, 1))
    shown = next_run_as_beat_sees_it(nightly)
    assert shown == utc(2027, 3, 28, 1, 30) == paris(2027, 3, 28, 3, 30)
    after = task("02:30", zone="Europe/Paris", last=shown + dt.timedelta(seconds=1))
    assert next_run_as_beat_sees_it(after) == paris(2027, 3, 29, 2, 30) == utc(2027, 3, 29, 0, 30)
    # A time that exists: 09:00 on both days, 23 hours apart.
    morning = task("09:00", zone="Europe/Paris", last=paris(2027, 3, 27, 9, 0, 1))
    shown = next_run_as_beat_sees_it(morning)
    assert shown == utc(2027, 3, 28, 7, 0)
    assert shown - paris(2027, 3, 27, 9, 0) == dt.timedelta(hours=23)


def test_fall_back_the_repeated_hour_is_sent_once():
    """25 October 2026, Paris: 03:00 becomes 02:00 again. 02:30 is sent at its first
    occurrence (summer time), and not again an hour later."""
    nightly = task("02:30", zone="Europe/Paris", last=paris(2026, 10, 24, 2, 30, 1))
    first = next_run_as_beat_sees_it(nightly)
    assert first == utc(2026, 10, 25, 0, 30)
    sent = task("02:30", zone="Europe/Paris", last=first + dt.timedelta(seconds=1))
    assert not beat_sends(sent, utc(2026, 10, 25, 1, 30))  # 02:30 again, winter time
    assert next_run_as_beat_sees_it(sent) == utc(2026, 10, 26, 1, 30)  # 02:30 winter time


@pytest.mark.parametrize(
    ("days", "since", "expected"),
    [
        # Friday 27 November 2026 after the tick: Monday.
        ("mon-fri", utc(2026, 11, 27, 2, 30, 1), utc(2026, 11, 30, 2, 30)),
        # Saturday: Monday too.
        ("mon-fri", utc(2026, 11, 28, 1, 0), utc(2026, 11, 30, 2, 30)),
        # Monday before the tick: the same day.
        ("mon-fri", utc(2026, 11, 30, 1, 0), utc(2026, 11, 30, 2, 30)),
        # Wednesday: Saturday.
        ("sat,sun", utc(2026, 11, 25, 12, 0), utc(2026, 11, 28, 2, 30)),
        # Saturday after the tick: Sunday; Sunday after the tick: next Saturday.
        ("sat,sun", utc(2026, 11, 28, 2, 30, 1), utc(2026, 11, 29, 2, 30)),
        ("sat,sun", utc(2026, 11, 29, 2, 30, 1), utc(2026, 12, 5, 2, 30)),
    ],
)
def test_the_days_of_the_week(days, since, expected):
    assert next_run_as_beat_sees_it(task("02:30", days=days, last=since)) == expected


def test_weekdays_in_the_zones_own_days():
    """Monday 00:30 in Paris is Sunday 23:30 UTC: a mon-fri schedule fires then, and not on
    Friday night UTC's Saturday."""
    periodic = task("00:30", days="mon-fri", zone="Europe/Paris", last=paris(2026, 11, 27, 1))
    assert next_run_as_beat_sees_it(periodic) == paris(2026, 11, 30, 0, 30)
    assert schedules.next_run(periodic) == utc(2026, 11, 29, 23, 30)


def test_a_paused_schedule_has_no_next_run():
    periodic = task("02:30", last=utc(2026, 11, 27, 2, 30))
    periodic.enabled = False
    assert schedules.next_run(periodic) is None


def test_next_tick_is_plain_celery():
    """timing.next_tick needs nothing but Celery's crontab."""
    from celery.schedules import crontab

    assert timing.next_tick(crontab(minute=30, hour=2), utc(2026, 11, 27, 15)) == utc(
        2026, 11, 28, 2, 30
    )
