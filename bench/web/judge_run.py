"""`--run-verdicts N`: a real judge run writing about N verdicts while the pages are loaded.

The judge throughput benchmark's helper processes (bench.judge_throughput.processes): the
loopback OpenAI server with a latency, and a Celery worker exactly as in production (threads
pool) on a queue of its own; the run is created and started through evaluation.runs
services, as the run page does, on the dataset's queries whose system answers no run has
judged yet, with a panel of JUDGES judges on the loopback server ("bench.web judge 1..3").

The latency is chosen so that the run takes about as long as the load: the worker keeps C
calls in flight (JUDGE_MAX_IN_FLIGHT), so N verdicts at C / L a second take N·L / C seconds.
This process must have CELERY_QUEUE set to the worker's queue before Django is set up (the
run's tasks go to the default queue).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

CONCURRENCY = 32  # C: calls in flight in the worker
JUDGES = 3  # as the seeded panel
NAME = "bench.web: judge run during the load"
PANEL = "bench.web panel"
SHARE_OF_LOAD = 0.9  # aim a little short of --run-time: the worker also has its own work


@dataclass
class RunSummary:
    run: int
    queries: int
    expected: int
    latency_s: float
    concurrency: int
    threads: int
    samples: list[tuple[float, int, str]] = field(default_factory=list)  # (s, verdicts, status)
    load: tuple[float, float] | None = None  # monotonic start and end of the load
    status: str = ""
    verdicts: int = 0
    finished_s: float | None = None  # run.started_at → run.finished_at, when done
    server: dict = field(default_factory=dict)
    deleted: bool = False

    def during_load(self) -> tuple[int, float]:
        """Verdicts written during the load and their rate (per second)."""
        if self.load is None or not self.samples:
            return 0, 0.0
        start, end = self.load
        ordered = sorted(self.samples)  # two threads append

        def at(moment: float) -> int:
            before = [n for t, n, _ in ordered if t <= moment]
            return before[-1] if before else 0

        written = at(end) - at(start)
        return written, written / (end - start) if end > start else 0.0

    def as_dict(self) -> dict:
        written, rate = self.during_load()
        return {
            "run": self.run, "queries": self.queries, "expected": self.expected,
            "latency_s": self.latency_s, "concurrency": self.concurrency,
            "threads": self.threads, "status": self.status, "verdicts": self.verdicts,
            "finished": self.status.startswith("done"), "finished_s": self.finished_s,
            "verdicts_during_load": written, "verdicts_per_s_during_load": rate,
            "loopback": self.server, "deleted": self.deleted,
        }  # fmt: skip


def unjudged_queries(dataset, verdicts: int, judges: int) -> tuple[list, int]:
    """The dataset's first queries (by id) whose system answers no run has judged, enough
    for about `verdicts` verdicts; and the verdicts they make (answers × graded criteria ×
    judges)."""
    from django.db.models import Exists, OuterRef

    from annotation.models import Query
    from evaluation.answers.models import Answer
    from evaluation.runs.models import Verdict
    from evaluation.runs.scope import scored_criteria

    judged = Verdict.objects.filter(
        answer__query=OuterRef("pk"), answer__system__is_reference=False
    )
    candidates = (
        Query.objects.filter(dataset=dataset).annotate(judged=Exists(judged)).filter(judged=False)
    )
    chosen, expected = [], 0
    for query in candidates.order_by("pk").iterator(chunk_size=200):
        criteria = scored_criteria().filter(checklist__query=query).count()
        answers = Answer.objects.filter(query=query, system__is_reference=False).count()
        if not criteria or not answers:
            continue
        chosen.append(query)
        expected += answers * criteria * judges
        if expected >= verdicts:
            break
    return chosen, expected


IDLE = "idle"


def priority(text: str) -> int | str:
    """A `--run-nice` value: a nice value, or "idle" for Linux's SCHED_IDLE."""
    return IDLE if text == IDLE else int(text)


def lower_priority(pid: int, nice: int | str) -> None:
    """Run every thread of the process at `nice` (Linux keeps a nice value per thread, and
    the worker's pool threads exist once it is ready; threads made later inherit it).
    "idle" puts them under SCHED_IDLE instead: they get only the CPU nothing else wants."""
    if not nice:
        return
    for task in os.listdir(f"/proc/{pid}/task"):
        if nice == IDLE:
            os.sched_setscheduler(int(task), os.SCHED_IDLE, os.sched_param(0))
        else:
            os.setpriority(os.PRIO_PROCESS, int(task), nice)


def _panel(base_url: str):
    """The bench's panel of JUDGES judges on the loopback server (made once, then pointed
    at this run's server)."""
    from evaluation.judges.models import Judge, Panel, PanelMember

    panel, _ = Panel.objects.get_or_create(name=PANEL)
    for j in range(JUDGES):
        judge, _ = Judge.objects.update_or_create(
            name=f"bench.web judge {j + 1}",
            defaults={"base_url": base_url, "model": f"judge-model-{j}", "timeout": 30,
                      "rpm_limit": None, "tpm_limit": None, "api_key_env": ""},
        )  # fmt: skip
        PanelMember.objects.get_or_create(panel=panel, judge=judge, defaults={"samples": 1})
    return panel


class JudgeRun:
    """Start with `start()`, mark the load with `load_started()` / `load_ended()`, end with
    `stop()` (the run is cancelled if it is still going, the worker and server stopped)."""

    def __init__(
        self, *, dataset_id: int, verdicts: int, seconds: float, queue: str, nice: int | str = 0
    ) -> None:
        self.dataset_id, self.verdicts, self.seconds, self.queue, self.nice = (
            dataset_id, verdicts, seconds, queue, nice,
        )  # fmt: skip
        self.server = self.worker = self.run = self.summary = None
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._t0 = time.monotonic()

    def start(self) -> RunSummary:
        from annotation.models import Dataset
        from bench.judge_throughput import processes
        from bench.judge_throughput.cli import map_concurrency
        from evaluation.runs import services as runs
        from evaluation.runs.scope import scored_criteria

        dataset = Dataset.objects.get(pk=self.dataset_id)
        queries, expected = unjudged_queries(dataset, self.verdicts, JUDGES)
        if not queries:
            raise SystemExit("--run-verdicts: every query's answers are judged already.")
        widest = max(scored_criteria().filter(checklist__query=q).count() for q in queries)
        mapping = map_concurrency(
            CONCURRENCY, widest, threads=None, per_task=None, gate=True
        )  # a task is one answer × one judge: all the query's criteria
        latency = max(0.02, CONCURRENCY * SHARE_OF_LOAD * self.seconds / expected)
        self.server = processes.LoopbackProcess(latency=latency).start()
        # The loopback server stands in for a judge provider, which runs on other machines.
        lower_priority(self.server.process.pid, self.nice)
        try:
            panel = _panel(self.server.base_url)
            env = {
                "DATABASE_URL": os.environ["DATABASE_URL"],
                "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", ""),
                "CELERY_QUEUE": self.queue, "DJANGO_SETTINGS_MODULE": "config.settings",
                "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-web-not-secret"),
                "DEBUG": "0", "JUDGE_MAX_IN_FLIGHT": str(mapping.gate),
            }  # fmt: skip
            self.worker = processes.WorkerProcess(
                queue=self.queue, threads=mapping.threads, env=env
            ).start()
            lower_priority(self.worker.pid, self.nice)
            run = runs.run_create(
                dataset=dataset, panel=panel, name=NAME, queries=queries,
                concurrency=mapping.per_task,
            )  # fmt: skip
            self.run = runs.run_start(run=run)
        except BaseException:
            self._stop_processes()
            raise
        self.summary = RunSummary(
            run=self.run.pk, queries=len(queries), expected=self.run.expected,
            latency_s=latency, concurrency=CONCURRENCY, threads=mapping.threads,
        )  # fmt: skip
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self.summary

    def _sample(self) -> None:
        from django.db import connection

        try:
            while not self._stop.is_set():
                self._count_now()
                self._stop.wait(1.0)
        finally:
            connection.close()

    def _count_now(self) -> float:
        from evaluation.runs.models import Run, Verdict

        now = time.monotonic()
        status = Run.objects.filter(pk=self.run.pk).values_list("status", flat=True)[0]
        self.summary.samples.append((now, Verdict.objects.filter(run=self.run.pk).count(), status))
        return now

    def load_started(self) -> None:
        now = self._count_now()
        self.summary.load = (now, now)

    def load_ended(self) -> None:
        if self.summary.load:
            self.summary.load = (self.summary.load[0], self._count_now())

    def stop(self) -> RunSummary:
        from evaluation.runs import services as runs
        from evaluation.runs.models import Run, Verdict

        self._stop.set()
        if self._sampler is not None:
            self._sampler.join(timeout=10)
        run = Run.objects.get(pk=self.run.pk)
        if run.status in (Run.Status.PENDING, Run.Status.RUNNING):
            run = runs.run_cancel(run=run)
        self._stop_processes()
        run.refresh_from_db()
        self.summary.status = run.status
        self.summary.verdicts = Verdict.objects.filter(run=run).count()
        if run.status.startswith("done") and run.finished_at and run.started_at:
            self.summary.finished_s = (run.finished_at - run.started_at).total_seconds()
        return self.summary

    def _stop_processes(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        if self.server is not None:
            stats = self.server.stop()
            if self.summary is not None:
                self.summary.server = stats
        self._purge_queue()

    def _purge_queue(self) -> None:
        """Messages left on the worker's queue (a cancelled run's) would wait there for
        ever: the queue, and its bindings, are this benchmark's alone."""
        from django.conf import settings

        url = settings.CELERY_BROKER_URL
        if url.startswith(("redis://", "rediss://")):
            import redis

            with redis.Redis.from_url(url) as connection:
                connection.delete(
                    self.queue,
                    f"_kombu.binding.{self.queue}",
                    f"_kombu.binding_permanent.{self.queue}",
                )

    def delete(self) -> None:
        """Remove the bench's run (its verdicts and tasks go with it), so that the dataset's
        latest finished run, which the agreement and run pages choose, is the seeded one
        again for the next benchmark."""
        from django.db import transaction

        from evaluation.runs.models import Run

        with transaction.atomic():
            Run.objects.filter(pk=self.run.pk).delete()
        self.summary.deleted = True
