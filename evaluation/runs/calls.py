"""How one judge call of a run is set up and recorded; shared by verdicts and grades."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings

from evaluation.judges.models import Judge
from evaluation.judging import circuit, client, engine, graded, plan
from evaluation.judging.ratelimit import RateLimiter, limiter_for
from evaluation.runs.models import JudgeCall
from evaluation.runs.snapshot import MemberSnapshot


def endpoint_for(judge: Judge, member: MemberSnapshot, sample: int) -> client.Endpoint:
    """The judge's live connection settings with the run's temperature for this sample
    (evaluation.judging.plan.endpoint, which votes use too)."""
    return plan.endpoint(judge, member.temperature(sample))


def judge_params(judge: Judge, member: MemberSnapshot, sample: int) -> dict[str, object]:
    """What a vote was made with, copied onto the verdict (the judge may be edited later)."""
    if judge.kind != Judge.Kind.LLM:
        return {"kind": judge.kind}
    params: dict[str, object] = {
        "kind": judge.kind, "base_url": judge.base_url, "model": judge.model,
        "prompt_version": judge.prompt_version, "temperature": member.temperature(sample),
        "max_tokens": judge.max_tokens, "seed": judge.seed,
    }  # fmt: skip
    # How the call was made, when not as every judge made it before issue 25.
    if judge.criteria_per_call != 1:
        params["criteria_per_call"] = judge.criteria_per_call
    if judge.token_parameter != Judge.TokenParameter.MAX_TOKENS:
        params["token_parameter"] = judge.token_parameter
    if judge.response_format != Judge.ResponseFormat.AUTO:
        params["response_format"] = judge.response_format
    if judge.reasoning_effort:
        params["reasoning_effort"] = judge.reasoning_effort
    return params


def text_of(value: str) -> str:
    """A judge's text as PostgreSQL can store it: a NUL character in a model's output would
    otherwise fail the whole task's write."""
    return value.replace("\x00", "") if "\x00" in value else value


# Written with every call, beside JudgeCall.RECORD_FIELDS, but not (yet) carried by exports
# and imports (docs/data-formats.md): the provider's cached prompt and reasoning tokens.
USAGE_DETAIL_FIELDS = ("cached_tokens", "reasoning_tokens")


def call_record(
    result: engine.CallResult | graded.GradeResult, params: dict[int, dict[str, object]]
) -> dict[str, object]:
    """The JudgeCall fields of an engine result, a verdict's or a grade's alike."""
    fields = {
        name: getattr(result, name) for name in (*JudgeCall.RECORD_FIELDS, *USAGE_DETAIL_FIELDS)
    }
    fields["raw_output"], fields["error"] = text_of(result.raw_output), text_of(result.error)
    return {**fields, "judge_params": params[result.sample]}


@dataclass(frozen=True)
class Reuse:
    """Which earlier results a call reuses instead of being made again: rows of `model`
    (any run) with its cache key and one of `outcomes` (an unparseable output or an error
    is worth asking again), copying `fields` into the new result."""

    model: type[JudgeCall]
    outcomes: tuple[str, ...]
    fields: tuple[str, ...]


AnyCall = TypeVar("AnyCall", engine.Call, graded.GradeCall)
Result = TypeVar("Result", engine.CallResult, graded.GradeResult)


def cached_or_made(
    calls: Sequence[AnyCall], reuse: Reuse, make: Callable[[list[AnyCall]], list[Result]]
) -> list[Result]:
    """Every call's result: an earlier one with the same cache key, marked as a cache hit
    and costing no attempt; else made now by `make`, given only those calls (not called
    when there are none). The results made come first. One query for the cache."""
    rows = reuse.model.objects.filter(
        cache_key__in=[c.cache_key for c in calls], outcome__in=reuse.outcomes
    )
    cached = {row.cache_key: row for row in rows.only("cache_key", *reuse.fields)}
    reused = [
        c.result(attempts=0, cache_hit=True, **{f: getattr(hit, f) for f in reuse.fields})
        for c in calls
        if (hit := cached.get(c.cache_key))
    ]
    misses = [c for c in calls if c.cache_key not in cached]
    return [*(make(misses) if misses else []), *reused]


@dataclass(frozen=True)
class CallControls:
    """What every call of a judge in a worker goes through: its shared rate limiter, our
    retry policy, the worker's cap on calls in flight and the judge's circuit breaker."""

    limiter: RateLimiter
    policy: client.RetryPolicy
    gate: client.InFlightGate | None
    circuit: circuit.Circuit


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
        circuit=circuit.Circuit(
            circuit.store_for(settings.CELERY_BROKER_URL),
            circuit.circuit_key(judge.pk, judge.base_url), circuit_config(),
        ),
    )  # fmt: skip


def circuit_config() -> circuit.Config:
    return circuit.Config(
        failures=settings.JUDGE_CIRCUIT_FAILURES, window=settings.JUDGE_CIRCUIT_WINDOW,
        probe_min=settings.JUDGE_CIRCUIT_PROBE_MIN, probe_max=settings.JUDGE_CIRCUIT_PROBE_MAX,
        max_wait=settings.JUDGE_CIRCUIT_MAX_WAIT,
    )  # fmt: skip
