"""bench.web --lock-waits (bench/web/lock_waits.py): while one transaction holds a row and
sits between two statements, another that wants the row is sampled waiting, with the holder
"idle in transaction" and its last statement; once the holder commits, nothing waits."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection

from bench.web.lock_waits import LockWaits, django_conninfo, print_lock_waits

pytestmark = pytest.mark.django_db(transaction=True)
TABLE = "bench_lock_waits_probe"


@pytest.fixture
def conninfo():
    if connection.vendor != "postgresql":
        assert django_conninfo() is None  # the option refuses another database
        pytest.skip("lock waits are PostgreSQL's")
    info = django_conninfo()
    with psycopg.connect(info, autocommit=True) as setup:
        setup.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, n int)")
        setup.execute(f"INSERT INTO {TABLE} VALUES (1, 0)")
    yield info
    with psycopg.connect(info, autocommit=True) as cleanup:
        cleanup.execute(f"DROP TABLE IF EXISTS {TABLE}")


def test_a_writer_behind_a_held_row_is_sampled_with_its_holder(conninfo, capsys):
    sampler = LockWaits(conninfo, interval_s=0.01).start()
    holder = psycopg.connect(conninfo)
    holder.execute(f"SELECT n FROM {TABLE} WHERE id = 1 FOR UPDATE")  # and then it idles
    waiter_done = threading.Event()

    def wait_for_the_row() -> None:
        with psycopg.connect(conninfo, autocommit=True) as waiter:
            waiter.execute(f"UPDATE {TABLE} SET n = n + 1 WHERE id = 1")
        waiter_done.set()

    thread = threading.Thread(target=wait_for_the_row)
    thread.start()
    deadline = time.monotonic() + 10
    while not sampler.waits and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not waiter_done.is_set()  # still blocked: the row is held
    holder.commit()
    holder.close()
    thread.join(timeout=10)
    assert waiter_done.is_set()
    time.sleep(0.1)  # a few samples with nothing waiting
    summary = sampler.stop()

    assert summary["error"] == "" and summary["samples"] >= 5
    (pair, *others) = summary["pairs"]
    assert pair["waiting"].startswith(f"UPDATE {TABLE} SET n = n + 1")
    assert pair["holder_state"] == "idle in transaction"
    assert pair["holder"].startswith(f"SELECT n FROM {TABLE} WHERE id = 1 FOR UPDATE")
    # A sample may catch the holder in the act of committing: the same wait, its holder
    # "active" on COMMIT (seen on a busy CI machine). Nothing else waited.
    assert all(o["waiting"] == pair["waiting"] and o["holder"] == "COMMIT" for o in others)
    assert summary["waiting_samples"] == sum(p["samples"] for p in summary["pairs"])
    assert summary["waiting_samples"] < summary["samples"]
    assert 0 < summary["waiting_s"] < 10
    print_lock_waits(summary)
    printed = capsys.readouterr().out
    assert f"{summary['waiting_samples']} waiting in {summary['samples']} samples" in printed
    assert "held by (idle in transaction) 'SELECT n FROM" in printed


def test_nothing_waits_when_nobody_holds_anything(conninfo):
    sampler = LockWaits(conninfo, interval_s=0.01).start()
    with psycopg.connect(conninfo, autocommit=True) as writer:
        writer.execute(f"UPDATE {TABLE} SET n = n + 1 WHERE id = 1")
    time.sleep(0.1)
    summary = sampler.stop()
    assert summary["samples"] >= 3 and summary["waiting_samples"] == 0 and summary["pairs"] == []


def test_a_wrong_address_fails_at_start_not_in_the_thread():
    with pytest.raises(psycopg.OperationalError):
        LockWaits("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2").start()
