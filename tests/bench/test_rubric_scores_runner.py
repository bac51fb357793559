"""bench.rubric_scores (issue 23: run scores over grouped, weighted checklists) runs end to
end on a tiny workload, so it cannot rot: its own database beside the test database, the
rows seeded with COPY, every step measured and printed. No timing is asserted;
docs/benchmarks.md holds the measured figures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from bench.judge_throughput.app import ensure_database
from tests.bench.test_judge_throughput_runner import bench_database_url

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="bench.rubric_scores seeds with PostgreSQL's COPY"
)


def test_the_runner_seeds_a_tiny_grouped_run_and_prints_its_figures(tmp_path):
    url = bench_database_url(tmp_path).replace("/bench_", "/bench_rubric_scores_")
    ensure_database(url)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_VERSION"}
    env.update(VAR_DIR=str(tmp_path), DATABASE_URL=url, SECRET_KEY="bench-" + "k" * 50)
    command = [sys.executable, "-m", "bench.rubric_scores", "--verdicts", "600",
               "--systems", "3", "--criteria", "10"]  # fmt: skip
    for run in (command, [*command, "--reuse"]):
        done = subprocess.run(
            run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        out = done.stdout
        assert done.returncode == 0, out + done.stderr[-3000:]
        # 20 queries × 3 answers × 10 criteria, counted per answer, checklist and group.
        assert re.search(r"^600 verdicts \((seeded in|reused)", out, re.MULTILINE), out
        assert "300 count rows" in out, out
        for step in ("counts (SQL, uncached)", "reports from counts (Python)",
                     "API scores, first read", "API scores, kept", "run page, first view",
                     "run page, again", "answer page"):  # fmt: skip
            assert re.search(rf"^{re.escape(step)} +\d+\.\d+ s", out, re.MULTILINE), (step, out)
    assert "reused" in out  # the second run found the first's dataset
