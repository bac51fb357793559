"""The estimated cost of a run: its judges' tokens (verdicts and grades) times their prices.
The arithmetic is evaluation.metrics.cost; this module reads what it needs (three queries).
The judges are those of the run's panel snapshot, with their present prices."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Sum

from evaluation.judges.models import Judge
from evaluation.kept import readers
from evaluation.kept.figures import remembered
from evaluation.metrics.cost import CostEstimate, JudgeUsage, run_cost
from evaluation.runs import snapshot
from evaluation.runs.models import GradedScore, Run, Verdict


def sums_of(run: Run) -> list[list[int]]:
    """[judge id, prompt tokens, completion tokens, cached prompt tokens] rows over the run's
    verdicts and grades."""
    rows = []
    for model in (Verdict, GradedScore):
        sums = (
            model.objects.filter(run=run)
            .values("judge_id")
            .annotate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"), k=Sum("cached_tokens"))
            .values_list("judge_id", "p", "c", "k")
            .order_by()
        )
        rows += [[judge_id, p or 0, c or 0, k or 0] for judge_id, p, c, k in sums]
    return rows


def run_cost_estimate(
    run: Run, *, done: int, expected: int, sums: list[list[int]] | None = None
) -> CostEstimate:
    """`done` / `expected`: the run's verdicts and grades so far and in all. `sums`: the
    token sums (sums_of) when the caller has them (an ended run's kept counts,
    runs.overview)."""
    tokens: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    if sums is None:
        # A scan of every verdict: a running run's sums are kept for a few seconds
        # (readers.live_window), as its progress counts are: its page and the progress
        # poll of every viewer read them while its worker writes.
        facts = readers.run_facts(run)
        state = readers.state(run.dataset_id, readers.TOKENS, run=run, facts=facts)
        sums = remembered(state, lambda: sums_of(run))
    for judge_id, prompt, completion, *cached in sums:  # rows kept before: no cached tokens
        tokens[judge_id][0] += prompt or 0
        tokens[judge_id][1] += completion or 0
        tokens[judge_id][2] += (cached[0] if cached else 0) or 0
    judges = Judge.objects.filter(pk__in=[*tokens, *(m.judge_id for m in snapshot.of(run).members)])
    usages = [
        JudgeUsage(
            name=judge.name,
            calls_llm=judge.kind == Judge.Kind.LLM,
            prompt_tokens=tokens[judge.pk][0],
            completion_tokens=tokens[judge.pk][1],
            prompt_price=judge.prompt_price,
            completion_price=judge.completion_price,
            cached_tokens=tokens[judge.pk][2],
            cached_prompt_price=judge.cached_prompt_price,
        )
        for judge in judges.only(
            "name", "kind", "prompt_price", "completion_price", "cached_prompt_price"
        )
    ]
    return run_cost(usages, done=done, expected=expected)
