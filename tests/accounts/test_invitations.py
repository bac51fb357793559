"""Invitations (issue 28, People): a dataset admin invites an address with a role; the link
in the email makes the account, signs it in and grants the role; the link works once, until
it expires, and only whole."""

from __future__ import annotations

import smtplib

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse

from accounts import keys
from accounts.models import Invitation
from annotation import roles, services
from annotation.access import dataset_permissions

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "quiet-harbour-4821"


def invite(client, dataset, email="newcomer@example.com", role="expert"):
    url = reverse("dataset-invite", args=[dataset.pk])
    return client.post(url, {"invite-email": email, "invite-role": role})


def accept(client, link, username="newcomer", password=NEW_PASSWORD):
    return client.post(link, {"username": username, "password1": password, "password2": password})


def test_an_invitee_joins_through_the_link_with_the_role_at_once(
    client, owner, dataset, last_link, settings
):
    settings.SITE_URL = "https://workbench.example.org"
    client.force_login(owner)
    response = invite(client, dataset, "New.Comer@Example.com", "reviewer")
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["New.Comer@example.com"]
    assert dataset.name in message.subject
    assert "owner invites you" in message.body and "as a reviewer" in message.body
    assert "https://workbench.example.org/invitations/" in message.body
    link = last_link()

    # The members page lists it as waiting.
    page = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert "New.Comer@example.com" in page and "Invitations waiting" in page

    client.logout()
    form = client.get(link)
    assert form.status_code == 200
    assert "Join “Owner dataset”" in form.content.decode()
    response = accept(client, link)
    assert response.status_code == 302
    assert response["Location"] == reverse("dataset-detail", args=[dataset.pk])

    user = get_user_model().objects.get(username="newcomer")
    assert user.email == "New.Comer@example.com"
    assert user.check_password(NEW_PASSWORD)
    assert list(user.groups.values_list("name", flat=True)) == ["Reviewer"]
    assert dataset_permissions(user, dataset) == set(
        roles.ROLE_PERMISSIONS[roles.DatasetRole.REVIEWER]
    )
    # Signed in: the dataset opens straight away, with a welcome.
    landed = client.get(response["Location"])
    assert landed.status_code == 200
    assert "You joined “Owner dataset” as a reviewer" in landed.content.decode()
    invitation = Invitation.objects.get()
    assert invitation.accepted_by == user and invitation.accepted_at is not None


def test_a_used_link_is_refused_and_makes_nothing(client, owner, dataset, last_link):
    client.force_login(owner)
    invite(client, dataset)
    link = last_link()
    client.logout()
    accept(client, link)
    client.logout()
    again = client.get(link)
    assert again.status_code == 410
    assert "This invitation was already used" in again.content.decode()
    second = accept(client, link, username="someone-else")
    assert second.status_code == 410
    assert not get_user_model().objects.filter(username="someone-else").exists()


def test_an_expired_link_is_refused(client, owner, dataset, last_link, settings):
    settings.INVITATION_EXPIRY_DAYS = 0  # expires the moment it is sent
    client.force_login(owner)
    invite(client, dataset)
    link = last_link()
    client.logout()
    page = client.get(link)
    assert page.status_code == 410
    assert "This invitation has expired" in page.content.decode()
    assert accept(client, link).status_code == 410
    assert not get_user_model().objects.filter(username="newcomer").exists()
    # The members page marks it, and offers to revoke it.
    client.force_login(owner)
    members = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert "expired" in members


@pytest.mark.parametrize(
    "tamper",
    [
        lambda key: key[:-1] + ("A" if key[-1] != "A" else "B"),  # one character changed
        lambda key: key[:20],  # cut short
        lambda key: key + "x",
        lambda key: "x" * 500,
    ],
)
def test_a_tampered_link_gets_a_clear_page(client, owner, dataset, last_link, tamper):
    client.force_login(owner)
    invite(client, dataset)
    key = last_link().split("/")[2]
    client.logout()
    bad = reverse("invitation-accept", args=[tamper(key)])
    page = client.get(bad)
    assert page.status_code == 404
    assert "This invitation link is not valid" in page.content.decode()
    assert accept(client, bad).status_code == 404
    assert get_user_model().objects.filter(username="newcomer").count() == 0


def test_a_revoked_link_is_refused(client, owner, dataset, last_link):
    client.force_login(owner)
    invite(client, dataset)
    link = last_link()
    invitation = Invitation.objects.get()
    revoke = reverse("invitation-revoke", args=[dataset.pk, invitation.pk])
    assert client.post(revoke).status_code == 302
    members = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert 'id="invitations"' not in members and "No invitation is waiting." in members
    client.logout()
    page = client.get(link)
    assert page.status_code == 410 and "withdrawn" in page.content.decode()


def test_inviting_again_replaces_the_old_link(client, owner, dataset, last_link):
    client.force_login(owner)
    invite(client, dataset)
    first = last_link()
    invite(client, dataset, role="reviewer")
    second = last_link()
    assert first != second
    assert Invitation.objects.filter(revoked_at=None).count() == 1
    client.logout()
    assert client.get(first).status_code == 410
    accept(client, second)
    user = get_user_model().objects.get(username="newcomer")
    assert roles.REVIEW in dataset_permissions(user, dataset)


def test_bad_invitation_input_gets_field_errors_and_changes_nothing(client, owner, dataset):
    client.force_login(owner)
    response = invite(client, dataset, email="not an address", role="overlord")
    assert response.status_code == 400
    page = response.content.decode()
    assert "Enter a valid email address." in page
    assert "Select a valid choice." in page
    assert not Invitation.objects.exists() and not mail.outbox


def test_bad_account_input_gets_field_errors_and_keeps_the_invitation(
    client, owner, collaborator, dataset, last_link
):
    client.force_login(owner)
    invite(client, dataset)
    link = last_link()
    client.logout()
    taken = client.post(link, {"username": "Collaborator", "password1": "123", "password2": "1234"})
    assert taken.status_code == 400
    page = taken.content.decode()
    assert "A user with that username already exists." in page
    assert "The two password fields didn" in page
    weak = client.post(link, {"username": "newcomer", "password1": "123", "password2": "123"})
    assert "This password is too short" in weak.content.decode()
    like_email = client.post(
        link, {"username": "nc", "password1": "newcomer@example", "password2": "newcomer@example"}
    )
    assert "too similar to the email address" in like_email.content.decode()
    assert not get_user_model().objects.filter(username__in=["newcomer", "nc"]).exists()
    # Still usable.
    assert accept(client, link).status_code == 302


def test_an_existing_accounts_address_just_gets_the_role(client, owner, outsider, dataset):
    client.force_login(owner)
    response = invite(client, dataset, email="OUTSIDER@example.com", role="expert")
    assert response.status_code == 302
    assert dataset_permissions(outsider, dataset) == set(
        roles.ROLE_PERMISSIONS[roles.DatasetRole.EXPERT]
    )
    assert not Invitation.objects.exists()
    assert mail.outbox[0].to == ["outsider@example.com"]
    assert "Log in with your existing account (username outsider)" in mail.outbox[0].body
    page = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert "outsider already has an account with this address" in page


def test_an_account_made_since_the_invitation_logs_in_and_accepts(
    client, owner, dataset, last_link
):
    from tests.factories import UserFactory

    client.force_login(owner)
    invite(client, dataset, email="late@example.com")
    link = last_link()
    client.logout()
    late = UserFactory(username="late", email="late@example.com")
    page = client.get(link)
    assert "An account already uses" in page.content.decode()
    assert accept(client, link, username="another").status_code == 200  # no form to post
    assert not get_user_model().objects.filter(username="another").exists()
    client.force_login(late)
    assert "Accept as late" in client.get(link).content.decode()
    assert client.post(link).status_code == 302
    assert roles.ANNOTATE in dataset_permissions(late, dataset)
    assert client.get(link).status_code == 410


def test_signed_in_as_someone_else_accepts_nothing(client, owner, outsider, dataset, last_link):
    client.force_login(owner)
    invite(client, dataset)
    link = last_link()
    client.force_login(outsider)
    page = client.get(link)
    assert "you are logged in as <strong>outsider</strong>" in page.content.decode()
    client.post(link)
    assert dataset_permissions(outsider, dataset) == set()
    assert Invitation.objects.get().accepted_at is None


def test_an_email_that_cannot_be_sent_leaves_no_invitation(client, owner, dataset, monkeypatch):
    def refuse(*args, **kwargs):
        raise smtplib.SMTPServerDisconnected("gone")

    monkeypatch.setattr("accounts.mail.send_mail", refuse)
    client.force_login(owner)
    response = invite(client, dataset)
    assert response.status_code == 400
    assert "could not be sent (SMTPServerDisconnected)" in response.content.decode()
    assert not Invitation.objects.exists()


def test_the_database_never_holds_the_invitation_key(client, owner, dataset, last_link):
    client.force_login(owner)
    invite(client, dataset)
    key = last_link().split("/")[2]
    invitation = Invitation.objects.get()
    assert invitation.key_digest == keys.digest(key) and key not in invitation.key_digest
    assert key not in str(list(Invitation.objects.values()))


def test_only_the_datasets_admins_invite_or_revoke(
    client, owner, collaborator, outsider, dataset, last_link
):
    client.force_login(owner)
    invite(client, dataset)
    invitation = Invitation.objects.get()
    revoke = reverse("invitation-revoke", args=[dataset.pk, invitation.pk])
    mail.outbox.clear()
    for person, status in ((collaborator, 403), (outsider, 404)):
        client.force_login(person)
        assert invite(client, dataset, email="x@example.com").status_code == status
        assert client.post(revoke).status_code == status
        assert client.get(reverse("dataset-members", args=[dataset.pk])).status_code == status
    assert Invitation.objects.count() == 1 and Invitation.objects.get().revoked_at is None
    assert not mail.outbox
    # An invitation of another dataset is not reached through this one.
    other = services.dataset_create(name="Other", by=outsider)
    client.force_login(outsider)
    wrong = reverse("invitation-revoke", args=[other.pk, invitation.pk])
    assert client.post(wrong).status_code == 404


def test_a_link_to_a_dataset_being_deleted_is_gone(client, owner, dataset, last_link):
    client.force_login(owner)
    invite(client, dataset)
    link = last_link()
    services.dataset_delete(dataset=dataset)
    client.logout()
    page = client.get(link)
    assert page.status_code == 410 and "no longer available" in page.content.decode()


def test_own_address_is_refused(client, owner, dataset):
    client.force_login(owner)
    response = invite(client, dataset, email=owner.email, role="expert")
    assert response.status_code == 400
    assert "That is your own address." in response.content.decode()
    assert roles.CHANGE in dataset_permissions(owner, dataset)


def test_members_page_query_count_is_flat(client, owner, dataset, django_assert_max_num_queries):
    from tests.factories import UserFactory

    for n in range(30):
        services.dataset_set_role(
            dataset=dataset, user=UserFactory(), role=roles.DatasetRole.EXPERT
        )
        client.force_login(owner)
        invite(client, dataset, email=f"person{n}@example.com")
    client.force_login(owner)
    with django_assert_max_num_queries(14):
        response = client.get(reverse("dataset-members", args=[dataset.pk]))
    assert response.status_code == 200
    assert response.content.decode().count("person") >= 30
