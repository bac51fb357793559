"""Writes of runs: create, start, cancel, resume, retry failed. Each is one transaction;
tasks are queued by name once it commits (evaluation.runs.queue).

States: pending → running → done | done with errors | cancelled | failed. A running run
ends by itself when its last task finishes (lifecycle.end_if_complete). Resume continues a
cancelled or failed run; "retry failed" redoes the calls that ended in error of an ended
run. Both bump the run's attempt, so that no delivery queued before can finish the new one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from annotation.models import Dataset, Query
from evaluation.answers.models import System
from evaluation.judges.models import Judge, Panel
from evaluation.runs import baselines, estimate, lifecycle, preflight, queue, scope, snapshot
from evaluation.runs.models import GradedScore, Run, RunItem, RunTask, Verdict
from evaluation.runs.preflight import RunRefused

__all__ = ["RunRefused", "RunStateError"]


class RunStateError(Exception):
    """The run is not in a state that allows this."""


@transaction.atomic
def run_create(
    *,
    dataset: Dataset,
    panel: Panel,
    by=None,
    name: str = "",
    queries: Sequence[Query] = (),
    systems: Sequence[System] = (),
    answer_run_label: str = "",
    concurrency: int = 16,
    kind: Run.Kind = Run.Kind.SYSTEMS,
    scope: Run.Scope = Run.Scope.ALL,
    baseline: Run | None = None,
    canary_for: Run | None = None,
    stability_for: Run | None = None,
    items: Sequence[tuple[int, int]] = (),
    snapshot_of: dict | None = None,
) -> Run:
    """A trial (scope "labelled") grades only the labelled items and is compared with
    `baseline`, by default the dataset's latest finished run (baselines.default_baseline).
    A judge canary (`canary_for`: the run whose judges it checks) grades them too, past the
    cache, and is compared with the previous canary instead (evaluation.agreement.canary),
    or grades a sample of them (scope "listed", its `items`). A stability pass
    (`stability_for`, evaluation.runs.stability_pass) grades the `items` it sampled with the
    panel it was given (`snapshot_of`), which its start keeps."""
    foreign = [q.pk for q in queries if q.dataset_id != dataset.pk]
    if foreign:
        raise ValueError(f"Queries {foreign} are not in dataset {dataset.pk}.")
    if scope == Run.Scope.LABELLED and kind != Run.Kind.SYSTEMS:
        raise RunRefused(["Only a run of system answers can be a trial."], field="scope")
    if baseline is not None and (problem := baselines.baseline_problem(dataset, baseline)):
        raise RunRefused([problem], field="baseline")
    if canary_for is not None and scope not in (Run.Scope.LABELLED, Run.Scope.LISTED):
        raise RunRefused(["A judge canary grades the labelled items only."], field="scope")
    if (scope == Run.Scope.LISTED) != bool(items):
        raise RunRefused(["A run of listed items needs its items, and only it."], field="scope")
    if baseline is None and scope == Run.Scope.LABELLED and canary_for is None:
        baseline = baselines.default_baseline(dataset)
    run = Run.objects.create(
        dataset=dataset, panel=panel, created_by=by, name=name, kind=kind,
        answer_run_label=answer_run_label, concurrency=concurrency, scope=scope,
        baseline=baseline, canary_for=canary_for, stability_for=stability_for,
        snapshot=snapshot_of or {},
    )  # fmt: skip
    run.queries.set(queries)
    run.systems.set(systems)
    RunItem.objects.bulk_create(
        (RunItem(run=run, answer_id=a, criterion_id=c) for a, c in items), batch_size=1000
    )
    return run


@transaction.atomic
def run_create_and_start(**fields: object) -> Run:
    """Both or neither: a run refused at start is not kept."""
    return run_start(run=run_create(**fields))


@dataclass(frozen=True)
class Plan:
    """The (answer × judge) tasks of a run and the verdicts they will write."""

    answers: list[int]
    judges: list[int]
    expected: int

    @property
    def tasks(self) -> list[tuple[int, int]]:
        return [(a, j) for a in self.answers for j in self.judges]


def _plan(run: Run) -> Plan:
    selection = scope.Selection.of(run)
    panel = snapshot.of(run)
    items = scope.items_of(selection)
    if items is not None:  # a trial's labelled items, or the items listed for the run
        return Plan(
            answers=sorted({a for a, _ in items}),
            judges=[m.judge_id for m in panel.members],
            expected=len(items) * panel.samples,
        )
    answers = list(scope.answers_of(selection).values_list("pk", "query_id"))
    per_query = dict(
        scope.scored_criteria()
        .filter(checklist__query__in={q for _, q in answers})
        .values_list("checklist__query")
        .annotate(n=Count("pk"))
    )
    criteria = sum(per_query.get(q, 0) for _, q in answers)
    return Plan(
        answers=[a for a, _ in answers],
        judges=[m.judge_id for m in panel.members],
        expected=criteria * panel.samples,
    )


@transaction.atomic
def run_start(*, run: Run) -> Run:
    """Freeze the panel into the run, check it can work, record its tasks and queue them
    (once the transaction commits). Raises RunRefused (nothing kept then, when called
    through run_create_and_start) or RunStateError."""
    run = Run.objects.select_for_update().select_related("dataset", "panel").get(pk=run.pk)
    if run.status != Run.Status.PENDING:
        raise RunStateError(f"The run is already {run.get_status_display().lower()}.")
    if run.kind == Run.Kind.IMPORTED:
        raise RunStateError("An imported run holds verdicts made elsewhere: it is never run.")
    if run.stability_for_id is None:
        run.snapshot = snapshot.take(run.panel, run.dataset_id)
    # else a stability pass: the one judge and its k calls it was created with
    preflight.check_judges(snapshot.of(run))
    plan = _plan(run)
    preflight.check_work(run, answers=len(plan.answers), expected=plan.expected)
    now = timezone.now()
    run.expected, run.started_at, run.finished_at = plan.expected, now, None
    run.status = Run.Status.RUNNING
    # What the run was expected to cost, kept beside what it does cost (the run page).
    run.estimate = estimate.run_estimate(scope.Selection.of(run), snapshot.of(run)).as_json()
    run.save(
        update_fields=["snapshot", "expected", "status", "started_at", "finished_at", "estimate"]
    )
    RunTask.objects.bulk_create(
        (RunTask(run=run, answer_id=a, judge_id=j, queued_at=now) for a, j in plan.tasks),
        batch_size=1000,
    )
    queue.send_on_commit(run.pk, plan.tasks, run.attempt, on_error=lifecycle.fail)
    return run


@transaction.atomic
def run_cancel(*, run: Run) -> Run:
    """Deliveries not yet started skip their work; calls in flight finish and are kept."""
    run = Run.objects.select_for_update().get(pk=run.pk)
    if run.status not in (Run.Status.PENDING, Run.Status.RUNNING):
        raise RunStateError(f"The run is {run.get_status_display().lower()}: nothing to cancel.")
    run.status, run.finished_at = Run.Status.CANCELLED, timezone.now()
    run.save(update_fields=["status", "finished_at"])
    return run


@transaction.atomic
def run_resume(*, run: Run) -> Run:
    """Continue a cancelled or failed run: every unfinished task is queued again for a new
    attempt, and each fills only what is missing.

    On a running run it requeues, at once, the tasks that no live worker holds (what the
    sweep does by itself within RUNS_LEASE_TIMEOUT): safe to press at any time."""
    run = Run.objects.select_for_update().select_related("dataset", "panel").get(pk=run.pk)
    _check_resumable(run)
    if run.status == Run.Status.RUNNING:
        requeue_unheld(run)
        return run
    if run.status in Run.FINISHED:
        raise RunStateError(
            "The run has ended: nothing is missing."
            + (" Use “retry failed” to redo its failed calls." if run.reason else "")
        )
    preflight.check_judges(snapshot.of(run))
    plan = _plan(run)
    RunTask.objects.bulk_create(  # answers added since the start, or tasks never recorded
        (RunTask(run=run, answer_id=a, judge_id=j) for a, j in plan.tasks),
        batch_size=1000,
        ignore_conflicts=True,
    )
    return _next_attempt(run, expected=plan.expected, redo=Q())


@transaction.atomic
def run_retry_failed(*, run: Run) -> Run:
    """Redo the calls of an ended run that ended in error (verdicts and grades, and tasks
    that failed): they are deleted and their tasks queued for a new attempt. Unparseable
    outputs stay: they are the judge's answer. Imported verdicts are never touched."""
    run = Run.objects.select_for_update().select_related("dataset", "panel").get(pk=run.pk)
    _check_resumable(run)
    if run.status in (Run.Status.PENDING, Run.Status.RUNNING):
        raise RunStateError("The run is still running: retry its failed calls once it ends.")
    failed_verdicts = Verdict.objects.filter(run=run, outcome=Verdict.Outcome.ERROR).exclude(
        judge__kind=Judge.Kind.EXTERNAL
    )
    failed_grades = GradedScore.objects.filter(run=run, outcome=GradedScore.Outcome.ERROR)
    pair = {"answer": OuterRef("answer"), "judge": OuterRef("judge")}
    redo = (
        Exists(failed_verdicts.filter(**pair)) | Exists(failed_grades.filter(**pair)) | ~Q(error="")
    )
    if not RunTask.objects.filter(run=run).filter(redo).exists():
        raise RunStateError("The run has no failed calls to retry.")
    preflight.check_judges(snapshot.of(run))
    run = _next_attempt(run, expected=run.expected, redo=redo)
    failed_verdicts.delete()
    failed_grades.delete()
    return run


def _check_resumable(run: Run) -> None:
    if run.kind == Run.Kind.IMPORTED:
        raise RunStateError("An imported run holds verdicts made elsewhere: it is never run.")


def _next_attempt(run: Run, *, expected: int, redo: Q | Exists) -> Run:
    """Running again under a new attempt: the tasks matching `redo` are reopened, and every
    unfinished task is queued for the new attempt."""
    run.attempt += 1
    run.status, run.reason, run.finished_at = Run.Status.RUNNING, "", None
    run.expected = expected
    run.started_at = run.started_at or timezone.now()
    run.save(update_fields=["attempt", "status", "reason", "finished_at", "expected", "started_at"])
    now = timezone.now()
    tasks = RunTask.objects.filter(run=run)
    if redo:
        tasks.filter(redo).update(done_at=None, error="")
    unfinished = tasks.filter(done_at__isnull=True)
    unfinished.update(attempt=run.attempt, queued_at=now)
    work = list(unfinished.values_list("answer_id", "judge_id"))
    if work:
        queue.send_on_commit(run.pk, work, run.attempt, on_error=lifecycle.fail)
    else:  # nothing was missing after all: end it now, as its last task would have
        transaction.on_commit(lambda: lifecycle.end_if_complete(run.pk))
    return run


def requeue_unheld(run: Run) -> int:
    """Queue again the unfinished tasks of a running run that no live delivery holds.
    A task whose message was still queued gets a second one; the claim lets only one
    delivery work on it, so nothing is called twice."""
    now = timezone.now()
    free = RunTask.objects.filter(run=run, done_at__isnull=True).filter(
        Q(lease="") | Q(heartbeat_at__lt=lifecycle.stale_before(now))
    )
    work = list(free.values_list("answer_id", "judge_id"))
    free.update(queued_at=now)
    if work:
        queue.send_on_commit(run.pk, work, run.attempt, on_error=lifecycle.fail)
    return len(work)


def wait_for(run: Run, *, timeout: float, poll: float = 0.5) -> Run:
    """Block until the run ends or the timeout passes (for commands and tests)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.ended:
            return run
        time.sleep(poll)
    return run
