"""An admin makes an account in the app, with its initial password and a role at once."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import roles
from annotation.access import dataset_permissions

pytestmark = pytest.mark.django_db

PASSWORD = "amber-lantern-5530"


def make(client, dataset, **fields):
    data = {
        "account-username": "rosa",
        "account-email": "rosa@example.com",
        "account-password1": PASSWORD,
        "account-password2": PASSWORD,
        "account-role": "expert",
    }
    data.update({f"account-{k}": v for k, v in fields.items()})
    return client.post(reverse("dataset-account-create", args=[dataset.pk]), data)


def test_an_admin_makes_an_account_with_a_role(client, owner, dataset):
    client.force_login(owner)
    response = make(client, dataset)
    assert response.status_code == 302
    rosa = get_user_model().objects.get(username="rosa")
    assert rosa.email == "rosa@example.com" and rosa.check_password(PASSWORD)
    assert list(rosa.groups.values_list("name", flat=True)) == ["Expert"]
    assert dataset_permissions(rosa, dataset) == set(
        roles.ROLE_PERMISSIONS[roles.DatasetRole.EXPERT]
    )
    page = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert "Account rosa made: an expert on this dataset." in page
    # The new person logs in with it.
    client.logout()
    logged_in = client.post(reverse("login"), {"username": "rosa", "password": PASSWORD})
    assert logged_in.status_code == 302
    assert client.get(reverse("dataset-detail", args=[dataset.pk])).status_code == 200


def test_a_dataset_admin_role_gives_no_site_wide_group(client, owner, dataset):
    client.force_login(owner)
    make(client, dataset, role="admin")
    rosa = get_user_model().objects.get(username="rosa")
    assert not rosa.groups.exists()  # the Admin group is a site admin's to give
    assert roles.CHANGE in dataset_permissions(rosa, dataset)
    assert not rosa.has_perm("annotation.add_dataset")


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"username": "Collaborator"}, "A user with that username already exists."),
        ({"email": "collaborator@example.com"}, "An account already uses this address"),
        ({"email": ""}, "This field is required."),
        ({"password1": "short", "password2": "short"}, "This password is too short"),
        ({"password1": "12345678901", "password2": "12345678901"}, "entirely numeric"),
        ({"password2": "something else"}, "The two password fields didn"),
        ({"role": "overlord"}, "Select a valid choice."),
        ({"username": "bad name!"}, "Enter a valid username."),
    ],
)
def test_bad_input_gets_field_errors_and_changes_nothing(
    client, owner, collaborator, dataset, fields, error
):
    client.force_login(owner)
    before = get_user_model().objects.count()
    response = make(client, dataset, **fields)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert get_user_model().objects.count() == before


def test_only_the_datasets_admins_make_accounts(client, collaborator, outsider, dataset):
    for person, status in ((collaborator, 403), (outsider, 404)):
        client.force_login(person)
        assert make(client, dataset).status_code == status
    assert not get_user_model().objects.filter(username="rosa").exists()
