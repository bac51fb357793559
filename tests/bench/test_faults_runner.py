"""bench.faults runs end to end on a tiny workload, so it cannot rot: its own database, a
real worker, the loopback judge stopped and started again, the bench database refusing
connections for a second. No timing is asserted; the figures are measured in
docs/benchmarks.md ("Runs under infrastructure faults")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.support.celery_worker import database_url

ROOT = Path(__file__).resolve().parents[2]


# The bench starts its own worker process, out of sight of the fixtures that mark the
# others (tests/conftest.py): the marker is written here.
@pytest.mark.worker
@pytest.mark.skipif(
    connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL.startswith("redis"),
    reason="bench.faults closes a PostgreSQL database and its circuits live in Redis (the "
    "SQLite pass has no server to refuse connections)",
)
def test_the_judge_and_database_faults_leave_a_whole_run_and_print_their_figures(tmp_path):
    base, name = database_url(settings.DATABASES["default"]).rsplit("/", 1)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_VERSION"}
    env["VAR_DIR"] = str(tmp_path)
    # Latency 0.5 s and 5 calls in flight: the fault falls mid-run (a faster run is over
    # before its verdicts can be counted at 30%).
    command = [
        sys.executable, "-m", "bench.faults", "--scenario", "database", "judge",
        "--answers", "4", "--criteria", "5", "--latency", "0.5", "--concurrency", "5",
        "--judge-outage", "3", "--database-down", "1", "--timeout", "120",
        "--database-url", f"{base}/bench_faults_{name}",
        "--broker-url", settings.CELERY_BROKER_URL,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    for scenario in ("baseline", "database", "judge"):
        assert f"{scenario}: status done; verdicts 20 of 20; error verdicts 0; " in out, out
        assert f"{scenario}: judge calls answered 20 for 20 votes: extra paid calls 0" in out
    assert "database: verdict: holds" in out and "judge: verdict: holds" in out
    assert "judge: progress API 'waiting' during the outage: ['Judge 0']" in out
