"""Regression alerts: a run whose score drops past the threshold against the previous run
is recorded once and sent by email and by a webhook signed with HMAC-SHA256, received by a
loopback HTTP server; with a real worker, the end of a run triggers the check."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time

import pytest
from django.core import mail

from evaluation.alerts import delivery
from evaluation.alerts import services as alerts
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.runs.models import Run, RunTask
from tests.evaluation.analytics.known import answer_shares, build_known
from tests.support.webhook_receiver import WebhookReceiver

SECRET_ENV = "ALERT_SECRET_WORKBENCH_TEST"
SECRET = "s3cret-for-tests"
# Set at import, before the session's worker process starts, so that it inherits it.
os.environ.setdefault(SECRET_ENV, SECRET)


@pytest.fixture
def receiver(settings):
    # Webhooks reach loopback only when the operator lists it (the session's worker has the
    # same list: tests/conftest.py).
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    with WebhookReceiver() as r:
        yield r


def two_runs(dataset):
    before = build_known(dataset, seed=1, run_name="Before", skill={"Alpha": 0.8, "Beta": 0.5})
    after = build_known(
        dataset, seed=2, run_name="After", queries=before.plan, skill={"Alpha": 0.2, "Beta": 0.5}
    )
    return before, after


def valid_signature(headers: dict, body: bytes) -> bool:
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers[delivery.SIGNATURE_HEADER])


def test_a_drop_is_sent_once_by_email_and_signed_webhook(
    reviewed_dataset, owner, receiver, eager_refresh, django_capture_on_commit_callbacks
):
    before, after = two_runs(reviewed_dataset)
    alpha = next(pk for pk, name in before.systems.items() if name == "Alpha")
    RegressionAlert.objects.create(
        dataset=reviewed_dataset, system_id=alpha, threshold=0.1, emails="qa@example.com",
        webhook_url=receiver.url, secret_env=SECRET_ENV, created_by=owner,
    )  # fmt: skip
    # The sending task is queued on commit and runs in this process (eager).
    with django_capture_on_commit_callbacks(execute=True):
        events = alerts.check_run(after.run)
    assert len(events) == 1
    event = AlertEvent.objects.get()
    # The drop equals the raw data's: mean over queries of Alpha's answer scores.
    a = [s for x, s in answer_shares(before).items() if before.answers[x][1] == alpha]
    b = [s for x, s in answer_shares(after).items() if after.answers[x][1] == alpha]
    assert event.difference == pytest.approx(sum(b) / len(b) - sum(a) / len(a))
    assert event.difference <= -0.1
    assert event.previous_id == before.run.pk
    assert (event.email_state, event.webhook_state) == ("delivered", "delivered")
    assert (event.webhook_status, event.webhook_attempts) == (204, 1)
    _, _, headers, body = receiver.received[0]
    assert valid_signature(headers, body)
    payload = json.loads(body)
    assert payload["system"] == "Alpha" and payload["previous"]["id"] == before.run.pk
    assert f"a={before.run.pk}&b={after.run.pk}" in payload["comparison_url"]
    assert len(mail.outbox) == 1 and "Alpha" in mail.outbox[0].subject
    assert headers[delivery.EVENT_HEADER] == str(event.pk)
    # Checked again (a redelivered task), sent again: nothing new is recorded or sent.
    with django_capture_on_commit_callbacks(execute=True):
        assert alerts.check_run(after.run) == []
    assert delivery.deliver(event_id=event.pk) is None
    assert len(receiver.received) == 1 and len(mail.outbox) == 1


def test_no_alert_below_the_threshold_or_without_a_previous_run(reviewed_dataset, receiver):
    before, after = two_runs(reviewed_dataset)
    RegressionAlert.objects.create(
        dataset=reviewed_dataset, threshold=0.9, webhook_url=receiver.url, secret_env=SECRET_ENV
    )
    assert alerts.check_run(after.run) == []
    assert alerts.check_run(before.run) == []  # the first run has nothing to compare with
    assert receiver.received == []


def test_a_tampered_body_fails_the_signature():
    body = b'{"difference": -0.2}'
    headers = {delivery.SIGNATURE_HEADER: delivery.sign(body, SECRET)}
    assert valid_signature(headers, body)
    assert not valid_signature(headers, b'{"difference": -0.0}')


def test_the_end_of_a_run_triggers_the_check_on_a_real_worker(
    celery_worker, reviewed_dataset, receiver
):
    from evaluation.runs.lifecycle import end_if_complete

    _, after = two_runs(reviewed_dataset)
    RegressionAlert.objects.create(
        dataset=reviewed_dataset, threshold=0.1, webhook_url=receiver.url, secret_env=SECRET_ENV
    )
    # The second run is still running with its last task done: ending it sends run_ended.
    Run.objects.filter(pk=after.run.pk).update(status=Run.Status.RUNNING, finished_at=None)
    RunTask.objects.filter(run=after.run).delete()
    # (with errors: the fixture holds a few errored votes)
    assert end_if_complete(after.run.pk) in (Run.Status.DONE, Run.Status.DONE_WITH_ERRORS)
    deadline = time.monotonic() + 60
    while not receiver.received and time.monotonic() < deadline:
        time.sleep(0.2)
    assert receiver.received, celery_worker.log()[-3000:]
    _, _, headers, body = receiver.received[0]
    assert valid_signature(headers, body)
    assert json.loads(body)["run"]["id"] == after.run.pk
    assert AlertEvent.objects.filter(run=after.run).exists()


class BeatProcess:
    """`celery -A config beat` as in production (the database scheduler), on the test
    database and the session's queue."""

    def __init__(self, database: str, queue: str) -> None:
        import tempfile
        from pathlib import Path

        self.database, self.queue = database, queue
        self.log_path = Path(tempfile.mkstemp(prefix="celery-beat-", suffix=".log")[1])
        self.process = None

    def __enter__(self):
        import subprocess
        import sys

        from tests.support.celery_worker import ROOT

        env = {**os.environ, "DATABASE_URL": self.database, "CELERY_QUEUE": self.queue}
        command = [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                   "--max-interval", "1"]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def __exit__(self, *exc):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except Exception:
            self.process.kill()


def test_a_nightly_run_fired_by_beat_finds_a_regression_and_signs_the_webhook(
    celery_worker, reviewed_dataset, receiver
):
    from django.conf import settings
    from django.db import connection
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    from evaluation.answers.models import Answer
    from loopback import LoopbackOpenAI
    from tests.evaluation.runs.workload import scripted_judge
    from tests.factories import PanelFactory, loopback_judges
    from tests.support.celery_worker import database_url

    # Yesterday: every criterion passed.
    before = build_known(
        reviewed_dataset, sizes=(4, 4, 4, 4), systems=("Alpha",), skill={"Alpha": 1.0},
        hard_first=False, label_share=0.0, run_name="Yesterday",
    )  # fmt: skip
    alpha = next(iter(before.systems))
    # Tonight's answers, graded by the loopback judge (about half the criteria pass).
    for query, _, _ in before.plan:
        Answer.objects.create(
            system_id=alpha, query=query, text=f"Tonight on {query.pk}.", run_label="tonight"
        )
    RegressionAlert.objects.create(
        dataset=reviewed_dataset, threshold=0.1, webhook_url=receiver.url, secret_env=SECRET_ENV
    )
    with LoopbackOpenAI(responder=scripted_judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        every_second = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
        PeriodicTask.objects.create(
            name="Nightly Alpha", task="evaluation.scheduled_run", interval=every_second,
            kwargs=json.dumps({"dataset_id": reviewed_dataset.pk, "panel_id": panel.pk,
                               "system_id": alpha, "name": "Nightly Alpha"}),
            queue=settings.CELERY_TASK_DEFAULT_QUEUE, one_off=True,
        )  # fmt: skip
        with BeatProcess(database_url(connection.settings_dict), celery_worker.queue) as beat:
            deadline = time.monotonic() + 120
            while not receiver.received and time.monotonic() < deadline:
                time.sleep(0.25)
            assert receiver.received, beat.log()[-3000:] + celery_worker.log()[-3000:]
    run = Run.objects.get(name="Nightly Alpha")
    assert run.answer_run_label == "tonight"
    assert run.status in (Run.Status.DONE, Run.Status.DONE_WITH_ERRORS)
    _, _, headers, body = receiver.received[0]
    assert valid_signature(headers, body)
    payload = json.loads(body)
    assert (payload["run"]["id"], payload["previous"]["id"]) == (run.pk, before.run.pk)
    assert payload["before"] == pytest.approx(1.0) and payload["difference"] <= -0.1
    assert Run.objects.filter(name="Nightly Alpha").count() == 1  # one_off: fired once
