"""Login throttling, security headers and the application's own error pages (issue 13,
point 5). The probe logged in after 30 wrong passwords and found no Content-Security-Policy
and no Permissions-Policy."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.urls import reverse
from django.views import defaults

pytestmark = pytest.mark.django_db


def test_thirty_wrong_passwords_lock_the_account_out(client, owner, password, settings):
    url = reverse("login")
    for _ in range(30):
        client.post(url, {"username": "owner", "password": "wrong"})
    response = client.post(url, {"username": "owner", "password": password})
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert client.get(reverse("home")).status_code == 302  # not logged in
    # Another username from the same address is not locked by owner's failures.
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_a_success_before_the_limit_resets_the_count(client, owner, password, settings):
    url = reverse("login")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post(url, {"username": "owner", "password": "wrong"})
    assert client.post(url, {"username": "owner", "password": password}).status_code == 302


def test_pages_and_api_send_csp_and_permissions_policy(client, owner, owner_api):
    client.force_login(owner)
    for response in (client.get(reverse("home")), owner_api.get("/api/datasets/")):
        policy = response["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
        assert directives["script-src"] == "'self'"  # no inline script, no eval
        assert directives["default-src"] == "'self'"
        assert directives["object-src"] == "'none'"
        assert directives["frame-ancestors"] == "'none'"
        assert "camera=()" in response["Permissions-Policy"]
        assert "geolocation=()" in response["Permissions-Policy"]


def test_templates_carry_no_inline_script_or_handlers():
    """What the policy would block, kept out of the templates (static/js/app.js does it)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2] / "templates"
    offenders = []
    for path in root.rglob("*.html"):
        text = path.read_text()
        inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", text)
        handlers = re.findall(r"\son[a-z]+=\"", text) + re.findall(r"\shx-on", text)
        if inline or handlers:
            offenders.append((path.name, inline, handlers))
    assert not offenders


def test_the_api_docs_page_loads_its_script_from_a_file(client, owner):
    client.force_login(owner)
    page = client.get(reverse("api-docs")).content.decode()
    assert "<script src=" in page


def test_own_error_pages():
    request = RequestFactory().get("/anything")
    assert "Something went wrong" in defaults.server_error(request).content.decode()
    assert "Not understood" in defaults.bad_request(request, Exception()).content.decode()


def test_a_blind_checklist_is_the_apps_404_page(client, outsider, dataset):
    client.force_login(outsider)
    response = client.get(reverse("dataset-detail", args=[dataset.pk]))
    assert response.status_code == 404
    assert "There is nothing here, or you have no access to it." in response.content.decode()


def test_behind_a_proxy_the_lockout_counts_the_forwarded_address():
    from config.middleware import forwarded_client_ip

    request = RequestFactory().get(
        "/", HTTP_X_FORWARDED_FOR="6.6.6.6, 10.0.0.7", REMOTE_ADDR="10.0.0.1"
    )
    assert forwarded_client_ip(request) == "10.0.0.7"
    assert forwarded_client_ip(RequestFactory().get("/", REMOTE_ADDR="10.0.0.1")) == "10.0.0.1"
