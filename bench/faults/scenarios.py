"""One scenario: a fresh database, the loopback judge, a worker and a run; the fault once
`AT` of the verdicts exist; then what the run ended as.

Django is already set up (bench.judge_throughput.app.setup_django) when this runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime

from bench.faults.outages import (
    JudgeServer,
    RedisServer,
    RestartRefused,
    database_down,
    real_restart,
)
from bench.judge_throughput import app
from bench.judge_throughput.cli import Mapping
from bench.judge_throughput.processes import WorkerProcess
from bench.judge_throughput.workload import Workload

AT = 0.3  # the share of the verdicts written when the fault begins, as in the issue
POLL = 0.05  # seconds between looks while waiting for the fault's moment
# What the worker logs when it meets each fault (evaluation.transient, judging.circuit,
# runs.healing), counted in its log as evidence that the fault was met and how.
SIGNS = {
    "db_retries": "Database unreachable, trying again",
    "circuit_opened": "open: ",
    "circuit_closed": "closed: the endpoint answers again",
    "broker_restart_seen": "The broker restarted",
    "sweeps": "Run sweep:",
    "errors_logged": " ERROR ",
}


@dataclass
class Setup:
    """What every scenario shares."""

    workload: Workload
    mapping: Mapping
    latency: float
    env: dict[str, str]  # the worker's environment (database, broker, secret key)
    database_url: str
    timeout: float
    judge_outage: float
    database_down: float
    broker_down: float
    real_restart: bool
    private_redis: RedisServer | None = None


@dataclass
class Outcome:
    scenario: str
    status: str = ""
    expected: int = 0
    verdicts: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    votes: int = 0  # verdicts that carry a judge's answer (pass or fail)
    answered: int = 0  # chat completions the server answered, over all its lives
    received: int = 0  # requests it received (a call dropped in flight counts here only)
    wall_s: float | None = None  # run.started_at → run.finished_at
    last_verdict_s: float | None = None  # run.started_at → the last verdict's created_at
    fault_at: int | None = None  # verdicts when the fault began; None: it never did
    outage_s: float | None = None  # how long the fault lasted, measured
    refused: str = ""  # why the fault was not made (a real restart with others connected)
    waiting: list[str] = field(default_factory=list)  # judges the progress API named
    # The judge scenario: seconds from the server's return to the worker's log of the
    # circuit closing (its probe answered), the wait the circuit adds to the outage.
    closed_after_s: float | None = None
    signs: dict[str, int] = field(default_factory=dict)
    worker_log: str = ""
    server_lives: list[dict] = field(default_factory=list)  # the judge server's stats

    @property
    def extra_calls(self) -> int:
        return self.answered - self.votes

    @property
    def holds(self) -> bool:
        return (
            self.status == "done" and self.verdicts == self.expected and self.errors == 0
            and self.duplicates == 0 and self.extra_calls == 0
        )  # fmt: skip


def run_scenario(name: str, setup: Setup) -> Outcome:
    from django.conf import settings
    from django.core.management import call_command

    from evaluation.runs import services as runs

    call_command("flush", verbosity=0, interactive=False)  # ids restart: nothing carried over
    queue = f"{setup.env['CELERY_QUEUE']}-{name}"
    broker = setup.env["CELERY_BROKER_URL"]
    if name == "broker":
        broker = setup.private_redis.url(0)
    outcome = Outcome(name)
    server = JudgeServer(latency=setup.latency).start()
    worker = None
    try:
        dataset, panel = app.build(setup.workload, base_url=server.base_url, rpm=None, tpm=None)
        _close_circuits(panel, broker)
        worker_env = {**setup.env, "CELERY_BROKER_URL": broker, "RUNS_QUEUE": queue,
                      "JUDGE_MAX_IN_FLIGHT": str(setup.mapping.gate)}  # fmt: skip
        worker = WorkerProcess(queue=queue, threads=setup.mapping.threads, env=worker_env)
        worker.start()
        outcome.worker_log = str(worker.log_path)
        if name == "broker":
            # A worker that has been up a while, as in production: its doctor has read the
            # broker's run id once (at its first heartbeat), so it can tell a restart.
            time.sleep(settings.RUNS_HEARTBEAT + 1)
        settings.RUNS_QUEUE = queue
        sending = sending_to(broker) if name == "broker" else nullcontext()
        with sending:
            run = runs.run_start(
                run=runs.run_create(dataset=dataset, panel=panel,
                                    concurrency=setup.mapping.per_task)
            )  # fmt: skip
            fault = _fault(name, setup, server, run, outcome)
            if fault is not None:
                outcome.fault_at = _wait_for_share(run, AT, setup.timeout, worker)
                if outcome.fault_at is not None:
                    try:
                        outcome.outage_s = fault()
                    except RestartRefused as exc:
                        outcome.fault_at, outcome.refused = None, str(exc)
            _wait_for_end(run, setup.timeout, worker)
        _measure(run, outcome)
    finally:
        if worker is not None:
            worker.stop()
        server.stop()
        _drop_queues(setup.env["CELERY_BROKER_URL"])
    outcome.answered, outcome.received = server.total("answered"), server.total("calls")
    outcome.server_lives = server.lives
    if worker is not None:
        log = worker.log()
        outcome.signs = {key: log.count(sign) for key, sign in SIGNS.items()}
        if server.back_at is not None:
            outcome.closed_after_s = _logged_after(log, SIGNS["circuit_closed"], server.back_at)
    return outcome


def _logged_after(log: str, sign: str, since: float) -> float | None:
    """Seconds from `since` (epoch) to the first line with `sign` logged after it. The
    worker's log lines start with its local time (settings.LOGGING's asctime)."""
    for line in log.splitlines():
        if sign not in line:
            continue
        try:
            logged = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        except ValueError:
            continue
        if logged >= since:
            return logged - since
    return None


def _fault(name: str, setup: Setup, server: JudgeServer, run, outcome: Outcome):
    """The scenario's fault, as a function that makes it and returns its length."""
    if name == "database" and setup.real_restart:
        return lambda: real_restart(setup.database_url)
    if name == "database":
        from django.db import connection

        connection.ensure_connection()
        keep = connection.connection.info.backend_pid
        return lambda: database_down(setup.database_url, setup.database_down, keep_pid=keep)
    if name == "judge":
        return lambda: server.outage(setup.judge_outage, meanwhile=_watch_waiting(run, outcome))
    if name == "broker":
        return lambda: setup.private_redis.restart(setup.broker_down)
    return None


def _watch_waiting(run, outcome: Outcome) -> Callable[[], None]:
    """During the judge's outage: the judges the run's progress API says it waits for."""
    from evaluation.runs import overview

    def look() -> None:
        run.refresh_from_db()
        for judge in overview.waiting_for(run):
            if judge.judge not in outcome.waiting:
                outcome.waiting.append(judge.judge)

    return look


def _poll(read: Callable):
    """A read of the observer that outlives a real restart (its connection is dropped too)."""
    from evaluation import transient

    return transient.retrying(read, within=600)


def _verdicts(run) -> int:
    from evaluation.runs.models import Verdict

    return _poll(lambda: Verdict.objects.filter(run=run).count())


def _status(run) -> str:
    from evaluation.runs.models import Run

    return _poll(lambda: Run.objects.filter(pk=run.pk).values_list("status", flat=True).get())


def _wait_for_share(run, share: float, timeout: float, worker) -> int | None:
    """The verdicts written once `share` of them exist; None if the run ended first."""
    target = share * run.expected
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and worker.alive:
        count = _verdicts(run)
        if count >= target:
            return count
        if _status(run) != "running":
            return None
        time.sleep(POLL)
    return None


def _wait_for_end(run, timeout: float, worker) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and worker.alive and _status(run) == "running":
        time.sleep(0.2)


def _measure(run, outcome: Outcome) -> None:
    from django.db.models import Count, Max

    from evaluation.runs.models import Verdict

    run.refresh_from_db()
    verdicts = Verdict.objects.filter(run=run)
    outcome.status, outcome.expected = run.status, run.expected
    outcome.verdicts = verdicts.count()
    outcome.votes = verdicts.filter(outcome__in=["pass", "fail"]).count()
    errors = verdicts.filter(outcome="error")
    outcome.errors = errors.count()
    outcome.error_kinds = dict(errors.values_list("error_kind").annotate(n=Count("pk")))
    outcome.duplicates = (
        verdicts.values("answer", "criterion", "judge", "sample")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .count()
    )
    last = verdicts.aggregate(last=Max("created_at"))["last"]
    if last is not None:
        outcome.last_verdict_s = (last - run.started_at).total_seconds()
    if run.finished_at is not None:
        outcome.wall_s = (run.finished_at - run.started_at).total_seconds()


def _close_circuits(panel, broker_url: str) -> None:
    """Circuits are keyed by judge id and a flushed database reuses ids: start closed."""
    import redis

    from evaluation.judging import circuit

    keys = []
    for member in panel.members.select_related("judge"):
        key = f"{circuit.KEY_PREFIX}:{circuit.circuit_key(member.judge_id, member.judge.base_url)}"
        keys += [key, f"{key}:failures", f"{key}:probe"]
    with redis.Redis.from_url(broker_url) as connection:
        connection.delete(*keys)


def _drop_queues(broker_url: str) -> None:
    """The bench's queues and kombu's bindings of them: a broker restart's harmless second
    messages may be left in a scenario's queue, and what a run's end queues waits on the
    default one, nobody consuming them. Every queue of this bench is named after the
    default queue."""
    import redis

    name = os.environ["CELERY_QUEUE"]
    patterns = (f"{name}*", f"_kombu.binding.{name}*", f"_kombu.binding_permanent.{name}*")
    with redis.Redis.from_url(broker_url) as connection:
        keys = [key for pattern in patterns for key in connection.scan_iter(match=pattern)]
        if keys:
            connection.delete(*keys)


@contextmanager
def sending_to(url: str) -> Iterator[None]:
    """This process sends its tasks to `url`. Celery reads the broker it writes to from
    CELERY_BROKER_WRITE_URL before its settings; the pools are made again on first use."""
    from celery import current_app

    before = os.environ.get("CELERY_BROKER_WRITE_URL")

    def point(to: str | None) -> None:
        if to is None:
            os.environ.pop("CELERY_BROKER_WRITE_URL", None)
        else:
            os.environ["CELERY_BROKER_WRITE_URL"] = to
        current_app._pool = None
        current_app.amqp._producer_pool = None

    point(url)
    try:
        yield
    finally:
        point(before)
