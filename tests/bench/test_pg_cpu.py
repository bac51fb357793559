"""bench.pg_cpu, the one reader of CPU time from /proc that the benchmarks share: a live
process's seconds, None for a gone one, and the PostgreSQL backend's own seconds growing
with the work it does (None on another database)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from bench.pg_cpu import backend_cpu_seconds, process_cpu_seconds


def test_a_live_process_has_its_cpu_seconds_and_a_gone_one_none():
    started = time.process_time()
    while time.process_time() - started < 0.05:  # burn a little CPU, so that ticks count
        pass
    assert process_cpu_seconds(os.getpid()) >= 0.01
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert process_cpu_seconds(int(child.stdout)) is None  # reaped: no /proc entry


@pytest.mark.django_db
def test_the_backend_cpu_grows_with_its_work_on_postgresql():
    before = backend_cpu_seconds()
    if connection.vendor != "postgresql":
        assert before is None
        return
    with connection.cursor() as cursor:  # about 0.1-0.3 s of the backend's CPU
        cursor.execute("SELECT count(*) FROM generate_series(1, 3000000) AS s(i) WHERE i % 7 = 0")
    assert backend_cpu_seconds() - before >= 0.02
