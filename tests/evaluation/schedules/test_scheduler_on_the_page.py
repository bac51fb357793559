"""The Schedules page tells when its schedules will not fire, and when they will (issue 28,
item 2): a warning, saying what to run, while enabled schedules exist and no scheduler
(celery beat) has been seen within three heartbeats; the next run as beat will send it; a
changed time counted from the change, not from the last send."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from config.celery import app as celery_app
from evaluation.schedules import services as schedules
from evaluation.schedules.models import RunSchedule
from tests.factories import PanelFactory, offline_judge
from tests.support.beat import beat_seen
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

WARNING = 'id="scheduler-warning"'
WHAT_TO_RUN = "<code>celery -A config beat --loglevel INFO</code>"


@pytest.fixture
def setting(dataset):
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    return answer.system, PanelFactory(name="Night panel", judges=[offline_judge("Checks")])


def add(client, dataset, setting, **extra):
    system, panel = setting
    data = {"name": "Nightly", "system": system.pk, "panel": panel.pk, "at": "02:30",
            "days": "*", "enabled": "on", **extra}  # fmt: skip
    response = client.post(reverse("dataset-schedules", args=[dataset.pk]), data)
    assert response.status_code == 302, response.context["form"].errors
    return RunSchedule.objects.select_related("task__crontab").get(name=data["name"])


def page(client, dataset) -> str:
    response = client.get(reverse("dataset-schedules", args=[dataset.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_no_scheduler_ever_seen_is_a_warning_saying_what_to_run(owner_client, dataset, setting):
    assert WARNING not in page(owner_client, dataset)  # no schedule: nothing to warn of
    add(owner_client, dataset, setting)
    shown = page(owner_client, dataset)
    assert WARNING in shown and "These schedules will not fire" in shown
    assert "No scheduler (celery beat) has ever been seen by this site." in shown
    assert WHAT_TO_RUN in shown and "python3.11 dev.py run" in shown


def test_a_scheduler_not_seen_for_ten_minutes_is_a_warning(owner_client, dataset, setting):
    add(owner_client, dataset, setting)
    beat_seen(dt.timedelta(minutes=10, seconds=5))
    shown = page(owner_client, dataset)
    assert WARNING in shown and "has not been seen for 10\xa0minutes" in shown


def test_a_scheduler_seen_within_three_heartbeats_is_no_warning(owner_client, dataset, setting):
    add(owner_client, dataset, setting)
    beat_seen(dt.timedelta(minutes=2, seconds=50))  # SCHEDULER_HEARTBEAT 60 s: 3 heartbeats
    assert WARNING not in page(owner_client, dataset)


def test_paused_schedules_need_no_scheduler(owner_client, dataset, setting):
    add(owner_client, dataset, setting, enabled="")
    shown = page(owner_client, dataset)
    assert WARNING not in shown and "paused" in shown


def test_the_next_run_shown_is_the_tick_beat_sends_to_the_minute(owner_client, dataset, setting):
    schedule = add(owner_client, dataset, setting)
    nxt = schedules.next_run(schedule.task)
    assert nxt.astimezone(dt.UTC).time() == dt.time(2, 30)  # TIME_ZONE is UTC here
    assert timezone.now() < nxt <= timezone.now() + dt.timedelta(days=1)
    shown = page(owner_client, dataset)
    assert f'<td class="nowrap">{nxt:%Y-%m-%d} 02:30</td>' in shown
    assert "02:29" not in shown and "overdue" not in shown


def test_the_time_zone_is_named_in_the_form(owner_client, dataset, settings):
    settings.TIME_ZONE = "Europe/Paris"
    shown = page(owner_client, dataset)
    assert "in the server&#x27;s time zone (Europe/Paris)" in shown


def test_a_tick_beat_missed_is_marked_overdue(owner_client, dataset, setting):
    schedule = add(owner_client, dataset, setting)
    PeriodicTask.objects.filter(pk=schedule.task_id).update(
        last_run_at=timezone.now() - dt.timedelta(days=3)
    )
    assert "overdue" in page(owner_client, dataset)


def test_a_time_moved_earlier_is_counted_from_the_change_not_sent_at_once(
    owner_client, dataset, setting
):
    """Sent yesterday at this time, then moved to five minutes ago: beat counted from the
    last send and found the new time overdue, so it sent the run at once. Now it is due
    tomorrow, and the page says so."""
    schedule = add(owner_client, dataset, setting)
    now = timezone.now()
    PeriodicTask.objects.filter(pk=schedule.task_id).update(last_run_at=now - dt.timedelta(days=1))
    earlier = timezone.localtime(now - dt.timedelta(minutes=5))
    system, panel = setting
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    changed = {"name": "Nightly", "system": system.pk, "panel": panel.pk,
               "at": f"{earlier:%H:%M}", "days": "*", "enabled": "on"}  # fmt: skip
    assert owner_client.post(edit, changed).status_code == 302
    task = PeriodicTask.objects.select_related("crontab").get(pk=schedule.task_id)
    assert task.last_run_at is None and task.date_changed >= now
    entry = ModelEntry(task, app=celery_app)
    assert not entry.is_due().is_due  # beat: not now
    nxt = schedules.next_run(task)
    assert now + dt.timedelta(hours=23) < nxt < now + dt.timedelta(days=1)
    assert "overdue" not in page(owner_client, dataset)


def test_renaming_keeps_the_last_send(owner_client, dataset, setting):
    schedule = add(owner_client, dataset, setting)
    sent = timezone.now() - dt.timedelta(hours=1)
    PeriodicTask.objects.filter(pk=schedule.task_id).update(last_run_at=sent)
    system, panel = setting
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    renamed = {"name": "Every night", "system": system.pk, "panel": panel.pk, "at": "02:30",
               "days": "*", "enabled": "on"}  # fmt: skip
    assert owner_client.post(edit, renamed).status_code == 302
    assert PeriodicTask.objects.get(pk=schedule.task_id).last_run_at == sent


# Issue 40: the page always says whether the scheduler was seen and when, from the heartbeat
# /healthz reads, not only when enabled schedules wait for a scheduler that is missing.
STATE = 'id="scheduler-state"'


def test_the_page_says_when_the_scheduler_was_seen(owner_client, dataset, setting):
    beat_seen(dt.timedelta(seconds=20))
    shown = page(owner_client, dataset)
    assert STATE in shown and 'data-scheduler-seen="yes"' in shown
    assert "scheduler running" in shown and WARNING not in shown
    assert re.search(r"last seen <time datetime=\"[^\"]+\">[^<]+</time>, 2\d seconds ago", shown)


def test_the_page_says_a_scheduler_was_never_seen_even_without_schedules(
    owner_client, dataset, setting
):
    shown = page(owner_client, dataset)
    assert 'data-scheduler-seen="no"' in shown and "never seen by this site" in shown
    assert WARNING not in shown  # nothing waits for it: said, not alarmed


def test_a_scheduler_gone_quiet_reads_not_running_with_its_last_time(
    owner_client, dataset, setting
):
    beat_seen(dt.timedelta(minutes=14))
    shown = page(owner_client, dataset)
    assert 'data-scheduler-seen="no"' in shown and "scheduler not running" in shown
    assert "14\xa0minutes ago" in shown
