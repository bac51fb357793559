"""Saving a schedule runs the checks of starting a run (issue 28, item 2): a schedule whose
panel a run could not start with (a judge's key variable unset, its endpoint unreachable, no
judges) is refused with the Runs page's own words, under the panel field, and nothing is
saved. A paused schedule is not checked, so that one whose judge broke can be paused.
There is no schedules API: the page and the service are the two ways in."""

from __future__ import annotations

import datetime as dt
import socket

import pytest
from django.urls import reverse
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from evaluation.judges.models import Judge
from evaluation.runs.models import Run
from evaluation.runs.preflight import RunRefused
from evaluation.schedules import services as schedules
from evaluation.schedules.models import RunSchedule
from tests.factories import PanelFactory, offline_judge
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

KEY = "JUDGE_KEY_WB_SCHEDULE_PREFLIGHT"
MISSING_KEY = f"Judge “GPT”: its API key variable {KEY} is not set on this server."


@pytest.fixture
def system(dataset):
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    return answer.system


@pytest.fixture
def keyless_panel(monkeypatch, loopback_openai):
    monkeypatch.delenv(KEY, raising=False)
    judge = Judge.objects.create(
        name="GPT", base_url=loopback_openai.base_url, model="m", api_key_env=KEY
    )
    return PanelFactory(name="Keyless", judges=[judge, offline_judge("Checks")])


def add(client, dataset, system, panel, **extra):
    data = {"name": "Nightly", "system": system.pk, "panel": panel.pk, "at": "02:30",
            "days": "*", "enabled": "on", **extra}  # fmt: skip
    return client.post(reverse("dataset-schedules", args=[dataset.pk]), data)


def nothing_saved() -> bool:
    return not (
        RunSchedule.objects.exists()
        or PeriodicTask.objects.exists()
        or CrontabSchedule.objects.exists()
    )


def test_a_judge_without_its_key_is_refused_as_a_run_is(
    owner_client, dataset, system, keyless_panel
):
    response = add(owner_client, dataset, system, keyless_panel)
    assert response.status_code == 400
    assert response.context["form"].errors == {"panel": [MISSING_KEY]}
    assert MISSING_KEY in response.content.decode()
    assert nothing_saved()
    # Starting a run by hand with that panel says the same, under the same field.
    by_hand = owner_client.post(
        reverse("dataset-runs", args=[dataset.pk]), {"panel": keyless_panel.pk, "concurrency": 4}
    )
    assert by_hand.context["form"].errors["panel"] == [MISSING_KEY]
    assert not Run.objects.exists()


def test_the_service_refuses_it_too(owner, dataset, system, keyless_panel):
    with pytest.raises(RunRefused) as refused:
        schedules.schedule_save(
            dataset=dataset, name="Nightly", system=system, panel=keyless_panel,
            at=dt.time(2, 30), days="*", enabled=True, by=owner,
        )  # fmt: skip
    assert (refused.value.field, refused.value.problems) == ("panel", [MISSING_KEY])
    assert nothing_saved()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def test_an_unreachable_endpoint_and_an_empty_panel_are_refused(owner_client, dataset, system):
    port = closed_port()
    down = Judge.objects.create(name="Down", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    response = add(owner_client, dataset, system, PanelFactory(judges=[down]))
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "panel": [f"Judge “Down”: cannot reach 127.0.0.1:{port} (connection refused)."]
    }
    response = add(owner_client, dataset, system, PanelFactory(name="Empty", judges=[]))
    assert response.context["form"].errors == {"panel": ["The panel has no judges."]}
    assert nothing_saved()


def test_changing_a_schedule_to_such_a_panel_is_refused_and_changes_nothing(
    owner_client, owner, dataset, system, keyless_panel
):
    good = PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    assert add(owner_client, dataset, system, good).status_code == 302
    schedule = RunSchedule.objects.get()
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    changed = {"name": "Nightly", "system": system.pk, "panel": keyless_panel.pk, "at": "03:00",
               "days": "*", "enabled": "on"}  # fmt: skip
    response = owner_client.post(edit, changed)
    assert response.status_code == 400
    assert response.context["form"].errors == {"panel": [MISSING_KEY]}
    schedule.refresh_from_db()
    schedule.task.refresh_from_db()
    assert (schedule.panel, schedule.task.crontab.hour) == (good, "2")


def test_a_paused_schedule_is_saved_so_that_a_broken_one_can_be_paused(
    owner_client, dataset, system, keyless_panel
):
    response = add(owner_client, dataset, system, keyless_panel, enabled="")
    assert response.status_code == 302
    schedule = RunSchedule.objects.select_related("task").get()
    assert (schedule.panel, schedule.task.enabled) == (keyless_panel, False)
    # Enabling it again is checked.
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    again = {"name": "Nightly", "system": system.pk, "panel": keyless_panel.pk, "at": "02:30",
             "days": "*", "enabled": "on"}  # fmt: skip
    assert owner_client.post(edit, again).context["form"].errors == {"panel": [MISSING_KEY]}
    schedule.task.refresh_from_db()
    assert schedule.task.enabled is False


def test_with_the_key_set_it_is_saved(owner_client, dataset, system, keyless_panel, monkeypatch):
    monkeypatch.setenv(KEY, "sk-test")
    assert add(owner_client, dataset, system, keyless_panel).status_code == 302
    assert RunSchedule.objects.get().panel == keyless_panel
