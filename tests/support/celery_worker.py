"""A real Celery worker in its own process, pointed at the test database and test queue;
and a real celery beat, started as `dev.py run` starts it.

The worker is `celery -A config worker`, exactly as in production; only its environment
differs: DATABASE_URL names the test database and CELERY_QUEUE the test session's queue.
Tests that use it must commit their data (`transactional_db`), or the worker cannot see it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from celery.utils.nodenames import host_format

ROOT = Path(__file__).resolve().parents[2]


def database_url(settings_dict: dict) -> str:
    """The URL of the database Django is connected to now (the test database in a test)."""
    engine = settings_dict["ENGINE"]
    if engine.endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    if engine.endswith("postgresql"):
        user = quote(settings_dict.get("USER") or "")
        password = settings_dict.get("PASSWORD") or ""
        auth = f"{user}:{quote(password)}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "localhost"
        port = settings_dict.get("PORT") or "5432"
        return f"postgresql://{auth}{host}:{port}/{settings_dict['NAME']}"
    raise ValueError(f"No worker support for database engine {engine}")


class WorkerProcess:
    def __init__(
        self,
        *,
        queue: str,
        database: str,
        concurrency: int = 4,
        pool: str = "threads",
        env: dict[str, str] | None = None,
    ) -> None:
        self.queue = queue
        self.database = database
        self.concurrency = concurrency
        self.pool = pool
        self.extra_env = env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="celery-worker-", suffix=".log")[1])
        self.name = f"test-{queue}-{time.monotonic_ns()}"
        self.node = host_format(f"{self.name}@%h")  # as the worker expands --hostname

    def start(self, timeout: float = 60) -> WorkerProcess:
        env = {
            **os.environ,
            "DATABASE_URL": self.database,
            "CELERY_QUEUE": self.queue,
            # The tests' judges are loopback servers: allowed as an operator would allow a
            # self-hosted model server (docs/operations.md#which-hosts-judges-may-call).
            "JUDGE_ALLOW_PRIVATE_NETWORK": "1",
            **self.extra_env,
        }
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "--queues", self.queue, "--pool", self.pool, "--concurrency", str(self.concurrency),
            "--loglevel", "INFO", "--without-heartbeat", "--without-gossip", "--without-mingle",
            "--hostname", self.node,
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_until_ready(timeout)
        return self

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The Celery worker exited early:\n{self.log()}")
            if " ready." in self.log():  # celery logs "celery@host ready." once consuming
                return
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"The Celery worker was not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def settle(self, timeout: float = 20) -> None:
        """Drop the tasks still queued for this worker and wait for those it runs to end:
        a test's last writes queue tasks (a run's end queues its figures' and scores'
        counts), and one that still holds a table when the test database is emptied
        deadlocks the flush. Asked through Celery's remote control; a transport that does
        not answer it counts as idle."""
        from config.celery import app

        with app.connection_for_write() as connection, contextlib.suppress(Exception):
            connection.default_channel.queue_purge(self.queue)
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline:
            # Asked of this worker alone, and done at its answer (limit=1) rather than after
            # the whole timeout that a broadcast to every worker waits.
            inspect = app.control.inspect(timeout=0.5, destination=[self.node], limit=1)
            found = [*(inspect.active() or {}).values(), *(inspect.reserved() or {}).values()]
            if not any(found):
                return
            time.sleep(0.2)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-task without acknowledging anything."""
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 20) -> None:
        if not self.alive:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()


class BeatProcess:
    """`celery -A config beat` with `dev.py run`'s arguments (dev.BEAT_ARGS: the
    DatabaseScheduler of the settings) on the test database, sending to `queue`."""

    def __init__(self, *, queue: str, database: str, env: dict[str, str] | None = None) -> None:
        self.queue = queue
        self.database = database
        self.extra_env = env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="celery-beat-", suffix=".log")[1])

    def start(self, timeout: float = 60) -> BeatProcess:
        from dev import BEAT_ARGS

        env = {
            **os.environ,
            "DATABASE_URL": self.database,
            "CELERY_QUEUE": self.queue,
            **self.extra_env,
        }
        command = [sys.executable, "-m", "celery", "-A", "config", *BEAT_ARGS]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while "beat: Starting..." not in self.log():
            if self.process.poll() is not None:
                raise RuntimeError(f"celery beat exited early:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"celery beat did not start in {timeout}s:\n{self.log()}")
            time.sleep(0.1)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 20) -> None:
        if not self.alive:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
