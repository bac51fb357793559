"""Running many judge calls concurrently. Async, no ORM: plans go in, results come out.

evaluation.runs.work loads what to judge and writes what comes back; keeping the database out
of the event loop keeps both sides simple and lets a task's calls share one semaphore.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluation.judging import client, prompts
from evaluation.judging.circuit import Circuit
from evaluation.judging.ratelimit import RateLimiter

# An unparseable output is asked again this many times before it is recorded as such.
PARSE_RETRIES = 2


@dataclass(frozen=True)
class Call:
    criterion_id: int
    sample: int
    cache_key: str
    messages: list[dict[str, str]]
    endpoint: client.Endpoint

    def result(self, **fields: Any) -> CallResult:
        return CallResult(self.criterion_id, self.sample, self.cache_key, **fields)


@dataclass(frozen=True)
class CallResult:
    criterion_id: int
    sample: int
    cache_key: str
    outcome: str  # pass, fail, unparseable, error
    failure_kind: str = ""
    rationale: str = ""
    raw_output: str = ""
    error_kind: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    attempts: int = 1
    cache_hit: bool = False


def token_estimate(call: Call) -> int:
    """What the rate limiter counts before the call: prompt characters / 4 plus the cap."""
    return _estimate(call.messages, call.endpoint)


def _estimate(messages: list[dict[str, str]], endpoint: client.Endpoint) -> int:
    return sum(len(m["content"]) for m in messages) // 4 + endpoint.max_tokens


@dataclass(frozen=True)
class Asked:
    """What asking a judge one JSON question gave and cost. `parsed` is set when an output
    parsed within the parse retries; otherwise `error_kind` is set when the call failed, and
    neither when every output was unparseable (`raw_output` holds the last one)."""

    parsed: Any = None
    raw_output: str = ""
    error_kind: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    attempts: int = 0

    @property
    def cost(self) -> dict[str, int]:
        """What every result of the question records, failed or not."""
        return {
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "attempts": self.attempts,
        }  # fmt: skip

    def record(self, answered: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        """The outcome and call record of the question's result, the same for every kind of
        call: an error (its kind and message), an unparseable output (the last one), or
        `answered(parsed)` (the outcome and what the judge said) with the output; each with
        what the question cost."""
        if self.error_kind:
            return {
                "outcome": "error", "error_kind": self.error_kind, "error": self.error,
                **self.cost,
            }  # fmt: skip
        output = {"raw_output": self.raw_output, "latency_ms": self.latency_ms, **self.cost}
        if self.parsed is None:
            return {"outcome": "unparseable", **output}
        return {**answered(self.parsed), **output}


async def ask_json(
    endpoint: client.Endpoint,
    messages: list[dict[str, str]],
    *,
    schema_name: str,
    schema: dict[str, Any],
    parse: Callable[[dict[str, Any] | None], Any],
    limiter: RateLimiter,
    policy: client.RetryPolicy,
    circuit: Circuit | None = None,
) -> Asked:
    """One question (a verdict, a grade) with our transport retries, then up to
    PARSE_RETRIES more asks while the output does not parse. Shared by every kind of call
    so that they all count attempts, tokens and failures the same way.

    It takes the worker thread's shared session itself, inside the try: a judge whose key
    variable is unset then fails each of its questions (missing_key, no call made) instead
    of raising out of the whole batch."""
    attempts = prompt_tokens = completion_tokens = latency_ms = 0
    completion = None
    for _ in range(1 + PARSE_RETRIES):
        try:
            completion = await client.complete_json_with_retries(
                endpoint, messages, schema_name=schema_name, schema=schema, limiter=limiter,
                token_estimate=_estimate(messages, endpoint), policy=policy,
                session=client.shared_session(endpoint), circuit=circuit,
            )  # fmt: skip
        except client.JudgeUnavailable as exc:
            return Asked(
                error_kind=exc.kind, error=str(exc)[:2000], attempts=attempts + exc.attempts,
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            )  # fmt: skip
        except client.MissingApiKey as exc:
            return Asked(
                error_kind="missing_key", error=str(exc), attempts=attempts,
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            )  # fmt: skip
        except client.JudgeRejected as exc:
            return Asked(
                error_kind="rejected", error=str(exc)[:2000], attempts=attempts + 1,
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            )  # fmt: skip
        attempts += completion.meta.get("attempts", 1)
        prompt_tokens += completion.prompt_tokens
        completion_tokens += completion.completion_tokens
        latency_ms += completion.latency_ms
        parsed = parse(completion.data)
        if parsed is not None:
            return Asked(
                parsed=parsed, raw_output=completion.raw, prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens, latency_ms=latency_ms, attempts=attempts,
            )  # fmt: skip
    return Asked(
        raw_output=completion.raw if completion else "", prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens, latency_ms=latency_ms, attempts=attempts,
    )  # fmt: skip


async def judge_one(
    call: Call, limiter: RateLimiter, policy: client.RetryPolicy, circuit: Circuit | None = None
) -> CallResult:
    asked = await ask_json(
        call.endpoint, call.messages, schema_name="verdict", schema=prompts.SCHEMA,
        parse=prompts.parse, limiter=limiter, policy=policy, circuit=circuit,
    )  # fmt: skip
    return call.result(**asked.record(_verdict))


def _verdict(parsed: prompts.ParsedVerdict) -> dict[str, Any]:
    return {
        "outcome": parsed.verdict, "failure_kind": parsed.failure_kind,
        "rationale": parsed.rationale,
    }  # fmt: skip


async def judge_all(
    calls: list[Call],
    *,
    concurrency: int,
    limiter: RateLimiter,
    policy: client.RetryPolicy | None = None,
    gate: client.InFlightGate | None = None,
    circuit: Circuit | None = None,
) -> list[CallResult]:
    """Judge every call, at most `concurrency` at a time (and at most the gate's limit in
    the whole process). Run it with client.run_sync, whose per-thread loop keeps the
    connection pools (client.shared_session) between batches."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    policy = policy or client.RetryPolicy()
    worker_slot = gate or contextlib.nullcontext()

    async def bounded(call: Call) -> CallResult:
        async with semaphore, worker_slot:
            return await judge_one(call, limiter, policy, circuit)

    return list(await asyncio.gather(*(bounded(c) for c in calls)))
