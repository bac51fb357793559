"""Admins create and edit guidelines in pages and the API: who may, errors by field, the same
config whichever way it was written, versions kept for submitted checklists, and the
editor's live validation following an edit."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import services
from annotation.forms import GuidelineForm
from annotation.guidelines import guideline_for
from annotation.models import Checklist, Guideline
from annotation.validation import FINANCE, GENERIC
from tests.factories import valid_criteria

pytestmark = pytest.mark.django_db


def form_data(config=GENERIC, **changes: object) -> dict:
    """What the page posts for `config`, with some fields changed."""
    data: dict[str, object] = {"name": "Rubrics", "description": "Yes/no rubric questions."}
    for key, value in GuidelineForm.initial_from(config).items():
        if not key.endswith(".enabled"):
            data[key] = value
        elif value:  # an unticked box is not posted
            data[key] = "on"
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.fixture
def finance_v1():
    return Guideline.objects.get(name="Finance", version=1)


@pytest.fixture
def house(dataset):
    """A guideline of its own for `dataset`, version 1."""
    guideline = services.guideline_create(name="House", preset="finance")
    services.dataset_update(dataset=dataset, guideline=guideline)
    return guideline


# --- who may ---------------------------------------------------------------------------


def test_pages_by_role(client, owner, collaborator, reviewer, outsider, finance_v1):
    urls = [
        reverse("guideline-list"),
        reverse("guideline-create") + "?preset=generic",
        reverse("guideline-edit", args=[finance_v1.pk]),
    ]
    for user, code in ((owner, 200), (collaborator, 403), (reviewer, 403), (outsider, 403)):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == code, (user.username, url)
    client.force_login(collaborator)
    refused = client.post(reverse("guideline-create"), form_data(name="Mine"))
    assert refused.status_code == 403
    refused = client.post(reverse("guideline-edit", args=[finance_v1.pk]), form_data())
    assert refused.status_code == 403
    client.logout()
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Guideline.objects.filter(name__in=["Mine", "Rubrics"]).exists()
    finance_v1.refresh_from_db()
    assert finance_v1.config["min_criteria"] == 5


def test_api_by_role(owner_api, collaborator_api, reviewer_api, outsider_api, finance_v1):
    new = {"name": "Rubrics", "preset": "generic"}
    edit = {"config": {"min_criteria": 2}}
    detail = f"/api/guidelines/{finance_v1.pk}/"
    for api in (collaborator_api, reviewer_api, outsider_api):
        assert api.get("/api/guidelines/").status_code == 200  # reading stays open
        assert api.get(detail).status_code == 200
        assert api.post("/api/guidelines/", new, format="json").status_code == 403
        assert api.patch(detail, edit, format="json").status_code == 403
    anonymous = APIClient()
    assert anonymous.get("/api/guidelines/").status_code in (401, 403)
    assert anonymous.post("/api/guidelines/", new, format="json").status_code in (401, 403)
    assert anonymous.patch(detail, edit, format="json").status_code in (401, 403)
    assert owner_api.put(detail, edit, format="json").status_code == 405  # PATCH edits
    assert not Guideline.objects.filter(name="Rubrics").exists()
    finance_v1.refresh_from_db()
    assert finance_v1.config["min_criteria"] == 5

    created = owner_api.post("/api/guidelines/", new, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["version"] == 1
    edited = owner_api.patch(f"/api/guidelines/{created.json()['id']}/", edit, format="json")
    assert edited.status_code == 200, edited.json()
    assert edited.json()["config"]["min_criteria"] == 2


def test_the_admins_see_the_guidelines_link(client, owner, collaborator):
    client.force_login(owner)
    assert reverse("guideline-list") in client.get(reverse("home")).content.decode()
    client.force_login(collaborator)
    assert reverse("guideline-list") not in client.get(reverse("home")).content.decode()


# --- errors by field -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"min_criteria": 8, "max_criteria": 4}, "max_criteria"),
        ({"near_duplicate_threshold": "1.5"}, "near_duplicate_threshold"),
        ({"action_verbs": ""}, "action_verbs"),
        ({"max_length": "0"}, "max_length"),
        ({"max_length": "long"}, "max_length"),
        ({"banned_source_types": ["no-such-type"]}, "banned_source_types"),
        ({"name": ""}, "name"),
        ({"name": "Finance"}, "name"),
    ],
)
def test_page_names_the_field_and_writes_nothing(client, owner, changes, field):
    client.force_login(owner)
    before = list(Guideline.objects.values_list("pk", "config"))
    response = client.post(
        reverse("guideline-create"), {"preset": "generic", **form_data(**changes)}
    )
    assert response.status_code == 400
    form = response.context["form"]
    assert field in form.errors, form.errors
    assert f'data-field="{field}"' in response.content.decode()
    assert list(Guideline.objects.values_list("pk", "config")) == before


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({"config": {"min_criteria": 8, "max_criteria": 4}}, {"config": ["max_criteria"]}),
        ({"config": {"near_duplicate_threshold": 1.5}}, {"config": ["near_duplicate_threshold"]}),
        ({"config": {"action_verbs": ["breaks down"]}}, {"config": ["action_verbs"]}),
        ({"config": {"banned_source_types": ["ai-tool"]}}, {"config": ["banned_source_types"]}),
        ({"config": {"rules": {"compound": {"severity": "fatal"}}}},
         {"config": ["rules.compound.severity"]}),
        ({"config": {"rules": {"no-such-rule": {"enabled": False}}}},
         {"config": ["rules.no-such-rule"]}),
        ({"config": {"colour": "red"}}, {"config": ["colour"]}),
        ({"preset": "legal"}, {"preset": None}),
    ],
)  # fmt: skip
def test_api_names_the_field_and_writes_nothing(owner_api, finance_v1, payload, errors):
    before = list(Guideline.objects.values_list("pk", "config"))
    created = owner_api.post(
        "/api/guidelines/", {"name": "Rubrics", "preset": "generic", **payload}, format="json"
    )
    edited = owner_api.patch(f"/api/guidelines/{finance_v1.pk}/", payload, format="json")
    for response in (created, edited):
        assert response.status_code == 400
        body = response.json()
        for top, paths in errors.items():
            assert top in body, body
            for path in paths or ():
                assert path in body[top], body
    assert list(Guideline.objects.values_list("pk", "config")) == before


def test_api_create_needs_a_name_and_a_starting_point(owner_api):
    assert "config" in owner_api.post("/api/guidelines/", {"name": "X"}, format="json").json()
    assert "name" in owner_api.post("/api/guidelines/", {"preset": "generic"}, format="json").json()
    partial = {"name": "X", "config": {"min_criteria": 2}}  # no preset: the config must be whole
    body = owner_api.post("/api/guidelines/", partial, format="json").json()
    assert "action_verbs" in body["config"]


# --- the same thing whichever way ------------------------------------------------------


def test_page_and_api_write_the_same_config(client, owner, owner_api):
    client.force_login(owner)
    changes = {
        "min_criteria": 3,
        "near_duplicate_threshold": "0.9",
        "banned_source_types": ["ai-tools", "financial-news"],
        "rules.compound.enabled": None,  # unticked
        "rules.vague-reference.severity": "error",
    }
    page = client.post(
        reverse("guideline-create"), {"preset": "generic", **form_data(name="By page", **changes)}
    )
    assert page.status_code == 302, page.context and page.context["form"].errors
    api = owner_api.post(
        "/api/guidelines/",
        {
            "name": "By API",
            "preset": "generic",
            "description": "Yes/no rubric questions.",
            "config": {
                "min_criteria": 3,
                "near_duplicate_threshold": 0.9,
                "banned_source_types": ["ai-tools", "financial-news"],
                "rules": {"compound": {"enabled": False}, "vague-reference": {"severity": "error"}},
            },
        },
        format="json",
    )
    assert api.status_code == 201, api.json()
    by_page = Guideline.objects.get(name="By page")
    by_api = Guideline.objects.get(name="By API")
    assert by_page.config == by_api.config
    assert (by_page.version, by_page.description) == (by_api.version, by_api.description)
    assert by_page.config["rules"]["compound"] == {"enabled": False, "severity": None}
    assert by_page.config["rules"]["action-verb"] == {"enabled": False, "severity": None}

    # Editing both the same way, one through each interface, keeps them equal.
    edit = form_data(config=GENERIC, **changes, max_length=200)
    assert client.post(reverse("guideline-edit", args=[by_page.pk]), edit).status_code == 302
    patched = owner_api.patch(
        f"/api/guidelines/{by_api.pk}/", {"config": {"max_length": 200}}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["new_version"] is False
    by_page.refresh_from_db()
    by_api.refresh_from_db()
    assert by_page.config == by_api.config and by_page.config["max_length"] == 200


def test_new_page_starts_from_the_preset(client, owner):
    client.force_login(owner)
    generic = client.get(reverse("guideline-create") + "?preset=generic").context["form"]
    finance = client.get(reverse("guideline-create")).context["form"]
    assert generic.initial["min_criteria"] == 1 and finance.initial["min_criteria"] == 5
    assert generic.initial["rules.action-verb.enabled"] is False
    assert finance.initial["rules.action-verb.enabled"] is True


# --- versions, submitted checklists and the editor -------------------------------------


def _submitted(query, author) -> Checklist:
    checklist = services.checklist_create_with_criteria(
        query=query, by=author, criteria=valid_criteria()
    )
    services.checklist_submit(checklist=checklist, by=author)
    checklist.refresh_from_db()
    return checklist


def test_an_unused_version_is_edited_in_place(owner_api, house, dataset):
    response = owner_api.patch(
        f"/api/guidelines/{house.pk}/", {"config": {"min_criteria": 7}}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["id"] == house.pk and response.json()["new_version"] is False
    house.refresh_from_db()
    assert house.version == 1 and house.config["min_criteria"] == 7
    assert Guideline.objects.filter(name="House").count() == 1


def test_editing_a_version_with_submitted_checklists_makes_the_next_one(
    client, owner, owner_api, collaborator, house, dataset, query
):
    checklist = _submitted(query, collaborator)
    assert checklist.guideline == house
    client.force_login(owner)
    page = client.get(reverse("guideline-edit", args=[house.pk])).content.decode()
    assert "data-versioned" in page and "saving makes version 2" in page

    response = owner_api.patch(
        f"/api/guidelines/{house.pk}/",
        {"config": {"min_criteria": 10}, "description": "Stricter"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["version"], body["new_version"], body["datasets_moved"]) == (
        2,
        True,
        [dataset.name],
    )
    house.refresh_from_db()
    assert house.config["min_criteria"] == 5  # the version the checklist was submitted under
    dataset.refresh_from_db()
    assert dataset.guideline_id == body["id"]
    checklist.refresh_from_db()
    assert checklist.status == Checklist.Status.SUBMITTED and checklist.guideline == house

    # Its editor shows the new rules' finding; nothing changed its status.
    client.force_login(collaborator)
    editor = client.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert "min-criteria" in editor and "House v2" in editor
    checklist.refresh_from_db()
    assert checklist.status == Checklist.Status.SUBMITTED


def test_an_edit_on_the_page_changes_live_validation_in_the_editor(
    client, owner, collaborator, house, query
):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    editor_url = reverse("checklist-detail", args=[checklist.pk])
    client.force_login(collaborator)
    before = client.get(editor_url).content.decode()
    assert "min-criteria" not in before and 'data-rule="compound"' not in before
    criterion = checklist.criteria.get(position=2)
    compound = {
        "text": "States revenue of $4.1bn and mentions the margin of 61%.",
        "kind": "fact",
        "weight": "1",
        "source_types": [s.pk for s in criterion.source_types.all()],
    }
    autosave = client.post(
        reverse("criterion-update", args=[criterion.pk]), compound, HTTP_HX_REQUEST="true"
    )
    assert 'data-rule="compound"' in autosave.content.decode()

    client.force_login(owner)
    edit = form_data(FINANCE, name="House", min_criteria=10, **{"rules.compound.enabled": None})
    response = client.post(reverse("guideline-edit", args=[house.pk]), edit)
    assert response.status_code == 302

    client.force_login(collaborator)
    after = client.get(editor_url).content.decode()
    assert "min-criteria" in after  # the new threshold
    assert 'data-rule="compound"' not in after  # the rule switched off
    autosave = client.post(
        reverse("criterion-update", args=[criterion.pk]), compound, HTTP_HX_REQUEST="true"
    )
    assert 'data-rule="compound"' not in autosave.content.decode()
    refused = client.post(reverse("checklist-submit", args=[checklist.pk]))
    assert refused.status_code == 422 and "min-criteria" in refused.content.decode()
    checklist.refresh_from_db()
    assert checklist.status != Checklist.Status.SUBMITTED  # 6 criteria < 10 now blocks


def test_the_newest_finance_version_reaches_datasets_without_a_guideline(
    owner_api, collaborator, dataset, query, finance_v1
):
    assert dataset.guideline is None
    checklist = _submitted(query, collaborator)
    assert checklist.guideline == finance_v1
    response = owner_api.patch(
        f"/api/guidelines/{finance_v1.pk}/", {"config": {"min_criteria": 9}}, format="json"
    )
    assert response.json()["version"] == 2 and response.json()["datasets_moved"] == []
    dataset.refresh_from_db()
    assert guideline_for(dataset).version == 2
    checklist.refresh_from_db()
    assert checklist.status == Checklist.Status.SUBMITTED and checklist.guideline == finance_v1


def test_the_vagueness_rules_are_on_the_page_and_switch_off(client, owner):
    client.force_login(owner)
    page = client.get(reverse("guideline-create")).content.decode()
    assert "vague-wording" in page and "fact-anchor" in page
    changes = {"rules.vague-wording.enabled": None, "rules.fact-anchor.severity": "warning"}
    response = client.post(
        reverse("guideline-create"),
        {"preset": "finance", **form_data(FINANCE, name="Lenient", **changes)},
    )
    assert response.status_code == 302, response.context and response.context["form"].errors
    config = Guideline.objects.get(name="Lenient").config["rules"]
    assert config["vague-wording"] == {"enabled": False, "severity": None}
    assert config["fact-anchor"] == {"enabled": True, "severity": "warning"}
