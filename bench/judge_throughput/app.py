"""The app side: a dedicated database, the workload as rows, a run through the real engine.

Django is set up here, after the environment names the benchmark's own database, broker and
queue; the worker process gets the same environment.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench.judge_throughput.workload import BUDGET_TOKENS, QUERY, QUERY_DATE, Workload


class UnsafeDatabase(Exception):
    """The benchmark flushes its database: it refuses one that is not clearly its own."""


def database_name(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme.startswith("sqlite"):
        return Path(parts.path).name
    return parts.path.lstrip("/")


def check_database_url(url: str) -> None:
    name = database_name(url)
    if not re.search(r"(^|[_-])bench([_.-]|$)", name):
        raise UnsafeDatabase(
            f"Refusing to flush database {name!r}: the benchmark's database name must have "
            "'bench' as a word of its own (bench_judge, bench-judge.sqlite3): it is emptied "
            "at every run."
        )


def ensure_database(url: str) -> None:
    """CREATE DATABASE on PostgreSQL when it does not exist yet (SQLite makes its file)."""
    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        return
    import psycopg

    name = database_name(url)
    maintenance = parts._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(*, database_url: str, broker_url: str, queue: str) -> dict[str, str]:
    """Point this process at the benchmark's database and broker, migrate and flush.

    Returns the environment the worker needs to see the same things."""
    check_database_url(database_url)
    ensure_database(database_url)
    env = {
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "CELERY_QUEUE": queue,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        # DEBUG stays off (it would keep every SQL query in memory); the key signs nothing.
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-judge-throughput-not-a-secret"),
    }
    if broker_url.startswith("filesystem://"):
        # The embedded broker keeps its folders under VAR_DIR: give the benchmark its own.
        var_dir = os.environ.get("VAR_DIR") or str(Path(database_url.split("///", 1)[-1]).parent)
        env["VAR_DIR"] = var_dir
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from config.celery import ensure_filesystem_broker_folders

    ensure_filesystem_broker_folders()
    call_command("migrate", verbosity=0, interactive=False)
    call_command("flush", verbosity=0, interactive=False)
    return env


@dataclass(frozen=True)
class AppResult:
    judgments: int
    expected: int
    wall_s: float  # run.started_at → the last verdict's created_at
    finished_s: float | None  # run.started_at → run.finished_at
    outcomes: dict[str, int]
    status: str
    worker_cpu_s: float | None = None  # CPU the worker process used during the run
    machine_busy: float | None = None  # share of all cores busy (every process) meanwhile


def seed_answers(workload, *, name: str, context=lambda a: []):
    """A dataset `name` with one query, a submitted checklist of the workload's criteria and
    its answers, one per system (`context(a)`: answer a's retrieved passages). Returns
    (dataset, checklist, answers); shared by the judge benchmarks."""
    from django.contrib.auth import get_user_model

    from annotation.models import Checklist, Criterion, Dataset, Query
    from evaluation.answers.models import Answer, System

    author = get_user_model().objects.create(username="bench-author")
    dataset = Dataset.objects.create(name=name)
    query = Query.objects.create(dataset=dataset, text=QUERY, query_date=QUERY_DATE)
    checklist = Checklist.objects.create(
        query=query, author=author, status=Checklist.Status.SUBMITTED
    )
    Criterion.objects.bulk_create(
        Criterion(checklist=checklist, position=c + 1, text=workload.criterion_text(c))
        for c in range(workload.criteria)
    )
    systems = System.objects.bulk_create(
        System(name=f"System {a}") for a in range(workload.answers)
    )
    answers = Answer.objects.bulk_create(
        Answer(system=system, query=query, text=workload.answer_text(a), context=context(a))
        for a, system in enumerate(systems)
    )
    return dataset, checklist, answers


def build(workload: Workload, *, base_url: str, rpm: int | None, tpm: int | None):
    """One query, a submitted checklist of M criteria, N answers (one per system), and a
    panel of K judges on the loopback server. Returns (dataset, panel)."""
    from evaluation.checks.models import CriterionCheck
    from evaluation.judges.models import Judge, Panel, PanelMember

    dataset, checklist, _ = seed_answers(
        workload, name="Judge throughput benchmark", context=workload.context
    )
    if workload.context_kb:
        CriterionCheck.objects.bulk_create(
            CriterionCheck(criterion=c, evidence="context") for c in checklist.criteria.all()
        )
    panel = Panel.objects.create(name=f"Panel of {workload.judges}")
    for j in range(workload.judges):
        judge = Judge.objects.create(
            name=f"Judge {j}", base_url=base_url, model=workload.judge_model(j),
            rpm_limit=rpm, tpm_limit=tpm, timeout=30, context_tokens=BUDGET_TOKENS,
        )  # fmt: skip
        PanelMember.objects.create(panel=panel, judge=judge, samples=1)
    _reset_rate_limits(panel)
    return dataset, panel


def _reset_rate_limits(panel) -> None:
    """Buckets are keyed by judge id, and a flushed database reuses ids: start them full."""
    from django.conf import settings

    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return
    import redis

    keys = [f"ratelimit:judge-{m.judge_id}" for m in panel.members.all()]
    with redis.Redis.from_url(url) as connection:
        connection.delete(*keys)


def run(dataset, panel, *, per_task: int, timeout: float, worker) -> AppResult:
    """Start a run as the run page does and wait for its last verdict."""
    from django.db.models import Count, Max

    from bench.judge_throughput.processes import machine_busy_seconds
    from bench.pg_cpu import process_cpu_seconds
    from evaluation.runs import services as runs
    from evaluation.runs.models import Run, Verdict

    cpu_before, machine_before = process_cpu_seconds(worker.pid), machine_busy_seconds()
    run = runs.run_create(dataset=dataset, panel=panel, concurrency=per_task)
    run = runs.run_start(run=run)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and worker.alive:
        run.refresh_from_db()
        if run.status != Run.Status.RUNNING:
            break
        time.sleep(0.2)
    cpu_after, machine_after = process_cpu_seconds(worker.pid), machine_busy_seconds()
    run.refresh_from_db()
    verdicts = Verdict.objects.filter(run=run)
    last = verdicts.aggregate(last=Max("created_at"))["last"]
    outcomes = dict(verdicts.values_list("outcome").annotate(n=Count("pk")))
    count = sum(outcomes.values())
    wall = (last - run.started_at).total_seconds() if last else float("nan")
    finished = (run.finished_at - run.started_at).total_seconds() if run.finished_at else None
    return AppResult(
        judgments=count, expected=run.expected, wall_s=wall, finished_s=finished,
        outcomes=outcomes, status=run.status,
        worker_cpu_s=cpu_after - cpu_before if cpu_before is not None and cpu_after else None,
        machine_busy=_share(machine_before, machine_after),
    )  # fmt: skip


def _share(before, after) -> float | None:
    if not before or not after or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])
