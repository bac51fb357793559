"""The task body: one judge's votes, and grades, on one answer of a run.

It finds the votes still owed (no verdict row yet), reuses cached verdicts, calls the judge
for the rest concurrently and upserts the results; a redelivered, repeated or resumed task
therefore only fills gaps and never doubles a verdict (the unique constraint on Verdict
backs this up). The writes after the judge's calls wait out a database restart
(evaluation.transient.retrying) instead of losing what the calls returned. When the work
raises, `record_failure` writes an error verdict, naming
the error, for every vote the task still owed, so the run can end and "retry failed" can
redo them. Claiming the task and finishing it are evaluation.runs.lifecycle's.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Criterion
from evaluation import transient
from evaluation.checks.deterministic import offline_verdict
from evaluation.judging import client, engine, graded, prompts
from evaluation.models import Answer, GradedScore, Judge, JudgeCall, Run, Verdict
from evaluation.runs import grading, scope, snapshot
from evaluation.runs.calls import (
    Reuse,
    cached_or_made,
    call_controls,
    call_record,
    endpoint_for,
    judge_params,
    text_of,
)
from evaluation.runs.snapshot import MemberSnapshot

# Earlier decided verdicts with the same inputs are reused: an unparseable output or an
# error is worth asking again.
REUSED = Reuse(
    Verdict,
    (Verdict.Outcome.PASS, Verdict.Outcome.FAIL),
    ("outcome", "failure_kind", "rationale", "raw_output"),
)
UPSERT_FIELDS = ["outcome", "failure_kind", "rationale", *JudgeCall.RECORD_FIELDS, "judge_params"]
TASK_FAILED = "task_failed"  # error_kind of the votes a failed task owed


class ExternalJudge(Exception):
    """An external judge (imported verdicts) is never called."""


@dataclass(frozen=True)
class Owed:
    """What one judge still owes one answer in a run."""

    answer: Answer
    judge: Judge
    member: MemberSnapshot
    votes: list[tuple[Criterion, int]]  # (criterion, sample) without a verdict yet


def owed(run: Run, answer_id: int, judge_id: int) -> Owed | None:
    """None when the answer or the judge is gone, or the judge is not in the run's panel."""
    member = snapshot.of(run).member(judge_id)
    judge = Judge.objects.filter(pk=judge_id).first()
    answer = Answer.objects.select_related("query").filter(pk=answer_id).first()
    if member is None or judge is None or answer is None:
        return None
    criteria = scope.criteria_of([answer.query_id]).get(answer.query_id, [])
    done = set(
        Verdict.objects.filter(run=run, answer=answer, judge=judge).values_list(
            "criterion_id", "sample"
        )
    )
    votes = [
        (criterion, sample)
        for criterion in criteria
        for sample in range(member.samples)
        if (criterion.pk, sample) not in done
    ]
    return Owed(answer, judge, member, votes)


def judge_answer(*, run: Run, answer_id: int, judge_id: int) -> int:
    """Fill in this judge's votes and grades on this answer; returns the verdicts written."""
    work = owed(run, answer_id, judge_id)
    if work is None:
        return 0
    if work.judge.kind == Judge.Kind.EXTERNAL:
        # The start refuses such panels; a judge switched to external mid-run lands here.
        raise ExternalJudge(f"Judge “{work.judge.name}” is external (imported verdicts).")
    grading.grade_answer(run=run, judge=work.judge, member=work.member, answer=work.answer)
    if not work.votes:
        return 0
    if work.judge.kind == Judge.Kind.NO_LLM:
        results = [_offline(c, s, work.answer) for c, s in work.votes]
    else:
        results = _judge_with_llm(run, work)
    # The calls are made and paid for: their results wait out a database restart here
    # rather than be lost with the connection.
    transient.retrying(lambda: upsert(run, work, results))
    return len(results)


def record_failure(*, run: Run, answer_id: int, judge_id: int, error: str) -> int:
    """Error verdicts (and grades) for what a failed task still owed, naming the error.
    Votes on criteria deleted meanwhile are skipped: there is nothing to attach them to."""
    work = owed(run, answer_id, judge_id)
    if work is None:
        return 0
    alive = set(
        Criterion.objects.filter(pk__in={c.pk for c, _ in work.votes}).values_list("pk", flat=True)
    )
    results = [
        engine.CallResult(c.pk, s, "", "error", error_kind=TASK_FAILED, error=error, attempts=0)
        for c, s in work.votes
        if c.pk in alive
    ]
    upsert(run, work, results)
    grades = [
        graded.GradeResult(
            s, "", GradedScore.Outcome.ERROR, error_kind=TASK_FAILED, error=error, attempts=0
        )
        for s in grading.pending_grades(run, work.member, work.answer)
    ]
    params = {s: judge_params(work.judge, work.member, s) for s in range(work.member.samples)}
    grading.upsert(run, work.answer, work.judge, grades, params)
    return len(results)


def _offline(criterion: Criterion, sample: int, answer: Answer) -> engine.CallResult:
    result = offline_verdict(criterion=criterion.text, kind=criterion.kind, answer=answer.text)
    return engine.CallResult(
        criterion.pk, sample, "", result.outcome,
        failure_kind="missing" if result.outcome == "fail" else "",
        rationale=result.rationale, attempts=0,
    )  # fmt: skip


def _judge_with_llm(run: Run, work: Owed) -> list[engine.CallResult]:
    judge, member, answer, query = work.judge, work.member, work.answer, work.answer.query
    calls = []
    for criterion, sample in work.votes:
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

    def judge_misses(misses: list[engine.Call]) -> list[engine.CallResult]:
        controls = call_controls(judge)
        return client.run_sync(
            engine.judge_all(
                misses, concurrency=run.concurrency, limiter=controls.limiter,
                policy=controls.policy, gate=controls.gate, circuit=controls.circuit,
            )
        )  # fmt: skip

    return cached_or_made(calls, REUSED, judge_misses)


def upsert(run: Run, work: Owed, results: list[engine.CallResult]) -> None:
    if not results:
        return
    params = {s: judge_params(work.judge, work.member, s) for s in range(work.member.samples)}
    verdicts = [
        Verdict(
            run=run,
            answer=work.answer,
            judge=work.judge,
            criterion_id=r.criterion_id,
            sample=r.sample,
            outcome=r.outcome,
            failure_kind=r.failure_kind,
            rationale=text_of(r.rationale),
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
