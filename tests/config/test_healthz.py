"""/healthz against the real database, the configured broker and a real worker process.

Its detail is for staff and for probes holding HEALTHZ_TOKEN; the first tests are such a
probe. Anonymous visitors get the status alone, without a worker ping (issue 13, point 6).
The scheduler check reads celery beat's heartbeat (issue 28, item 2): a real beat's in
tests/evaluation/schedules/test_schedules_fire.py, the row it writes here (beat_seen)."""

from __future__ import annotations

import datetime as dt

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from config.celery import app as celery_app
from evaluation import task_names
from tests.support.beat import beat_seen

TOKEN = "probe-token-for-tests"


@pytest.fixture
def client(client, settings):
    """A probe that holds the token."""
    settings.HEALTHZ_TOKEN = TOKEN
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    return client


def test_healthz_is_green_with_a_live_worker(client, celery_worker):
    beat_seen(dt.timedelta(seconds=20))
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
        "broker": True,
        "worker": True,
        "scheduler": True,
    }
    assert not any(check["warning"] for check in body["checks"].values())


def test_healthz_page_for_browsers(client, celery_worker):
    beat_seen(dt.timedelta(seconds=20))
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
        "warning": False,
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


# --- the scheduler ----------------------------------------------------------------------------


def scheduler(admin_client, monkeypatch):
    """What a staff member's /healthz says of the scheduler, and the overall status code (the
    worker check is faked: these tests are about beat)."""
    from config import health

    monkeypatch.setattr(health, "check_worker", lambda: "a worker answered the ping")
    response = admin_client.get("/healthz")
    return response.status_code, response.json()["checks"]["scheduler"]


def enabled_schedule(*, enabled: bool = True) -> None:
    """Beat's task of a schedule, as the Schedules page or the site administration writes it."""
    crontab = CrontabSchedule.objects.create(minute="30", hour="2")
    PeriodicTask.objects.create(
        name="Dataset 1: Nightly", task=task_names.SCHEDULED_RUN_TASK, crontab=crontab,
        kwargs="{}", enabled=enabled,
    )  # fmt: skip


@pytest.mark.django_db
def test_a_scheduler_seen_recently_is_ok(admin_client, monkeypatch):
    enabled_schedule()
    beat_seen(dt.timedelta(seconds=42))
    status, check = scheduler(admin_client, monkeypatch)
    assert status == 200
    assert (check["ok"], check["warning"]) == (True, False)
    assert check["detail"] in {f"celery beat seen {n} seconds ago" for n in (42, 43, 44)}


@pytest.mark.django_db
@pytest.mark.parametrize("paused", [False, True])
def test_no_scheduler_with_no_enabled_schedule_is_a_warning_not_a_failure(
    admin_client, monkeypatch, paused
):
    if paused:
        enabled_schedule(enabled=False)
    status, check = scheduler(admin_client, monkeypatch)
    assert status == 200
    assert (check["ok"], check["warning"]) == (True, True)
    assert check["detail"] == "celery beat never seen; no enabled schedule needs it"
    page = admin_client.get("/healthz", HTTP_ACCEPT="text/html").content.decode()
    assert "working, with a warning" in page and "all green" not in page


@pytest.mark.django_db
def test_no_scheduler_seen_while_a_schedule_waits_fails(admin_client, monkeypatch):
    enabled_schedule()
    status, check = scheduler(admin_client, monkeypatch)
    assert status == 503
    assert (check["ok"], check["warning"]) == (False, False)
    assert check["detail"] == (
        "RuntimeError: celery beat never seen: 1 enabled schedule will not fire;"
        " run one `celery -A config beat`"
    )


@pytest.mark.django_db
def test_a_scheduler_not_seen_for_minutes_fails_while_a_schedule_waits(admin_client, monkeypatch):
    enabled_schedule()
    beat_seen(dt.timedelta(minutes=14, seconds=10))  # more than three heartbeats of 60 s
    status, check = scheduler(admin_client, monkeypatch)
    assert status == 503 and check["ok"] is False
    assert (
        "celery beat not seen for 14\xa0minutes: 1 enabled schedule will not fire"
        in (check["detail"])
    )


@pytest.mark.django_db
def test_anonymous_status_does_not_depend_on_the_scheduler(settings):
    """The overall status of an anonymous probe is the database and the broker's, as before:
    a load balancer is not told to drop web servers because beat stopped."""
    from django.test import Client

    enabled_schedule()
    response = Client().get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
