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

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from annotation.models import Criterion
from evaluation import transient
from evaluation.answers.models import Answer
from evaluation.checks import trajectory
from evaluation.checks.deterministic import offline_verdict
from evaluation.checks.models import CriterionCheck
from evaluation.judges.models import Judge
from evaluation.judges.tuning import tuning_of
from evaluation.judging import client, engine, graded, plan
from evaluation.judging import conversation as conv
from evaluation.runs import grading, scope, snapshot
from evaluation.runs.calls import (
    USAGE_DETAIL_FIELDS,
    Reuse,
    cached_or_made,
    call_controls,
    call_record,
    judge_params,
    text_of,
)
from evaluation.runs.models import GradedScore, JudgeCall, Run, Verdict
from evaluation.runs.snapshot import MemberSnapshot

# Earlier decided verdicts with the same inputs are reused: an unparseable output or an
# error is worth asking again.
REUSED = Reuse(
    Verdict,
    (Verdict.Outcome.PASS, Verdict.Outcome.FAIL),
    ("outcome", "failure_kind", "rationale", "raw_output"),
)
UPSERT_FIELDS = [
    "outcome", "failure_kind", "rationale", *JudgeCall.RECORD_FIELDS, *USAGE_DETAIL_FIELDS,
    "judge_params",
]  # fmt: skip
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
    criteria = scope.answer_criteria(run, answer)  # a trial's: its labelled items only
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
    checks = checks_of({c.pk for c, _ in work.votes})
    mode = snapshot.of(run).conversation
    # Criteria with a deterministic check are decided by it, whichever judge votes: no
    # call is made (evaluation.checks.trajectory).
    checked = [(c, s) for c, s in work.votes if c.pk in checks and checks[c.pk].kind]
    decided = {(c.pk, s) for c, s in checked}
    rest = replace(work, votes=[(c, s) for c, s in work.votes if (c.pk, s) not in decided])
    provenance: dict[tuple[int, int], dict[str, Any]] = {}
    results = _checked(work.answer, checked, checks, provenance) if checked else []
    if rest.votes and work.judge.kind == Judge.Kind.NO_LLM:
        results += [_offline(c, s, work.answer, mode, provenance) for c, s in rest.votes]
    elif rest.votes:
        results += _judge_with_llm(run, rest, checks, mode, provenance)
    # The calls are made and paid for: their results wait out a database restart here
    # rather than be lost with the connection.
    transient.retrying(lambda: upsert(run, work, results, provenance))
    return len(results)


def checks_of(criterion_ids: set[int]) -> dict[int, CriterionCheck]:
    """The criteria's checks and evidence settings (one query)."""
    return {
        c.criterion_id: c for c in CriterionCheck.objects.filter(criterion_id__in=criterion_ids)
    }


def _checked(
    answer: Answer,
    votes: list[tuple[Criterion, int]],
    checks: dict[int, CriterionCheck],
    provenance: dict[tuple[int, int], dict[str, Any]],
) -> list[engine.CallResult]:
    """The deterministic checks' verdicts: the same for every sample."""

    def reference() -> str:
        references = grading.references_for(answer.query, excluding=answer.pk)
        return references[0] if references else ""

    decided = trajectory.decide(
        [checks[c.pk] for c, _ in votes], text=answer.text, turns=answer.turns,
        metadata=answer.metadata, reference=reference,
    )  # fmt: skip
    results = []
    for (criterion, sample), result in zip(votes, decided, strict=True):
        check = checks[criterion.pk]
        provenance[(criterion.pk, sample)] = {"check": check.as_json(), "score": result.score}
        results.append(
            engine.CallResult(
                criterion.pk,
                sample,
                "",
                result.outcome,
                failure_kind="missing" if result.outcome == "fail" else "",
                rationale=result.rationale,
                attempts=0,
            )
        )
    return results


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


def _offline(
    criterion: Criterion,
    sample: int,
    answer: Answer,
    mode: str = conv.LAST_TURN,
    provenance: dict[tuple[int, int], dict[str, Any]] | None = None,
) -> engine.CallResult:
    turns = conv.graded_turns(mode, answer.text, answer.turns)
    votes = []
    for turn in turns:
        result = offline_verdict(criterion=criterion.text, kind=criterion.kind, answer=turn.content)
        votes.append(
            conv.TurnVote(
                turn.number,
                result.outcome,
                "missing" if result.outcome == "fail" else "",
                result.rationale,
            )
        )
    verdict = conv.aggregate(mode, votes)
    if provenance is not None and len(turns) > 1:
        provenance[(criterion.pk, sample)] = {"conversation": mode, "turns": len(turns)}
    return engine.CallResult(
        criterion.pk, sample, "", verdict.outcome, failure_kind=verdict.failure_kind,
        rationale=verdict.rationale, attempts=0,
    )  # fmt: skip


def _judge_with_llm(
    run: Run,
    work: Owed,
    checks: dict[int, CriterionCheck],
    mode: str,
    provenance: dict[tuple[int, int], dict[str, Any]],
) -> list[engine.CallResult]:
    judge, member, answer, query = work.judge, work.member, work.answer, work.answer.query
    turns = plan.graded_turns(mode, answer.text, answer.turns, budget_tokens=judge.context_tokens)
    in_conversation = any(t.history for t in turns)
    asked = {checks[c.pk].evidence for c, _ in work.votes if c.pk in checks}
    evidence = plan.evidence_for(
        asked - {""}, context=answer.context, budget_tokens=judge.context_tokens,
        reference=lambda: next(iter(grading.references_for(query, excluding=answer.pk)), ""),
    )  # fmt: skip
    # The tuning the run started with (its snapshot's version), whatever the judge has now.
    tuning = tuning_of(judge, member.prompt_version, run.dataset_id)
    # A judge canary or a stability pass asks its judges again: its calls miss the cache
    # (plan.plan_vote); each of a pass's k calls has its own sample index, so its own key.
    fresh = str(run.pk) if run.past_the_cache else ""
    calls = []
    turn_of: dict[str, int] = {}  # a call's cache key -> the turn it grades
    refused: list[engine.CallResult] = []
    for criterion, sample in work.votes:
        mode_of = checks[criterion.pk].evidence if criterion.pk in checks else ""
        given = evidence.get(mode_of) if mode_of else None
        if mode_of and given is None:
            refused.append(_no_reference(criterion, sample))
            continue
        planned = [
            plan.plan_vote(
                judge=judge, tuning=tuning, temperature=member.temperature(sample),
                sample=sample, query=query.text, query_date=query.query_date,
                criterion_id=criterion.pk, criterion=criterion.text, turn=turn,
                conversation=in_conversation, evidence=given, fresh=fresh,
            )
            for turn in turns
        ]  # fmt: skip
        record: dict[str, Any] = {}
        if planned[0].prompt_version != judge.prompt_version:
            record["prompt_version"] = planned[0].prompt_version
        if given is not None:
            record |= given.provenance()
        if in_conversation:
            record |= {
                "conversation": mode, "turns": len(turns),
                "conversation_truncated": any(t.history_cut for t in turns),
            }  # fmt: skip
        if record:
            provenance[(criterion.pk, sample)] = record
        for turn, vote in zip(turns, planned, strict=True):
            turn_of[vote.cache_key] = turn.number
            calls.append(vote.call)

    def judge_misses(misses: list[engine.Call]) -> list[engine.CallResult]:
        controls = call_controls(judge)
        return client.run_sync(
            engine.judge_all(
                misses, concurrency=run.concurrency, limiter=controls.limiter,
                policy=controls.policy, gate=controls.gate, circuit=controls.circuit,
            )
        )  # fmt: skip

    made = cached_or_made(calls, REUSED, judge_misses) if calls else []
    if len(turns) == 1:
        return [*made, *refused]
    return [*_per_vote(made, turn_of, mode), *refused]


def _no_reference(criterion: Criterion, sample: int) -> engine.CallResult:
    return engine.CallResult(
        criterion.pk, sample, "", "error", error_kind="no_reference", error=plan.NO_REFERENCE,
        attempts=0,
    )  # fmt: skip


def _per_vote(
    results: list[engine.CallResult], turn_of: dict[str, int], mode: str
) -> list[engine.CallResult]:
    """One result per (criterion, sample) from the results of its turns (conversation)."""
    grouped: dict[tuple[int, int], list[engine.CallResult]] = {}
    for r in results:
        grouped.setdefault((r.criterion_id, r.sample), []).append(r)
    merged = []
    for (criterion_id, sample), parts in grouped.items():
        parts.sort(key=lambda r: turn_of[r.cache_key])
        verdict = conv.aggregate(
            mode,
            [
                conv.TurnVote(
                    turn_of[r.cache_key], r.outcome, r.failure_kind, r.rationale or r.error
                )
                for r in parts
            ],
        )
        error = next((r for r in parts if r.outcome == "error"), None)
        # Its own key, made of the turns' keys: an aggregated verdict is never reused as
        # the verdict of one call.
        key = hashlib.sha256("".join(r.cache_key for r in parts).encode()).hexdigest()
        merged.append(
            engine.CallResult(
                criterion_id,
                sample,
                key,
                verdict.outcome,
                failure_kind=verdict.failure_kind,
                rationale=verdict.rationale,
                raw_output=json.dumps(
                    [{"turn": turn_of[r.cache_key], "raw_output": r.raw_output} for r in parts],
                    ensure_ascii=False,
                ),
                error_kind=error.error_kind if error else "",
                error=error.error if error else "",
                prompt_tokens=sum(r.prompt_tokens for r in parts),
                completion_tokens=sum(r.completion_tokens for r in parts),
                cached_tokens=sum(r.cached_tokens for r in parts),
                reasoning_tokens=sum(r.reasoning_tokens for r in parts),
                latency_ms=sum(r.latency_ms for r in parts),
                attempts=sum(r.attempts for r in parts),
                cache_hit=all(r.cache_hit for r in parts),
            )
        )
    return merged


def upsert(
    run: Run,
    work: Owed,
    results: list[engine.CallResult],
    provenance: dict[tuple[int, int], dict[str, Any]] | None = None,
) -> None:
    """Write the verdicts; `provenance` adds, per (criterion, sample), what the vote was
    made with beyond the judge's parameters (a check, evidence, a conversation)."""
    if not results:
        return
    params = {s: judge_params(work.judge, work.member, s) for s in range(work.member.samples)}
    if work.member.prompt_version:  # tuned when the run started: its version, errors too
        params = {s: {**p, "prompt_version": work.member.prompt_version} for s, p in params.items()}
    provenance = provenance or {}
    verdicts = []
    for r in results:
        record = call_record(r, params)
        if (extra := provenance.get((r.criterion_id, r.sample))) is not None:
            record["judge_params"] = {**record["judge_params"], **extra}
        if r.batch is not None:  # graded in a batched call (evaluation.judging.batched)
            record["judge_params"] = {**record["judge_params"], "batch": r.batch}
        verdicts.append(
            Verdict(
                run=run,
                answer=work.answer,
                judge=work.judge,
                criterion_id=r.criterion_id,
                sample=r.sample,
                outcome=r.outcome,
                failure_kind=r.failure_kind,
                rationale=text_of(r.rationale),
                **record,
            )
        )
    Verdict.objects.bulk_create(
        verdicts,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["run", "answer", "criterion", "judge", "sample"],
        update_fields=UPSERT_FIELDS,
    )
