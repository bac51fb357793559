"""A schedule added on the Schedules page fires under `dev.py run`'s scheduler (issue 28,
item 2): celery beat started with dev.py's own arguments (dev.BEAT_ARGS: the settings'
DatabaseScheduler) beside a worker, on the test database and broker. The page offers times
of day only, so the schedule is set to the coming minute; beat sends it at that minute's
start, the worker starts its run, once. Beat's heartbeat is sent every second here
(SCHEDULER_HEARTBEAT=1; 60 by default), and /healthz and the page see it."""

from __future__ import annotations

import datetime as dt
import re
import time

from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from config import health
from evaluation.runs.models import Run
from evaluation.schedules import beat as scheduler
from evaluation.schedules.models import RunSchedule
from tests.factories import PanelFactory, offline_judge
from tests.support.beat import coming_minute, wait_for
from tests.support.builders import checklisted_query


def test_a_schedule_added_on_the_page_fires_once_under_dev_py_runs_beat(
    celery_worker, start_beat, client, owner, dataset
):
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    answer.run_label = "nightly-1"
    answer.save(update_fields=["run_label"])
    panel = PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    beat = start_beat(env={"SCHEDULER_HEARTBEAT": "1"})

    # The scheduler is seen: its heartbeat row moves, /healthz says so.
    first = wait_for(lambda: scheduler.state().seen_at, 30, lambda: "No heartbeat:\n" + beat.log())
    wait_for(
        lambda: scheduler.state().seen_at > first, 30, lambda: "It did not beat:\n" + beat.log()
    )
    assert scheduler.state().seen
    assert re.fullmatch(r"celery beat seen \d+ seconds? ago", health.check_scheduler())

    at = coming_minute()
    client.force_login(owner)
    data = {"name": "Nightly", "system": answer.system_id, "panel": panel.pk,
            "at": f"{at:%H:%M}", "days": "*", "enabled": "on"}  # fmt: skip
    page = reverse("dataset-schedules", args=[dataset.pk])
    assert client.post(page, data).status_code == 302
    shown = client.get(page).content.decode()
    assert f'<td class="nowrap">{at:%Y-%m-%d %H:%M}</td>' in shown  # the next run, to the minute
    assert 'id="scheduler-warning"' not in shown

    run = wait_for(
        lambda: Run.objects.filter(dataset=dataset, name="Nightly").first(),
        (at - timezone.now()).total_seconds() + 45,
        lambda: (
            f"No run by {timezone.localtime():%H:%M:%S} for {at:%H:%M}:\n"
            + beat.log()[-3000:]
            + celery_worker.log()[-3000:]
        ),
    )
    assert timezone.localtime(run.created_at) >= at
    assert (run.answer_run_label, list(run.systems.all())) == ("nightly-1", [answer.system])
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status in Run.FINISHED,
        60,
        lambda: f"The run did not finish: {Run.objects.get(pk=run.pk).status}",
    )

    # Exactly once: beat goes on beating for a while and sends nothing more.
    time.sleep(max(0.0, (at - timezone.now()).total_seconds() + 12))
    task = PeriodicTask.objects.get(pk=RunSchedule.objects.get(dataset=dataset).task_id)
    assert Run.objects.filter(dataset=dataset).count() == 1
    assert task.total_run_count == 1 and timezone.localtime(task.last_run_at) >= at
    assert beat.log().count(f"Sending due task Dataset {dataset.pk}: Nightly") == 1
    shown = client.get(page).content.decode()
    assert f'<td class="nowrap">{at:%Y-%m-%d %H:%M}</td>' in shown  # now the last run
    tomorrow = at + dt.timedelta(days=1)
    assert f'<td class="nowrap">{tomorrow:%Y-%m-%d %H:%M}</td>' in shown
    assert reverse("run-detail", args=[run.pk]) in shown
