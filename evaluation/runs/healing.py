"""Self-healing: work lost with a worker, or with the broker's messages, is queued again
without anyone pressing Resume.

Every worker process runs a Doctor thread. Every RUNS_HEARTBEAT seconds it refreshes the
heartbeat of the leases its process holds; every RUNS_SWEEP seconds it sweeps:

1. A lease whose heartbeat is older than RUNS_LEASE_TIMEOUT belongs to a lost worker
   (killed, out of memory, its machine gone): the task is queued again. After
   RUNS_MAX_REQUEUES such losses the task is given up as failing its workers: it ends with
   error verdicts naming that, so the run still ends.
2. Unfinished tasks that nobody holds, in a run that has made no progress (no claim, no
   finish) for RUNS_LEASE_TIMEOUT, may have lost their message (a Redis restart, the
   embedded transport's reserved messages of a killed worker): they are queued again,
   each at most once per RUNS_LEASE_TIMEOUT × 2^requeues. A message that was not lost
   after all is harmless: only one delivery can claim a task.
3. A running run without unfinished tasks (its answers deleted) is ended.
4. The sweeps other packages add with `add_sweep`, at the same pace: the dataset deletions
   that made no progress for RUNS_LEASE_TIMEOUT are queued again (evaluation.datasets.purge.sweep,
   added by EvaluationConfig.ready; runs sit below the dataset purge and do not import it).

A Redis broker that restarted without persistence has lost every queued message: the
doctor tells from its run id (INFO server), read at each heartbeat, and sweeps at once
with `lost_messages`, queueing every unheld unfinished task again without waiting for the
run to look stalled.

Why a thread in the workers rather than celery beat: it needs no other process to deploy,
it heals whenever any worker is alive (the only time healing can happen), and its sweep
does not wait in the queue behind the very tasks it is meant to rescue. Several workers
sweeping at once are safe: every requeue is a conditional UPDATE that only one wins.
Redis's own redelivery (visibility timeout, CELERY_VISIBILITY) stays as a backstop.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import close_old_connections
from django.db.models import F, Max
from django.utils import timezone

from config.backoff import backoff
from evaluation.runs import lifecycle, queue, work
from evaluation.runs.models import Run, RunTask

logger = logging.getLogger(__name__)

BATCH = 1000  # tasks requeued per run and sweep: a huge lost run heals over a few sweeps

_SWEEPS: list[Callable[[], object]] = []


def add_sweep(sweep: Callable[[], object]) -> None:
    """Run `sweep` after the runs' own, every RUNS_SWEEP seconds, in every worker's doctor."""
    if sweep not in _SWEEPS:
        _SWEEPS.append(sweep)


@dataclass(frozen=True)
class SweepReport:
    lost: int = 0  # leases of lost workers, queued again
    unqueued: int = 0  # unheld tasks of stalled runs, queued again
    given_up: int = 0
    ended: int = 0


def sweep(*, lost_messages: bool = False) -> SweepReport:
    """`lost_messages`: the broker is known to have lost its queues (it restarted), so
    every unheld unfinished task is queued again now, stalled or not."""
    lost = unqueued = given_up = ended = 0
    running = list(Run.objects.filter(status=Run.Status.RUNNING).values_list("pk", "attempt"))
    for run_id, attempt in running:
        r_lost, r_given_up = _requeue_lost(run_id)
        lost, given_up = lost + r_lost, given_up + r_given_up
        unqueued += _requeue_stalled(run_id, attempt, lost_messages=lost_messages)
        ended += lifecycle.end_if_complete(run_id) is not None
    report = SweepReport(lost, unqueued, given_up, ended)
    if report != SweepReport():
        logger.warning("Run sweep: %s", report)
    return report


def _requeue_lost(run_id: int) -> tuple[int, int]:
    now = timezone.now()
    lost = (
        RunTask.objects.filter(run=run_id, done_at__isnull=True)
        .exclude(lease="")
        .filter(heartbeat_at__lt=lifecycle.stale_before(now))
        .values_list("pk", "answer_id", "judge_id", "attempt", "lease", "requeues")[:BATCH]
    )
    requeued = given_up = 0
    for pk, answer_id, judge_id, attempt, lease, requeues in lost:
        if requeues >= settings.RUNS_MAX_REQUEUES:
            given_up += _give_up(pk, run_id, answer_id, judge_id, lease, requeues)
            continue
        taken = RunTask.objects.filter(pk=pk, lease=lease).update(
            lease="", queued_at=now, requeues=F("requeues") + 1
        )
        if taken:
            queue.send(run_id, [(answer_id, judge_id)], attempt)
            requeued += 1
    return requeued, given_up


def _give_up(pk: int, run_id: int, answer_id: int, judge_id: int, lease: str, n: int) -> int:
    error = f"Its worker was lost {n + 1} times: the task may be crashing its workers."
    taken = RunTask.objects.filter(pk=pk, lease=lease).update(
        lease="", done_at=timezone.now(), error=error
    )
    if taken:
        run = Run.objects.get(pk=run_id)
        work.record_failure(run=run, answer_id=answer_id, judge_id=judge_id, error=error)
    return taken


def _requeue_stalled(run_id: int, attempt: int, *, lost_messages: bool = False) -> int:
    now = timezone.now()
    stale = lifecycle.stale_before(now)
    tasks = RunTask.objects.filter(run=run_id)
    progress = tasks.aggregate(
        claimed=Max("claimed_at"), done=Max("done_at"), queued=Max("queued_at")
    )
    latest = max((t for t in progress.values() if t is not None), default=None)
    if not lost_messages and latest is not None and latest > stale:
        return 0  # the run is moving (or was queued just now): its messages are flowing
    waiting = tasks.filter(done_at__isnull=True, lease="").values_list(
        "pk", "answer_id", "judge_id", "queued_at", "requeues"
    )
    requeued = 0
    for pk, answer_id, judge_id, queued_at, requeues in waiting[:BATCH]:
        # After a broker restart, at once: a message sent since (between the restart and
        # the doctor's noticing it) gets a second one, which is harmless.
        wait = (
            0 if lost_messages else backoff(requeues, base=settings.RUNS_LEASE_TIMEOUT, doublings=6)
        )
        if queued_at is not None and (now - queued_at).total_seconds() < wait:
            continue
        taken = RunTask.objects.filter(pk=pk, lease="", queued_at=queued_at).update(
            queued_at=now, requeues=F("requeues") + 1
        )
        if taken:
            queue.send(run_id, [(answer_id, judge_id)], attempt)
            requeued += 1
    return requeued


class Doctor(threading.Thread):
    """Heartbeat and sweep, in the background of a worker process."""

    def __init__(self) -> None:
        super().__init__(name="run-doctor", daemon=True)
        self.stopping = threading.Event()

    def run(self) -> None:
        next_sweep = time.monotonic() + settings.RUNS_SWEEP
        broker = BrokerWatch(settings.CELERY_BROKER_URL)
        broker.restarted()  # the run id to compare with, before the first heartbeat's wait
        lost_messages = False
        while not self.stopping.wait(settings.RUNS_HEARTBEAT):
            close_old_connections()
            if broker.restarted():
                logger.warning("The broker restarted: queueing the unfinished tasks again")
                lost_messages, next_sweep = True, 0.0
            try:
                lifecycle.beat()
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + settings.RUNS_SWEEP
                    sweep(lost_messages=lost_messages)
                    lost_messages = False
                    for other in _SWEEPS:
                        other()
            except Exception:  # a database blip: try again at the next beat
                logger.exception("The run doctor's heartbeat or sweep failed")


class BrokerWatch:
    """Tells that a Redis broker restarted: its run id (a random id Redis draws at each
    start) changed since the last look. Other brokers, and an unreachable Redis, say no."""

    def __init__(self, url: str) -> None:
        self.url = url if url.startswith(("redis://", "rediss://")) else ""
        self.run_id: str | None = None

    def restarted(self) -> bool:
        if not self.url:
            return False
        try:
            with redis.Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=2) as r:
                run_id = r.info("server")["run_id"]
        except redis.exceptions.RedisError:
            return False  # down now: the next look after it is back tells
        before, self.run_id = self.run_id, run_id
        return before is not None and before != run_id


_doctor: Doctor | None = None
_doctor_pid: int | None = None
_doctor_lock = threading.Lock()


def ensure_doctor() -> Doctor:
    """This process's Doctor, started on first use (a forked pool child starts its own)."""
    global _doctor, _doctor_pid
    with _doctor_lock:
        if _doctor is None or _doctor_pid != os.getpid() or not _doctor.is_alive():
            _doctor, _doctor_pid = Doctor(), os.getpid()
            _doctor.start()
        return _doctor
