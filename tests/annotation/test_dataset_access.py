"""Who sees which dataset, by page and by API: owner, collaborator, outsider."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles, services
from tests.factories import DatasetFactory, QueryFactory

pytestmark = pytest.mark.django_db


def test_outsider_gets_404_on_dataset_page(client, dataset, outsider):
    client.force_login(outsider)
    response = client.get(reverse("dataset-detail", args=[dataset.pk]))
    assert response.status_code == 404


def test_outsider_gets_404_on_dataset_api_object(outsider_api, dataset):
    response = outsider_api.get(f"/api/datasets/{dataset.pk}/")
    assert response.status_code == 404


def test_outsider_gets_404_on_query_page_and_api(client, outsider, outsider_api, query):
    client.force_login(outsider)
    assert client.get(reverse("query-detail", args=[query.pk])).status_code == 404
    assert outsider_api.get(f"/api/queries/{query.pk}/").status_code == 404


def test_members_see_dataset_page(client, dataset, owner, collaborator, query):
    for user in (owner, collaborator):
        client.force_login(user)
        response = client.get(reverse("dataset-detail", args=[dataset.pk]))
        assert response.status_code == 200
        assert query.text in response.content.decode()


def test_dataset_list_shows_only_granted_datasets(client, owner, outsider, dataset):
    other = DatasetFactory(name="Somebody else")
    client.force_login(outsider)
    page = client.get(reverse("home")).content.decode()
    assert dataset.name not in page and other.name not in page
    client.force_login(owner)
    page = client.get(reverse("home")).content.decode()
    assert dataset.name in page and other.name not in page


def test_api_lists_only_granted_datasets(owner_api, collaborator_api, outsider_api, dataset):
    DatasetFactory(name="Not shared")
    assert [d["name"] for d in owner_api.get("/api/datasets/").json()["results"]] == [dataset.name]
    assert [d["id"] for d in collaborator_api.get("/api/datasets/").json()["results"]] == [
        dataset.pk
    ]
    assert outsider_api.get("/api/datasets/").json()["results"] == []


def test_api_query_list_is_filtered_by_dataset_access(owner_api, outsider_api, query):
    QueryFactory(dataset=DatasetFactory())  # a query in a dataset nobody here was granted
    assert [q["id"] for q in owner_api.get("/api/queries/").json()["results"]] == [query.pk]
    assert outsider_api.get("/api/queries/").json()["results"] == []


def test_collaborator_cannot_change_dataset_but_owner_can(owner_api, collaborator_api, dataset):
    url = f"/api/datasets/{dataset.pk}/"
    assert collaborator_api.patch(url, {"description": "mine now"}).status_code == 403
    assert owner_api.patch(url, {"description": "Updated."}).status_code == 200
    dataset.refresh_from_db()
    assert dataset.description == "Updated."


def test_outsider_cannot_change_or_delete_dataset(outsider_api, dataset):
    url = f"/api/datasets/{dataset.pk}/"
    assert outsider_api.patch(url, {"description": "x"}).status_code == 404
    assert outsider_api.delete(url).status_code == 404
    dataset.refresh_from_db()
    assert dataset.description != "x"


def test_only_admins_create_datasets_and_become_their_admin(owner_api, collaborator_api, owner):
    refused = collaborator_api.post("/api/datasets/", {"name": "Expert's own"})
    assert refused.status_code == 403
    created = owner_api.post("/api/datasets/", {"name": "New one", "experts_per_query": 3})
    assert created.status_code == 201, created.content
    assert created.json()["experts_per_query"] == 3
    detail = owner_api.get(f"/api/datasets/{created.json()['id']}/")
    assert detail.status_code == 200


def test_anonymous_api_and_pages_are_refused(client, dataset):
    from rest_framework.test import APIClient

    assert APIClient().get("/api/datasets/").status_code in (401, 403)
    response = client.get(reverse("dataset-detail", args=[dataset.pk]))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_token_authentication_works(dataset, collaborator):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    token = Token.objects.create(user=collaborator)
    api = APIClient(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get(f"/api/datasets/{dataset.pk}/").status_code == 200


def test_removing_a_member_revokes_access(client, owner, collaborator, dataset):
    client.force_login(owner)
    url = reverse("dataset-member-remove", args=[dataset.pk, collaborator.pk])
    # Removal is confirmed (tests/accounts/test_members.py has the confirmation itself).
    assert client.post(url, {"confirm": "remove"}).status_code == 302
    client.force_login(collaborator)
    assert client.get(reverse("dataset-detail", args=[dataset.pk])).status_code == 404


def test_members_page_adds_member_with_role(client, owner, outsider, dataset):
    client.force_login(owner)
    url = reverse("dataset-members", args=[dataset.pk])
    response = client.post(url, {"username": outsider.username, "role": "reviewer"})
    assert response.status_code == 302
    from annotation.access import dataset_permissions

    assert dataset_permissions(outsider, dataset) == set(
        roles.ROLE_PERMISSIONS[roles.DatasetRole.REVIEWER]
    )


def test_members_page_names_unknown_user(client, owner, dataset):
    client.force_login(owner)
    response = client.post(
        reverse("dataset-members", args=[dataset.pk]), {"username": "nobody", "role": "expert"}
    )
    assert response.status_code == 200
    assert "No active user is called &#x27;nobody&#x27;" in response.content.decode()


def test_collaborator_cannot_manage_members(client, collaborator, dataset):
    client.force_login(collaborator)
    assert client.get(reverse("dataset-members", args=[dataset.pk])).status_code == 403


def test_expert_sees_only_own_checklist_on_query_page(client, dataset, collaborator, owner):
    from tests.factories import ChecklistFactory, CriterionFactory, UserFactory

    other_expert = UserFactory(username="other-expert")
    services.dataset_set_role(dataset=dataset, user=other_expert, role=roles.DatasetRole.EXPERT)
    query = QueryFactory(dataset=dataset)
    CriterionFactory(checklist=ChecklistFactory(query=query, author=collaborator), text="Mine.")
    CriterionFactory(checklist=ChecklistFactory(query=query, author=other_expert), text="Theirs.")
    client.force_login(collaborator)
    page = client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert "Mine." in page and "Theirs." not in page
    client.force_login(owner)
    page = client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert "Mine." in page and "Theirs." in page


def test_permissions_checked_in_a_request_are_not_asked_again_until_a_role_changes(
    dataset, owner, outsider, django_assert_num_queries
):
    from annotation import access

    with django_assert_num_queries(1):  # guardian's: the user's and their groups', one UNION
        held = access.check_dataset(owner, dataset, roles.CHANGE)
    with django_assert_num_queries(0):  # the page asking what the user may do there
        assert access.dataset_permissions(owner, dataset) == held
    # Another user on the same instance is asked for: never someone else's permissions.
    assert access.dataset_permissions(outsider, dataset) == set()
    services.dataset_set_role(dataset=dataset, user=owner, role=roles.DatasetRole.REVIEWER)
    assert roles.CHANGE not in access.dataset_permissions(owner, dataset)
    # A dataset marked for deletion since the check answers nothing, as without the check.
    access.check_dataset(owner, dataset)
    dataset.deleting_since = dataset.created_at
    assert access.dataset_permissions(owner, dataset) == set()


def test_permissions_held_are_guardians_own_answer_in_one_query(
    dataset, owner, collaborator, outsider, django_assert_num_queries
):
    """held_permissions sends guardian's two queries as one UNION: for a member by role, a
    user holding some through a group, both at once, a superuser, an inactive member and an
    outsider, it answers what guardian's checker answers."""
    from django.contrib.auth.models import Group
    from guardian.core import ObjectPermissionChecker
    from guardian.shortcuts import assign_perm

    from annotation import access
    from tests.factories import UserFactory

    by_group = UserFactory(username="by-group")
    team = Group.objects.create(name="dataset-team")
    by_group.groups.add(team)
    assign_perm(roles.VIEW, team, dataset)
    assign_perm(roles.REVIEW, team, dataset)
    collaborator.groups.add(team)  # an expert by role, and a reviewer through the group
    superuser = UserFactory(username="root-user", is_superuser=True, is_staff=True)
    inactive = UserFactory(username="gone")
    services.dataset_set_role(dataset=dataset, user=inactive, role=roles.DatasetRole.REVIEWER)
    inactive.is_active = False
    inactive.save()
    people = [owner, collaborator, by_group, superuser, inactive, outsider]
    expected = {u.username: set(ObjectPermissionChecker(u).get_perms(dataset)) for u in people}
    assert expected["by-group"] == {roles.VIEW, roles.REVIEW}
    assert roles.REVIEW in expected[collaborator.username]
    assert expected["gone"] == set() and expected[outsider.username] == set()
    for user in people:
        with django_assert_num_queries(0 if not user.is_active else 1):
            assert access.held_permissions(user, dataset) == expected[user.username], user


def test_query_list_page_query_count_is_flat(client, owner, dataset, django_assert_max_num_queries):
    for _ in range(30):
        QueryFactory(dataset=dataset)
    client.force_login(owner)
    # 11: one to find the latest run, whose verdicts mark saturated queries (none here);
    # the dataset's permissions asked once (the access check's, reused by the page).
    with django_assert_max_num_queries(11):
        response = client.get(reverse("dataset-detail", args=[dataset.pk]))
    assert response.status_code == 200


def test_dataset_admin_adds_a_query_with_tags(client, owner, collaborator, dataset):
    from annotation.models import Query

    dataset.experts_create_queries = False  # on, experts may too (test_expert_queries.py)
    dataset.save()
    url = reverse("query-create", args=[dataset.pk])
    client.force_login(collaborator)
    assert client.get(url).status_code == 403
    client.force_login(owner)
    refused = client.post(url, {"text": "What changed?", "query_date": "not a date"})
    assert refused.status_code == 200 and "Enter a valid date." in refused.content.decode()
    assert not Query.objects.exists()
    response = client.post(
        url, {"text": "What changed?", "query_date": "2026-05-01", "tags": "energy, dividends"}
    )
    query = Query.objects.get()
    assert response["Location"] == reverse("query-detail", args=[query.pk])
    assert sorted(query.tags.values_list("name", flat=True)) == ["dividends", "energy"]


def test_an_admin_cannot_demote_themselves(client, owner, dataset):
    from annotation.access import dataset_permissions

    client.force_login(owner)
    url = reverse("dataset-members", args=[dataset.pk])
    response = client.post(url, {"username": owner.username, "role": "expert"}, follow=True)
    assert "You cannot change your own role" in response.content.decode()
    assert roles.CHANGE in dataset_permissions(owner, dataset)
