"""Scheduled runs and regression alerts under infrastructure faults (issue 27, item 5), on
PostgreSQL and Redis with real worker processes:

- The database down when a nightly tick arrives (it refuses connections and has cut the
  ones it had, as during a restart): the tick is tried again and starts its run once the
  database is back, one run however many times the tick was delivered; the run finishes
  and the Schedules page shows it. The regression check of a run that ended just before
  the outage is not lost either.
- Two deliveries of one tick at the very same moment start one run.
- Which database errors count as transient (evaluation/transient.py), on real errors, and
  a broken connection replaced by a new one.
- A webhook that fails for a while (503, 503, then 204) is retried with backoff and
  delivered once, every attempt recorded and shown on the Alerts page, the email sent
  once, nothing sent again when the tasks are delivered again. One that stays down ends
  failed after the set number of attempts, its error recorded and shown; a 4xx is not
  retried; a send whose worker died is never sent a second time.

The database is closed by tests/faults/conftest.py's `database_down` (ALLOW_CONNECTIONS
false and every other connection terminated, on this session's test database only) and
always reopened.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import SimpleNamespace

import psycopg
import pytest
from celery import current_app
from django.db import IntegrityError, InterfaceError, OperationalError, connection
from django.db.utils import DatabaseErrorWrapper, ProgrammingError
from django.urls import reverse
from django.utils import timezone
from psycopg import errors as pg_errors

from evaluation import task_names, transient
from evaluation.alerts import delivery
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import System
from evaluation.runs import services as run_services
from evaluation.runs.models import Run
from evaluation.schedules import services as schedules
from tests.evaluation.analytics.known import build_known
from tests.factories import PanelFactory, offline_judge
from tests.faults.conftest import POSTGRES_ONLY, database_down
from tests.support import mail_spool
from tests.support.builders import checklisted_query
from tests.support.celery_worker import database_url
from tests.support.webhook_receiver import WebhookReceiver

# The runs these tests start queue tasks that the session's worker (started by an earlier
# test of this process) may take: it is settled before the database is emptied.
pytestmark = pytest.mark.usefixtures("settle_session_worker")

# The webhook tests with a worker process: on the PostgreSQL pass (the SQLite pass checks the
# same rules in this process: test_which_answers_are_tried_again and the next one).
WORKER_ON_POSTGRES = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the worker tests run on the PostgreSQL pass"
)
SECRET_ENV = "ALERT_SECRET_FAULTS_TEST"
SECRET = "faults-s3cret"
Delivery = AlertEvent.Delivery

# Short backoffs for the workers of these tests (production: minutes).
DB_RETRIES = {
    "TASK_DB_RETRY_ATTEMPTS": "60",
    "TASK_DB_RETRY_BASE_DELAY": "1",
    "TASK_DB_RETRY_MAX_DELAY": "2",
}
WEBHOOK_ATTEMPTS = 4
WEBHOOK_RETRIES = {
    "ALERT_WEBHOOK_RETRY_ATTEMPTS": str(WEBHOOK_ATTEMPTS),
    "ALERT_WEBHOOK_RETRY_BASE_DELAY": "1",
    "ALERT_WEBHOOK_RETRY_MAX_DELAY": "2",
}


# --- helpers -------------------------------------------------------------------------------


def wait_for(condition: Callable[[], object], timeout: float, failure: Callable[[], str]):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.2)
    pytest.fail(failure())


@contextmanager
def database_closed() -> Iterator[None]:
    """The test database down (tests/faults/conftest.py: every connection but this test's
    cut, new ones refused) until the block ends."""
    connection.ensure_connection()  # this test's own connection stays open
    with database_down(0):
        yield


def send(name: str, queue: str, *, args: tuple = (), kwargs: dict | None = None) -> None:
    """A task message, as beat or a receiver sends it, to a test worker's queue."""
    current_app.send_task(name, args=args, kwargs=kwargs or {}, queue=queue)


def retried_ids(log: str, task: str) -> set[str]:
    """The deliveries of `task` that met the database down (evaluation.transient's log)."""
    return set(re.findall(rf"{re.escape(task)}\[([^\]]+)\]: database unreachable", log))


def results(log: str, task: str) -> list[str]:
    """What each finished delivery of `task` returned, from the worker's log."""
    return re.findall(rf"Task {re.escape(task)}\[[^\]]+\] succeeded in [\d.]+s: (\S+)", log)


def nightly(dataset, owner):
    """A schedule "Nightly" grading a system's newest answers with a no-LLM panel, and the
    keyword arguments beat sends with its tick."""
    (answer,) = checklisted_query(dataset, criteria=2, answers=1).answers
    answer.run_label = "night-1"
    answer.save(update_fields=["run_label"])
    panel = PanelFactory(name="Night panel", judges=[offline_judge("Offline checks")])
    schedules.schedule_save(
        dataset=dataset, name="Nightly", system=answer.system, panel=panel,
        at=dt.time(2, 30), days="*", enabled=True, by=owner,
    )  # fmt: skip
    kwargs = {"dataset_id": dataset.pk, "panel_id": panel.pk, "system_id": answer.system_id,
              "name": "Nightly"}  # fmt: skip
    return answer.system, kwargs


def two_runs(dataset):
    """Two finished runs of the same queries: Alpha drops from 0.8 to 0.2, a regression."""
    before = build_known(dataset, seed=1, run_name="Before", skill={"Alpha": 0.8, "Beta": 0.5})
    after = build_known(
        dataset, seed=2, run_name="After", queries=before.plan, skill={"Alpha": 0.2, "Beta": 0.5}
    )
    alpha = next(pk for pk, name in before.systems.items() if name == "Alpha")
    return before, after, alpha


def alert_worker(start_worker, spool):
    """A worker of the test's own whose webhooks may reach loopback, with the test's secret,
    short backoffs, and its emails written to `spool`."""
    queue = f"faults-alerts-{os.getpid()}-{time.monotonic_ns()}"
    env = {
        "ALERT_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", SECRET_ENV: SECRET,
        "EMAIL_BACKEND": mail_spool.BACKEND, "MAIL_SPOOL": str(spool),
        **WEBHOOK_RETRIES, **DB_RETRIES,
    }  # fmt: skip
    return start_worker(queue=queue, concurrency=4, env=env)


def alerts_page(client, owner, dataset) -> str:
    client.force_login(owner)
    response = client.get(reverse("dataset-alerts", args=[dataset.pk]))
    assert response.status_code == 200
    return response.content.decode()


def event_final(event_id: int) -> AlertEvent | None:
    event = AlertEvent.objects.get(pk=event_id)
    final = (Delivery.DELIVERED, Delivery.FAILED, Delivery.NONE)
    return event if event.webhook_state in final and event.email_state in final else None


# --- the database down at tick time --------------------------------------------------------


@POSTGRES_ONLY
def test_a_tick_delivered_while_the_database_is_down_starts_one_run_once_it_is_back(
    start_worker, dataset, owner, client
):
    system, kwargs = nightly(dataset, owner)
    queue = f"faults-ticks-{os.getpid()}"
    worker = start_worker(queue=queue, concurrency=4, env=DB_RETRIES)
    with database_closed():
        # Beat's tick, delivered twice (a redelivery): both meet the database down.
        send(task_names.SCHEDULED_RUN_TASK, queue, kwargs=kwargs)
        send(task_names.SCHEDULED_RUN_TASK, queue, kwargs=kwargs)
        wait_for(
            lambda: len(retried_ids(worker.log(), task_names.SCHEDULED_RUN_TASK)) == 2,
            30,
            lambda: "The ticks were not retried:\n" + worker.log()[-4000:],
        )
        time.sleep(3)  # a few more retries against the closed database
        assert not Run.objects.filter(dataset=dataset).exists()
    done = wait_for(
        lambda: len(found := results(worker.log(), task_names.SCHEDULED_RUN_TASK)) == 2 and found,
        60,
        lambda: "The ticks did not finish after the database came back:\n" + worker.log()[-4000:],
    )
    run = Run.objects.get(dataset=dataset)  # one run: nothing lost, nothing doubled
    assert done == [str(run.pk), str(run.pk)]
    assert (run.name, run.answer_run_label, list(run.systems.all())) == (
        "Nightly", "night-1", [system]
    )  # fmt: skip
    # It runs to the end on the same worker, and its dataset's admins see it.
    wait_for(
        lambda: Run.objects.filter(pk=run.pk, status=Run.Status.DONE).exists(),
        60,
        lambda: f"The run is {Run.objects.get(pk=run.pk).status}:\n" + worker.log()[-4000:],
    )
    client.force_login(owner)
    page = client.get(reverse("dataset-schedules", args=[dataset.pk])).content.decode()
    assert page.count(f'href="{reverse("run-detail", args=[run.pk])}">Nightly</a> · Done') == 1


@POSTGRES_ONLY
def test_the_regression_check_of_a_run_that_ended_during_the_outage_is_not_lost(
    start_worker, reviewed_dataset, owner, client, tmp_path
):
    _, after, alpha = two_runs(reviewed_dataset)
    spool = tmp_path / "mail.jsonl"
    with WebhookReceiver() as receiver:
        RegressionAlert.objects.create(
            dataset=reviewed_dataset, system_id=alpha, threshold=0.1, emails="qa@example.com",
            webhook_url=receiver.url, secret_env=SECRET_ENV,
        )  # fmt: skip
        worker = alert_worker(start_worker, spool)
        with database_closed():
            send(task_names.CHECK_REGRESSIONS_TASK, worker.queue, args=(after.run.pk,))
            wait_for(
                lambda: retried_ids(worker.log(), task_names.CHECK_REGRESSIONS_TASK),
                30,
                lambda: "The check was not retried:\n" + worker.log()[-4000:],
            )
        event = wait_for(
            lambda: AlertEvent.objects.filter(run=after.run).first(),
            60,
            lambda: "No regression recorded after the outage:\n" + worker.log()[-4000:],
        )
        wait_for(
            lambda: event_final(event.pk),
            60,
            lambda: "The alert was not sent after the outage:\n" + worker.log()[-4000:],
        )
        assert len(receiver.received) == 1
    assert len(mail_spool.read(spool)) == 1
    event.refresh_from_db()
    assert (event.email_state, event.webhook_state, event.webhook_status) == (
        Delivery.DELIVERED, Delivery.DELIVERED, 204
    )  # fmt: skip


@POSTGRES_ONLY
def test_two_deliveries_of_one_tick_at_the_same_moment_start_one_run(
    transactional_db, dataset, owner, monkeypatch
):
    """Both deliveries are held just before they would create the run, until the other
    arrives there too (or a second has passed): without the schedule's lock both would
    get there, having both found no run, and start two."""
    _, kwargs = nightly(dataset, owner)
    barrier = threading.Barrier(2, timeout=1)
    create = run_services.run_create_and_start

    def when_both_are_here(**fields):
        # Broken after a second: the other delivery waits on the lock, and will find
        # this one's run.
        with suppress(threading.BrokenBarrierError):
            barrier.wait()
        return create(**fields)

    monkeypatch.setattr(run_services, "run_create_and_start", when_both_are_here)
    started: list[int] = []
    failures: list[BaseException] = []

    def deliver() -> None:
        try:
            started.append(schedules.scheduled_run(**kwargs).pk)
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    assert Run.objects.filter(dataset=dataset).count() == 1
    assert started == [Run.objects.get(dataset=dataset).pk] * 2


# --- which database errors are transient ---------------------------------------------------


def django_error(cause: BaseException, module=psycopg) -> BaseException:
    """`cause` as Django raises it: translated by its wrapper, `from` the driver's error."""
    try:
        with DatabaseErrorWrapper(SimpleNamespace(Database=module, errors_occurred=False)):
            raise cause
    except Exception as translated:
        return translated
    raise AssertionError("not raised")


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (pg_errors.AdminShutdown, True),  # 57P01: terminated by an administrator
        (pg_errors.CrashShutdown, True),  # 57P02
        (pg_errors.CannotConnectNow, True),  # 57P03: the server is starting up
        (pg_errors.SerializationFailure, True),  # 40001
        (pg_errors.DeadlockDetected, True),  # 40P01
        (pg_errors.TooManyConnections, True),  # 53300
        (pg_errors.DiskFull, True),  # 53100
        (pg_errors.LockNotAvailable, True),  # 55P03
        (pg_errors.QueryCanceled, False),  # 57014: statement_timeout would cancel it again
        (pg_errors.UniqueViolation, False),  # an IntegrityError
        (pg_errors.UndefinedTable, False),  # a ProgrammingError
    ],
)
def test_the_sqlstate_decides(cause, expected):
    error = django_error(cause("as the server said it"))
    assert isinstance(error, OperationalError | IntegrityError | ProgrammingError)
    assert transient.is_transient_db_error(error) is expected


def test_a_connection_error_without_a_server_answer_and_sqlite_locks_are_transient(tmp_path):
    refused = django_error(psycopg.OperationalError("connection failed: Connection refused"))
    assert isinstance(refused, OperationalError) and transient.is_transient_db_error(refused)
    assert transient.is_transient_db_error(InterfaceError("connection already closed"))
    assert not transient.is_transient_db_error(ValueError("not a database error"))
    # SQLite: a real "database is locked", and a real "no such table".
    path = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError) as locked:
        other.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.OperationalError) as missing:
        other.execute("SELECT * FROM missing")
    holder.close()
    other.close()
    assert transient.is_transient_db_error(django_error(locked.value, sqlite3))
    assert not transient.is_transient_db_error(django_error(missing.value, sqlite3))


@POSTGRES_ONLY
def test_real_postgresql_errors_and_a_broken_connection_replaced(transactional_db, dataset):
    def raised(statement: str, params=()) -> BaseException:
        with pytest.raises(Exception) as caught, connection.cursor() as cursor:
            cursor.execute(statement, params)
        return caught.value

    # Not transient: a constraint, bad SQL, a statement cancelled by its timeout.
    duplicate = raised("INSERT INTO auth_group (name) VALUES ('twice'), ('twice')")
    assert isinstance(duplicate, IntegrityError)
    assert not transient.is_transient_db_error(duplicate)
    assert not transient.is_transient_db_error(raised("SELECT * FROM no_such_table"))
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = '20ms'")
    cancelled = raised("SELECT pg_sleep(1)")
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
    assert isinstance(cancelled, OperationalError)
    assert not transient.is_transient_db_error(cancelled)
    # Transient: a lock not granted in time (55P03) ...
    url = database_url(connection.settings_dict)
    with psycopg.connect(url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(2705)")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '50ms'")
        waited = raised("SELECT pg_advisory_lock(2705)")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")
    assert transient.is_transient_db_error(waited)
    # ... and this very connection terminated by the server (57P01): reset_connection
    # replaces it, and the next query works.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    cut = wait_for(
        lambda: _fails(lambda: System.objects.count()), 5, lambda: "The connection survived"
    )
    assert isinstance(cut, OperationalError | InterfaceError)
    assert transient.is_transient_db_error(cut)
    transient.reset_connection()
    assert System.objects.count() >= 0


def _fails(query: Callable[[], object]) -> BaseException | None:
    try:
        query()
    except Exception as error:
        return error
    return None


def test_backoff_grows_with_jitter_and_stops_at_the_cap():
    waits = [transient.backoff(n, base=5, cap=300) for n in range(12)]
    for n, wait in enumerate(waits):
        limit = min(300, 5 * 2**n)
        assert limit / 2 <= wait <= limit
    assert transient.backoff(1000, base=5, cap=300) <= 300  # no overflow on a long outage
    assert len({round(transient.backoff(3, base=5, cap=300), 6) for _ in range(20)}) > 1


# --- webhooks that fail --------------------------------------------------------------------


@WORKER_ON_POSTGRES
def test_a_webhook_down_for_a_while_is_retried_and_delivered_once(
    start_worker, reviewed_dataset, owner, client, tmp_path
):
    _, after, alpha = two_runs(reviewed_dataset)
    spool = tmp_path / "mail.jsonl"
    with WebhookReceiver(first=(503, 503)) as receiver:
        RegressionAlert.objects.create(
            dataset=reviewed_dataset, system_id=alpha, threshold=0.1, emails="qa@example.com",
            webhook_url=receiver.url, secret_env=SECRET_ENV,
        )  # fmt: skip
        worker = alert_worker(start_worker, spool)
        send(task_names.CHECK_REGRESSIONS_TASK, worker.queue, args=(after.run.pk,))
        event = wait_for(
            lambda: AlertEvent.objects.filter(run=after.run).first(),
            30,
            lambda: "No regression recorded:\n" + worker.log()[-4000:],
        )
        # The same sending queued twice more at once (a redelivery): it changes nothing.
        send(task_names.SEND_ALERT_TASK, worker.queue, args=(event.pk,))
        send(task_names.SEND_ALERT_TASK, worker.queue, args=(event.pk,))
        event = wait_for(
            lambda: event_final(event.pk),
            60,
            lambda: "The webhook was not delivered:\n" + worker.log()[-4000:],
        )
        # The check and the sending delivered again once it is over: nothing more is sent.
        send(task_names.CHECK_REGRESSIONS_TASK, worker.queue, args=(after.run.pk,))
        send(task_names.SEND_ALERT_TASK, worker.queue, args=(event.pk,))
        wait_for(
            lambda: len(results(worker.log(), task_names.CHECK_REGRESSIONS_TASK)) == 2,
            30,
            lambda: "The second check did not finish:\n" + worker.log()[-4000:],
        )
        time.sleep(2)
        requests = list(receiver.received)
    assert [r[0] for r in requests] == ["POST"] * 3  # 503, 503, then taken
    bodies = {body for *_, body in requests}
    assert len(bodies) == 1  # the same event each time, signed, with its id
    for _, _, headers, body in requests:
        assert headers[delivery.SIGNATURE_HEADER] == delivery.sign(body, SECRET)
        assert headers[delivery.EVENT_HEADER] == str(event.pk)
    assert len(mail_spool.read(spool)) == 1
    assert AlertEvent.objects.filter(run=after.run).count() == 1
    event.refresh_from_db()
    assert (event.webhook_state, event.webhook_attempts, event.webhook_status) == (
        Delivery.DELIVERED, 3, 204
    )  # fmt: skip
    assert [a["status"] for a in event.webhook_log] == [503, 503, 204]
    assert event.webhook_delivered_at is not None and event.webhook_error == ""
    assert event.email_state == Delivery.DELIVERED
    # What the dataset's admins see.
    page = alerts_page(client, owner, reviewed_dataset)
    assert 'data-state="delivered" data-attempts="3"' in page
    assert "delivered, HTTP 204" in page and "(attempt 3)" in page
    attempts = page.split('class="webhook-attempts"')[1].split("</ol>")[0]
    assert re.findall(r"HTTP (\d+)", attempts) == ["503", "503", "204"]


@WORKER_ON_POSTGRES
@pytest.mark.parametrize("down", ["refused", "503"])
def test_a_webhook_that_stays_down_ends_failed_after_the_set_attempts(
    start_worker, reviewed_dataset, owner, client, tmp_path, down
):
    _, after, alpha = two_runs(reviewed_dataset)
    with WebhookReceiver(status=503) as receiver:
        if down == "refused":  # nothing listens there any more
            with socket.socket() as closed:
                closed.bind(("127.0.0.1", 0))
                url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
        else:
            url = receiver.url
        RegressionAlert.objects.create(
            dataset=reviewed_dataset, system_id=alpha, threshold=0.1, webhook_url=url,
            secret_env=SECRET_ENV,
        )  # fmt: skip
        worker = alert_worker(start_worker, tmp_path / "mail.jsonl")
        send(task_names.CHECK_REGRESSIONS_TASK, worker.queue, args=(after.run.pk,))
        event = wait_for(
            lambda: (e := AlertEvent.objects.filter(run=after.run).first()) and event_final(e.pk),
            60,
            lambda: "The webhook did not end:\n" + worker.log()[-4000:],
        )
        time.sleep(5)  # longer than the longest wait between attempts: no more come
        assert len(receiver.received) == (WEBHOOK_ATTEMPTS if down == "503" else 0)
    event.refresh_from_db()
    assert (event.webhook_state, event.webhook_attempts) == (Delivery.FAILED, WEBHOOK_ATTEMPTS)
    assert len(event.webhook_log) == WEBHOOK_ATTEMPTS and event.webhook_delivered_at is None
    if down == "refused":
        assert "refused" in event.webhook_error.lower() and event.webhook_status is None
    else:
        assert (event.webhook_error, event.webhook_status) == ("HTTP 503", 503)
    assert event.email_state == Delivery.NONE  # no addresses: no email asked
    page = alerts_page(client, owner, reviewed_dataset)
    assert f'data-state="failed" data-attempts="{WEBHOOK_ATTEMPTS}"' in page
    assert f"failed after {WEBHOOK_ATTEMPTS} attempts: {event.webhook_error}" in page


@pytest.fixture
def regression(reviewed_dataset):
    return two_runs(reviewed_dataset)


def _event(regression, url: str, **fields) -> AlertEvent:
    """A regression recorded, its email and webhook pending, as check_run leaves it."""
    before, after, alpha = regression
    alert = RegressionAlert.objects.create(
        dataset=after.run.dataset, webhook_url=url, secret_env=SECRET_ENV,
        emails="qa@example.com",
    )  # fmt: skip
    payload = {
        "event": "regression", "dataset": "D", "system": "Alpha", "before": 0.8, "after": 0.2,
        "difference": -0.6, "queries": 3, "sign_p": 0.1, "run": {"name": "After"},
        "previous": {"name": "Before"}, "comparison_url": "/",
    }  # fmt: skip
    return AlertEvent.objects.create(
        alert=alert, run=after.run, previous=before.run, system_id=alpha, before=0.8,
        after=0.2, difference=-0.6, payload=payload, email_state=Delivery.PENDING,
        webhook_state=Delivery.PENDING, **fields,
    )  # fmt: skip


@pytest.fixture
def loopback_hooks(settings, monkeypatch):
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.ALERT_WEBHOOK_RETRY_ATTEMPTS = 3
    settings.ALERT_WEBHOOK_RETRY_BASE_DELAY = 30
    settings.ALERT_WEBHOOK_RETRY_MAX_DELAY = 600
    monkeypatch.setenv(SECRET_ENV, SECRET)


@pytest.mark.parametrize(
    ("status", "retried"), [(404, False), (400, False), (410, False), (408, True), (429, True),
                            (500, True), (502, True)],
)  # fmt: skip
def test_which_answers_are_tried_again(
    regression, loopback_hooks, mailoutbox, client, owner, status, retried
):
    with WebhookReceiver(status=status) as receiver:
        event = _event(regression, receiver.url)
        wait = delivery.deliver(event_id=event.pk)
        # Asked again at once (a duplicate message): the attempt is not due yet.
        again = delivery.deliver(event_id=event.pk)
    assert len(receiver.received) == 1 and len(mailoutbox) == 1
    event.refresh_from_db()
    assert (event.webhook_attempts, event.webhook_status) == (1, status)
    assert event.email_state == Delivery.DELIVERED  # once, however often it is asked
    page = alerts_page(client, owner, event.alert.dataset)
    if retried:
        assert event.webhook_state == Delivery.RETRYING
        assert 15 <= wait <= 30 and 0 < again <= wait  # the first wait: half to all of 30 s
        assert event.webhook_retry_at > timezone.now() + dt.timedelta(seconds=10)
        assert f"attempt 1 failed: HTTP {status}; next try at" in page
    else:
        assert (event.webhook_state, wait, again) == (Delivery.FAILED, None, None)
        assert f"failed after 1 attempt: HTTP {status}" in page


def test_a_send_whose_worker_died_is_never_sent_again(regression, loopback_hooks, mailoutbox):
    """Claimed, then the worker died mid-send: the next delivery of the task waits until
    the send counts as lost, then records it failed, "outcome unknown", sending nothing."""
    with WebhookReceiver() as receiver:
        long_ago = timezone.now() - delivery.LOST_AFTER - dt.timedelta(seconds=1)
        event = _event(
            regression, receiver.url, webhook_attempts=1, webhook_attempted_at=long_ago,
            emailed_at=long_ago,
        )  # fmt: skip
        AlertEvent.objects.filter(pk=event.pk).update(
            webhook_state=Delivery.SENDING, email_state=Delivery.SENDING
        )
        assert delivery.deliver(event_id=event.pk) is None
        assert receiver.received == [] and mailoutbox == []
    event.refresh_from_db()
    assert (event.webhook_state, event.email_state) == (Delivery.FAILED, Delivery.FAILED)
    assert event.webhook_error == delivery.LOST == event.email_error
    # Sending just now (another worker is on it): come back when it would count as lost.
    before, after, _ = regression
    beta = next(pk for pk, name in before.systems.items() if name == "Beta")
    just_now = _event((before, after, beta), "http://127.0.0.1:9/", webhook_attempts=1)
    AlertEvent.objects.filter(pk=just_now.pk).update(
        webhook_state=Delivery.SENDING, webhook_attempted_at=timezone.now(),
        email_state=Delivery.DELIVERED,
    )  # fmt: skip
    wait = delivery.deliver(event_id=just_now.pk)
    assert delivery.LOST_AFTER.total_seconds() - 5 < wait <= delivery.LOST_AFTER.total_seconds()
    just_now.refresh_from_db()
    assert just_now.webhook_state == Delivery.SENDING
