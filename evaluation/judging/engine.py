"""Running many judge calls concurrently. Async, no ORM: plans go in, results come out.

evaluation.runs.work loads what to judge and writes what comes back; keeping the database out
of the event loop keeps both sides simple and lets a task's calls share one semaphore.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from evaluation.judging import batched, client, prompts
from evaluation.judging.circuit import Circuit
from evaluation.judging.ratelimit import RateLimiter

# An unparseable output is asked again this many times before it is recorded as such.
PARSE_RETRIES = 2
# An output that is not a verdict (or grade) is kept cut to its first this many characters:
# enough to see why it did not parse, while whatever answered at the base URL cannot store
# pages of its own in the verdicts. Only those who manage judges read it
# (evaluation.runs.access.raw_output_shown).
UNPARSEABLE_KEPT = 2_000


@dataclass(frozen=True)
class Call:
    criterion_id: int
    sample: int
    cache_key: str
    messages: list[dict[str, str]]
    endpoint: client.Endpoint
    # Batched grading (evaluation.judging.batched): the criterion's text, which `messages`
    # ends with, and the judge's criteria per call (1: alone; k; 0: every criterion whose
    # prompt shares everything else with this one).
    criterion: str = ""
    per_call: int = 1

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
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    # A verdict of a batched call: {"criteria_per_call", "size", "item"}, and "reasked" when
    # the reply gave none for it and it was asked alone. Kept in the verdict's judge_params.
    batch: dict[str, Any] | None = None


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
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def cost(self) -> dict[str, int]:
        """What every result of the question records, failed or not."""
        return {
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "attempts": self.attempts, "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
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
    usage = {"cached_tokens": 0, "reasoning_tokens": 0}  # as reported, summed over asks
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
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, **usage,
            )  # fmt: skip
        except (client.MissingApiKey, client.HostRefused) as exc:  # no call was made
            return Asked(
                error_kind=exc.kind, error=str(exc), attempts=attempts,
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, **usage,
            )  # fmt: skip
        except client.JudgeRejected as exc:
            return Asked(
                error_kind=exc.kind, error=str(exc)[:2000], attempts=attempts + 1,
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, **usage,
            )  # fmt: skip
        attempts += completion.meta.get("attempts", 1)
        prompt_tokens += completion.prompt_tokens
        completion_tokens += completion.completion_tokens
        latency_ms += completion.latency_ms
        usage["cached_tokens"] += completion.cached_tokens
        usage["reasoning_tokens"] += completion.reasoning_tokens
        parsed = parse(completion.data)
        if parsed is not None:
            return Asked(
                parsed=parsed, raw_output=completion.raw, prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens, latency_ms=latency_ms, attempts=attempts,
                **usage,
            )  # fmt: skip
    return Asked(
        raw_output=completion.raw[:UNPARSEABLE_KEPT] if completion else "",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens, latency_ms=latency_ms, attempts=attempts,
        **usage,
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


# The most output a batched call asks for, whatever its size: models refuse a max_tokens past
# their own limit (16,384 for several), which would fail every criterion of the batch. A reply
# cut by it leaves its last criteria without a verdict, and they are asked again alone.
BATCH_MAX_TOKENS = 16_384

# What a batched call's result shares out over its criteria so that sums over the verdicts
# are the call's (evaluation.judging.batched.split).
SHARED = (
    "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "latency_ms",
    "attempts",
)  # fmt: skip


@dataclass(frozen=True)
class BatchOutcome:
    """What a batched call gave each of its calls: a result, or None when the reply had no
    usable verdict for it (`reasked` says why); with its share of the call's cost."""

    result: CallResult | None
    share: dict[str, int]
    batch: dict[str, Any]
    reasked: str = ""


async def judge_batch(
    calls: list[Call], limiter: RateLimiter, policy: client.RetryPolicy,
    circuit: Circuit | None = None,
) -> list[BatchOutcome]:  # fmt: skip
    """One call for the criteria of `calls` (one answer, one judge, one sample; prompts
    equal but for the criterion). Each criterion may produce as much output as alone, so the
    call's cap is the judge's max tokens times the criteria, and the rate limiter counts the
    batched prompt and that cap. An error of the call is every criterion's error (asking
    each alone would only multiply calls to a failing endpoint)."""
    first = calls[0]
    room = min(first.endpoint.max_tokens * len(calls), BATCH_MAX_TOKENS)
    endpoint = replace(first.endpoint, max_tokens=max(room, first.endpoint.max_tokens))
    asked = await ask_json(
        endpoint, batched.messages(first.messages, [c.criterion for c in calls]),
        schema_name="verdicts", schema=batched.SCHEMA,
        parse=lambda data: batched.parse(data, size=len(calls)), limiter=limiter,
        policy=policy, circuit=circuit,
    )  # fmt: skip
    shares = {name: batched.split(getattr(asked, name), len(calls)) for name in SHARED}
    reply: batched.BatchReply | None = asked.parsed
    outcomes = []
    for index, call in enumerate(calls):
        number = index + 1
        share = {name: shares[name][index] for name in SHARED}
        info = {"criteria_per_call": call.per_call, "size": len(calls), "item": number}
        if asked.error_kind:
            result = call.result(
                outcome="error", error_kind=asked.error_kind, error=asked.error, batch=info,
                **share,
            )  # fmt: skip
            outcomes.append(BatchOutcome(result, share, info))
        elif reply is not None and (verdict := reply.verdicts.get(number)) is not None:
            raw = json.dumps(reply.items[number], ensure_ascii=False)
            result = call.result(**_verdict(verdict), raw_output=raw, batch=info, **share)
            outcomes.append(BatchOutcome(result, share, info))
        else:
            why = "malformed" if reply is not None and number in reply.malformed else "missing"
            if reply is None:
                why = "unparseable"
            outcomes.append(BatchOutcome(None, share, info, reasked=why))
    return outcomes


def batches(calls: list[Call]) -> list[list[int]]:
    """The calls' indexes, grouped into the calls to make: a call alone unless its judge
    grades several criteria per call, then with the calls of the same endpoint and sample
    whose prompts differ only in the criterion, `per_call` at a time (0: all), in order."""
    planned: list[list[int]] = []
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, call in enumerate(calls):
        head = batched.head_of(call.messages, call.criterion) if call.per_call != 1 else None
        if head is None:
            planned.append([index])
            continue
        groups.setdefault((call.endpoint, call.sample, call.per_call, head), []).append(index)
    for (_, _, per_call, _), indexes in groups.items():
        size = per_call or len(indexes)
        planned += [indexes[i : i + size] for i in range(0, len(indexes), size)]
    return planned


async def judge_all(
    calls: list[Call],
    *,
    concurrency: int,
    limiter: RateLimiter,
    policy: client.RetryPolicy | None = None,
    gate: client.InFlightGate | None = None,
    circuit: Circuit | None = None,
) -> list[CallResult]:
    """Judge every call, at most `concurrency` calls at a time (and at most the gate's limit
    in the whole process); calls of a judge with criteria_per_call ≠ 1 go out batched
    (`batches`), and a criterion a batched reply gave no verdict for is asked again alone.
    Results come back in the order of `calls`. Run it with client.run_sync, whose
    per-thread loop keeps the connection pools (client.shared_session) between batches."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    policy = policy or client.RetryPolicy()
    worker_slot = gate or contextlib.nullcontext()

    async def bounded(call: Call) -> CallResult:
        async with semaphore, worker_slot:
            return await judge_one(call, limiter, policy, circuit)

    async def batch(indexes: list[int]) -> list[CallResult]:
        group = [calls[i] for i in indexes]
        if len(group) == 1:
            return [await bounded(group[0])]
        async with semaphore, worker_slot:
            outcomes = await judge_batch(group, limiter, policy, circuit)
        # The slot is given back before the criteria are asked again, one call each.
        return list(
            await asyncio.gather(
                *(_settled(o, c, bounded) for o, c in zip(outcomes, group, strict=True))
            )
        )

    results: list[CallResult | None] = [None] * len(calls)
    planned = batches(calls)
    for indexes, found in zip(
        planned, await asyncio.gather(*(batch(p) for p in planned)), strict=True
    ):
        for index, result in zip(indexes, found, strict=True):
            results[index] = result
    return [r for r in results if r is not None]


async def _settled(
    outcome: BatchOutcome, call: Call, ask_alone: Callable[[Call], Any]
) -> CallResult:
    """The batched call's verdict for `call`, or the one it gets asked alone, recorded with
    its share of the batched call's cost on top of its own."""
    if outcome.result is not None:
        return outcome.result
    alone: CallResult = await ask_alone(call)
    added = {name: getattr(alone, name) + outcome.share[name] for name in SHARED}
    return replace(alone, batch={**outcome.batch, "reasked": outcome.reasked}, **added)
