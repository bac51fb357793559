"""The LLM formality check: queued on commit, run by a real worker against the loopback
judge, stored once per wording, shown in the editor as advice that never blocks."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from annotation import services
from annotation.services.checklists import CriterionData
from evaluation.formality.models import FormalityAdvice
from evaluation.judges.models import Judge
from loopback import Fault, LoopbackOpenAI
from tests.factories import valid_criteria


def vague_aware(request) -> dict:
    vague = "the table" in request.last_user_text
    return {
        "specific": True,
        "deterministic": True,
        "self_contained": not vague,
        "yes_no": True,
        "reason": "Name the table you mean." if vague else "Clear as written.",
    }


def wait_for(predicate, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for the worker")


@pytest.fixture
def judge_server():
    with LoopbackOpenAI(responder=vague_aware) as server:
        yield server


@pytest.fixture
def formality_dataset(dataset, judge_server):
    Judge.objects.create(
        name="Loopback", base_url=judge_server.base_url, model="gpt-4o-mini",
        is_formality_judge=True,
    )  # fmt: skip
    dataset.formality_check = True
    dataset.save()
    return dataset


def done(criterion) -> bool:
    return not FormalityAdvice.objects.filter(criterion=criterion, status="pending").exists()


def test_advice_is_stored_once_per_wording(celery_worker, formality_dataset, judge_server, query):
    checklist = services.checklist_create_with_criteria(
        query=query, by=query.dataset.created_by, criteria=valid_criteria()[:2]
    )
    criterion = services.criterion_add(
        checklist=checklist,
        by=checklist.author,
        data=CriterionData(text="Presents the figures in the table.", kind="format"),
    )
    wait_for(lambda: FormalityAdvice.objects.filter(status="done").count() == 3)
    advice = FormalityAdvice.objects.get(criterion=criterion)
    assert (advice.self_contained, advice.specific) == (False, True)
    assert advice.reason == "Name the table you mean."
    prompts = [c.request.last_user_text for c in judge_server.calls]
    assert sum("Criterion: Presents the figures in the table." in p for p in prompts) == 1
    calls = judge_server.call_count

    # Saving the same wording again asks nothing; a new wording gets fresh advice.
    services.criterion_update(criterion=criterion, by=checklist.author, text=criterion.text)
    services.criterion_update(
        criterion=criterion, by=checklist.author, text="Presents the quarterly figures in a table."
    )
    wait_for(lambda: done(criterion))
    assert judge_server.call_count == calls + 1
    newest = FormalityAdvice.objects.get(criterion=criterion, self_contained=True)
    assert newest.ok


def test_the_editor_shows_the_advice_and_submission_ignores_it(
    celery_worker, formality_dataset, client, query, collaborator
):
    criteria = valid_criteria()
    criteria[5] = CriterionData(
        text="Presents guidance versus actuals in the table.", kind="format"
    )
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=criteria
    )
    wait_for(lambda: FormalityAdvice.objects.filter(status="done").count() == 6)
    client.force_login(collaborator)
    page = client.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert "Not free of vague references." in page and "Name the table you mean." in page
    services.checklist_submit(checklist=checklist, by=collaborator)  # advice never blocks


def test_unparseable_advice_is_recorded_as_an_error(
    celery_worker, formality_dataset, judge_server, query
):
    judge_server.responder = lambda request: Fault.malformed_json()
    checklist = services.checklist_start(query=query, by=query.dataset.created_by)
    criterion = services.criterion_add(
        checklist=checklist, by=checklist.author, data=CriterionData(text="States revenue.")
    )
    wait_for(lambda: done(criterion))
    advice = FormalityAdvice.objects.get(criterion=criterion)
    assert advice.status == "error" and "could not be parsed" in advice.error
    assert advice.raw_output  # kept for whoever looks into it


@pytest.mark.django_db
def test_no_check_without_the_dataset_setting(dataset, judge_server, query):
    Judge.objects.create(
        name="Loopback", base_url=judge_server.base_url, model="m", is_formality_judge=True
    )
    services.checklist_create_with_criteria(
        query=query, by=dataset.created_by, criteria=valid_criteria()
    )
    assert not FormalityAdvice.objects.exists()
    assert judge_server.call_count == 0


@pytest.mark.django_db
def test_formality_box_is_blind_like_its_checklist(client, outsider, collaborator, query):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    url = reverse("criterion-formality", args=[checklist.criteria.first().pk])
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.force_login(collaborator)
    assert client.get(url).status_code == 200


def test_the_api_shows_the_advice_of_the_present_wording(
    celery_worker, formality_dataset, query, collaborator
):
    from rest_framework.test import APIClient

    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()[:1]
    )
    wait_for(lambda: FormalityAdvice.objects.filter(status="done").count() == 1)
    api = APIClient()
    api.force_authenticate(collaborator)
    criterion = api.get(f"/api/checklists/{checklist.pk}/").json()["criteria"][0]
    assert criterion["formality"]["ok"] is True
    assert criterion["formality"]["reason"] == "Clear as written."
