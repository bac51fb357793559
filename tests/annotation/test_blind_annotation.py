"""Annotation is blind: until an expert submits their own checklist for a query, they cannot
see another expert's checklist for it, by page, API or search; afterwards only if the
dataset allows it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles, selectors, services
from annotation.access import can_read_checklist, dataset_permissions
from annotation.models import Checklist
from tests.factories import UserFactory, valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_expert(dataset):
    user = UserFactory(username="second-expert")
    services.dataset_set_role(dataset=dataset, user=user, role=roles.DatasetRole.EXPERT)
    return user


@pytest.fixture
def first_checklist(query, collaborator):
    """The collaborator's checklist, submitted."""
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )


def visible_by_page(client, user, checklist) -> bool:
    client.force_login(user)
    response = client.get(reverse("checklist-detail", args=[checklist.pk]))
    assert response.status_code in (200, 404)
    return response.status_code == 200


def visible_by_api(api, checklist) -> bool:
    response = api.get(f"/api/checklists/{checklist.pk}/")
    assert response.status_code in (200, 404)
    listed = {c["id"] for c in api.get("/api/checklists/").json()["results"]}
    assert (checklist.pk in listed) == (response.status_code == 200)
    return response.status_code == 200


def test_second_expert_cannot_see_first_until_submitting_own(
    client, query, first_checklist, second_expert, dataset
):
    from rest_framework.test import APIClient

    dataset.show_submitted_checklists = True
    dataset.save()
    api = APIClient()
    api.force_authenticate(second_expert)
    assert first_checklist.status == Checklist.Status.SUBMITTED

    assert not visible_by_page(client, second_expert, first_checklist)
    assert not visible_by_api(api, first_checklist)
    criteria_ids = set(first_checklist.criteria.values_list("pk", flat=True))
    assert api.get(f"/api/criteria/{min(criteria_ids)}/").status_code == 404
    assert not criteria_ids & {c["id"] for c in api.get("/api/criteria/").json()["results"]}

    # A draft of their own is not enough: blindness lasts until they submit.
    own = services.checklist_create_with_criteria(
        query=query, by=second_expert, criteria=valid_criteria()
    )
    assert not visible_by_page(client, second_expert, first_checklist)
    services.checklist_submit(checklist=own, by=second_expert)

    assert visible_by_page(client, second_expert, first_checklist)
    assert visible_by_api(api, first_checklist)


def test_dataset_setting_keeps_checklists_hidden_after_submitting(
    client, query, first_checklist, second_expert, dataset
):
    from rest_framework.test import APIClient

    assert dataset.show_submitted_checklists is False
    own = services.checklist_create_with_criteria(
        query=query, by=second_expert, criteria=valid_criteria(), submit=True
    )
    api = APIClient()
    api.force_authenticate(second_expert)
    assert own.status == Checklist.Status.SUBMITTED
    assert not visible_by_page(client, second_expert, first_checklist)
    assert not visible_by_api(api, first_checklist)


def test_query_page_hides_other_experts_criteria(client, query, first_checklist, second_expert):
    client.force_login(second_expert)
    page = client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert "States Q3 revenue of $4.12 billion." not in page
    assert "1 other checklist" in page


def test_search_does_not_reveal_hidden_criteria(client, query, first_checklist, second_expert):
    url = reverse("dataset-detail", args=[query.dataset_id])
    client.force_login(second_expert)
    page = client.get(url, {"q": "data-centre demand"}).content.decode()
    assert "No query matches these filters." in page
    # The author finds their own query by the words of their own criterion.
    client.force_login(first_checklist.author)
    page = client.get(url, {"q": "data-centre demand"}).content.decode()
    assert query.text in page


def test_dataset_admin_and_reviewer_read_submitted_checklists(
    client, owner, query, first_checklist, dataset
):
    reviewer = UserFactory(username="reviewer")
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    assert visible_by_page(client, owner, first_checklist)
    assert visible_by_page(client, reviewer, first_checklist)
    services.checklist_reopen(checklist=first_checklist, by=first_checklist.author)
    assert visible_by_page(client, owner, first_checklist)
    assert not visible_by_page(client, reviewer, first_checklist)  # drafts are the author's


def test_list_rule_and_object_rule_agree(query, first_checklist, second_expert, owner, dataset):
    """selectors.checklists_for_user (lists) and can_read_checklist (objects) are one rule."""
    reviewer = UserFactory(username="reviewer2")
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    draft = services.checklist_start(query=query, by=second_expert)
    for show in (False, True):
        dataset.show_submitted_checklists = show
        dataset.save()
        for user in (owner, second_expert, reviewer, first_checklist.author):
            perms = dataset_permissions(user, dataset)
            listed = set(selectors.checklists_for_user(user).values_list("pk", flat=True))
            for checklist in (first_checklist, draft):
                checklist.query.dataset = dataset
                assert (checklist.pk in listed) == can_read_checklist(user, checklist, perms), (
                    user.username,
                    checklist.pk,
                    show,
                )
