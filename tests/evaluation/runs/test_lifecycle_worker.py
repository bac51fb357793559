"""A run always ends, and heals by itself, with a real Celery worker on the configured
database and broker (PostgreSQL + Redis in CI, SQLite + the embedded transport locally),
the loopback OpenAI server and the real openai client.

(a) a judge key missing on the workers ends the run "done with errors" within seconds;
(b) a task that raises (a criterion deleted while its task waits on the LLM) ends its task
    and the run; (c) a worker killed with SIGKILL mid-run: a new worker finishes the run,
    every verdict exactly once, with no Resume pressed; (d) Resume pressed twice during a
    run: one verdict and one call per vote; (e) a panel edited after a run does not change
    that run's scores.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter

from annotation.models import Criterion
from evaluation.judges import services as judges
from evaluation.judges.models import Panel
from evaluation.runs import scores
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask, Verdict
from loopback import LoopbackOpenAI
from tests.evaluation.runs.workload import (
    build_workload,
    expected_verdict,
    scripted_judge,
)
from tests.factories import PanelFactory, loopback_judges

KEY = "JUDGE_KEY_WB_TEST"  # set in this (web) process only, never in the workers'


def wait_until(condition, *, timeout: float, poll: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return False


def votes_of(run: Run) -> list[tuple[int, int, int, int]]:
    return list(
        Verdict.objects.filter(run=run).values_list("answer", "criterion", "judge", "sample")
    )


def test_a_key_missing_on_the_workers_ends_the_run_with_errors_in_seconds(
    celery_worker, dataset, owner_api, monkeypatch
):
    build_workload(dataset, queries=1, answers_per_query=4, criteria=5)
    with LoopbackOpenAI(responder=scripted_judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        panel.judges.update(api_key_env=KEY)
        # Not set anywhere: the start is refused, naming the judge and the variable.
        monkeypatch.delenv(KEY, raising=False)
        refused = owner_api.post("/api/runs/", {"dataset": dataset.pk, "panel": panel.pk})
        assert refused.status_code == 400
        assert refused.json()["panel"] == [
            f"Judge “Judge 0”: its API key variable {KEY} is not set on this server."
        ]
        assert not Run.objects.exists()

        # Set here but not on the workers (or gone from them mid-run): every call fails at
        # once, without a request, and the run ends instead of running for ever.
        monkeypatch.setenv(KEY, "sk-test")
        started = owner_api.post("/api/runs/", {"dataset": dataset.pk, "panel": panel.pk})
        assert started.status_code == 201
        run = runs.wait_for(Run.objects.get(pk=started.json()["id"]), timeout=30)
        assert server.call_count == 0
    assert run.status == Run.Status.DONE_WITH_ERRORS, celery_worker.log()[-3000:]
    assert run.tasks.filter(done_at__isnull=True).count() == 0
    verdicts = Verdict.objects.filter(run=run)
    assert verdicts.count() == 20 and set(verdicts.values_list("outcome", flat=True)) == {"error"}
    assert KEY in run.reason and KEY in verdicts.first().error
    progress = owner_api.get(f"/api/runs/{run.pk}/progress/").json()
    assert progress["status"] == "done_with_errors" and progress["errors"] == 20
    assert progress["actions"] == ["retry-failed"]
    assert KEY in progress["errors_first"][0]["message"]


def test_a_task_that_raises_ends_its_task_and_the_run(celery_worker, dataset):
    build_workload(dataset, queries=1, answers_per_query=3, criteria=4)
    with LoopbackOpenAI(responder=scripted_judge, latency=2.0) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
        # While all three tasks wait on the LLM, a criterion is deleted: writing its
        # verdicts then violates the foreign key (an IntegrityError inside each task).
        assert wait_until(lambda: server.in_flight >= 12, timeout=30)
        Criterion.objects.order_by("pk").first().delete()
        run = runs.wait_for(run, timeout=60)
    assert run.status == Run.Status.DONE_WITH_ERRORS, celery_worker.log()[-3000:]
    assert not run.tasks.filter(done_at__isnull=True).exists()
    failed = run.tasks.exclude(error="")
    assert failed.exists() and all("IntegrityError" in t.error for t in failed)
    errors = Verdict.objects.filter(run=run, outcome="error")
    assert errors.exists() and all(v.error_kind == "task_failed" for v in errors)
    assert all("IntegrityError" in v.error for v in errors)
    assert "IntegrityError" in run.reason
    # Every surviving vote of the run holds exactly one verdict, failed or not.
    assert len(votes_of(run)) == len(set(votes_of(run))) == 3 * 3


def test_a_killed_worker_heals_without_resume(start_worker, dataset, settings):
    """SIGKILL mid-run; a new worker's sweep requeues the lost tasks (their leases went
    silent) well before Redis's visibility timeout (left at its default of an hour)."""
    build_workload(dataset, queries=1, answers_per_query=20, criteria=10)
    queue = f"heal-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    env = {"RUNS_LEASE_TIMEOUT": "8", "RUNS_HEARTBEAT": "1", "RUNS_SWEEP": "1"}
    with LoopbackOpenAI(responder=scripted_judge, latency=0.5) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        first = start_worker(queue=queue, concurrency=2, env=env)
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=5))
        holding = RunTask.objects.filter(run=run).exclude(lease="")
        assert wait_until(
            lambda: Verdict.objects.filter(run=run).count() >= 20 and holding.exists(),
            timeout=60,
        )
        first.kill()  # it dies holding tasks, their calls in flight
        killed_at = Verdict.objects.filter(run=run).count()
        assert 0 < killed_at < run.expected

        second = start_worker(queue=queue, concurrency=2, env=env)
        try:
            run = runs.wait_for(run, timeout=180)  # nobody presses Resume
        finally:
            second.stop()
    assert run.status == Run.Status.DONE, second.log()[-3000:]
    assert run.attempt == 1  # healed, not resumed
    verdicts = Verdict.objects.filter(run=run).select_related("criterion", "answer")
    assert verdicts.count() == run.expected == 200
    assert len(set(votes_of(run))) == 200
    assert all(v.outcome == expected_verdict(v.criterion.text, v.answer.text) for v in verdicts)
    assert RunTask.objects.filter(run=run, requeues__gt=0).exists()


def test_resume_pressed_twice_during_a_run_makes_each_call_once(celery_worker, dataset, owner_api):
    build_workload(dataset, queries=2, answers_per_query=5, criteria=6)
    with LoopbackOpenAI(responder=scripted_judge, latency=0.3) as server:
        panel = PanelFactory(judges=loopback_judges(server, 2))
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=4))
        assert wait_until(lambda: Verdict.objects.filter(run=run).exists(), timeout=30)
        for _ in range(2):
            response = owner_api.post(f"/api/runs/{run.pk}/resume/")
            assert response.status_code == 200 and response.json()["status"] == "running"
        run = runs.wait_for(run, timeout=90)
        calls = Counter(c.request.prompt_text + c.request.model for c in server.calls)
    assert run.status == Run.Status.DONE, celery_worker.log()[-3000:]
    assert run.attempt == 1
    assert len(votes_of(run)) == len(set(votes_of(run))) == run.expected == 2 * 5 * 6 * 2
    assert sum(calls.values()) == 120 and set(calls.values()) == {1}  # no call made twice


def split_judge(request) -> dict:
    """Judges 0 and 1 follow the script; judge 2 fails everything: majority and unanimity
    then disagree wherever the script says pass."""
    verdict = scripted_judge(request)
    if request.model == "model-2":
        return {"verdict": "fail", "failure_kind": "missing", "rationale": "Strict."}
    return verdict


def test_a_panel_edited_after_a_run_does_not_change_its_scores(celery_worker, dataset):
    build_workload(dataset, queries=2, answers_per_query=3, criteria=6)
    with LoopbackOpenAI(responder=split_judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 3))
        run = runs.wait_for(
            runs.run_start(run=runs.run_create(dataset=dataset, panel=panel)), timeout=60
        )
    assert run.status == Run.Status.DONE, celery_worker.log()[-3000:]
    before = scores.run_report(run)
    assert any(a.score for a in before.answers)  # majority lets some criteria pass

    members = list(panel.members.select_related("judge"))
    judges.panel_save(
        panel=panel, name=panel.name, description="", method=Panel.Method.UNANIMITY,
        threshold=0.9, graded=True,
        members=[{"judge": members[2].judge, "samples": 3, "temperatures": []}],
    )  # fmt: skip
    run = Run.objects.get(pk=run.pk)
    assert scores.run_report(run) == before
    assert run.snapshot["method"] == "majority" and len(run.snapshot["members"]) == 3


def drop_queued_messages(queue: str) -> int:
    """Lose every message waiting in the queue, as a Redis restart without persistence
    does (or a wiped broker folder): the broker forgets them, the workers carry on."""
    from django.conf import settings

    url = settings.CELERY_BROKER_URL
    if url.startswith("redis"):
        import redis

        with redis.Redis.from_url(url) as broker:
            waiting = broker.llen(queue)
            broker.delete(queue)
            return waiting
    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
    lost = [f for f in os.listdir(folder) if f.endswith(f".{queue}.msg")]
    for name in lost:
        os.remove(os.path.join(folder, name))
    return len(lost)


def test_a_run_whose_queued_messages_are_lost_heals_without_resume(start_worker, dataset, settings):
    build_workload(dataset, queries=1, answers_per_query=12, criteria=4)
    queue = f"lost-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    env = {"RUNS_LEASE_TIMEOUT": "6", "RUNS_HEARTBEAT": "1", "RUNS_SWEEP": "1"}
    with LoopbackOpenAI(responder=scripted_judge, latency=0.3) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        worker = start_worker(queue=queue, concurrency=1, env=env)
        try:
            run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
            assert wait_until(lambda: Verdict.objects.filter(run=run).exists(), timeout=30)
            assert drop_queued_messages(queue) > 0  # most of the run's tasks are gone
            run = runs.wait_for(run, timeout=150)  # nobody presses Resume
        finally:
            worker.stop()
    assert run.status == Run.Status.DONE, worker.log()[-3000:]
    assert len(votes_of(run)) == len(set(votes_of(run))) == run.expected == 48
    assert RunTask.objects.filter(run=run, requeues__gt=0).exists()


def test_a_worker_started_after_every_message_was_lost_finishes_the_run(
    start_worker, dataset, settings
):
    """Nothing is delivered to the new worker: its sweep starts with it (worker_ready),
    finds the stalled run and queues its tasks again."""
    build_workload(dataset, queries=1, answers_per_query=3, criteria=2)
    queue = f"empty-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    env = {"RUNS_LEASE_TIMEOUT": "5", "RUNS_HEARTBEAT": "1", "RUNS_SWEEP": "1"}
    with LoopbackOpenAI(responder=scripted_judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
        assert drop_queued_messages(queue) == 3  # no worker ever saw them
        worker = start_worker(queue=queue, concurrency=2, env=env)
        try:
            run = runs.wait_for(run, timeout=120)
        finally:
            worker.stop()
    assert run.status == Run.Status.DONE, worker.log()[-3000:]
    assert len(votes_of(run)) == run.expected == 6
