"""The judge calls of a reward batch: answered from the caches when they can be, the rest
made all at once.

A vote's cache key (evaluation.judging.prompts.cache_key) names everything the call depends
on, so equal keys are the same call: within a batch they are made once (a trainer's group of
identical samples costs one call per criterion), and across batches they are answered by the
reward cache (RewardVerdict, pass and fail only) or by a decided verdict of a run (the
Verdict table, as runs reuse each other's: evaluation.runs.calls.cached_or_made). The misses
of every judge go out together, in one event loop, each judge at most REWARDS_CONCURRENCY at
a time and through its shared rate limiter, retry policy, worker gate and circuit breaker
(evaluation.runs.calls.call_controls), exactly as a run's are.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from evaluation.judges.models import Judge
from evaluation.judging import client, engine
from evaluation.metrics.cost import JudgeUsage, run_cost
from evaluation.rewards.models import RewardVerdict
from evaluation.runs.calls import call_controls, text_of
from evaluation.runs.models import Verdict

DECIDED = ("pass", "fail")
_CHUNK = 2000  # keys per IN (...): far below SQLite's and PostgreSQL's parameter limits


@dataclass(frozen=True)
class Planned:
    judge: Judge
    call: engine.Call


@dataclass(frozen=True)
class Answered:
    """Every planned call's result by cache key, and what answering them took."""

    results: dict[str, engine.CallResult]
    made: int  # calls made now
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal | None  # None: an LLM judge that was called has no price


def answer(planned: dict[str, Planned]) -> Answered:
    """Every planned call answered: the caches first, the misses made now (this thread's
    event loop), what was made remembered."""
    results = cached(planned)
    misses = missed(planned, results)
    made = client.run_sync(judged(misses)) if misses else []
    return settled(results, misses, made)


def missed(planned: dict[str, Planned], results: dict[str, engine.CallResult]) -> list[Planned]:
    return [p for key, p in planned.items() if key not in results]


def settled(
    results: dict[str, engine.CallResult], misses: list[Planned], made: list[engine.CallResult]
) -> Answered:
    """The made calls remembered in the reward cache and added to `results`, with what they
    cost. The database half after the calls (the rewards service runs it at the edge)."""
    _remember(made)
    results.update({r.cache_key: r for r in made})
    tokens: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    judges = {p.call.cache_key: p.judge for p in misses}
    for result in made:
        usage = tokens[judges[result.cache_key].pk]
        usage[0] += result.prompt_tokens
        usage[1] += result.completion_tokens
        usage[2] += result.cached_tokens
    by_pk = {p.judge.pk: p.judge for p in misses}
    usages = [
        JudgeUsage(
            name=by_pk[pk].name,
            calls_llm=True,
            prompt_tokens=p,
            completion_tokens=c,
            prompt_price=by_pk[pk].prompt_price,
            completion_price=by_pk[pk].completion_price,
            cached_tokens=k,
            cached_prompt_price=by_pk[pk].cached_prompt_price,
        )
        for pk, (p, c, k) in tokens.items()
    ]
    return Answered(
        results, len(made),
        sum(p for p, _, _ in tokens.values()), sum(c for _, c, _ in tokens.values()),
        run_cost(usages, done=1, expected=1).so_far,
    )  # fmt: skip


def _chunks(keys: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(keys), _CHUNK):
        yield keys[start : start + _CHUNK]


def cached(planned: dict[str, Planned]) -> dict[str, engine.CallResult]:
    """Reward cache first (fresh within REWARDS_CACHE_DAYS), then runs' decided verdicts."""
    keys = list(planned)
    found: dict[str, engine.CallResult] = {}
    fresh = timezone.now() - dt.timedelta(days=settings.REWARDS_CACHE_DAYS)
    fields = ("cache_key", "outcome", "failure_kind", "rationale")
    for chunk in _chunks(keys):
        rows = RewardVerdict.objects.filter(cache_key__in=chunk, made_at__gte=fresh)
        for row in rows.values_list(*fields):
            found[row[0]] = _hit(*row)
    left = [k for k in keys if k not in found]
    for chunk in _chunks(left):
        rows = Verdict.objects.filter(cache_key__in=chunk, outcome__in=DECIDED).order_by()
        for row in rows.values_list(*fields):
            found.setdefault(row[0], _hit(*row))
    return found


def _hit(key: str, outcome: str, failure_kind: str, rationale: str) -> engine.CallResult:
    return engine.CallResult(
        0, 0, key, outcome, failure_kind=failure_kind, rationale=rationale, attempts=0,
        cache_hit=True,
    )  # fmt: skip


async def judged(misses: list[Planned]) -> list[engine.CallResult]:
    """The misses' calls, each judge's at most REWARDS_CONCURRENCY at a time, on the running
    event loop: no database here, so the rewards service awaits it on its own loop while no
    thread or connection is held (evaluation.rewards.waves)."""
    by_judge: dict[int, list[Planned]] = defaultdict(list)
    for planned in misses:
        by_judge[planned.judge.pk].append(planned)
    batches = []
    for group in by_judge.values():
        controls = call_controls(group[0].judge)
        batches.append(
            engine.judge_all(
                [p.call for p in group],
                concurrency=settings.REWARDS_CONCURRENCY,
                limiter=controls.limiter,
                policy=controls.policy,
                gate=controls.gate,
                circuit=controls.circuit,
            )
        )
    return [result for batch in await asyncio.gather(*batches) for result in batch]


def _remember(made: list[engine.CallResult]) -> None:
    now = timezone.now()
    rows = [
        RewardVerdict(
            cache_key=r.cache_key,
            outcome=r.outcome,
            failure_kind=r.failure_kind,
            rationale=text_of(r.rationale),
            made_at=now,
        )
        for r in made
        if r.outcome in DECIDED
    ]
    RewardVerdict.objects.bulk_create(
        rows,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["cache_key"],
        update_fields=["outcome", "failure_kind", "rationale", "made_at"],
    )
