"""Which database errors are worth trying again: one rule for every task that must outlive
a database restart (a scheduled run's tick, the regression alerts, the runs' tasks).

A transient error says nothing about the work itself: the server is restarting or refusing
connections, the connection was cut, a transaction lost a race (serialization failure,
deadlock) or waited too long for a lock. The same work a little later will succeed, on a
new connection (`reset_connection`: Django would keep the broken one). Any other database
error (a constraint, bad SQL, a query cancelled by statement_timeout) would fail again:
retrying it only hides the bug.

`retry_task` is the way a Celery task applies the rule: the limits are the TASK_DB_RETRY_*
settings (docs/operations.md, "When the infrastructure fails"). `retrying` applies it
in-process, to a step that must not be redone by a new delivery (a run's task holding the
results of paid judge calls), for RUNS_DB_RETRY_FOR seconds.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

from django.conf import settings
from django.db import Error, InterfaceError, OperationalError, connections

from config.backoff import backoff as growing_wait

if TYPE_CHECKING:
    from celery import Task

logger = logging.getLogger(__name__)
T = TypeVar("T")

# SQLSTATE classes (the first two characters) and codes that mean "try again later":
# 08 connection exception; 53 insufficient resources (too many connections, disk full,
# out of memory); 57P01 terminated by an administrator, 57P02 crash shutdown, 57P03 cannot
# connect now (starting up); 40001 serialization failure; 40P01 deadlock; 55P03 lock not
# available (lock_timeout, NOWAIT).
TRANSIENT_SQLSTATE_CLASSES = frozenset({"08", "53"})
TRANSIENT_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "40001", "40P01", "55P03"})


def is_transient_db_error(exc: BaseException) -> bool:
    """True for a database error that the same work may not meet a moment later: any
    InterfaceError (the connection is closed or unusable); an OperationalError, unless the
    server answered with a SQLSTATE outside the transient ones above (no SQLSTATE: the
    connection was refused, cut or timed out before the server could answer); on SQLite, a
    database or table that another connection holds locked. False for anything else."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__  # Django re-raises the driver's error `from` it
    if isinstance(cause, sqlite3.Error):
        # "database is locked" (SQLITE_BUSY) or "database table is locked" (SQLITE_LOCKED);
        # SQLite's other operational errors (no such table, disk I/O) do not go away.
        name = getattr(cause, "sqlite_errorname", "")
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "is locked" in str(cause)
    sqlstate = getattr(cause, "sqlstate", None)
    if not sqlstate:
        return True
    return sqlstate[:2] in TRANSIENT_SQLSTATE_CLASSES or sqlstate in TRANSIENT_SQLSTATES


def reset_connection() -> None:
    """Close this thread's database connections, quietly (closing a broken one may raise),
    so that the next query opens a new one. Call it outside any transaction: inside one,
    Django closes the connection but refuses queries until the outermost block exits."""
    for connection in connections.all(initialized_only=True):
        try:
            connection.close()
        except Error:
            logger.debug("Closing the broken %s connection failed", connection.alias)


def backoff(retry: int, *, base: float, cap: float) -> float:
    """Seconds to wait before retry number `retry` (0 for the first): a random time between
    half and all of min(cap, base × 2^retry), so that the deliveries that failed together
    (every tick of the night, every worker) do not all come back at the same moment."""
    return growing_wait(retry, base=base, cap=cap, doublings=32, jitter="equal")


def retry_task(task: Task, exc: Exception) -> NoReturn:
    """From a bound Celery task's `except`: after a transient database error, close the
    connection and raise the task's retry after `backoff`, up to TASK_DB_RETRY_ATTEMPTS
    attempts (the first included); any other error, or the last attempt's, is raised as it
    is. The task must be safe to run again (a retry is a second delivery)."""
    attempt = task.request.retries + 1
    if not is_transient_db_error(exc):
        raise exc
    if attempt >= settings.TASK_DB_RETRY_ATTEMPTS:
        logger.error(
            "%s[%s]: the database is still unreachable after %s attempts; giving up: %s",
            task.name, task.request.id, attempt, exc,
        )  # fmt: skip
        raise exc
    reset_connection()
    wait = backoff(
        task.request.retries,
        base=settings.TASK_DB_RETRY_BASE_DELAY,
        cap=settings.TASK_DB_RETRY_MAX_DELAY,
    )
    logger.warning(
        "%s[%s]: database unreachable (attempt %s of %s), trying again in %.0f s: %s",
        task.name, task.request.id, attempt, settings.TASK_DB_RETRY_ATTEMPTS, wait, exc,
    )  # fmt: skip
    # The limit is the setting's, whatever the task's own max_retries says.
    limit = settings.TASK_DB_RETRY_ATTEMPTS
    raise task.retry(exc=exc, countdown=wait, max_retries=limit) from exc


class StillUnreachable(Exception):
    """The database stayed unreachable for all of `retrying`'s time. Not itself transient:
    an outer `retrying` lets it through instead of redoing work that has been paid for."""


def retrying(work: Callable[[], T], *, within: float | None = None) -> T:
    """`work()`, called again after each transient database error, on a new connection,
    after `backoff` (0.25 s doubling up to 5 s), for up to `within` seconds (the setting
    RUNS_DB_RETRY_FOR by default); then StillUnreachable, from the last error. Any other
    error is raised at once. For code outside a transaction that must not lose what it
    holds (a run's verdicts after their calls returned) or that is cheap to redo."""
    deadline = time.monotonic() + (settings.RUNS_DB_RETRY_FOR if within is None else within)
    retry = 0
    while True:
        try:
            return work()
        except Exception as exc:
            if not is_transient_db_error(exc):
                raise
            if time.monotonic() >= deadline:
                raise StillUnreachable(f"The database stayed unreachable: {exc}") from exc
            reset_connection()
            wait = backoff(retry, base=0.25, cap=5.0)
            logger.warning("Database unreachable, trying again in %.1f s: %s", wait, exc)
            time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
            retry += 1
