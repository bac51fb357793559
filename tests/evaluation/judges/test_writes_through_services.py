"""Judges, panels and regression alerts are written through their services from the pages
and the API alike (evaluation.judges.services, evaluation.alerts.services): the same
checks and the same audit history whichever way they come."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judges import services as judges
from evaluation.judges.models import Judge, PanelMember

pytestmark = pytest.mark.django_db


def test_a_panel_created_in_the_api_keeps_its_members_history_as_the_page_does(
    owner_api, client, owner
):
    judge = Judge.objects.create(name="J", base_url="https://api.example.com/v1", model="m")
    response = owner_api.post(
        "/api/panels/",
        {"name": "By API", "members": [{"judge": judge.pk, "samples": 2}]},
        format="json",
    )
    assert response.status_code == 201
    member = PanelMember.objects.get(panel__name="By API")
    assert (member.samples, member.temperatures) == (2, [])
    assert member.history.get().history_user == owner  # as panel_save writes from the page
    client.force_login(owner)
    page = client.post(
        reverse("panel-create"),
        {"name": "By page", "method": "majority", "threshold": "0.5",
         "members-TOTAL_FORMS": "1", "members-INITIAL_FORMS": "0",
         "members-0-judge": judge.pk, "members-0-samples": "2"},
    )  # fmt: skip
    assert page.status_code == 302
    assert PanelMember.objects.get(panel__name="By page").history.count() == 1


def test_a_judge_changed_in_the_api_is_saved_by_the_service(owner_api, owner, monkeypatch):
    judge = judges.judge_save(name="J", base_url="https://api.example.com/v1", model="m")
    saved = []
    monkeypatch.setattr(
        judges, "judge_save", lambda **fields: saved.append(fields) or fields["judge"]
    )
    response = owner_api.patch(f"/api/judges/{judge.pk}/", {"timeout": 12}, format="json")
    assert response.status_code == 200
    # `by`: who made a new prompt version, when the change is one (evaluation.judges.tuning).
    assert saved == [{"judge": judge, "by": owner, "timeout": 12.0}]
