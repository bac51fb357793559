"""The graded view of a run: each LLM judge of a graded panel rates each answer 1–5 against a
reference, once per sample (evaluation.judging.graded holds the prompt).

It runs inside the run's task for (answer × judge), before the verdicts, and like them only
fills what is missing: a redelivered, repeated or resumed task never doubles a grade (the
unique constraint on GradedScore backs this up). A run with a graded panel is complete when
it holds its verdicts and `graded_expected` grades.

The reference is the query's `reference_answer`, else its perfect answers (answers written
to satisfy one checklist, `Answer.checklist` set), never the graded answer itself. Without
one, a `no_reference` row is recorded and no call is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from annotation.models import Query
from evaluation import runs  # a module import: runs imports this module too
from evaluation.judging import client, graded
from evaluation.models import Answer, GradedScore, Judge, JudgeCall, PanelMember, Run

UPSERT_FIELDS = ["outcome", "score", "reasoning", *JudgeCall.RECORD_FIELDS, "judge_params"]


def grades(member: PanelMember) -> bool:
    """Only LLM judges grade: no-LLM checks cannot rate correctness, external judges are
    never called."""
    return member.judge.kind == Judge.Kind.LLM


def references_for(query: Query, *, excluding: int | None = None) -> list[str]:
    """The query's reference answer, else its perfect answers (oldest first)."""
    if query.reference_answer.strip():
        return [query.reference_answer]
    perfect = Answer.objects.filter(query=query, checklist__isnull=False).exclude(pk=excluding)
    return [text for text in perfect.order_by("pk").values_list("text", flat=True) if text.strip()]


def grade_answer(*, run: Run, member: PanelMember, answer: Answer) -> int:
    """Fill in this judge's missing grades of this answer; returns how many were written."""
    if not run.panel.graded or not grades(member):
        return 0
    judge = member.judge
    done = set(
        GradedScore.objects.filter(run=run, answer=answer, judge=judge).values_list(
            "sample", flat=True
        )
    )
    pending = [s for s in range(member.samples) if s not in done]
    if not pending:
        return 0
    query = answer.query
    references = references_for(query, excluding=answer.pk)
    params = {s: runs.judge_params(member, s) for s in pending}
    if not references:
        results = [
            graded.GradeResult(s, "", GradedScore.Outcome.NO_REFERENCE, attempts=0) for s in pending
        ]
    else:
        results = _grade_with_llm(run, member, answer, references, pending)
    _upsert(run, answer, judge, results, params)
    return len(results)


def _grade_with_llm(
    run: Run, member: PanelMember, answer: Answer, references: list[str], pending: list[int]
) -> list[graded.GradeResult]:
    judge, query = member.judge, answer.query
    calls = []
    for sample in pending:
        endpoint = runs.endpoint_for(judge, member, sample)
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
    cached = _cached_grades([c.cache_key for c in calls])
    reused = [
        graded.GradeResult(
            c.sample,
            c.cache_key,
            GradedScore.Outcome.SCORED,
            score=hit.score,
            reasoning=hit.reasoning,
            raw_output=hit.raw_output,
            attempts=0,
            cache_hit=True,
        )
        for c in calls
        if (hit := cached.get(c.cache_key))
    ]
    misses = [c for c in calls if c.cache_key not in cached]
    if not misses:
        return reused
    controls = runs.call_controls(judge)
    fresh = client.run_sync(
        graded.grade_all(
            misses, limiter=controls.limiter, policy=controls.policy, gate=controls.gate
        )
    )
    return [*fresh, *reused]


def _cached_grades(keys: list[str]) -> dict[str, GradedScore]:
    """Earlier scored grades made with the same inputs (any run). Unparseable outputs and
    errors are asked again."""
    rows = GradedScore.objects.filter(cache_key__in=keys, outcome=GradedScore.Outcome.SCORED)
    return {g.cache_key: g for g in rows.only("cache_key", "score", "reasoning", "raw_output")}


def _upsert(
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
            reasoning=r.reasoning,
            **runs.call_record(r, params),
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
    if not run.panel.graded:
        return 0
    samples = sum(
        m.samples for m in run.panel.members.filter(judge__kind=Judge.Kind.LLM).only("samples")
    )
    return runs.run_answers(run).count() * samples if samples else 0


def graded_complete(run: Run) -> bool:
    """Whether every grade is in (always true for a panel that does not grade)."""
    if not run.panel.graded:
        return True
    return run.graded_scores.count() >= graded_expected(run)


def forget_failed(run: Run) -> None:
    """Drop the grades whose call failed, so that the resume makes them again (as verdicts:
    unparseable outputs stay, they are the judge's answer)."""
    run.graded_scores.filter(outcome=GradedScore.Outcome.ERROR).delete()


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
    """Read from the database, like runs.run_progress. All zero when the panel does not grade."""
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
