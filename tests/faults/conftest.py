"""Faults made with the real services: a database that drops every connection and refuses
new ones for a while, a Redis server of the test's own that restarts without persistence.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from celery import current_app
from django.db import connection

from bench.faults.outages import RedisServer

POSTGRES_ONLY = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="restarts PostgreSQL's connections (the SQLite pass has no server to restart)",
)
REDIS_BROKER_ONLY = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the PostgreSQL pass runs on Redis; the SQLite pass's embedded broker has no "
    "server to restart, nor a circuit shared with the web",
)


@contextmanager
def database_down(seconds: float) -> Iterator[None]:
    """What a PostgreSQL restart does to everyone but this test: every other connection to
    the test database is terminated ("terminating connection due to administrator command")
    and new ones are refused for `seconds`. Only the test database is touched (other test
    runs share the server); connections are allowed again whatever happens. The commands
    go through the server's maintenance database: a database cannot close itself."""
    params = connection.get_connection_params()
    name = connection.settings_dict["NAME"]
    quoted = connection.ops.quote_name(name)
    admin = psycopg.connect(**{**params, "dbname": "postgres"}, autocommit=True)
    try:
        admin.execute(f"ALTER DATABASE {quoted} ALLOW_CONNECTIONS false")
        try:
            admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> %s",
                [name, connection.connection.info.backend_pid],
            )
            time.sleep(seconds)
            yield
        finally:
            admin.execute(f"ALTER DATABASE {quoted} ALLOW_CONNECTIONS true")
    finally:
        admin.close()


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """bench.faults' own redis-server: the same fault as the benchmark's."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def celery_broker(url: str) -> Iterator[None]:
    """This process sends its tasks to `url` (a worker started on it takes them). Celery
    reads the broker it writes to from CELERY_BROKER_WRITE_URL before its settings."""
    app = current_app
    before = os.environ.get("CELERY_BROKER_WRITE_URL")

    def repoint(to: str | None) -> None:
        if to is None:
            os.environ.pop("CELERY_BROKER_WRITE_URL", None)
        else:
            os.environ["CELERY_BROKER_WRITE_URL"] = to
        app._pool = None  # the connection and producer pools are made again on first use
        app.amqp._producer_pool = None

    repoint(url)
    try:
        yield
    finally:
        repoint(before)
