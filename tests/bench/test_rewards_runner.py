"""The rewards benchmark runs end to end on a tiny workload, so it cannot rot: its own
database, the loopback judge in its own process, the reward endpoint and the bare client,
the figures printed. No timing is asserted; docs/benchmarks.md holds the measured figures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from bench.rewards.cli import bound_seconds, percentile
from tests.bench.test_judge_throughput_runner import bench_database_url

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path, name: str, *arguments: str) -> str:
    """`python -m bench.rewards` on a tiny workload and a database of its own; its output."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_VERSION"}
    env["VAR_DIR"] = str(tmp_path)
    url = bench_database_url(tmp_path).replace("bench-judge", f"bench-{name}")
    url = url.replace("/bench_", f"/bench_{name.replace('-', '_')}_")
    command = [
        sys.executable, "-m", "bench.rewards", *arguments, "--criteria", "4",
        "--latency", "0.01", "--concurrency", "8",
        "--database-url", url, "--broker-url", settings.CELERY_BROKER_URL,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout


def _printed(out: str, *figures: str) -> None:
    for figure in figures:
        assert re.search(rf"^{figure} \S*\d", out, re.MULTILINE), (figure, out)


def test_the_runner_scores_tiny_batches_and_prints_its_figures(tmp_path):
    out = _run(tmp_path, "rewards", "--completions", "6", "--batches", "2")
    assert "6 completions × 4 criteria × 1 judge = 24 calls per batch" in out
    # 2 batches of 24 calls and a warm-up of 6 × 4: every call made once, none cached.
    assert "app: 12 rewards, 0 failed; server calls 72," in out
    assert "bare: server calls 56," in out  # its warm-up is 8 calls
    _printed(out, "app: rewards/s", "app: time over bound", "bare: rewards/s", "app/bare time:")


def test_the_served_mode_sends_one_sample_requests_over_http_and_prints_its_figures(tmp_path):
    """--served: the rewards service in its own process (uvicorn), OpenRLHF's one-sample
    requests at once over HTTP; every sample rewarded, the figures printed."""
    out = _run(tmp_path, "rewards-served", "--served", "--completions", "6", "--batches", "1")
    assert "served: 6 one-sample requests at once, uvicorn × 1 worker(s)" in out
    assert "served: 6 rewards, 0 failed samples, 0 errors, 0 retried; statuses {200: 6}" in out
    _printed(
        out, "served: rewards/s", "served: time over bound", "served: per request p50",
        "served: database connections at most",
        "served: one-sample requests / one request: wall",
    )  # fmt: skip
    # The same six samples' worth in one request, on the same service, for the comparison.
    assert re.search(r"served: one 6-sample request: 6 rewards, wall [\d.]+ s", out), out
    assert re.search(r"service CPU [\d.]+ s for the rollout, [\d.]+ s for the one request", out)


def test_the_bound_counts_waves_of_c_calls():
    assert bound_seconds(calls=5120, concurrency=256, latency=0.2) == 4.0
    assert bound_seconds(calls=5121, concurrency=256, latency=0.2) == 4.2
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([3.0, 1.0, 2.0], 0.95) == 3.0
