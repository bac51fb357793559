"""Personal API tokens (issue 28, People): made on the account page or by the API, the key
shown once and kept only as a SHA-256; read-only tokens refused on writes; revoked tokens
refused; each person reaches only their own. The older DRF tokens keep working."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts import keys, services
from accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def with_key(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def make(user, name="script", scope=ApiToken.Scope.READ):
    return services.api_token_create(user=user, name=name, scope=scope)


# --- The account page ----------------------------------------------------------------------


def test_the_account_page_is_linked_from_the_header(client, owner):
    client.force_login(owner)
    home = client.get(reverse("home")).content.decode()
    assert f'href="{reverse("account")}"' in home
    page = client.get(reverse("account"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "owner@example.com" in text and reverse("password_change") in text


def test_a_token_made_on_the_page_is_shown_once(client, owner):
    client.force_login(owner)
    response = client.post(reverse("token-create"), {"name": "nightly upload", "scope": "write"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    key = response.context["key"]
    assert key.startswith(keys.TOKEN_MARKER) and key in response.content.decode()
    token = ApiToken.objects.get()
    assert (token.user, token.name, token.scope) == (owner, "nightly upload", "write")
    # Listed with its name, scope and the start of its key; the key itself never again.
    page = client.get(reverse("account")).content.decode()
    assert "nightly upload" in page and "Read and write" in page
    assert token.prefix in page and key not in page


def test_token_names_are_checked(client, owner):
    client.force_login(owner)
    make(owner, "ci")
    for data, error in (
        ({"name": "ci", "scope": "read"}, "You already have a token called “ci”."),
        ({"name": "   ", "scope": "read"}, "This field is required."),
        ({"name": "x", "scope": "admin"}, "Select a valid choice."),
    ):
        response = client.post(reverse("token-create"), data)
        assert response.status_code == 400
        assert error in response.content.decode()
    assert ApiToken.objects.count() == 1


def test_a_token_revoked_on_the_page_stops_working(client, owner, dataset):
    token, key = make(owner)
    assert with_key(key).get("/api/datasets/").status_code == 200
    client.force_login(owner)
    assert client.post(reverse("token-revoke", args=[token.pk])).status_code == 302
    assert not ApiToken.objects.exists()
    refused = with_key(key).get("/api/datasets/")
    assert refused.status_code == 403 and refused.json() == {"detail": "Invalid token."}


def test_nobody_revokes_anothers_token_on_the_page(client, owner, outsider):
    token, _ = make(owner, "owner's secret job")
    client.force_login(outsider)
    assert client.post(reverse("token-revoke", args=[token.pk])).status_code == 404
    assert "secret job" not in client.get(reverse("account")).content.decode()
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_the_account_page_needs_a_login(client):
    assert client.get(reverse("account")).status_code == 302
    assert client.post(reverse("token-create"), {"name": "x", "scope": "read"}).status_code == 302
    assert not ApiToken.objects.exists()


def test_the_token_list_query_count_is_flat(client, owner, django_assert_max_num_queries):
    for n in range(30):
        make(owner, f"token {n}")
    client.force_login(owner)
    with django_assert_max_num_queries(8):
        response = client.get(reverse("account"))
    assert response.content.decode().count("token ") >= 30


# --- The API --------------------------------------------------------------------------------


def test_tokens_api_creates_lists_and_deletes(owner_api, owner):
    made = owner_api.post("/api/tokens/", {"name": "ci", "scope": "write"})
    assert made.status_code == 201
    body = made.json()
    assert body["key"].startswith(keys.TOKEN_MARKER)
    assert {"id", "name", "scope", "prefix", "created_at", "last_used_at"} <= set(body)
    listed = owner_api.get("/api/tokens/").json()
    assert listed["count"] == 1
    assert "key" not in listed["results"][0] and listed["results"][0]["name"] == "ci"
    # The new key works, and can read its own list.
    assert with_key(body["key"]).get("/api/tokens/").json()["count"] == 1
    assert owner_api.delete(f"/api/tokens/{body['id']}/").status_code == 204
    assert owner_api.get("/api/tokens/").json()["count"] == 0
    assert with_key(body["key"]).get("/api/datasets/").status_code == 403


def test_tokens_api_refuses_bad_input(owner_api):
    assert owner_api.post("/api/tokens/", {"name": "", "scope": "read"}).status_code == 400
    assert owner_api.post("/api/tokens/", {"name": "x", "scope": "root"}).status_code == 400
    owner_api.post("/api/tokens/", {"name": "x"})
    again = owner_api.post("/api/tokens/", {"name": "x"})
    assert again.status_code == 400 and "already have a token" in again.json()["name"][0]
    # Read-only is the default scope.
    assert ApiToken.objects.get().scope == "read"


def test_a_person_sees_and_deletes_only_their_own_tokens(owner_api, outsider_api, owner, outsider):
    mine, _ = make(owner, "mine")
    make(outsider, "theirs")
    assert [t["name"] for t in owner_api.get("/api/tokens/").json()["results"]] == ["mine"]
    assert outsider_api.delete(f"/api/tokens/{mine.pk}/").status_code == 404
    assert ApiToken.objects.filter(pk=mine.pk).exists()


def test_a_superuser_does_not_reach_anothers_token(owner):
    from tests.factories import UserFactory

    boss = UserFactory(username="boss", is_superuser=True, is_staff=True)
    token, _ = make(owner)
    api = APIClient()
    api.force_authenticate(boss)
    assert api.get("/api/tokens/").json()["count"] == 0
    assert api.delete(f"/api/tokens/{token.pk}/").status_code == 404


def test_the_tokens_api_needs_credentials():
    assert APIClient().get("/api/tokens/").status_code == 403
    assert APIClient().post("/api/tokens/", {"name": "x"}).status_code == 403


def test_tokens_api_list_query_count_is_flat(owner, owner_api, django_assert_max_num_queries):
    for n in range(30):
        make(owner, f"token {n}")
    with django_assert_max_num_queries(4):
        response = owner_api.get("/api/tokens/")
    assert response.json()["count"] == 30


# --- Authentication with a token ------------------------------------------------------------


def test_a_read_only_token_reads_and_is_refused_on_writes(owner, dataset):
    _, key = make(owner, scope=ApiToken.Scope.READ)
    api = with_key(key)
    listed = api.get("/api/datasets/")
    assert listed.status_code == 200
    assert [d["name"] for d in listed.json()["results"]] == [dataset.name]
    assert api.get(f"/api/datasets/{dataset.pk}/").status_code == 200
    refused = api.post("/api/datasets/", {"name": "Made with a read-only key"})
    assert refused.status_code == 403
    assert "This token is read-only" in refused.json()["detail"]
    assert api.patch(f"/api/datasets/{dataset.pk}/", {"description": "x"}).status_code == 403
    assert api.delete(f"/api/datasets/{dataset.pk}/").status_code == 403
    # Nor can it make itself a stronger token.
    assert api.post("/api/tokens/", {"name": "w", "scope": "write"}).status_code == 403
    dataset.refresh_from_db()
    assert dataset.description == "" and dataset.deleting_since is None
    assert ApiToken.objects.count() == 1


def test_a_read_write_token_writes_within_the_persons_rights(owner, outsider, dataset):
    _, key = make(owner, scope=ApiToken.Scope.WRITE)
    made = with_key(key).post("/api/datasets/", {"name": "Made with a key"})
    assert made.status_code == 201
    # A token is its person: no more than they may do.
    _, outsiders = make(outsider, scope=ApiToken.Scope.WRITE)
    api = with_key(outsiders)
    assert api.patch(f"/api/datasets/{dataset.pk}/", {"description": "x"}).status_code == 404


def test_unknown_and_inactive_keys_are_refused(owner):
    assert with_key("cwb_" + "A" * 43).get("/api/datasets/").status_code == 403
    _, key = make(owner)
    owner.is_active = False
    owner.save()
    refused = with_key(key).get("/api/datasets/")
    assert refused.status_code == 403 and "inactive" in refused.json()["detail"]


def test_the_database_never_holds_the_key(owner):
    token, key = make(owner)
    assert token.key_digest == keys.digest(key)
    assert token.prefix == key[: keys.TOKEN_PREFIX_LENGTH] and len(token.prefix) < 12
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken")
        rows = cursor.fetchall()
    assert rows and not any(key in str(value) for row in rows for value in row)


def test_last_used_is_written_at_most_once_a_minute(owner):
    token, key = make(owner)
    api = with_key(key)
    api.get("/api/tokens/")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    api.get("/api/tokens/")
    token.refresh_from_db()
    assert token.last_used_at == first  # within the minute: not written again
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - dt.timedelta(minutes=2))
    api.get("/api/tokens/")
    token.refresh_from_db()
    assert token.last_used_at > first - dt.timedelta(seconds=1)
    assert timezone.now() - token.last_used_at < dt.timedelta(minutes=1)


def test_a_recent_use_costs_no_write(owner, django_assert_num_queries):
    token, _ = make(owner)
    services.api_token_touch(token=token)
    found = ApiToken.objects.get(pk=token.pk)
    with django_assert_num_queries(0):
        services.api_token_touch(token=found)


def test_older_drf_tokens_keep_working_with_full_access(owner, dataset):
    legacy = Token.objects.create(user=owner)
    api = with_key(legacy.key)
    assert api.get("/api/datasets/").status_code == 200
    assert api.patch(f"/api/datasets/{dataset.pk}/", {"description": "x"}).status_code == 200


def test_the_older_token_is_shown_and_revoked_on_the_account_page(client, owner):
    legacy = Token.objects.create(user=owner)
    client.force_login(owner)
    page = client.get(reverse("account")).content.decode()
    assert "older token" in page and legacy.key[:6] in page and legacy.key not in page
    assert client.post(reverse("legacy-token-revoke")).status_code == 302
    assert not Token.objects.filter(user=owner).exists()
    assert with_key(legacy.key).get("/api/datasets/").status_code == 403
