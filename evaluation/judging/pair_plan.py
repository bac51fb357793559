"""One plan for a pairwise judge call: which of two answers to one query is better, asked
of one judge for one sample in one order (the seam agreed with issue 43).

Built like plan.plan_vote: the judge's live endpoint at the caller's temperature
(plan.endpoint), the tuning's version and system text, the cache key of
prompts.cache_key with what a pair adds in `extra` (kind, order, the second answer, the
pair prompt's version, plan.key_extra), so a pair asked again with the same settings is the
same call and a criterion vote's key never changes. It is asked through engine.ask_json:
the same rate limits, retries, parse retries and circuit as every verdict.

Each pair is asked in both orders, "ab" (A's answer shown as Answer 1) and "ba". A judge
that prefers a position rather than an answer flips its verdict with the order; the caller
reads each reply back as a side (`side_of`) and counts a flip as a tie.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from dataclasses import dataclass
from typing import Any

from evaluation.judging import client, engine, prompts
from evaluation.judging.circuit import Circuit
from evaluation.judging.plan import JudgeSettings, TuningText, endpoint, key_extra
from evaluation.judging.ratelimit import RateLimiter

PAIR_VERSION = "pair-v1"
ORDERS = ("ab", "ba")
SYSTEM = (
    "You compare two answers to the same query for an expert evaluation team. Judge which "
    "answer better serves the query as of its date: correct, complete and specific facts "
    "a professional would need, no hindsight beyond the query date, clear presentation. "
    "Length and position are not merits. Answer in JSON: "
    '{"better": "1" | "2" | "tie", "rationale": "one or two sentences"}.'
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "better": {"type": "string", "enum": ["1", "2", "tie"]},
        "rationale": {"type": "string"},
    },
    "required": ["better", "rationale"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class PlannedPair:
    endpoint: client.Endpoint
    messages: list[dict[str, str]]
    cache_key: str
    order: str
    sample: int
    prompt_version: str


@dataclass(frozen=True)
class ParsedPair:
    better: str  # "1", "2" or "tie", as shown
    rationale: str


@dataclass(frozen=True)
class PairResult:
    planned: PlannedPair
    outcome: str  # "voted", "unparseable" or "error"
    better: str = ""
    rationale: str = ""
    raw_output: str = ""
    error_kind: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    attempts: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


def plan_pair(
    *,
    judge: JudgeSettings,
    tuning: TuningText,
    temperature: float,
    sample: int,
    query: str,
    query_date: dt.date,
    first: str,
    second: str,
    order: str,
) -> PlannedPair:
    """The call that shows `first` as Answer 1 and `second` as Answer 2; `order` ("ab" or
    "ba") says which side `first` is, and enters the key with the pair's kind."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    version = f"{tuning.version}+{PAIR_VERSION}"
    target = endpoint(judge, temperature)
    key = prompts.cache_key(
        base_url=target.base_url, model=target.model, prompt_version=tuning.version,
        temperature=target.temperature, max_tokens=target.max_tokens, seed=target.seed,
        sample=sample, query=query, query_date=query_date, criterion="", answer=first,
        extra={"kind": "pair", "order": order, "second": second, "prompt": PAIR_VERSION,
               **key_extra(judge)},
    )  # fmt: skip
    system = f"{SYSTEM}\n\n{tuning.system}" if tuning.system else SYSTEM
    body = (
        f"Query (as of {query_date.isoformat()}):\n{query}\n\n"
        f"Answer 1:\n{first}\n\nAnswer 2:\n{second}\n\nWhich answer is better?"
    )
    messages = [{"role": "system", "content": system}, {"role": "user", "content": body}]
    return PlannedPair(target, messages, key, order, sample, version)


def parse(data: dict[str, Any] | None) -> ParsedPair | None:
    if not isinstance(data, dict):
        return None
    better = data.get("better")
    if isinstance(better, int) and not isinstance(better, bool):
        better = str(better)
    if better not in ("1", "2", "tie"):
        return None
    rationale = data.get("rationale")
    return ParsedPair(better, rationale if isinstance(rationale, str) else "")


def side_of(better: str, order: str) -> str:
    """The side ("a", "b" or "tie") a reply in this order prefers."""
    if better == "tie":
        return "tie"
    first = "a" if order == "ab" else "b"
    return first if better == "1" else ("b" if first == "a" else "a")


async def ask_pair(
    planned: PlannedPair, *, limiter: RateLimiter, policy: client.RetryPolicy,
    circuit: Circuit | None = None,
) -> PairResult:  # fmt: skip
    asked = await engine.ask_json(
        planned.endpoint, planned.messages, schema_name="pairwise", schema=SCHEMA,
        parse=parse, limiter=limiter, policy=policy, circuit=circuit,
    )  # fmt: skip
    record = asked.record(
        lambda parsed: {"outcome": "voted", "better": parsed.better, "rationale": parsed.rationale}
    )
    return PairResult(planned, **record)


async def ask_pairs(
    planned: list[PlannedPair], *, limiter: RateLimiter, policy: client.RetryPolicy,
    gate: client.InFlightGate | None = None, circuit: Circuit | None = None,
) -> list[PairResult]:  # fmt: skip
    """Every planned call at once, within the worker's cap on calls in flight. Run it with
    client.run_sync so the worker thread's connection pools are reused."""
    slot = gate or contextlib.nullcontext()

    async def one(call: PlannedPair) -> PairResult:
        async with slot:
            return await ask_pair(call, limiter=limiter, policy=policy, circuit=circuit)

    return list(await asyncio.gather(*(one(c) for c in planned)))
