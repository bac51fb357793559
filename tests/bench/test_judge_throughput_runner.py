"""The judge-throughput benchmark runs end to end on a tiny workload, so it cannot rot:
its own database, a real worker, the loopback server, the figures printed. No timing is
asserted; the figures are measured in docs/benchmarks.md."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from bench.judge_throughput.app import UnsafeDatabase, check_database_url
from bench.judge_throughput.cli import bound, map_concurrency
from tests.support.celery_worker import database_url

ROOT = Path(__file__).resolve().parents[2]
HAS_INSPECT = importlib.util.find_spec("inspect_ai") is not None


def bench_database_url(tmp_path: Path) -> str:
    """A database of the benchmark's own beside the test database (it is flushed)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{tmp_path / 'bench-judge.sqlite3'}"
    url = database_url(db)
    base, name = url.rsplit("/", 1)
    return f"{base}/bench_{name}"


# The benchmark starts its own worker process, out of sight of the fixtures that mark the
# others (tests/conftest.py): the marker is written here.
@pytest.mark.worker
def test_the_runner_judges_a_tiny_workload_and_prints_its_figures(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_VERSION"}
    env["VAR_DIR"] = str(tmp_path)  # the embedded broker's folders, on SQLite
    command = [
        sys.executable, "-m", "bench.judge_throughput", "--answers", "4", "--criteria", "5",
        "--judges", "2", "--latency", "0.01", "--concurrency", "8",
        "--database-url", bench_database_url(tmp_path),
        "--broker-url", settings.CELERY_BROKER_URL,
    ]  # fmt: skip
    if not HAS_INSPECT:
        command.append("--no-inspect")
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert "= 40 judgments" in out
    assert "app: status done; verdicts 40 of 40;" in out
    assert "app: server calls 40," in out  # one call per verdict: nothing lost or repeated
    for figure in ("bound:", "app: wall time", "app: judgments/s", "app: ratio to bound"):
        assert re.search(rf"^{figure} \S*\d", out, re.MULTILINE), (figure, out)
    if HAS_INSPECT:
        assert "inspect: samples 40;" in out
        for figure in ("inspect: judgments/s", "app/inspect:"):
            assert re.search(rf"^{figure} \d", out, re.MULTILINE), (figure, out)


def test_the_runner_refuses_a_database_that_is_not_its_own():
    with pytest.raises(UnsafeDatabase):
        check_database_url("postgresql://postgres@127.0.0.1:5432/workbench")
    with pytest.raises(UnsafeDatabase):
        check_database_url("sqlite:////srv/var/db.sqlite3")
    check_database_url("sqlite:////tmp/x/bench-judge.sqlite3")
    check_database_url("postgresql://postgres@127.0.0.1:5432/bench_judge")


def test_the_bound_is_the_tightest_of_concurrency_and_the_limits():
    assert bound(c=64, latency=0.2, judges=3, rpm=None, tpm=None, tokens=1000) == 320
    assert bound(c=64, latency=0.2, judges=3, rpm=600, tpm=None, tokens=1000) == 30
    assert bound(c=64, latency=0.2, judges=3, rpm=None, tpm=120_000, tokens=1000) == 6


def test_c_is_the_worker_wide_cap_and_a_task_sends_all_its_calls_at_once():
    mapping = map_concurrency(64, 20, threads=None, per_task=None, gate=True)
    assert (mapping.threads, mapping.per_task, mapping.gate, mapping.in_flight) == (8, 20, 64, 64)
    ungated = map_concurrency(64, 20, threads=None, per_task=None, gate=False)
    assert (ungated.threads, ungated.per_task, ungated.gate, ungated.in_flight) == (3, 20, 0, 60)
