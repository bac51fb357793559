"""Runs: create, start, judge one (answer × judge), cancel, resume, retry failed, progress.

A run's work is one Celery task per (answer × judge). A task finds the votes it still owes
(no verdict row yet), reuses cached verdicts, calls the judge for the rest concurrently
and upserts the results; so a redelivered, repeated or resumed task only fills gaps and
never doubles a verdict (the unique constraint on Verdict backs this up).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation import grading, tasks
from evaluation.checks.deterministic import offline_verdict
from evaluation.judging import client, engine, graded, prompts
from evaluation.judging.ratelimit import RateLimiter, limiter_for
from evaluation.models import (
    Answer,
    Judge,
    JudgeCall,
    Panel,
    PanelMember,
    Run,
    RunTask,
    System,
    Verdict,
)

DECIDED = (Verdict.Outcome.PASS, Verdict.Outcome.FAIL)
UPSERT_FIELDS = ["outcome", "failure_kind", "rationale", *JudgeCall.RECORD_FIELDS, "judge_params"]


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
) -> Run:
    foreign = [q.pk for q in queries if q.dataset_id != dataset.pk]
    if foreign:
        raise ValueError(f"Queries {foreign} are not in dataset {dataset.pk}.")
    run = Run.objects.create(
        dataset=dataset, panel=panel, created_by=by, name=name,
        answer_run_label=answer_run_label, concurrency=concurrency,
    )  # fmt: skip
    run.queries.set(queries)
    run.systems.set(systems)
    return run


@transaction.atomic
def run_create_and_start(**fields: object) -> Run:
    """Both or neither: a run that cannot start (a panel without judges) is not kept."""
    return run_start(run=run_create(**fields))


def run_answers(run: Run) -> QuerySet[Answer]:
    answers = Answer.objects.filter(query__dataset=run.dataset_id)
    if run.kind == Run.Kind.CROSS_EVALUATION:
        answers = answers.filter(checklist__isnull=False)
    else:  # perfect answers are never graded as a system's
        answers = answers.filter(system__is_reference=False)
    query_ids = list(run.queries.values_list("pk", flat=True))
    if query_ids:
        answers = answers.filter(query__in=query_ids)
    system_ids = list(run.systems.values_list("pk", flat=True))
    if system_ids:
        answers = answers.filter(system__in=system_ids)
    if run.answer_run_label:
        answers = answers.filter(run_label=run.answer_run_label)
    return answers.order_by("pk")


def criteria_of(query_ids: Sequence[int]) -> dict[int, list[Criterion]]:
    """The scored criteria of each query: those of its submitted checklists."""
    criteria = Criterion.objects.filter(
        checklist__query__in=query_ids,
        checklist__status=Checklist.Status.SUBMITTED,
        scoring_enabled=True,
    ).order_by("checklist_id", "position")
    by_query: dict[int, list[Criterion]] = defaultdict(list)
    for criterion in criteria.select_related("checklist"):
        by_query[criterion.checklist.query_id].append(criterion)
    return by_query


def _members(run: Run) -> list[PanelMember]:
    return list(run.panel.members.select_related("judge").order_by("judge__name"))


@transaction.atomic
def run_start(*, run: Run) -> Run:
    """Count the votes the run will hold and queue its tasks (once the transaction commits)."""
    run = Run.objects.select_for_update().get(pk=run.pk)
    if run.status in (Run.Status.RUNNING, Run.Status.DONE):
        raise RunStateError(f"The run is already {run.get_status_display().lower()}.")
    members = _members(run)
    if not members:
        raise RunStateError("The panel has no judges.")
    answers = list(run_answers(run).values_list("pk", "query_id"))
    criteria = criteria_of(sorted({q for _, q in answers}))
    samples = sum(m.samples for m in members)
    run.expected = sum(len(criteria.get(q, ())) for _, q in answers) * samples
    run.status = Run.Status.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.finished_at = None
    run.save(update_fields=["expected", "status", "started_at", "finished_at"])
    # Every task starts unfinished, on a resume too: the run is done when all are.
    run.tasks.all().delete()
    RunTask.objects.bulk_create(
        (RunTask(run=run, answer_id=a, judge_id=m.judge_id) for a, _ in answers for m in members),
        batch_size=1000,
    )
    _enqueue(run, [a for a, _ in answers], members)
    return run


def _enqueue(run: Run, answer_ids: Sequence[int], members: Sequence[PanelMember]) -> None:
    queue = settings.RUNS_QUEUE  # None: the default queue
    work = [(run.pk, a, m.judge_id) for a in answer_ids for m in members]

    def send() -> None:
        for args in work:
            tasks.judge_answer.apply_async(args=args, queue=queue)

    transaction.on_commit(send)


@transaction.atomic
def run_cancel(*, run: Run) -> Run:
    """Tasks not yet started skip their work; verdicts already written stay."""
    Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
        status=Run.Status.CANCELLED, finished_at=timezone.now()
    )
    run.refresh_from_db()
    return run


@transaction.atomic
def run_resume(*, run: Run, retry_failed: bool = False) -> Run:
    """Queue the run's tasks again; each only fills what is missing. With retry_failed, the
    calls that ended in error are forgotten first so that they are made again."""
    # Resuming a running run is allowed: after a lost worker on a transport that does not
    # redeliver (the embedded filesystem one), it is how the missing work gets queued again.
    run = Run.objects.select_for_update().get(pk=run.pk)
    if retry_failed:
        run.verdicts.filter(outcome=Verdict.Outcome.ERROR).delete()
        grading.forget_failed(run)
    run.status = Run.Status.PENDING
    run.save(update_fields=["status"])
    return run_start(run=run)


def _finish_task(run_id: int, answer_id: int, judge_id: int) -> None:
    """Mark the task finished; the last one to finish marks the run done.

    Runs started before tasks were recorded have none: they finish when their verdicts
    reach the count made at start, as they used to."""
    RunTask.objects.filter(run=run_id, answer=answer_id, judge=judge_id).update(
        done_at=timezone.now()
    )
    run = Run.objects.select_related("panel").get(pk=run_id)
    if run.status != Run.Status.RUNNING:
        return
    if run.tasks.exists():
        complete = not run.tasks.filter(done_at__isnull=True).exists()
    else:
        complete = run.verdicts.count() >= run.expected and grading.graded_complete(run)
    if complete:
        # What the run holds now: criteria disabled or added mid-run change it.
        Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
            status=Run.Status.DONE, finished_at=timezone.now(), expected=run.verdicts.count()
        )


def endpoint_for(judge: Judge, member: PanelMember, sample: int) -> client.Endpoint:
    return client.Endpoint(
        base_url=judge.base_url,
        model=judge.model,
        api_key_env=judge.api_key_env,
        temperature=member.temperature(sample),
        max_tokens=judge.max_tokens,
        seed=judge.seed,
        timeout=judge.timeout,
    )


def judge_answer(*, run_id: int, answer_id: int, judge_id: int) -> int:
    """Fill in this judge's votes on this answer; returns how many verdicts were written."""
    run = Run.objects.select_related("panel").get(pk=run_id)
    if run.status != Run.Status.RUNNING:
        return 0
    member = PanelMember.objects.select_related("judge").get(panel=run.panel, judge=judge_id)
    judge = member.judge
    answer = Answer.objects.select_related("query").get(pk=answer_id)
    query = answer.query
    criteria = criteria_of([query.pk]).get(query.pk, [])
    done = set(
        Verdict.objects.filter(run=run, answer=answer, judge=judge).values_list(
            "criterion_id", "sample"
        )
    )
    pending = [
        (criterion, sample)
        for criterion in criteria
        for sample in range(member.samples)
        if (criterion.pk, sample) not in done
    ]
    grading.grade_answer(run=run, member=member, answer=answer)  # graded panels only
    if not pending:
        _finish_task(run.pk, answer.pk, judge.pk)
        return 0
    if judge.kind == Judge.Kind.NO_LLM:
        results = [_offline(c, s, answer) for c, s in pending]
    else:
        results = _judge_with_llm(run, member, answer, pending)
    params = {s: judge_params(member, s) for s in range(member.samples)}
    _upsert(run, answer, judge, results, params)
    _finish_task(run.pk, answer.pk, judge.pk)
    return len(results)


def judge_params(member: PanelMember, sample: int) -> dict[str, object]:
    """What a vote was made with, copied onto the verdict (the judge may be edited later)."""
    judge = member.judge
    if judge.kind != Judge.Kind.LLM:
        return {"kind": judge.kind}
    return {
        "kind": judge.kind, "base_url": judge.base_url, "model": judge.model,
        "prompt_version": judge.prompt_version, "temperature": member.temperature(sample),
        "max_tokens": judge.max_tokens, "seed": judge.seed,
    }  # fmt: skip


def _offline(criterion: Criterion, sample: int, answer: Answer) -> engine.CallResult:
    result = offline_verdict(criterion=criterion.text, kind=criterion.kind, answer=answer.text)
    return engine.CallResult(
        criterion.pk, sample, "", result.outcome,
        failure_kind="missing" if result.outcome == "fail" else "",
        rationale=result.rationale, attempts=0,
    )  # fmt: skip


def _judge_with_llm(
    run: Run, member: PanelMember, answer: Answer, pending: list[tuple[Criterion, int]]
) -> list[engine.CallResult]:
    judge, query = member.judge, answer.query
    calls = []
    for criterion, sample in pending:
        endpoint = endpoint_for(judge, member, sample)
        key = prompts.cache_key(
            base_url=endpoint.base_url, model=endpoint.model,
            prompt_version=judge.prompt_version, temperature=endpoint.temperature,
            max_tokens=endpoint.max_tokens, seed=endpoint.seed, sample=sample,
            query=query.text, query_date=query.query_date, criterion=criterion.text,
            answer=answer.text,
        )  # fmt: skip
        messages = prompts.messages(
            query=query.text, query_date=query.query_date, answer=answer.text,
            criterion=criterion.text,
        )  # fmt: skip
        calls.append(engine.Call(criterion.pk, sample, key, messages, endpoint))
    cached = _cached_verdicts([c.cache_key for c in calls])
    reused = [
        engine.CallResult(
            c.criterion_id,
            c.sample,
            c.cache_key,
            hit.outcome,
            failure_kind=hit.failure_kind,
            rationale=hit.rationale,
            raw_output=hit.raw_output,
            attempts=0,
            cache_hit=True,
        )
        for c in calls
        if (hit := cached.get(c.cache_key))
    ]
    misses = [c for c in calls if c.cache_key not in cached]
    controls = call_controls(judge)
    fresh = client.run_sync(
        engine.judge_all(
            misses, concurrency=run.concurrency, limiter=controls.limiter,
            policy=controls.policy, gate=controls.gate,
        )
    )  # fmt: skip
    return [*fresh, *reused]


@dataclass(frozen=True)
class CallControls:
    """What every call of a judge in a worker goes through: its shared rate limiter, our
    retry policy and the worker's cap on calls in flight."""

    limiter: RateLimiter
    policy: client.RetryPolicy
    gate: client.InFlightGate | None


def call_controls(judge: Judge) -> CallControls:
    return CallControls(
        limiter=limiter_for(
            key=f"judge-{judge.pk}", rpm=judge.rpm_limit, tpm=judge.tpm_limit,
            redis_url=settings.CELERY_BROKER_URL,
        ),
        policy=client.RetryPolicy(
            attempts=settings.JUDGE_RETRY_ATTEMPTS, base_delay=settings.JUDGE_RETRY_BASE_DELAY
        ),
        gate=client.worker_gate(settings.JUDGE_MAX_IN_FLIGHT),
    )  # fmt: skip


def _cached_verdicts(keys: list[str]) -> dict[str, Verdict]:
    """Earlier decided verdicts made with the same inputs, by cache key (any run).

    Only pass and fail are reused: an unparseable output or an error is worth asking again.
    """
    rows = Verdict.objects.filter(cache_key__in=keys, outcome__in=DECIDED)
    fields = ("cache_key", "outcome", "failure_kind", "rationale", "raw_output")
    return {v.cache_key: v for v in rows.only(*fields)}


def _upsert(
    run: Run,
    answer: Answer,
    judge: Judge,
    results: list[engine.CallResult],
    params: dict[int, dict[str, object]],
) -> None:
    verdicts = [
        Verdict(
            run=run,
            answer=answer,
            judge=judge,
            criterion_id=r.criterion_id,
            sample=r.sample,
            outcome=r.outcome,
            failure_kind=r.failure_kind,
            rationale=r.rationale,
            **call_record(r, params),
        )
        for r in results
    ]
    Verdict.objects.bulk_create(
        verdicts,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["run", "answer", "criterion", "judge", "sample"],
        update_fields=UPSERT_FIELDS,
    )


def call_record(
    result: engine.CallResult | graded.GradeResult, params: dict[int, dict[str, object]]
) -> dict[str, object]:
    """The JudgeCall fields of an engine result, a verdict's or a grade's alike."""
    fields = {name: getattr(result, name) for name in JudgeCall.RECORD_FIELDS}
    return {**fields, "judge_params": params[result.sample]}


@dataclass(frozen=True)
class Progress:
    expected: int
    done: int
    passed: int
    failed: int
    unparseable: int
    errors: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    errors_by_kind: dict[str, int]
    elapsed_s: float
    rate_per_s: float | None
    eta_s: float | None

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.expected if self.expected else 0.0


def run_progress(run: Run) -> Progress:
    """Read from the database, so any web process shows the same figures."""
    totals = Verdict.objects.filter(run=run).aggregate(
        done=Count("pk"),
        passed=Count("pk", filter=Q(outcome=Verdict.Outcome.PASS)),
        failed=Count("pk", filter=Q(outcome=Verdict.Outcome.FAIL)),
        unparseable=Count("pk", filter=Q(outcome=Verdict.Outcome.UNPARSEABLE)),
        errors=Count("pk", filter=Q(outcome=Verdict.Outcome.ERROR)),
        cache_hits=Count("pk", filter=Q(cache_hit=True)),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
    )
    by_kind = dict(
        Verdict.objects.filter(run=run, outcome=Verdict.Outcome.ERROR)
        .values_list("error_kind")
        .annotate(n=Count("pk"))
        .values_list("error_kind", "n")
    )
    end = run.finished_at or timezone.now()
    elapsed = (end - run.started_at).total_seconds() if run.started_at else 0.0
    done = totals["done"]
    rate = done / elapsed if elapsed > 0 and done else None
    remaining = max(run.expected - done, 0)
    eta = remaining / rate if rate and run.status == Run.Status.RUNNING else None
    return Progress(
        expected=run.expected, done=done, passed=totals["passed"], failed=totals["failed"],
        unparseable=totals["unparseable"], errors=totals["errors"],
        cache_hits=totals["cache_hits"], prompt_tokens=totals["prompt_tokens"] or 0,
        completion_tokens=totals["completion_tokens"] or 0, errors_by_kind=by_kind,
        elapsed_s=elapsed, rate_per_s=rate, eta_s=eta,
    )  # fmt: skip


def wait_for(run: Run, *, timeout: float, poll: float = 0.5) -> Run:
    """Block until the run leaves RUNNING or the timeout passes (for commands and tests)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status != Run.Status.RUNNING:
            return run
        time.sleep(poll)
    return run
