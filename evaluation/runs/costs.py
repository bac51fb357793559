"""The estimated cost of a run: its judges' tokens (verdicts and grades) times their prices.
The arithmetic is evaluation.metrics.cost; this module reads what it needs (three queries).
The judges are those of the run's panel snapshot, with their present prices."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Sum

from evaluation.metrics.cost import CostEstimate, JudgeUsage, run_cost
from evaluation.models import GradedScore, Judge, Run, Verdict
from evaluation.runs import snapshot


def run_cost_estimate(run: Run, *, done: int, expected: int) -> CostEstimate:
    """`done` / `expected`: the run's verdicts and grades so far and in all."""
    tokens: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for model in (Verdict, GradedScore):
        sums = (
            model.objects.filter(run=run)
            .values("judge_id")
            .annotate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"))
            .values_list("judge_id", "p", "c")
        )
        for judge_id, prompt, completion in sums:
            tokens[judge_id][0] += prompt or 0
            tokens[judge_id][1] += completion or 0
    judges = Judge.objects.filter(pk__in=[*tokens, *(m.judge_id for m in snapshot.of(run).members)])
    usages = [
        JudgeUsage(
            name=judge.name,
            calls_llm=judge.kind == Judge.Kind.LLM,
            prompt_tokens=tokens[judge.pk][0],
            completion_tokens=tokens[judge.pk][1],
            prompt_price=judge.prompt_price,
            completion_price=judge.completion_price,
        )
        for judge in judges.only("name", "kind", "prompt_price", "completion_price")
    ]
    return run_cost(usages, done=done, expected=expected)
