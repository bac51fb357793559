"""The three faults, made with the real services: a database that drops its connections and
refuses new ones (or a real PostgreSQL restart), a judge endpoint whose process is stopped
and started again on the same port, a Redis broker of the bench's own restarted without
persistence."""

from __future__ import annotations

import glob
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from bench.judge_throughput.app import check_database_url, database_name
from bench.judge_throughput.processes import LoopbackProcess


def database_down(url: str, seconds: float, *, keep_pid: int | None) -> float:
    """What a PostgreSQL restart does, to the bench database only: every other connection
    to it is terminated ("terminating connection due to administrator command") and new
    ones are refused for `seconds`. The commands go through the maintenance database (a
    database cannot close itself); connections are allowed again whatever happens.
    `keep_pid` is the bench's own backend, the observer. Returns the seconds it was down."""
    import psycopg

    check_database_url(url)  # never closes a database that is not the bench's
    name = database_name(url)
    quoted = '"' + name.replace('"', '""') + '"'
    maintenance = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as admin:
        started = time.monotonic()
        admin.execute(f"ALTER DATABASE {quoted} ALLOW_CONNECTIONS false")
        try:
            admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> %s",
                [name, keep_pid or 0],
            )
            time.sleep(seconds)
        finally:
            admin.execute(f"ALTER DATABASE {quoted} ALLOW_CONNECTIONS true")
        return time.monotonic() - started


def cluster_version() -> str:
    """The one PostgreSQL cluster's version under /etc/postgresql (Debian's layout)."""
    versions = sorted(Path(p).parent.name for p in glob.glob("/etc/postgresql/*/main"))
    if len(versions) != 1:
        raise RuntimeError(f"Expected one cluster under /etc/postgresql, found {versions}")
    return versions[0]


class RestartRefused(Exception):
    """A real restart would cut someone else's connections."""


def others_connected(url: str) -> dict[str, int]:
    """Connections to the server's other databases (not the bench's), by database."""
    import psycopg

    maintenance = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT datname, count(*) FROM pg_stat_activity WHERE datname IS NOT NULL "
            "AND datname <> %s AND pid <> pg_backend_pid() GROUP BY datname",
            [database_name(url)],
        ).fetchall()
    return dict(rows)


def real_restart(url: str) -> float:
    """`pg_ctlcluster <version> main restart` (fast shutdown: every connection of every
    database on the server is dropped), refused while another database has connections.
    Returns the seconds the command took."""
    if others := others_connected(url):
        raise RestartRefused(f"other databases have connections: {others}")
    started = time.monotonic()
    command = ["pg_ctlcluster", "--skip-systemctl-redirect", cluster_version(), "main", "restart"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")
    return time.monotonic() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JudgeServer(LoopbackProcess):
    """The loopback judge process on a port of its own, kept across restarts: the judges'
    base_url stays valid. Its stats add up over its lives (processes)."""

    def __init__(self, *, latency: float) -> None:
        super().__init__(latency=latency, port=free_port())
        self.lives: list[dict] = []  # each process's stats
        self.back_at: float | None = None  # epoch seconds it served again after an outage

    def stop(self) -> dict:
        stats = super().stop()
        if stats:
            self.lives.append(stats)
        return stats

    def total(self, key: str) -> int:
        return sum(life.get(key, 0) for life in self.lives)

    def outage(self, seconds: float, *, meanwhile: Callable[[], None] | None = None) -> float:
        """Down for `seconds`: SIGTERM closes the listener and, after aiohttp's 0.25 s
        grace, drops the calls in flight, as a crashed endpoint does; new connections are
        refused until it is started again. `meanwhile` is called about once a second while
        it is down. Returns the seconds it was unreachable."""
        started = time.monotonic()
        self.stop()
        while (left := seconds - (time.monotonic() - started)) > 0:
            if meanwhile is not None:
                meanwhile()
            time.sleep(min(1.0, max(0.0, left)))
        self.start()
        self.back_at = time.time()
        return time.monotonic() - started


class RedisServer:
    """A redis-server of the bench's own without persistence, as the broker's restart is
    meant: killed, it loses every message it held."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url(0))
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # no SHUTDOWN SAVE: what it held is gone
            self.process.wait(timeout=10)

    def restart(self, down_for: float) -> float:
        started = time.monotonic()
        self.stop()
        time.sleep(down_for)
        self.start()
        return time.monotonic() - started
