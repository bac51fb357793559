"""Audit history of checklists, criteria, labels, adjudications, judges and panels (issue
13, point 7): who changed what and when, kept by django-simple-history and shown to admins."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Checklist, Criterion
from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import Adjudication, HumanLabel
from tests.factories import PanelFactory, UserFactory, external_judges, valid_criteria
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


def test_criterion_edits_archives_and_versions_are_recorded_with_their_author(
    client, collaborator, reviewer, reviewed_dataset
):
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1, author=collaborator)
    criteria, (answer,) = made.criteria, made.answers
    from evaluation.review import services as review

    review.label_set(answer=answer, criterion=criteria[0], reviewer=reviewer, label="pass")
    services.checklist_reopen(checklist=criteria[0].checklist, by=collaborator)
    client.force_login(collaborator)
    data = {"text": "States a reworded figure.", "kind": "fact", "weight": "1", "notes": ""}
    client.post(reverse("criterion-update", args=[criteria[0].pk]), data)
    client.post(reverse("criterion-delete", args=[criteria[1].pk]))

    old = Criterion.history.filter(id=criteria[0].pk).order_by("history_date")
    assert [h.history_type for h in old][-1] == "~"
    assert old.last().archived_at is not None and old.last().history_user == collaborator
    deleted = Criterion.history.filter(id=criteria[1].pk).order_by("history_date").last()
    assert deleted.history_type == "-" and deleted.history_user == collaborator
    new = Criterion.objects.get(previous_version=criteria[0])
    assert new.history.last().history_type == "+"  # newest first: last is the creation
    assert Checklist.history.filter(id=criteria[0].checklist_id).exists()


def test_labels_and_adjudications_keep_their_history(client, reviewer, reviewed_dataset):
    made = checklisted_query(reviewed_dataset, criteria=1, answers=1)
    criteria, (answer,) = made.criteria, made.answers
    finished_run(
        reviewed_dataset,
        PanelFactory(judges=external_judges(3)),
        {(answer, criteria[0]): ["pass"] * 3},
    )
    client.force_login(reviewer)
    url = reverse("answer-review-label", args=[answer.pk])
    client.post(url, {"criterion": criteria[0].pk, "label": "pass"})
    client.post(url, {"criterion": criteria[0].pk, "label": "fail", "note": "missed it"})
    label = HumanLabel.objects.get()
    assert [(h.label, h.history_user) for h in label.history.order_by("history_date")] == [
        ("pass", reviewer),
        ("fail", reviewer),
    ]
    client.post(
        reverse("answer-review-adjudicate", args=[answer.pk]),
        {"criterion": criteria[0].pk, "label": "fail", "reason": "r", "version": ""},
    )
    decision = Adjudication.objects.get()
    assert decision.history.get().history_user == reviewer


def test_judges_and_panels_keep_their_history(owner_api, owner):
    judge = owner_api.post(
        "/api/judges/",
        {"name": "J", "kind": "llm", "base_url": "https://api.example.com/v1", "model": "m"},
        format="json",
    ).json()
    owner_api.patch(f"/api/judges/{judge['id']}/", {"timeout": 12}, format="json")
    history = Judge.objects.get(pk=judge["id"]).history.order_by("history_date")
    assert [h.timeout for h in history] == [60.0, 12.0]
    assert {h.history_user for h in history} == {owner}
    owner_api.post(
        "/api/panels/",
        {"name": "P", "method": "majority", "members": [{"judge": judge["id"]}]},
        format="json",
    )
    assert Panel.history.filter(name="P").exists()


def test_admins_see_the_history(client, collaborator, query):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    page = client.get(reverse("admin:annotation_checklist_history", args=[checklist.pk]))
    assert page.status_code == 200
    listing = client.get(reverse("admin:audit_historicalcriterion_changelist"))
    assert listing.status_code == 200 and "result_list" in listing.content.decode()
    client.force_login(collaborator)  # not staff: no admin
    assert client.get(reverse("admin:audit_historicalcriterion_changelist")).status_code == 302
