"""Login, logout and password change pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_login_page_logs_in_and_redirects_home(client, owner, password):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and "csrfmiddlewaretoken" in page.content.decode()
    response = client.post(reverse("login"), {"username": "owner", "password": password})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get(reverse("home")).status_code == 200


def test_wrong_password_is_refused_with_a_message(client, owner):
    response = client.post(reverse("login"), {"username": "owner", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_logout_needs_post_and_ends_the_session(client, owner):
    client.force_login(owner)
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("home")).status_code == 302


def test_password_change(client, owner, password):
    client.force_login(owner)
    response = client.post(
        reverse("password_change"),
        {
            "old_password": password,
            "new_password1": "a-new-pass-9182",
            "new_password2": "a-new-pass-9182",
        },
    )
    assert response.status_code == 302
    owner.refresh_from_db()
    assert owner.check_password("a-new-pass-9182")


def test_csrf_is_enforced_on_forms(owner, password):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post(reverse("login"), {"username": "owner", "password": password})
    assert response.status_code == 403


def test_roles_exist_as_groups():
    from django.contrib.auth.models import Group

    names = set(Group.objects.values_list("name", flat=True))
    assert {"Expert", "Reviewer", "Admin"} <= names
    admin = Group.objects.get(name="Admin")
    assert admin.permissions.filter(codename="add_dataset").exists()
