"""Issue 38, point 6: nothing granted silently. Inviting the address of an account that
already holds a role on the dataset changes it only once the inviter confirms, on a second
step that says the change in full; every role a person gives or takes is recorded in the
audit history (audit.RoleChange), with who and how."""

from __future__ import annotations

import pytest
from django.core import mail
from django.urls import reverse

from accounts import services as people
from annotation import roles, services
from audit.models import RoleChange
from tests.accounts.test_invitations import NEW_PASSWORD, accept, invite

pytestmark = pytest.mark.django_db

ADMIN, EXPERT, REVIEWER = (
    roles.DatasetRole.ADMIN, roles.DatasetRole.EXPERT, roles.DatasetRole.REVIEWER
)  # fmt: skip


def role(user, dataset) -> roles.DatasetRole | None:
    return people.dataset_role(user, dataset)


def changes(dataset) -> list[tuple]:
    return list(
        RoleChange.objects.filter(dataset=dataset)
        .order_by("pk")
        .values_list("username", "before", "after", "changed_by__username", "via")
    )


@pytest.fixture
def co_admin(outsider, dataset):
    services.dataset_set_role(dataset=dataset, user=outsider, role=ADMIN)
    return outsider


def test_inviting_a_co_admins_address_asks_before_demoting_them(client, owner, co_admin, dataset):
    client.force_login(owner)

    response = invite(client, dataset, email="Outsider@example.com", role="expert")

    assert response.status_code == 200
    page = response.content.decode()
    assert "outsider is now an admin; make them an expert?" in page
    assert 'name="invite-replaces" value="admin"' in page
    assert "Make outsider expert" in page and "Cancel: keep them admin" in page
    # Asking changed nothing, told nobody and recorded nothing.
    assert role(co_admin, dataset) == ADMIN
    assert not mail.outbox and changes(dataset) == []

    confirmed = client.post(
        reverse("dataset-invite", args=[dataset.pk]),
        {"invite-email": "outsider@example.com", "invite-role": "expert",
         "invite-replaces": "admin"},
    )  # fmt: skip

    assert confirmed.status_code == 302
    assert role(co_admin, dataset) == EXPERT
    assert changes(dataset) == [("outsider", "admin", "expert", "owner", "invitation")]
    assert mail.outbox[0].to == ["outsider@example.com"]
    members = client.get(confirmed["Location"]).content.decode()
    assert "they are now an expert on this dataset (they were an admin)" in members


def test_a_confirmation_of_another_role_than_the_one_held_asks_again(
    client, owner, co_admin, dataset
):
    """Another admin changed the role between the question and the answer: the inviter
    confirmed replacing a role the account no longer holds."""
    client.force_login(owner)
    response = client.post(
        reverse("dataset-invite", args=[dataset.pk]),
        {"invite-email": co_admin.email, "invite-role": "expert", "invite-replaces": "reviewer"},
    )  # fmt: skip
    assert response.status_code == 200
    assert "outsider is now an admin; make them an expert?" in response.content.decode()
    assert role(co_admin, dataset) == ADMIN and changes(dataset) == []


def test_a_promotion_is_confirmed_too(client, owner, collaborator, dataset):
    client.force_login(owner)
    response = invite(client, dataset, email=collaborator.email, role="admin")
    assert "collaborator is now an expert; make them an admin?" in response.content.decode()
    assert role(collaborator, dataset) == EXPERT


def test_the_role_already_held_changes_nothing_and_sends_nothing(
    client, owner, collaborator, dataset
):
    client.force_login(owner)
    response = invite(client, dataset, email=collaborator.email, role="expert")
    assert response.status_code == 302
    assert not mail.outbox and changes(dataset) == []
    page = client.get(response["Location"]).content.decode()
    assert "is already an expert on this dataset: nothing changed" in page


def test_an_account_without_a_role_gets_it_at_once_recorded(client, owner, outsider, dataset):
    client.force_login(owner)
    response = invite(client, dataset, email=outsider.email, role="reviewer")
    assert response.status_code == 302
    assert role(outsider, dataset) == REVIEWER
    assert changes(dataset) == [("outsider", "", "reviewer", "owner", "invitation")]


def test_every_other_role_change_is_recorded(
    client, owner, collaborator, reviewer, dataset, last_link
):
    client.force_login(owner)
    members = reverse("dataset-members", args=[dataset.pk])
    # The members page: by username, and removing.
    client.post(members, {"username": "reviewer", "role": "reviewer"})
    client.post(members, {"username": "collaborator", "role": "admin"})
    client.post(
        reverse("dataset-member-remove", args=[dataset.pk, reviewer.pk]), {"confirm": "remove"}
    )
    # An account made by the admin, and an invitation accepted through its link.
    client.post(
        reverse("dataset-account-create", args=[dataset.pk]),
        {"account-username": "made", "account-email": "made@example.com",
         "account-password1": NEW_PASSWORD, "account-password2": NEW_PASSWORD,
         "account-role": "expert"},
    )  # fmt: skip
    invite(client, dataset, email="newcomer@example.com", role="reviewer")
    client.logout()
    accept(client, last_link())

    assert changes(dataset) == [
        ("reviewer", "", "reviewer", "owner", "members"),
        ("collaborator", "expert", "admin", "owner", "members"),
        ("reviewer", "reviewer", "", "owner", "members"),
        ("made", "", "expert", "owner", "account"),
        ("newcomer", "", "reviewer", "owner", "accepted"),
    ]
    assert str(RoleChange.objects.get(username="collaborator")) == (
        "collaborator on Owner dataset: expert → admin"
    )
