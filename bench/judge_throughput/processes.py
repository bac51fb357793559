"""The two helper processes: the loopback judge and a Celery worker, each in its own process
(the machine has few cores; a server sharing the worker's GIL would slow both)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def machine_busy_seconds() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot (Linux /proc/stat)."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    idle = values[3] + values[4]  # idle + iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / tick, sum(values) / tick


class LoopbackProcess:
    """`python -m bench.judge_throughput.server` with a latency; stats come back on stop."""

    def __init__(self, *, latency: float, port: int = 0) -> None:
        self.latency = latency
        self.port = port  # 0: any free port
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self, timeout: float = 30) -> LoopbackProcess:
        command = [sys.executable, "-m", "bench.judge_throughput.server",
                   "--latency", str(self.latency), "--port", str(self.port)]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("base_url="):
                self.base_url = line.strip().removeprefix("base_url=")
                return self
            if not line and self.process.poll() is not None:
                break
        self.process.kill()
        raise RuntimeError("The loopback server did not start.")

    def stop(self) -> dict[str, Any]:
        """Stop it and return what it saw: calls, peak concurrency, faults."""
        if self.process is None or self.process.poll() is not None:
            return {}
        self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=30)
        for line in out.splitlines():
            if line.startswith("stats="):
                return json.loads(line.removeprefix("stats="))
        return {}


class WorkerProcess:
    """`celery -A config worker` exactly as in production, on the benchmark's queue."""

    def __init__(self, *, queue: str, threads: int, env: dict[str, str]) -> None:
        self.queue = queue
        self.threads = threads
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="bench-worker-", suffix=".log")[1])

    def start(self, timeout: float = 60) -> WorkerProcess:
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker", "--queues", self.queue,
            "--pool", "threads", "--concurrency", str(self.threads), "--loglevel", "INFO",
            "--without-heartbeat", "--without-gossip", "--without-mingle",
            "--hostname", f"bench-{self.queue}@%h",
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env={**os.environ, **self.env}, stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The Celery worker exited early:\n{self.log()[-3000:]}")
            if " ready." in self.log():
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"The Celery worker was not ready:\n{self.log()[-3000:]}")

    @property
    def pid(self) -> int:
        return self.process.pid if self.process else 0

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 30) -> None:
        if not self.alive:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
