"""The graded view: a 1–5 rating of an answer's correctness against a reference, G-Eval style.

G-Eval (Liu et al., 2023, "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment")
gives the model the evaluation criteria and explicit evaluation steps, lets it reason, and
only then asks for the score. Here the model returns JSON `{reasoning, score}` with the
reasoning first, so the score is written after the reasoning it rests on.

Prompt, schema, strict parser and cache key are plain Python; `grade_all` makes the calls
through judging.client (async, no ORM). evaluation.runs.grading loads and stores.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from evaluation.judging import client, engine
from evaluation.judging.circuit import Circuit
from evaluation.judging.ratelimit import RateLimiter

# Bump when the prompt or schema changes: it enters the cache key, so old grades are not
# reused for a different question.
PROMPT_VERSION = "graded-v1"
MIN_SCORE, MAX_SCORE = 1, 5
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "score": {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE},
    },
    "required": ["reasoning", "score"],
    "additionalProperties": False,
}

SYSTEM = (
    "You will be given a query, the date it was asked, one or more reference answers known to "
    "be correct, and an answer to evaluate. Your task is to rate the answer on one metric.\n\n"
    "Evaluation criteria:\n"
    "Correctness (1-5): does the answer state facts, figures and conclusions that agree with "
    "the reference answers, as of the query date? 1: mostly wrong or unrelated. 2: some "
    "correct points, but major errors or omissions. 3: broadly correct, with notable errors "
    "or omissions. 4: correct, with minor errors or omissions. 5: fully correct and as "
    "complete as the references on what the query asks. Do not reward length or style; "
    "points the references do not cover are neither rewarded nor penalised unless they "
    "contradict them.\n\n"
    "Evaluation steps:\n"
    "1. Read the query and note what it asks for.\n"
    "2. Read the reference answers and list their key facts, figures and conclusions.\n"
    "3. Read the answer and check each key point: stated correctly, stated wrongly, or "
    "missing.\n"
    "4. Weigh the errors and omissions and assign a score from 1 to 5 by the criteria.\n\n"
    'Reply with a JSON object: "reasoning" (your work through the steps, briefly) and then '
    '"score" (an integer from 1 to 5).'
)


def messages(
    *, query: str, query_date: dt.date, references: list[str], answer: str
) -> list[dict[str, str]]:
    """The answer comes last: everything before it is shared by every answer to the query."""
    refs = "\n\n".join(
        f"Reference answer {i}:\n{text}" for i, text in enumerate(references, start=1)
    )
    user = (
        f"Query (as of {query_date.isoformat()}):\n{query}\n\n{refs}\n\n"
        f"Answer to evaluate:\n{answer}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class ParsedGrade:
    score: int
    reasoning: str


def parse(data: dict[str, Any] | None) -> ParsedGrade | None:
    """Strict: an integer score from 1 to 5 and a string reasoning, or unparseable.

    A 0, a 7, 3.5, "4" or true is unparseable: a guess would put a grade on the record that
    the judge never gave.
    """
    if not data:
        return None
    score, reasoning = data.get("score"), data.get("reasoning")
    if isinstance(score, bool) or not isinstance(score, int):
        return None
    if not MIN_SCORE <= score <= MAX_SCORE or not isinstance(reasoning, str):
        return None
    return ParsedGrade(score, reasoning.strip())


def cache_key(
    *,
    base_url: str,
    model: str,
    temperature: float,
    max_tokens: int,
    seed: int | None,
    sample: int,
    query: str,
    query_date: dt.date,
    references: list[str],
    answer: str,
) -> str:
    """Everything a grade depends on; equal keys mean the same call, so its grade is reused."""
    parts = {
        "kind": "graded",
        "prompt_version": PROMPT_VERSION,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
        "sample": sample,
        "query": query,
        "query_date": query_date.isoformat(),
        "references": references,
        "answer": answer,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class GradeCall:
    sample: int
    cache_key: str
    messages: list[dict[str, str]]
    endpoint: client.Endpoint

    def result(self, **fields: Any) -> GradeResult:
        return GradeResult(self.sample, self.cache_key, **fields)


@dataclass(frozen=True)
class GradeResult:
    sample: int
    cache_key: str
    outcome: str  # scored, unparseable, error
    score: int | None = None
    reasoning: str = ""
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


async def grade_one(
    call: GradeCall,
    limiter: RateLimiter,
    policy: client.RetryPolicy,
    circuit: Circuit | None = None,
) -> GradeResult:
    asked = await engine.ask_json(
        call.endpoint, call.messages, schema_name="graded", schema=SCHEMA, parse=parse,
        limiter=limiter, policy=policy, circuit=circuit,
    )  # fmt: skip
    return call.result(**asked.record(_grade))


def _grade(parsed: ParsedGrade) -> dict[str, Any]:
    return {"outcome": "scored", "score": parsed.score, "reasoning": parsed.reasoning}


async def grade_all(
    calls: list[GradeCall],
    *,
    limiter: RateLimiter,
    policy: client.RetryPolicy,
    gate: client.InFlightGate | None = None,
    circuit: Circuit | None = None,
) -> list[GradeResult]:
    """One call per sample of one judge, all at once (a judge has a handful of samples),
    within the worker's cap on calls in flight. Run it with client.run_sync so the worker
    thread's connection pools are reused."""
    worker_slot = gate or contextlib.nullcontext()

    async def one(call: GradeCall) -> GradeResult:
        async with worker_slot:
            return await grade_one(call, limiter, policy, circuit)

    return list(await asyncio.gather(*(one(c) for c in calls)))
