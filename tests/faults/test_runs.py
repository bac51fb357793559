"""Runs ride out the infrastructure, with a real worker, the real openai client and the
loopback judge: a database restart, a judge outage (short and too long) and a broker
restart mid-run lose nothing, double nothing and repeat no paid call.

docs/operations.md, "When the infrastructure fails", says what users see in each case.
"""

from __future__ import annotations

import time
import uuid

from django.db.models import Count

from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask, Verdict
from loopback import LoopbackOpenAI
from tests.evaluation.runs.workload import build_workload, expected_verdict, scripted_judge
from tests.factories import PanelFactory, loopback_judges
from tests.faults.conftest import POSTGRES_ONLY, REDIS_BROKER_ONLY, celery_broker, database_down

ANSWERS, CRITERIA = 20, 10
VOTES = ANSWERS * CRITERIA


def wait_until(condition, *, timeout: float, poll: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return False


def assert_every_vote_once_and_right(run: Run) -> None:
    verdicts = Verdict.objects.filter(run=run).select_related("criterion", "answer")
    assert verdicts.count() == VOTES
    doubled = (
        Verdict.objects.filter(run=run)
        .values("answer", "criterion", "judge", "sample")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not doubled.exists()
    assert not verdicts.filter(outcome="error").exists()
    assert all(v.outcome == expected_verdict(v.criterion.text, v.answer.text) for v in verdicts)
    assert not RunTask.objects.filter(run=run).exclude(error="").exists()


def answered(server: LoopbackOpenAI) -> int:
    """Chat completions the server answered (a request dropped by an outage is not)."""
    return sum(1 for c in server.calls if c.path.endswith("/chat/completions") and c.status == 200)


@POSTGRES_ONLY
def test_a_database_restart_mid_run_loses_no_result_and_repeats_no_call(
    start_worker, dataset, settings
):
    """Before: 7 tasks became task_failed error verdicts whose calls had been paid for."""
    build_workload(dataset, queries=1, answers_per_query=ANSWERS, criteria=CRITERIA)
    queue = f"db-restart-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    with LoopbackOpenAI(responder=scripted_judge, latency=1.0) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        worker = start_worker(queue=queue, concurrency=4)
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=10))
        # Mid-run, with calls in flight: their results come back while the database is down.
        assert wait_until(
            lambda: Verdict.objects.filter(run=run).count() >= 20 and server.in_flight >= 10,
            timeout=60,
        ), worker.log()[-3000:]
        with database_down(seconds=3):
            pass
        run = runs.wait_for(run, timeout=120)
        calls = server.call_count
    log = worker.log()
    assert run.status == Run.Status.DONE, log[-4000:]
    assert_every_vote_once_and_right(run)
    assert calls == VOTES  # not one call made twice
    assert "Database unreachable, trying again" in log  # the restart was met, and waited out


def test_a_judge_outage_mid_run_pauses_it_and_it_goes_on_by_itself(
    start_worker, dataset, owner_api, owner_client, settings
):
    """Before: each call spent its retries, and an outage of two minutes left hundreds of
    connection-error verdicts and a run that waited for someone to press "Retry failed".
    Here the retries are short (3 attempts within about a second): without the circuit
    breaker every call made during the outage would end as an error verdict."""
    build_workload(dataset, queries=1, answers_per_query=ANSWERS, criteria=CRITERIA)
    queue = f"outage-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    env = {
        "JUDGE_RETRY_ATTEMPTS": "3", "JUDGE_RETRY_BASE_DELAY": "0.1",
        "JUDGE_CIRCUIT_FAILURES": "5", "JUDGE_CIRCUIT_PROBE_MIN": "1",
        "JUDGE_CIRCUIT_PROBE_MAX": "2",
    }  # fmt: skip
    with LoopbackOpenAI(responder=scripted_judge, latency=0.2) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        worker = start_worker(queue=queue, concurrency=4, env=env)
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=5))
        third = VOTES * 0.3
        assert wait_until(lambda: Verdict.objects.filter(run=run).count() >= third, timeout=60)
        server.go_down()
        # The run waits instead of failing: no error verdict, and (where the workers share
        # Redis with the web) its page names the judge it waits for.
        time.sleep(8)
        during = Verdict.objects.filter(run=run).count()
        assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING
        assert not Verdict.objects.filter(run=run, outcome="error").exists()
        if settings.CELERY_BROKER_URL.startswith("redis://"):
            progress = owner_api.get(f"/api/runs/{run.pk}/progress/").json()
            assert [w["judge"] for w in progress["waiting"]] == ["Judge 0"], progress
            # A refused connection, as the openai client's aiohttp transport reports it.
            assert "APITimeoutError" in progress["waiting"][0]["last_error"]
            page = owner_client.get(f"/runs/{run.pk}/").content.decode()
            assert "Waiting for judge <strong>Judge 0</strong>: unreachable since" in page
        time.sleep(4)
        assert Verdict.objects.filter(run=run).count() == during  # paused, not burning
        server.come_up()  # nobody presses anything
        run = runs.wait_for(run, timeout=120)
        made = answered(server)
    assert run.status == Run.Status.DONE, worker.log()[-4000:]
    assert run.attempt == 1  # went on by itself, not resumed
    assert_every_vote_once_and_right(run)
    # Only the calls dropped in flight when the endpoint went down were asked twice.
    assert VOTES <= made <= VOTES + 5 * 4
    if settings.CELERY_BROKER_URL.startswith("redis://"):
        progress = owner_api.get(f"/api/runs/{run.pk}/progress/").json()
        assert progress["waiting"] == []


def test_an_outage_longer_than_the_wait_ends_the_run_with_a_clear_reason_and_resume_continues(
    start_worker, dataset, owner_api, settings
):
    build_workload(dataset, queries=1, answers_per_query=4, criteria=5)
    queue = f"long-outage-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    env = {
        "JUDGE_RETRY_ATTEMPTS": "2", "JUDGE_RETRY_BASE_DELAY": "0.1",
        "JUDGE_CIRCUIT_FAILURES": "3", "JUDGE_CIRCUIT_PROBE_MIN": "1",
        "JUDGE_CIRCUIT_PROBE_MAX": "1", "JUDGE_CIRCUIT_MAX_WAIT": "4",
    }  # fmt: skip
    with LoopbackOpenAI(responder=scripted_judge, latency=0.5) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        worker = start_worker(queue=queue, concurrency=2, env=env)
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=5))
        server.go_down()  # and stays down longer than a call may wait
        run = runs.wait_for(run, timeout=60)
        assert run.status == Run.Status.DONE_WITH_ERRORS, worker.log()[-3000:]
        assert "unreachable since" in run.reason and "JUDGE_CIRCUIT_MAX_WAIT" in run.reason
        errors = Verdict.objects.filter(run=run, outcome="error")
        assert errors.exists()
        assert set(errors.values_list("error_kind", flat=True)) == {"judge_unreachable"}

        server.come_up()
        assert owner_api.post(f"/api/runs/{run.pk}/retry-failed/").status_code == 200
        run = runs.wait_for(Run.objects.get(pk=run.pk), timeout=60)
    assert run.status == Run.Status.DONE, worker.log()[-3000:]
    assert Verdict.objects.filter(run=run, outcome__in=["pass", "fail"]).count() == 20


@REDIS_BROKER_ONLY
def test_a_broker_restart_mid_run_ends_done_without_waiting_for_the_stall_sweep(
    start_worker, dataset, private_redis, settings
):
    """A Redis of the test's own, killed and started again without persistence: every
    queued message is lost. The doctor sees the broker's new run id and queues the lost
    tasks at once; the stall sweep alone (RUNS_LEASE_TIMEOUT, 120 s here) would not run
    before the wait below gives up."""
    build_workload(dataset, queries=1, answers_per_query=ANSWERS, criteria=CRITERIA)
    queue = f"broker-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    env = {
        "CELERY_BROKER_URL": private_redis.url(0), "RUNS_HEARTBEAT": "1", "RUNS_SWEEP": "1",
        "RUNS_LEASE_TIMEOUT": "120",
    }  # fmt: skip
    with LoopbackOpenAI(responder=scripted_judge, latency=0.3) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        worker = start_worker(queue=queue, concurrency=2, env=env)
        with celery_broker(private_redis.url(0)):
            run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=5))
            assert wait_until(lambda: Verdict.objects.filter(run=run).count() >= 30, timeout=60), (
                worker.log()[-3000:]
            )
            private_redis.restart(down_for=1.0)
            run = runs.wait_for(run, timeout=90)
        calls = server.call_count
    log = worker.log()
    assert run.status == Run.Status.DONE, log[-4000:]
    assert "The broker restarted" in log
    assert_every_vote_once_and_right(run)
    assert calls == VOTES  # the lost tasks' calls had not been made: none is made twice
