"""`python -m bench.rewards --served`: OpenRLHF's load on the rewards service over HTTP.

The service runs as docs/operations.md runs it (an ASGI server process serving
config.asgi_rewards, on the benchmark's PostgreSQL and Redis); the load is OpenRLHF's remote
reward client's: N one-sample requests at once ({"query": [q], "prompts": [p], "labels": [l]}),
each with its own aiohttp session, retried five times one second apart on an error (here also
after a 429/503's Retry-After, as openrlhf_reward.py does). Reported: wall time against the
bound, rewards/s, p50/p95 per request, errors, retried requests, failed samples, and the most
database connections the benchmark's database had open at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRIES = 5  # OpenRLHF's _post_request: try_max_times=5, one second apart
SERVERS = {
    "uvicorn": lambda port, workers: [
        sys.executable, "-m", "uvicorn", "config.asgi_rewards:application", "--host",
        "127.0.0.1", "--port", str(port), "--workers", str(workers), "--no-access-log",
        "--log-level", "warning", "--backlog", "8192",
    ],
    "granian": lambda port, workers: [
        sys.executable, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1",
        "--port", str(port), "--workers", str(workers), "--no-access-log",
        "--backlog", "8192", "config.asgi_rewards:application",
    ],
}  # fmt: skip


class ServiceProcess:
    def __init__(self, *, server: str, workers: int, env: dict[str, str]) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = SERVERS[server](self.port, workers)
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_rewards", **env}
        self.log_path = Path(tempfile.mkstemp(prefix="bench-rewards-service-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> ServiceProcess:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The rewards service exited:\n{self.log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/livez", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("The rewards service did not start.")

    def cpu_seconds(self) -> float:
        """CPU seconds the service's processes have used so far (user and system, the ASGI
        server's workers included: they share its process group). Unlike wall time, it
        hardly moves with what else the machine runs."""
        if self.process is None:
            return 0.0
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            # After the name: state, ppid, pgrp, ..., utime (14th field) and stime (15th).
            if int(fields[2]) == self.process.pid:
                total += int(fields[11]) + int(fields[12])
        return total / ticks

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


@dataclass
class Round:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # requests without an answer after tries
    retried: int = 0  # requests that needed more than one try
    failed: int = 0  # samples answered with extra_logs.failed
    rewarded: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


async def one_rollout(url: str, token: str, bodies: list[dict]) -> Round:
    """Every body at once, each as OpenRLHF's _post_request sends it."""
    import aiohttp

    found = Round()
    timeout = aiohttp.ClientTimeout(total=600)
    headers = {"Authorization": f"Token {token}"}

    async def post(body: dict) -> None:
        started = time.perf_counter()
        for attempt in range(TRIES):
            pause = 1.0
            try:
                async with (
                    aiohttp.ClientSession(timeout=timeout) as session,
                    session.post(url, json=body, headers=headers) as response,
                ):
                    found.statuses[response.status] = found.statuses.get(response.status, 0) + 1
                    if response.status in (429, 503):
                        pause = float(response.headers.get("Retry-After", "1"))
                    else:
                        response.raise_for_status()
                        answer = await response.json()
                        found.latencies.append(time.perf_counter() - started)
                        found.retried += attempt > 0
                        found.failed += int(answer["extra_logs"]["failed"][0])
                        found.rewarded += 1
                        return
            except (TimeoutError, aiohttp.ClientError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                if attempt == TRIES - 1:
                    found.errors.append(last)
                    return
            await asyncio.sleep(pause)
        found.errors.append("429/503 on every try")

    started = time.perf_counter()
    await asyncio.gather(*(post(body) for body in bodies))
    found.seconds = time.perf_counter() - started
    return found


async def one_request(url: str, token: str, body: dict) -> Round:
    """One request holding every sample (OpenRLHF's shape takes lists): the batch the
    one-sample rollout is compared with, on the same service."""
    import aiohttp

    found = Round()
    started = time.perf_counter()
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session,
        session.post(url, json=body, headers={"Authorization": f"Token {token}"}) as response,
    ):
        found.statuses[response.status] = 1
        if response.status == 200:
            answer = await response.json()
            found.failed = sum(int(f) for f in answer["extra_logs"]["failed"])
            found.rewarded = len(answer["rewards"])
        else:
            found.errors.append(f"HTTP {response.status}: {(await response.text())[:300]}")
    found.seconds = time.perf_counter() - started
    found.latencies.append(found.seconds)
    return found


class ConnectionWatch:
    """The most connections to `database` open at once, sampled every 50 ms; only those of
    `application` (an application_name, as the rewards service names its own) if given."""

    def __init__(self, database_url: str, application: str = "") -> None:
        self.database_url = database_url
        self.application = application
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ConnectionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        if not self.database_url.startswith(("postgres://", "postgresql://")):
            return  # SQLite: no connections to count
        import psycopg

        with psycopg.connect(_admin_url(self.database_url), autocommit=True) as watcher:
            while not self._stop.is_set():
                count = _count(watcher, self.database_url, self.application)
                self.peak = max(self.peak, count)
                time.sleep(0.05)


def connections_now(database_url: str) -> int:
    """The connections open to `database_url`'s database right now (0 for SQLite): what a
    watch's peak adds to is measured from this (a test suite's worker may hold some)."""
    if not database_url.startswith(("postgres://", "postgresql://")):
        return 0
    import psycopg

    with psycopg.connect(_admin_url(database_url), autocommit=True) as watcher:
        return _count(watcher, database_url)


def _admin_url(database_url: str) -> str:
    return database_url.rsplit("/", 1)[0] + "/postgres"


def _count(watcher, database_url: str, application: str = "") -> int:
    name = database_url.rsplit("/", 1)[-1]
    sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
    if application:
        sql += " AND application_name = %s"
    (count,) = watcher.execute(sql, [name, application] if application else [name]).fetchone()
    return count
