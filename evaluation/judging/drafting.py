"""The prompt that asks an LLM to draft a perfect answer for a checklist, and its parser.

A perfect answer satisfies every criterion of one expert's checklist; cross-evaluation then
grades it against the other experts' checklists. The draft is a starting point an expert
edits; the prompt version is stored on the answer. Plain Python: the call goes through
judging.client.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

PROMPT_VERSION = "perfect-answer-v1"
# Perfect answers are long-form: a judge's max_tokens (sized for one verdict) is too small.
MIN_MAX_TOKENS = 4096
MAX_ANSWER_CHARS = 100_000

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}

SYSTEM = (
    "You are a domain expert writing the answer to a research query, as of the query date: "
    "use only what was public on or before that date. The answer must satisfy every "
    "criterion listed, fully and unambiguously, so that a grader checking each criterion "
    "one by one would pass it: state each required figure, fact and analysis explicitly, "
    "follow every methodology and format criterion (tables, bold, bullet points, grouping). "
    "Write in markdown, without preamble. Reply with a JSON object whose only key, answer, "
    "holds the markdown answer."
)


def messages(
    *, query: str, query_date: dt.date, criteria: Sequence[tuple[str, str]]
) -> list[dict[str, str]]:
    """`criteria` are (kind, text) pairs in the checklist's order."""
    listed = "\n".join(
        f"{i}. [{kind}] {text.strip()}" for i, (kind, text) in enumerate(criteria, start=1)
    )
    user = (
        f"Query (as of {query_date.isoformat()}):\n{query}\n\n"
        f"Criteria the answer must satisfy ({len(criteria)}):\n{listed}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse(data: dict[str, Any] | None) -> str | None:
    """The answer's markdown, or None unless the reply is {"answer": <non-empty string>}."""
    if not data:
        return None
    answer = data.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        return None
    return answer.strip()[:MAX_ANSWER_CHARS]
