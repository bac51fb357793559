"""The graded view of a run: each LLM judge of a graded panel rates each answer 1–5 against a
reference, once per sample (evaluation.judging.graded holds the prompt).

It runs inside the run's task for (answer × judge), before the verdicts, and like them only
fills what is missing: a redelivered, repeated or resumed task never doubles a grade (the
unique constraint on GradedScore backs this up).

The reference is the query's `reference_answer`, else its perfect answers (answers written
to satisfy one checklist, `Answer.checklist` set), never the graded answer itself. Without
one, a `no_reference` row is recorded and no call is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from annotation.models import Query
from evaluation import transient
from evaluation.answers.models import Answer
from evaluation.judges.models import Judge
from evaluation.judging import client, graded
from evaluation.runs import scope, snapshot
from evaluation.runs.calls import (
    USAGE_DETAIL_FIELDS,
    Reuse,
    cached_or_made,
    call_controls,
    call_record,
    endpoint_for,
    judge_params,
    text_of,
)
from evaluation.runs.models import GradedScore, JudgeCall, Run
from evaluation.runs.snapshot import MemberSnapshot

UPSERT_FIELDS = [
    "outcome", "score", "reasoning", *JudgeCall.RECORD_FIELDS, *USAGE_DETAIL_FIELDS,
    "judge_params",
]  # fmt: skip
# Earlier scored grades with the same inputs are reused: an unparseable output or an error
# is worth asking again.
REUSED = Reuse(
    GradedScore, (GradedScore.Outcome.SCORED,), ("outcome", "score", "reasoning", "raw_output")
)


def grades(member: MemberSnapshot) -> bool:
    """Only LLM judges grade: no-LLM checks cannot rate correctness, external judges are
    never called."""
    return member.calls_llm


def references_for(query: Query, *, excluding: int | None = None) -> list[str]:
    """The query's reference answer, else its perfect answers (oldest first)."""
    if query.reference_answer.strip():
        return [query.reference_answer]
    perfect = Answer.objects.filter(query=query, checklist__isnull=False).exclude(pk=excluding)
    return [text for text in perfect.order_by("pk").values_list("text", flat=True) if text.strip()]


def pending_grades(run: Run, member: MemberSnapshot, answer: Answer) -> list[int]:
    """The samples of this judge's grade of this answer that have no row yet."""
    if not run.graded or not grades(member):
        return []
    done = set(
        GradedScore.objects.filter(run=run, answer=answer, judge=member.judge_id).values_list(
            "sample", flat=True
        )
    )
    return [s for s in range(member.samples) if s not in done]


def grade_answer(*, run: Run, judge: Judge, member: MemberSnapshot, answer: Answer) -> int:
    """Fill in this judge's missing grades of this answer; returns how many were written."""
    pending = pending_grades(run, member, answer)
    if not pending:
        return 0
    query = answer.query
    references = references_for(query, excluding=answer.pk)
    params = {s: judge_params(judge, member, s) for s in pending}
    if not references:
        results = [
            graded.GradeResult(s, "", GradedScore.Outcome.NO_REFERENCE, attempts=0) for s in pending
        ]
    else:
        results = _grade_with_llm(judge, member, answer, references, pending)
    transient.retrying(lambda: upsert(run, answer, judge, results, params))  # see work.py
    return len(results)


def _grade_with_llm(
    judge: Judge, member: MemberSnapshot, answer: Answer, references: list[str], pending: list[int]
) -> list[graded.GradeResult]:
    query = answer.query
    calls = []
    for sample in pending:
        endpoint = endpoint_for(judge, member, sample)
        key = graded.cache_key(
            base_url=endpoint.base_url, model=endpoint.model, temperature=endpoint.temperature,
            max_tokens=endpoint.max_tokens, seed=endpoint.seed, sample=sample, query=query.text,
            query_date=query.query_date, references=references, answer=answer.text,
        )  # fmt: skip
        messages = graded.messages(
            query=query.text, query_date=query.query_date, references=references,
            answer=answer.text,
        )  # fmt: skip
        calls.append(graded.GradeCall(sample, key, messages, endpoint))

    def grade_misses(misses: list[graded.GradeCall]) -> list[graded.GradeResult]:
        controls = call_controls(judge)
        return client.run_sync(
            graded.grade_all(
                misses,
                limiter=controls.limiter,
                policy=controls.policy,
                gate=controls.gate,
                circuit=controls.circuit,
            )
        )

    return cached_or_made(calls, REUSED, grade_misses)


def upsert(
    run: Run,
    answer: Answer,
    judge: Judge,
    results: Sequence[graded.GradeResult],
    params: dict[int, dict[str, object]],
) -> None:
    rows = [
        GradedScore(
            run=run,
            answer=answer,
            judge=judge,
            sample=r.sample,
            outcome=r.outcome,
            score=r.score,
            reasoning=text_of(r.reasoning),
            **call_record(r, params),
        )
        for r in results
    ]
    GradedScore.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["run", "answer", "judge", "sample"],
        update_fields=UPSERT_FIELDS,
    )


def graded_expected(run: Run) -> int:
    """Grades the run will hold: its answers × the samples of its LLM judges (0 when the
    panel is not graded)."""
    if not run.graded:
        return 0
    samples = sum(m.samples for m in snapshot.of(run).members if grades(m))
    return scope.run_answers(run).count() * samples if samples else 0


@dataclass(frozen=True)
class GradedProgress:
    expected: int
    done: int
    scored: int
    unparseable: int
    errors: int
    no_reference: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int


def graded_progress(run: Run) -> GradedProgress:
    """Read from the database, like selectors.run_progress. All zero when the run's panel
    does not grade."""
    outcome = GradedScore.Outcome
    totals = run.graded_scores.aggregate(
        done=Count("pk"),
        scored=Count("pk", filter=Q(outcome=outcome.SCORED)),
        unparseable=Count("pk", filter=Q(outcome=outcome.UNPARSEABLE)),
        errors=Count("pk", filter=Q(outcome=outcome.ERROR)),
        no_reference=Count("pk", filter=Q(outcome=outcome.NO_REFERENCE)),
        cache_hits=Count("pk", filter=Q(cache_hit=True)),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
    )
    totals["prompt_tokens"] = totals["prompt_tokens"] or 0
    totals["completion_tokens"] = totals["completion_tokens"] or 0
    return GradedProgress(expected=graded_expected(run), **totals)


def answer_grades(run: Run, answer: Answer) -> list[GradedScore]:
    """The answer's grades in this run, each judge's samples together (one query)."""
    return list(
        GradedScore.objects.filter(run=run, answer=answer)
        .select_related("judge")
        .order_by("judge__name", "sample")
    )
