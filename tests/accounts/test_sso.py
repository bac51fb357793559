"""Single sign-on through OpenID Connect: off by default; on, the whole code flow against a
loopback provider (tests/support/oidc_provider.py) over real HTTP, and every refusal."""

from __future__ import annotations

import time

import pytest
import requests
from django.contrib.auth import get_user_model
from django.urls import NoReverseMatch, reverse
from guardian.shortcuts import get_objects_for_user

from accounts import services
from annotation import roles
from annotation.access import dataset_permissions
from tests.support.oidc_provider import BACKEND, OidcProvider, new_key, signed_on

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(settings):
    with OidcProvider() as provider, signed_on(settings, provider):
        yield provider


def sign_in(client, provider, next_url: str = ""):
    """Click the button, let the provider answer, come back: the callback's response."""
    start = client.get(reverse("oidc-login") + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302
    assert start["Location"].startswith(f"{provider.issuer}/authorize?")
    back = requests.get(start["Location"], allow_redirects=False, timeout=10)
    assert back.status_code == 302
    return client.get(back.headers["Location"])


def logged_in_as(client):
    return client.session.get("_auth_user_id")


def refusal(client, response) -> str:
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert logged_in_as(client) is None
    return client.get(response["Location"]).content.decode()


# --- Off ----------------------------------------------------------------------------------


def test_off_by_default_no_url_no_button_no_backend(client, settings):
    assert settings.OIDC_ENABLED is False
    assert BACKEND not in settings.AUTHENTICATION_BACKENDS
    with pytest.raises(NoReverseMatch):
        reverse("oidc-login")
    assert client.get("/accounts/oidc/login/").status_code == 404
    assert client.get("/accounts/oidc/callback/?code=x&state=y").status_code == 404
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with" not in page and "oidc" not in page


# --- The flow -----------------------------------------------------------------------------


def test_the_login_page_offers_the_button(client, provider):
    page = client.get(reverse("login") + "?next=/datasets/").content.decode()
    assert "Sign in with Stub" in page
    assert 'href="/accounts/oidc/login/?next=/datasets/"' in page


def test_an_existing_account_is_matched_by_email_whatever_its_case(
    client, provider, dataset, collaborator
):
    provider.person["email"] = "COLLABORATOR@Example.com"
    accounts = get_user_model().objects.count()
    response = sign_in(client, provider)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert logged_in_as(client) == str(collaborator.pk)
    assert get_user_model().objects.count() == accounts
    assert dataset.name in client.get(reverse("home")).content.decode()
    assert collaborator.has_usable_password()  # untouched: the password still works too


def test_the_page_asked_for_is_where_the_person_lands(client, provider, dataset):
    provider.person["email"] = "collaborator@example.com"
    target = reverse("dataset-detail", args=[dataset.pk])
    response = sign_in(client, provider, next_url=target)
    assert response["Location"] == target


def test_a_new_address_makes_an_account_with_no_role(client, provider, dataset):
    response = sign_in(client, provider)
    assert response.status_code == 302
    rosa = get_user_model().objects.get(email="rosa@example.com")
    assert logged_in_as(client) == str(rosa.pk)
    assert (rosa.username, rosa.first_name, rosa.last_name) == ("rosa", "Rosa", "Stub")
    assert not rosa.has_usable_password()
    assert not rosa.groups.exists() and not rosa.is_staff
    assert not get_objects_for_user(rosa, "annotation.view_dataset").exists()
    assert dataset.name not in client.get(reverse("home")).content.decode()
    assert client.get(reverse("dataset-detail", args=[dataset.pk])).status_code == 404


def test_an_invitation_is_accepted_after_a_first_sign_in(
    client, provider, owner, dataset, last_link
):
    services.invite(
        dataset=dataset, email="Rosa@example.com", role=roles.DatasetRole.EXPERT, by=owner
    )
    link = last_link()
    response = sign_in(client, provider, next_url=link)  # "Log in" on the invitation page
    assert response["Location"] == link
    assert client.post(link)["Location"] == reverse("dataset-detail", args=[dataset.pk])
    rosa = get_user_model().objects.get(email="rosa@example.com")
    assert dataset_permissions(rosa, dataset) == set(
        roles.ROLE_PERMISSIONS[roles.DatasetRole.EXPERT]
    )


def test_a_taken_username_gets_a_suffix(client, provider, owner):
    provider.person.update(email="someone@example.com", preferred_username="owner")
    sign_in(client, provider)
    assert get_user_model().objects.get(email="someone@example.com").username == "owner-2"


def test_password_logins_still_work(client, provider, collaborator, password):
    response = client.post(reverse("login"), {"username": "collaborator", "password": password})
    assert response.status_code == 302
    assert logged_in_as(client) == str(collaborator.pk)
    assert provider.token_requests == 0


# --- Refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nonce": "another-sign-in"}, "belongs to another sign-in (nonce)"),
        ({"aud": "another-application"}, "issued to another application (audience)"),
        ({"iss": "http://127.0.0.1:1"}, "came from another provider (issuer)"),
        ({"exp": int(time.time()) - 3600}, "had expired"),
    ],
)
def test_an_id_token_that_does_not_check_is_refused(client, provider, change, message):
    provider.id_token_claims = change
    page = refusal(client, sign_in(client, provider))
    assert message in page
    assert not get_user_model().objects.filter(email="rosa@example.com").exists()


def test_a_signature_by_another_key_is_refused(client, provider):
    provider.signing_key = new_key()
    page = refusal(client, sign_in(client, provider))
    assert "signature is not the provider&#x27;s" in page


def test_a_wrong_state_is_refused_before_the_code_is_used(client, provider):
    start = client.get(reverse("oidc-login"))
    back = requests.get(start["Location"], allow_redirects=False, timeout=10).headers["Location"]
    forged = back.replace("state=", "state=x")
    page = refusal(client, client.get(forged))
    assert "does not belong to a sign-in started in this browser (state)" in page
    assert provider.token_requests == 0


def test_an_answer_is_used_once(client, provider):
    start = client.get(reverse("oidc-login"))
    back = requests.get(start["Location"], allow_redirects=False, timeout=10).headers["Location"]
    client.get(back)
    client.logout()
    assert "(state), or was used already" in refusal(client, client.get(back))


def test_a_deactivated_account_is_refused(client, provider, collaborator):
    collaborator.is_active = False
    collaborator.save()
    provider.person["email"] = collaborator.email
    page = refusal(client, sign_in(client, provider))
    assert "This account is deactivated" in page
    assert get_user_model().objects.filter(email__iexact=collaborator.email).count() == 1


def test_an_address_outside_the_allowed_domains_is_refused(client, provider, settings):
    settings.OIDC_ALLOWED_EMAIL_DOMAINS = ["example.org"]
    page = refusal(client, sign_in(client, provider))
    assert "Addresses at example.com cannot sign in to this site" in page
    assert not get_user_model().objects.filter(email="rosa@example.com").exists()
    settings.OIDC_ALLOWED_EMAIL_DOMAINS = ["example.com"]
    sign_in(client, provider)
    assert get_user_model().objects.filter(email="rosa@example.com").exists()


def test_an_unverified_address_is_refused(client, provider, collaborator):
    provider.person.update(email=collaborator.email, email_verified=False)
    page = refusal(client, sign_in(client, provider))
    assert f"has not verified the address {collaborator.email}" in page


def test_an_address_shared_by_two_accounts_is_refused(client, provider, owner, collaborator):
    owner.email = collaborator.email.upper()
    owner.save()
    provider.person["email"] = collaborator.email
    assert "Several accounts use your email address" in refusal(client, sign_in(client, provider))


def test_the_provider_saying_no_is_shown_without_its_free_text(client, provider):
    start = client.get(reverse("oidc-login"))
    state = dict(p.split("=", 1) for p in start["Location"].split("?", 1)[1].split("&"))["state"]
    callback = reverse("oidc-callback")
    response = client.get(
        callback, {"error": "access_denied", "error_description": "Call +1 555", "state": state}
    )
    page = refusal(client, response)
    assert "The sign-in provider did not sign you in (access_denied)." in page
    assert "555" not in page


def test_an_unreachable_provider_is_said_plainly(client, provider, settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:1"  # nothing listens there
    response = client.get(reverse("oidc-login"))
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert "could not be reached" in client.get(response["Location"]).content.decode()


# --- Settings -----------------------------------------------------------------------------


def test_off_the_library_is_not_even_imported():
    from tests.config.test_settings import run_manage

    shown = run_manage(
        "shell",
        "-c",
        "import sys; from django.test import Client; "
        "assert Client().get('/accounts/login/').status_code == 200; "
        "print(sorted(m for m in sys.modules if 'oidc' in m or m == 'accounts.sso'))",
        env={"DEBUG": "1", "ALLOWED_HOSTS": "testserver"},
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip().endswith("[]")


def test_settings_from_the_environment_turn_it_on(tmp_path):
    from tests.config.test_settings import PRODUCTION, run_manage

    secret = tmp_path / "oidc-secret"
    secret.write_text("from-a-file\n")
    env = {
        **PRODUCTION,
        "OIDC_ENABLED": "1",
        "OIDC_ISSUER": "https://login.example.com",
        "OIDC_CLIENT_ID": "workbench",
        "OIDC_CLIENT_SECRET_FILE": str(secret),
    }
    shown = run_manage(
        "shell",
        "-c",
        "from django.conf import settings; from django.urls import reverse; "
        "print(reverse('oidc-callback'), settings.OIDC_RP_CLIENT_SECRET, "
        "settings.AUTHENTICATION_BACKENDS)",
        env=env,
    )
    assert shown.returncode == 0, shown.stderr
    assert "/accounts/oidc/callback/ from-a-file" in shown.stdout and BACKEND in shown.stdout
    assert run_manage("check", "--deploy", "--fail-level", "WARNING", env=env).returncode == 0

    incomplete = {k: v for k, v in env.items() if k != "OIDC_ISSUER"}
    refused = run_manage("check", env=incomplete)
    assert refused.returncode != 0
    assert "OIDC_ENABLED needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET" in refused.stderr


def test_an_account_without_a_password_is_not_offered_a_password_change(client, db):
    user = get_user_model().objects.create_user(username="sso-person", email="s@example.com")
    user.set_unusable_password()
    user.save()
    client.force_login(user)
    page = client.get(reverse("account")).content.decode()
    assert reverse("password_change") not in page
    assert "You sign in through single sign-on" in page
