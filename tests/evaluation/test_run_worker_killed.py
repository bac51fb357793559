"""A worker killed with SIGKILL mid-run: the run still completes, nothing lost or doubled.

On Redis, the broker hands the killed worker's unacknowledged tasks to the next worker
once their visibility timeout passes (acks_late). The embedded filesystem transport cannot
redeliver, so there the user resumes the run; both paths are exercised by CI's two passes.
"""

from __future__ import annotations

import time
import uuid

import pytest
from django.db import connection

from evaluation import runs
from evaluation.loopback import LoopbackOpenAI
from evaluation.models import Run, Verdict
from tests.evaluation.run_fixtures import (
    build_workload,
    expected_verdict,
    loopback_panel,
    scripted_judge,
)
from tests.support.celery_worker import WorkerProcess, database_url


@pytest.mark.worker
def test_run_completes_after_a_worker_is_killed(transactional_db, dataset, settings):
    build_workload(dataset, queries=1, answers_per_query=20, criteria=10)
    queue = f"kill-test-{uuid.uuid4().hex[:8]}"
    settings.RUNS_QUEUE = queue
    url = database_url(connection.settings_dict)
    env = {"CELERY_VISIBILITY": "3"}  # redeliver a lost worker's tasks after 3 s (Redis)
    with LoopbackOpenAI(responder=scripted_judge, latency=0.5) as server:
        panel = loopback_panel(server, judges=1)
        first = WorkerProcess(queue=queue, database=url, concurrency=2, env=env).start()
        run = runs.run_create(dataset=dataset, panel=panel, concurrency=5)
        run = runs.run_start(run=run)
        deadline = time.monotonic() + 60
        while Verdict.objects.filter(run=run).count() < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        first.kill()
        killed_at = Verdict.objects.filter(run=run).count()
        assert 0 < killed_at < run.expected  # it really died mid-run

        second = WorkerProcess(queue=queue, database=url, concurrency=2, env=env).start()
        try:
            if not settings.CELERY_BROKER_URL.startswith("redis"):
                runs.run_resume(run=run)
            run = runs.wait_for(run, timeout=120)
        finally:
            second.stop()
    assert run.status == Run.Status.DONE, second.log()[-3000:]
    verdicts = Verdict.objects.filter(run=run).select_related("criterion", "answer")
    assert verdicts.count() == run.expected == 200
    assert len({(v.answer_id, v.criterion_id, v.judge_id, v.sample) for v in verdicts}) == 200
    assert all(v.outcome == expected_verdict(v.criterion.text, v.answer.text) for v in verdicts)
