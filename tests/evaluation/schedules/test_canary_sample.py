"""A judge canary of a sample of the labelled items (issue 43, point 1: "its adjudicated
items, or a sample the admin picks"): the schedule's "Canary items" sets the size; each
night's canary grades the same fixed sample (so two canaries compare the same items), its
calls counted in its estimate and on the Schedules page; blank grades every labelled item.
A bad size is refused naming the field."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from evaluation.agreement import canary
from evaluation.answers.models import Answer
from evaluation.labels.models import Adjudication
from evaluation.metrics.sampling import sample_items
from evaluation.runs import lifecycle, sampling
from evaluation.runs.models import Run, RunItem, Verdict
from evaluation.schedules import services as schedules
from evaluation.schedules.models import RunSchedule
from tests.factories import PanelFactory, loopback_judges
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

QUERIES, CRITERIA, SIZE = 3, 4, 5


@pytest.fixture
def labelled(dataset):
    """QUERIES queries of CRITERIA criteria, each with an adjudicated answer (the labelled
    items: 12) and a system's answer labelled "night-1"; (system, labelled items)."""
    made = [checklisted_query(dataset, criteria=CRITERIA, answers=1) for _ in range(QUERIES)]
    system = made[0].answers[0].system
    items = set()
    for m in made:
        reviewed = Answer.objects.create(system=system, query=m.query, text="Reviewed.",
                                         run_label="labelled")  # fmt: skip
        Adjudication.objects.bulk_create(
            Adjudication(answer=reviewed, criterion=c, label="pass") for c in m.criteria
        )
        items |= {(reviewed.pk, c.pk) for c in m.criteria}
        Answer.objects.create(system=system, query=m.query, text="Tonight.", run_label="night-1")
    return system, items


def night(dataset, panel, system, name: str) -> tuple[Run, Run]:
    run = schedules.scheduled_run(
        dataset_id=dataset.pk, panel_id=panel.pk, system_id=system.pk, name=name
    )
    return run, run.canaries.get()


def test_a_canary_of_a_sample_grades_the_same_items_every_night(
    dataset, owner, owner_client, labelled, loopback_openai
):
    system, items = labelled
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1), judges__samples=2)
    schedules.schedule_save(
        dataset=dataset, name="Nightly", system=system, panel=panel, at=dt.time(2, 30),
        days="*", enabled=True, by=owner, canary=True, canary_items=SIZE,
    )  # fmt: skip
    expected = sample_items(items, SIZE, seed=f"canary:{dataset.pk}")
    assert len(expected) == SIZE and sampling.canary_sample(dataset.pk, SIZE) == expected

    run, first = night(dataset, panel, system, "Nightly")
    assert first.scope == Run.Scope.LISTED and first.canary_for == run
    listed = sorted(RunItem.objects.filter(run=first).values_list("answer_id", "criterion_id"))
    assert listed == expected
    # Two samples of the one judge on each item; the estimate made at start counts them.
    assert first.expected == SIZE * 2 and first.estimate["calls"] == SIZE * 2
    for task in first.tasks.all():  # what a worker does
        lifecycle.run_task(worker="test", run_id=first.pk, answer_id=task.answer_id,
                           judge_id=task.judge_id)  # fmt: skip
    first.refresh_from_db()
    assert first.status == Run.Status.DONE
    graded = set(Verdict.objects.filter(run=first).values_list("answer_id", "criterion_id"))
    assert graded == set(expected)
    assert canary.record(first)["judges"]["Judge 0"]["n"] == SIZE

    # The next night's canary: the same items, whatever else changed.
    Answer.objects.filter(run_label="night-1").update(run_label="night-0")
    for answer in Answer.objects.filter(run_label="night-0"):
        Answer.objects.create(system=system, query=answer.query, text="Next.",
                              run_label="night-2")  # fmt: skip
    _, second = night(dataset, panel, system, "Nightly")
    assert second.pk != first.pk
    assert sorted(RunItem.objects.filter(run=second).values_list("answer_id", "criterion_id")) == (
        expected
    )

    # The Schedules page says what the canary grades and what its last night called.
    page = owner_client.get(reverse("dataset-schedules", args=[dataset.pk])).content.decode()
    row = page.split("data-canary-estimate>")[1].split("</td>")[0]
    assert f"a fixed sample of {SIZE} labelled items" in row
    assert f"{SIZE} items, {SIZE * 2} calls estimated" in row and f"/runs/{second.pk}/" in row


def test_a_blank_size_grades_every_labelled_item(dataset, owner, labelled, loopback_openai):
    system, items = labelled
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    schedules.schedule_save(
        dataset=dataset, name="Nightly", system=system, panel=panel, at=dt.time(2, 30),
        days="*", enabled=True, by=owner, canary=True,
    )  # fmt: skip
    _, checked_by = night(dataset, panel, system, "Nightly")
    assert checked_by.scope == Run.Scope.LABELLED and not RunItem.objects.exists()
    assert checked_by.expected == len(items) == checked_by.estimate["calls"]
    assert schedules.last_canary(RunSchedule.objects.get()) == {
        "run": checked_by.pk, "items": len(items), "calls": len(items), "sampled": False
    }  # fmt: skip


def test_the_form_sets_the_size_and_refuses_a_bad_one_naming_it(
    dataset, owner_client, labelled, loopback_openai
):
    system, _ = labelled
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    url = reverse("dataset-schedules", args=[dataset.pk])
    data = {"name": "Nightly", "system": system.pk, "panel": panel.pk, "at": "02:30",
            "days": "*", "enabled": "on", "canary": "on"}  # fmt: skip
    refused = owner_client.post(url, {**data, "canary_items": "0"})
    assert refused.status_code == 400 and not RunSchedule.objects.exists()
    assert "Ensure this value is greater than or equal to 1." in refused.content.decode()
    assert owner_client.post(url, {**data, "canary_items": "7"}).status_code == 302
    schedule = RunSchedule.objects.get()
    assert (schedule.canary, schedule.canary_items) == (True, 7)
    edit = reverse("schedule-edit", args=[dataset.pk, schedule.pk])
    assert 'value="7"' in owner_client.get(edit).content.decode()
    assert owner_client.post(edit, {**data, "canary_items": ""}).status_code == 302
    schedule.refresh_from_db()
    assert schedule.canary_items is None
