"""Where regression alerts' webhooks may go (SSRF): with ALERT_WEBHOOK_ALLOWED_HOSTS empty,
no host that resolves to a loopback, private, link-local, reserved or multicast address,
refused on the Alerts page naming the field, in the site administration, and again when
sending (an alert saved before the check, or a list changed since); with the list set, only
its hosts. The POST goes to the address that was checked, and a redirect is not followed.
Every server here is a real one on loopback."""

from __future__ import annotations

import socket
import subprocess

import pytest
from django.urls import reverse

from evaluation.alerts import delivery, webhooks
from evaluation.alerts.models import AlertEvent, RegressionAlert
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db

SECRET_ENV = "ALERT_SECRET_WEBHOOK_HOSTS_TEST"

HOSTILE = [
    "http://127.0.0.1",
    "http://127.0.0.1:8000/hook",
    "http://127.1/",
    "http://[::1]",
    "http://[::1]:8000/hook",
    "http://169.254.169.254/",
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://10.0.0.1",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",  # shared address space (carrier NAT)
    "http://0.0.0.0/",
    "http://224.0.0.1/",  # multicast
    "http://240.0.0.1/",  # reserved
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
    "http://localhost/",  # a name that resolves to 127.0.0.1
    "http://LOCALHOST:8000/hook",
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_FLUSHALL",
    "ftp://93.184.215.14/",
    "http://good.example@127.0.0.1/",
    "http://good.example:443@127.0.0.1/",
    "http://127.0.0.1\\@good.example/",
    "http://no-such-host.invalid/",
    "http://[::1/",
    "http:///path-only",
]


@pytest.fixture
def no_list(settings):
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = []


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_addresses_are_refused_by_the_check(no_list, url):
    assert webhooks.problem(url)
    with pytest.raises(webhooks.WebhookRefused):
        webhooks.check(url)


@pytest.mark.parametrize("url", HOSTILE)
def test_the_alerts_page_refuses_them_naming_the_field(client, owner, dataset, no_list, url):
    client.force_login(owner)
    data = {"threshold": "0.1", "emails": "qa@example.com", "webhook_url": url,
            "secret_env": SECRET_ENV, "active": "on"}  # fmt: skip
    response = client.post(reverse("dataset-alerts", args=[dataset.pk]), data)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["webhook_url"], errors
    assert not RegressionAlert.objects.exists()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:8000/hook", "private or reserved address (127.0.0.1)"),
        ("http://localhost/", "The host localhost is at a private or reserved address"),
        ("http://169.254.169.254/", "ALERT_WEBHOOK_ALLOWED_HOSTS"),
        ("gopher://127.0.0.1/", "An http(s) address."),
        ("http://good.example@127.0.0.1/", "without a user name or password"),
        ("http://no-such-host.invalid/", "could not be resolved"),
    ],
)
def test_the_message_says_why(no_list, url, words):
    assert words in webhooks.problem(url)


def test_a_public_address_is_allowed_without_a_list(client, owner, dataset, no_list):
    """A literal public address: resolving it asks no DNS, and nothing is sent here."""
    client.force_login(owner)
    url = "https://93.184.215.14/hooks/workbench?team=qa"
    assert webhooks.problem(url) is None
    target = webhooks.check(url)
    assert (target.host, target.port, target.path) == (
        "93.184.215.14",
        443,
        "/hooks/workbench?team=qa",
    )
    data = {"threshold": "0.1", "webhook_url": url, "secret_env": SECRET_ENV, "active": "on"}
    response = client.post(reverse("dataset-alerts", args=[dataset.pk]), data)
    assert response.status_code == 302
    assert RegressionAlert.objects.get().webhook_url == url


def test_with_a_list_only_its_hosts_are_allowed(settings):
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.com", ".corp.example", "127.0.0.1"]
    # On the list: allowed as they are, wherever they point (the operator vouches).
    assert webhooks.problem("https://hooks.example.com/x") is None
    assert webhooks.problem("https://HOOKS.example.com/x") is None
    assert webhooks.problem("https://qa.corp.example/x") is None
    assert webhooks.problem("http://127.0.0.1:8123/hook") is None
    # Off the list: refused, public or not, and the other rules still hold.
    refused = ["https://93.184.215.14/", "https://example.com/", "http://localhost/",
               "https://hooks.example.com.evil.test/", "https://corp.example.evil.test/",
               "http://evil@hooks.example.com/", "file://hooks.example.com/etc/passwd"]  # fmt: skip
    for url in refused:
        assert webhooks.problem(url), url
    assert "only to hooks.example.com, .corp.example, 127.0.0.1" in webhooks.problem(
        "https://other.test/"
    )


def test_the_site_administration_refuses_them_too(client, admin_user, dataset, no_list):
    client.force_login(admin_user)
    data = {"dataset": dataset.pk, "threshold": "0.1", "emails": "", "active": "on",
            "webhook_url": "http://169.254.169.254/", "secret_env": SECRET_ENV}  # fmt: skip
    response = client.post(reverse("admin:evaluation_regressionalert_add"), data)
    assert response.status_code == 200  # the form again, with its error
    assert "webhook_url" in response.context["adminform"].form.errors
    assert not RegressionAlert.objects.exists()


# --- sending -------------------------------------------------------------------------------


def _event(dataset, url: str) -> AlertEvent:
    """An alert saved without the page's check (as before it existed), and its event."""
    alert = RegressionAlert.objects.create(dataset=dataset, webhook_url=url, secret_env=SECRET_ENV)
    return AlertEvent(alert=alert, payload={"event": "regression", "difference": -0.2})


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_stored_loopback_webhook_is_not_sent(dataset, no_list, monkeypatch, host):
    monkeypatch.setenv(SECRET_ENV, "s3cret")
    with WebhookReceiver() as server:
        attempt = delivery.post_webhook(_event(dataset, f"http://{host}:{server.port}/hook"))
        assert attempt.status is None and not attempt.retry  # refused: trying again is no use
        assert (
            attempt.error.startswith("not sent: The host")
            and "private or reserved" in attempt.error
        )
        assert server.received == []


def test_a_host_taken_off_the_list_is_not_sent_any_more(dataset, settings, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, "s3cret")
    with WebhookReceiver() as server:
        settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
        event = _event(dataset, server.url)
        assert delivery.post_webhook(event).status == 204
        settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.com"]
        attempt = delivery.post_webhook(event)
        assert attempt.status is None and "not in ALERT_WEBHOOK_ALLOWED_HOSTS" in attempt.error
        assert len(server.received) == 1
    method, path, headers, body = server.received[0]
    assert (method, path, headers["Host"]) == ("POST", "/hook", f"127.0.0.1:{server.port}")
    assert headers["User-Agent"] == delivery.USER_AGENT
    assert headers[delivery.SIGNATURE_HEADER] == delivery.sign(body, "s3cret")


def test_a_redirect_is_answered_not_followed(dataset, settings, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, "s3cret")
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    with WebhookReceiver() as inside, WebhookReceiver(status=307, location=inside.url) as outside:
        attempt = delivery.post_webhook(_event(dataset, outside.url))
        assert (attempt.status, attempt.error, attempt.retry) == (
            307, "HTTP 307: redirects are not followed", False
        )  # fmt: skip
        assert len(outside.received) == 1 and inside.received == []


def test_the_post_goes_to_the_address_that_was_checked(settings, monkeypatch):
    """DNS rebinding: the name answers a safe address to the check and an internal one
    later. The POST must not ask again: it connects to the address it checked."""
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["rebind.test"]
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1", "10.0.0.1", "10.0.0.1"])
    asked = []

    def resolver(host, port, *args, **kwargs):
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        return real(next(answers), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with WebhookReceiver() as server:
        status = webhooks.post(f"http://rebind.test:{server.port}/hook?x=1", b"{}",
                               {"Content-Type": "application/json"}, timeout=5)  # fmt: skip
        assert status == 204
    assert asked == ["rebind.test"]
    _, path, headers, _ = server.received[0]
    assert (path, headers["Host"]) == ("/hook?x=1", f"rebind.test:{server.port}")


def test_https_is_verified_against_the_urls_host(settings, monkeypatch, tmp_path):
    """A real TLS server on loopback with a certificate for localhost: trusted, the POST
    goes through the checked address with the host's name; not trusted, nothing is sent."""
    import ssl

    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["localhost"]
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    with WebhookReceiver() as server:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.server.socket = context.wrap_socket(server.server.socket, server_side=True)
        url = f"https://localhost:{server.port}/hook"
        with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
            webhooks.post(url, b"{}", {}, timeout=5)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # read by create_default_context
        assert webhooks.post(url, b"{}", {}, timeout=5) == 204
    assert len(server.received) == 1 and server.received[0][2]["Host"] == f"localhost:{server.port}"
