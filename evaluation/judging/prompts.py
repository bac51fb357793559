"""The verdict prompt and its strict parser. Plain Python.

The criterion comes last in the prompt: everything before it (instructions, query, answer)
is the same for all criteria of an answer, so providers that cache prompt prefixes can
reuse it across a checklist.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any

VERDICT_PROMPT_VERSION = "verdict-v1"
FAILURE_KINDS = ("missing", "incorrect", "ambiguous", "incomplete")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
        "failure_kind": {"type": ["string", "null"], "enum": [*FAILURE_KINDS, None]},
        "rationale": {"type": "string"},
    },
    "required": ["verdict", "failure_kind", "rationale"],
    "additionalProperties": False,
}

SYSTEM = (
    "You grade one answer against one criterion written by a domain expert. The answer was "
    "written for the query below, as of the query date: judge it with what was public on "
    'that date. Reply with a JSON object: verdict is "pass" when the answer satisfies the '
    'criterion fully and unambiguously, else "fail"; when it fails, failure_kind says why '
    '("missing": not addressed; "incorrect": addressed but wrong; "ambiguous": unclear '
    'whether it is met; "incomplete": partly met), else null; rationale is one or two '
    "sentences quoting the answer where possible."
)


def messages(
    *, query: str, query_date: dt.date, answer: str, criterion: str
) -> list[dict[str, str]]:
    context = f"Query (as of {query_date.isoformat()}):\n{query}\n\nAnswer:\n{answer}"
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{context}\n\nCriterion: {criterion}"},
    ]


@dataclass(frozen=True)
class ParsedVerdict:
    verdict: str  # "pass" or "fail"
    failure_kind: str  # "" when it passes
    rationale: str


def parse(data: dict[str, Any] | None) -> ParsedVerdict | None:
    """Strict: anything but the agreed shape is unparseable (never a guess, never a fail)."""
    if not data:
        return None
    verdict = data.get("verdict")
    kind = data.get("failure_kind")
    rationale = data.get("rationale", "")
    if verdict not in ("pass", "fail") or not isinstance(rationale, str):
        return None
    if kind is not None and kind not in FAILURE_KINDS:
        return None
    return ParsedVerdict(verdict, (kind or "") if verdict == "fail" else "", rationale.strip())


def cache_key(
    *,
    base_url: str,
    model: str,
    prompt_version: str,
    temperature: float,
    max_tokens: int,
    seed: int | None,
    sample: int,
    query: str,
    query_date: dt.date,
    criterion: str,
    answer: str,
) -> str:
    """Everything a verdict depends on. Equal keys mean the same call: reuse its verdict."""
    parts = {
        "base_url": base_url.rstrip("/"),
        "model": model,
        "prompt_version": prompt_version,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
        "sample": sample,
        "query": query,
        "query_date": query_date.isoformat(),
        "criterion": criterion,
        "answer": answer,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
