"""Removing a member is confirmed first, on a page that says what they keep (issue 28: one
was removed by a mis-click)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles
from annotation.access import dataset_permissions
from tests.factories import ChecklistFactory, QueryFactory

pytestmark = pytest.mark.django_db


def remove_url(dataset, user):
    return reverse("dataset-member-remove", args=[dataset.pk, user.pk])


def test_the_members_page_links_to_a_confirmation_not_a_button(
    client, owner, collaborator, dataset
):
    client.force_login(owner)
    page = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert "Remove collaborator…" in page
    assert f'href="{remove_url(dataset, collaborator)}"' in page
    assert f'action="{remove_url(dataset, collaborator)}"' not in page


def test_the_confirmation_names_what_the_member_keeps(client, owner, collaborator, dataset):
    query = QueryFactory(dataset=dataset)
    ChecklistFactory(query=query, author=collaborator)
    query.assigned_experts.add(collaborator)
    client.force_login(owner)
    page = client.get(remove_url(dataset, collaborator))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Remove collaborator?" in text
    assert "1 checklist (0 submitted)" in text
    assert "0 labels and 0 adjudications" in text
    assert "1 query and 0 review items" in text
    assert 'name="confirm" value="remove"' in text
    # Opening the page removed nothing.
    assert roles.ANNOTATE in dataset_permissions(collaborator, dataset)


def test_a_post_without_the_confirmation_changes_nothing(client, owner, collaborator, dataset):
    client.force_login(owner)
    response = client.post(remove_url(dataset, collaborator))
    assert response.status_code == 200
    assert "Remove collaborator?" in response.content.decode()
    assert client.post(remove_url(dataset, collaborator), {"confirm": "yes"}).status_code == 200
    assert roles.ANNOTATE in dataset_permissions(collaborator, dataset)


def test_confirmed_removal_takes_access_and_keeps_the_work(client, owner, collaborator, dataset):
    checklist = ChecklistFactory(query=QueryFactory(dataset=dataset), author=collaborator)
    client.force_login(owner)
    response = client.post(remove_url(dataset, collaborator), {"confirm": "remove"})
    assert response.status_code == 302
    assert dataset_permissions(collaborator, dataset) == set()
    checklist.refresh_from_db()
    assert checklist.author == collaborator
    page = client.get(response["Location"]).content.decode()
    assert "collaborator no longer has access to this dataset; what they made stays." in page


def test_nobody_removes_themselves(client, owner, dataset):
    client.force_login(owner)
    page = client.get(remove_url(dataset, owner)).content.decode()
    assert "You cannot remove yourself" in page and 'name="confirm"' not in page
    client.post(remove_url(dataset, owner), {"confirm": "remove"})
    assert roles.CHANGE in dataset_permissions(owner, dataset)


def test_only_members_can_be_removed_and_only_by_admins(
    client, owner, collaborator, outsider, dataset
):
    client.force_login(owner)
    assert client.get(remove_url(dataset, outsider)).status_code == 404  # not a member
    assert (
        client.get(f"/datasets/{dataset.pk}/members/99999999999999999999/remove/").status_code
        == 404
    )
    client.force_login(collaborator)
    assert client.get(remove_url(dataset, owner)).status_code == 403
    assert client.post(remove_url(dataset, owner), {"confirm": "remove"}).status_code == 403
    client.force_login(outsider)
    assert client.post(remove_url(dataset, collaborator), {"confirm": "remove"}).status_code == 404
    assert roles.CHANGE in dataset_permissions(owner, dataset)
    assert roles.ANNOTATE in dataset_permissions(collaborator, dataset)


def test_adding_a_member_again_after_removal(client, owner, collaborator, dataset):
    client.force_login(owner)
    client.post(remove_url(dataset, collaborator), {"confirm": "remove"})
    client.post(
        reverse("dataset-members", args=[dataset.pk]),
        {"username": "collaborator", "role": "reviewer"},
    )
    assert roles.REVIEW in dataset_permissions(collaborator, dataset)
