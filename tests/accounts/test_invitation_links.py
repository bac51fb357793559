"""Issue 40: the link in an invitation opens the server the admin is using. SITE_URL when it
is set (`dev.py run` sets it from HOST and PORT); unset, the address of the inviting
request, which Django has checked against ALLOWED_HOSTS. The members page says where this
site's emails go, so that nobody hunts for a development email among the worker's output."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core import mail
from django.urls import reverse

import dev
from accounts.models import Invitation

pytestmark = pytest.mark.django_db


def invite(client, dataset, email="newcomer@example.com", **extra):
    url = reverse("dataset-invite", args=[dataset.pk])
    return client.post(url, {"invite-email": email, "invite-role": "expert"}, **extra)


def test_without_site_url_the_link_names_the_address_the_admin_uses(
    client, owner, dataset, settings
):
    settings.SITE_URL = ""
    client.force_login(owner)
    response = invite(client, dataset, HTTP_HOST="127.0.0.1:8310")
    assert response.status_code == 302
    (message,) = mail.outbox
    assert "http://127.0.0.1:8310/invitations/" in message.body
    assert ":8000" not in message.body


def test_site_url_wins_over_the_requests_address(client, owner, dataset, settings):
    settings.SITE_URL = "https://workbench.example.org/"
    client.force_login(owner)
    invite(client, dataset, HTTP_HOST="127.0.0.1:8310")
    (message,) = mail.outbox
    assert "https://workbench.example.org/invitations/" in message.body
    assert "8310" not in message.body


def test_a_host_outside_allowed_hosts_sends_nothing(client, owner, dataset, settings):
    settings.SITE_URL = ""
    client.force_login(owner)
    response = invite(client, dataset, HTTP_HOST="evil.example.com")
    assert response.status_code == 400
    assert mail.outbox == []
    assert not Invitation.objects.exists()


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", "8310", "http://127.0.0.1:8310"),
        ("localhost", "8000", "http://localhost:8000"),
        ("0.0.0.0", "8310", "http://127.0.0.1:8310"),  # listens everywhere
        ("::1", "9000", "http://[::1]:9000"),
    ],
)
def test_dev_run_sets_site_url_from_host_and_port(host, port, url):
    assert dev.site_url(host, port) == url


def test_dev_run_keeps_a_site_url_given(monkeypatch):
    monkeypatch.setattr(dev, "PORT", "8310")
    monkeypatch.delenv("SITE_URL", raising=False)
    assert dev.dev_env()["SITE_URL"] == "http://127.0.0.1:8310"
    monkeypatch.setenv("SITE_URL", "https://workbench.example.org")
    assert dev.dev_env()["SITE_URL"] == "https://workbench.example.org"


def test_development_emails_are_files_under_var_and_the_members_page_says_so(
    client, owner, dataset, settings, tmp_path: Path
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = tmp_path / "emails"
    settings.SITE_URL = ""
    client.force_login(owner)
    page = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert f"written as files to {tmp_path / 'emails'}" in page
    assert "Links in the email start with <code data-link-site>http://testserver</code>" in page
    invite(client, dataset)
    (written,) = (tmp_path / "emails").iterdir()
    assert "http://testserver/invitations/" in written.read_text()


def test_the_members_page_says_nothing_of_delivery_when_emails_are_sent(
    client, owner, dataset, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    client.force_login(owner)
    page = client.get(reverse("dataset-members", args=[dataset.pk])).content.decode()
    assert "data-email-delivery" not in page


def test_the_development_settings_write_emails_to_var(tmp_path):
    import subprocess
    import sys

    code = "from django.conf import settings as s; print(s.EMAIL_BACKEND); print(s.EMAIL_FILE_PATH)"
    env = {"PATH": "/usr/bin:/bin", "DEBUG": "1", "VAR_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "config.settings"}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=env, capture_output=True, text=True, check=True, cwd=Path(dev.__file__).parent,
    ).stdout.split()  # fmt: skip
    assert out == ["django.core.mail.backends.filebased.EmailBackend", str(tmp_path / "emails")]
