"""How one judge call of a run is set up and recorded; shared by verdicts and grades."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from evaluation.judging import client, engine, graded
from evaluation.judging.ratelimit import RateLimiter, limiter_for
from evaluation.models import Judge, JudgeCall
from evaluation.runs.snapshot import MemberSnapshot


def endpoint_for(judge: Judge, member: MemberSnapshot, sample: int) -> client.Endpoint:
    """The judge's live connection settings with the run's temperature for this sample."""
    return client.Endpoint(
        base_url=judge.base_url,
        model=judge.model,
        api_key_env=judge.api_key_env,
        temperature=member.temperature(sample),
        max_tokens=judge.max_tokens,
        seed=judge.seed,
        timeout=judge.timeout,
    )


def judge_params(judge: Judge, member: MemberSnapshot, sample: int) -> dict[str, object]:
    """What a vote was made with, copied onto the verdict (the judge may be edited later)."""
    if judge.kind != Judge.Kind.LLM:
        return {"kind": judge.kind}
    return {
        "kind": judge.kind, "base_url": judge.base_url, "model": judge.model,
        "prompt_version": judge.prompt_version, "temperature": member.temperature(sample),
        "max_tokens": judge.max_tokens, "seed": judge.seed,
    }  # fmt: skip


def text_of(value: str) -> str:
    """A judge's text as PostgreSQL can store it: a NUL character in a model's output would
    otherwise fail the whole task's write."""
    return value.replace("\x00", "") if "\x00" in value else value


def call_record(
    result: engine.CallResult | graded.GradeResult, params: dict[int, dict[str, object]]
) -> dict[str, object]:
    """The JudgeCall fields of an engine result, a verdict's or a grade's alike."""
    fields = {name: getattr(result, name) for name in JudgeCall.RECORD_FIELDS}
    fields["raw_output"], fields["error"] = text_of(result.raw_output), text_of(result.error)
    return {**fields, "judge_params": params[result.sample]}


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
