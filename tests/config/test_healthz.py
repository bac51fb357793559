"""/healthz against the real database, the configured broker and a real worker process.

Its detail is for staff and for probes holding HEALTHZ_TOKEN; the first tests are such a
probe. Anonymous visitors get the status alone, without a worker ping (issue 13, point 6)."""

from __future__ import annotations

import pytest

from config.celery import app as celery_app

TOKEN = "probe-token-for-tests"


@pytest.fixture
def client(client, settings):
    """A probe that holds the token."""
    settings.HEALTHZ_TOKEN = TOKEN
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    return client


def test_healthz_is_green_with_a_live_worker(client, celery_worker):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
        "broker": True,
        "worker": True,
    }


def test_healthz_page_for_browsers(client, celery_worker):
    response = client.get("/healthz", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert "all green" in response.content.decode()


@pytest.mark.django_db
def test_healthz_reports_a_missing_worker(client, settings):
    # Ping a queue no worker consumes: the check must time out and say so.
    settings.HEALTHZ_WORKER_TIMEOUT = 0.5
    settings.HEALTHZ_PING_QUEUE = "healthz-nobody-listens"
    try:
        response = client.get("/healthz")
    finally:
        with celery_app.connection_for_write() as conn:
            conn.default_channel.queue_purge("healthz-nobody-listens")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "fail"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is True
    assert body["checks"]["worker"]["ok"] is False
    assert "TimeoutError" in body["checks"]["worker"]["detail"]


@pytest.mark.django_db
def test_healthz_reports_an_unreachable_broker(client, monkeypatch):
    from config import health

    def broken_broker() -> str:
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(health, "check_broker", broken_broker)
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["broker"]["detail"] == "ConnectionRefusedError: broker down"
    assert body["checks"]["worker"] == {
        "name": "worker",
        "ok": False,
        "detail": "skipped: the broker is unreachable",
        "ms": 0,
    }


def test_livez_answers_without_the_database_or_the_broker(client, settings):
    # No database fixture: any query would raise. A broker nobody listens on: /healthz would
    # fail, the liveness probe must not care.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get("/livez")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_anonymous_visitors_get_the_status_alone_and_queue_no_task(settings, monkeypatch):
    from django.test import Client

    from config import health

    def no_ping() -> str:
        raise AssertionError("an anonymous hit must not queue a ping")

    monkeypatch.setattr(health, "check_worker", no_ping)
    settings.HEALTHZ_TOKEN = TOKEN
    anonymous = Client()
    response = anonymous.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}  # no broker host, no database vendor
    wrong = anonymous.get("/healthz", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert wrong.json() == {"status": "ok"}
    page = anonymous.get("/healthz", HTTP_ACCEPT="text/html").content.decode()
    assert "shown to staff only" in page and "sqlite" not in page and "postgresql" not in page


@pytest.mark.django_db
def test_checks_are_cached_for_a_few_seconds(settings, monkeypatch, admin_client):
    from config import health

    settings.HEALTHZ_CACHE_SECONDS = 30
    calls = []
    monkeypatch.setattr(health, "check_worker", lambda: calls.append(1) or "answered")
    for _ in range(5):
        assert admin_client.get("/healthz").json()["checks"]["worker"]["ok"] is True
    assert calls == [1]


@pytest.mark.django_db
def test_a_ping_no_worker_took_leaves_no_lasting_result_row(client, settings):
    """The probe found a permanent REVOKED row per hit while the worker was down: the worker
    that finds an expired ping later marks it REVOKED. The next check forgets it."""
    from django_celery_results.models import TaskResult

    from config import health

    settings.HEALTHZ_WORKER_TIMEOUT = 0.3
    settings.HEALTHZ_PING_QUEUE = "healthz-nobody-listens"
    settings.HEALTHZ_CACHE_SECONDS = 0
    try:
        client.get("/healthz")
        (sent,) = health.cache.get(health.PINGS_KEY)
        # What a worker starting later does with the expired ping:
        TaskResult.objects.create(task_id=sent, status="REVOKED")
        client.get("/healthz")
    finally:
        with celery_app.connection_for_write() as conn:
            conn.default_channel.queue_purge("healthz-nobody-listens")
    assert not TaskResult.objects.filter(task_id=sent).exists()
