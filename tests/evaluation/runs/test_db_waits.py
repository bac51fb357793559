"""A run's task waits out a transient database error instead of losing what it holds
(evaluation.transient.retrying): on a real connection that PostgreSQL terminates, and on
the limits of the wait. The whole run under a database restart is tests/faults/test_runs.py."""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, OperationalError, connection

from annotation.models import Dataset
from evaluation import transient


@pytest.mark.skipif(connection.vendor != "postgresql", reason="terminates a server connection")
def test_a_terminated_connection_is_replaced_and_the_work_done_once(transactional_db, dataset):
    connection.ensure_connection()
    victim = connection.connection.info.backend_pid
    params = {**connection.get_connection_params(), "dbname": "postgres"}
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [victim])
    calls = []

    def count() -> int:
        calls.append(1)
        return Dataset.objects.count()

    assert transient.retrying(count) == 1
    assert len(calls) == 2  # the first met the dead connection, the second a new one
    assert connection.connection.info.backend_pid != victim


def test_a_database_that_stays_away_ends_in_still_unreachable():
    calls = []

    def down() -> None:
        calls.append(1)
        raise OperationalError("connection refused")

    with pytest.raises(transient.StillUnreachable) as raised:
        transient.retrying(down, within=0.6)
    assert "connection refused" in str(raised.value) and len(calls) >= 2
    # Not transient itself: an outer wait lets it through instead of redoing paid work.
    assert not transient.is_transient_db_error(raised.value)


def test_other_database_errors_are_raised_at_once():
    calls = []

    def broken() -> None:
        calls.append(1)
        raise IntegrityError("duplicate key")

    with pytest.raises(IntegrityError):
        transient.retrying(broken, within=5)
    assert calls == [1]
