"""Dataset admins set scheduled runs in pages (issue 12, point 8; they were only in the site
administration): add, change, pause, delete, with errors that name the field, never
another dataset's schedule, and beat's task set so that its tick starts the run."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from annotation import roles
from annotation import services as annotation_services
from evaluation.runs.models import Run
from evaluation.schedules import services as schedules
from evaluation.schedules.models import RunSchedule
from tests.factories import AnswerFactory, PanelFactory, offline_judge
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def setting(dataset):
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    answer.run_label = "nightly-1"
    answer.save(update_fields=["run_label"])
    panel = PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    return answer.system, panel


def add(client, dataset, system, night_panel, **extra):
    data = {"name": "Nightly", "system": system.pk, "panel": night_panel.pk, "at": "02:30",
            "days": "*", "enabled": "on", **extra}  # fmt: skip
    return client.post(reverse("dataset-schedules", args=[dataset.pk]), data)


def test_an_admin_adds_changes_pauses_and_deletes_a_schedule(owner_client, owner, dataset, setting):
    system, panel = setting
    page = owner_client.get(reverse("dataset-schedules", args=[dataset.pk]))
    assert page.status_code == 200 and system.name in page.content.decode()
    assert add(owner_client, dataset, system, panel).status_code == 302
    schedule = RunSchedule.objects.select_related("task__crontab").get(dataset=dataset)
    task = schedule.task
    assert (schedule.name, schedule.system, schedule.panel, schedule.created_by) == (
        "Nightly", system, panel, owner
    )  # fmt: skip
    assert (task.task, task.enabled) == ("evaluation.scheduled_run", True)
    assert (task.crontab.hour, task.crontab.minute, task.crontab.day_of_week) == ("2", "30", "*")
    assert json.loads(task.kwargs) == {
        "dataset_id": dataset.pk, "panel_id": panel.pk, "system_id": system.pk, "name": "Nightly"
    }  # fmt: skip
    listed = owner_client.get(reverse("dataset-schedules", args=[dataset.pk])).content.decode()
    assert "02:30, every day" in listed and "paused" not in listed

    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    form = owner_client.get(edit)
    assert form.status_code == 200 and 'value="02:30"' in form.content.decode()
    changed = {"name": "Weekdays", "system": system.pk, "panel": panel.pk, "at": "23:05",
               "days": "mon-fri"}  # fmt: skip
    response = owner_client.post(edit, changed)
    assert response.status_code == 302
    task.refresh_from_db()
    assert (task.enabled, task.crontab.hour, task.crontab.day_of_week) == (False, "23", "mon-fri")
    assert json.loads(task.kwargs)["name"] == "Weekdays"
    listed = owner_client.get(reverse("dataset-schedules", args=[dataset.pk])).content.decode()
    assert "23:05, monday to friday" in listed and "paused" in listed

    delete = reverse("schedule-delete", args=[dataset.pk, schedule.pk])
    assert owner_client.post(delete).status_code == 302
    assert not RunSchedule.objects.exists() and not PeriodicTask.objects.filter(pk=task.pk).exists()


def test_the_task_beat_sends_starts_the_run_of_the_newest_answers(owner_client, dataset, setting):
    system, panel = setting
    add(owner_client, dataset, system, panel)
    task = RunSchedule.objects.get(dataset=dataset).task
    run = schedules.scheduled_run(**json.loads(task.kwargs))
    assert (run.dataset, run.name, run.answer_run_label) == (dataset, "Nightly", "nightly-1")
    assert list(run.systems.all()) == [system]
    # The same tick delivered again starts nothing new.
    assert schedules.scheduled_run(**json.loads(task.kwargs)) == run
    assert Run.objects.filter(dataset=dataset).count() == 1
    next_run = schedules.next_run(task)
    assert timezone.now() < next_run <= timezone.now() + dt.timedelta(days=1)


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ({"at": "25:00"}, "at", "valid time"),
        ({"days": "every full moon"}, "days", "valid choice"),
        ({"name": ""}, "name", "required"),
        ({"panel": "999999"}, "panel", "valid choice"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    owner_client, dataset, setting, extra, field, message
):
    system, panel = setting
    response = add(owner_client, dataset, system, panel, **extra)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field])
    assert not RunSchedule.objects.exists() and not PeriodicTask.objects.exists()


def test_two_schedules_of_one_name_are_refused_but_two_datasets_may_share_it(
    owner_client, owner, dataset, setting
):
    system, panel = setting
    assert add(owner_client, dataset, system, panel).status_code == 302
    response = add(owner_client, dataset, system, panel)
    assert response.status_code == 400 and "name" in response.context["form"].errors
    other = annotation_services.dataset_create(name="Other", by=owner)
    other_system = AnswerFactory(query__dataset=other).system
    assert add(owner_client, other, other_system, panel).status_code == 302
    assert PeriodicTask.objects.count() == 2


def test_a_system_of_another_dataset_is_refused(owner_client, owner, dataset, setting):
    _, panel = setting
    other = annotation_services.dataset_create(name="Other", by=owner)
    foreign = AnswerFactory(query__dataset=other).system
    response = add(owner_client, dataset, foreign, panel)
    assert response.status_code == 400 and "system" in response.context["form"].errors


def test_another_datasets_schedule_is_not_found(owner_client, owner, dataset, setting):
    system, panel = setting
    other = annotation_services.dataset_create(name="Other", by=owner)
    schedule = schedules.schedule_save(
        dataset=other, name="Theirs", system=system, panel=panel, at=dt.time(1, 0), days="*",
        enabled=True, by=owner,
    )  # fmt: skip
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    assert owner_client.get(edit).status_code == 404
    delete = reverse("schedule-delete", args=[dataset.pk, schedule.pk])
    assert owner_client.post(delete).status_code == 404
    assert RunSchedule.objects.filter(pk=schedule.pk).exists()


def test_only_the_datasets_admins_see_its_schedules(client, dataset, reviewer, collaborator):
    annotation_services.dataset_set_role(
        dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER
    )
    for user in (reviewer, collaborator):
        client.force_login(user)
        response = client.get(reverse("dataset-schedules", args=[dataset.pk]))
        assert response.status_code in (403, 404), user


def test_the_pages_show_the_shared_form_and_row_buttons(owner_client, dataset, setting):
    """As the alert pages (includes shared with them): this page's form id and words, the
    schedule's own Edit and Delete addresses, and an empty POST refused (400), not a GET."""
    system, panel = setting
    add(owner_client, dataset, system, panel)
    schedule = RunSchedule.objects.get(dataset=dataset)
    page = owner_client.get(reverse("dataset-schedules", args=[dataset.pk])).content.decode()
    assert 'id="schedule-form"' in page and "Add a schedule</h2>" in page
    assert '<button type="submit" class="primary">Add schedule</button>' in page
    assert f'href="{reverse("schedule-edit", args=[dataset.pk, schedule.pk])}"' in page
    assert f'action="{reverse("schedule-delete", args=[dataset.pk, schedule.pk])}"' in page
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    shown = owner_client.get(edit).content.decode()
    assert 'id="schedule-form"' in shown
    assert '<button type="submit" class="primary">Save</button>' in shown
    assert owner_client.post(reverse("dataset-schedules", args=[dataset.pk])).status_code == 400
    assert owner_client.post(edit).status_code == 400
