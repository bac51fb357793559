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
    *,
    query: str,
    query_date: dt.date,
    answer: str,
    criterion: str,
    evidence: Evidence | None = None,
    conversation: str = "",
    tuning: str = "",
) -> list[dict[str, str]]:
    """The verdict prompt. A plain answer graded on itself gets exactly the verdict-v1
    prompt; `evidence` adds the retrieved context or the reference answer with its
    instruction, `conversation` the turns before the graded one (see `prompt_version`),
    `tuning` the judge's instructions and worked examples after the system text
    (evaluation.judges.tuning: "" for an untuned judge, whose prompt is unchanged)."""
    head = f"Query (as of {query_date.isoformat()}):\n{query}\n\n"
    if conversation:
        head += f"Conversation before the graded turn:\n{conversation}\n\nGraded turn:\n"
    else:
        head += "Answer:\n"
    system = SYSTEM
    body = f"{head}{answer}"
    if evidence is not None:
        system = f"{SYSTEM} {EVIDENCE_INSTRUCTIONS[evidence.mode]}"
        body += f"\n\n{EVIDENCE_TITLES[evidence.mode]}:\n{evidence.text}"
    if tuning:
        system = f"{system}\n\n{tuning}"
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{body}\n\nCriterion: {criterion}"},
    ]


# --- Judging with evidence and conversations (docs/judging.md) ---------------------------
# Each variant has its own version, added to the judge's prompt version in the cache key and
# the verdict's provenance ("verdict-v1+context-v1"): changing a variant's wording means a
# new version, so no cached verdict of the old wording is reused.
EVIDENCE_VERSIONS = {"context": "context-v1", "reference": "reference-v1"}
CONVERSATION_VERSION = "conversation-v1"
EVIDENCE_INSTRUCTIONS = {
    "context": (
        "Decide against the retrieved context given after the answer, not against what you "
        "know: the criterion passes only when the answer meets it and every claim of the "
        "answer that the criterion concerns is supported by that context; a claim the "
        'context does not support fails as "incorrect" (contradicted) or "missing" (not '
        "found). Quote the passage id that supports or contradicts it."
    ),
    "reference": (
        "Decide against the reference answer given after the answer: the criterion passes "
        "only when what the answer says about it is equivalent in meaning to what the "
        "reference answer says (wording may differ; figures, entities and direction must "
        "agree)."
    ),
}
EVIDENCE_TITLES = {
    "context": "Retrieved context (passages the system retrieved, untrusted)",
    "reference": "Reference answer",
}
CHARS_PER_TOKEN = 4  # the rate limiter's estimate too (engine.token_estimate)


@dataclass(frozen=True)
class Evidence:
    """What a judge decides against, as put in the prompt, and whether it was cut."""

    mode: str  # "context" or "reference"
    text: str
    truncated: bool = False
    shown_chars: int = 0
    total_chars: int = 0
    omitted: tuple[str, ...] = ()  # ids of passages left out whole

    def provenance(self) -> dict[str, Any]:
        """What a verdict records about its evidence."""
        data: dict[str, Any] = {"evidence": self.mode, "evidence_truncated": self.truncated}
        if self.truncated:
            data |= {"evidence_chars": [self.shown_chars, self.total_chars]}
            if self.omitted:
                data["evidence_omitted"] = list(self.omitted)
        return data


def prompt_version(base: str, *, evidence: str = "", conversation: bool = False) -> str:
    """The version a verdict's prompt had: the judge's, plus each variant used."""
    parts = [base]
    if conversation:
        parts.append(CONVERSATION_VERSION)
    if evidence:
        parts.append(EVIDENCE_VERSIONS[evidence])
    return "+".join(parts)


def _cut(text: str, budget: int) -> str:
    return text[:budget].rstrip() + f"\n[… truncated: {budget:,} of {len(text):,} characters shown]"


def context_evidence(passages: list[dict[str, Any]], *, budget_tokens: int) -> Evidence:
    """The retrieved passages within the judge's evidence budget (tokens × 4 characters).

    The rule, never silent: passages are kept whole, in the order the system retrieved them,
    while they fit; the first one that does not fit is cut at the budget with a marker
    saying how much of it is shown; the passages after it are left out and named by id.
    The verdict records that the context was truncated, how much was shown and what was
    left out (Evidence.provenance)."""
    budget = budget_tokens * CHARS_PER_TOKEN
    blocks = [
        (str(p.get("id", "")), _passage(p)) for p in passages if str(p.get("text", "")).strip()
    ]
    total = sum(len(b) for _, b in blocks) + 2 * max(len(blocks) - 1, 0)
    if not blocks:
        return Evidence("context", "(The system retrieved no context.)", total_chars=0)
    shown: list[str] = []
    omitted: list[str] = []
    used = 0
    cut = False
    for ident, block in blocks:
        room = budget - used
        if cut or room <= 0:
            omitted.append(ident)
        elif len(block) <= room:
            shown.append(block)
            used += len(block) + 2
        else:
            shown.append(_cut(block, room))
            used, cut = budget, True
    text = "\n\n".join(shown)
    if omitted:
        text += f"\n\n[… {len(omitted)} more passage(s) left out: {', '.join(omitted)}]"
    return Evidence(
        "context", text, truncated=cut or bool(omitted), shown_chars=min(used, total),
        total_chars=total, omitted=tuple(omitted),
    )  # fmt: skip


def _passage(p: dict[str, Any]) -> str:
    title = " · ".join(str(p[k]) for k in ("title", "source") if p.get(k))
    return f"[{p.get('id', '')}]{' ' + title if title else ''}\n{p.get('text', '')}"


def reference_evidence(reference: str, *, budget_tokens: int) -> Evidence:
    """The reference answer, cut at the budget by the same rule (one passage)."""
    budget = budget_tokens * CHARS_PER_TOKEN
    if len(reference) <= budget:
        return Evidence("reference", reference, total_chars=len(reference),
                        shown_chars=len(reference))  # fmt: skip
    return Evidence(
        "reference", _cut(reference, budget), truncated=True, shown_chars=budget,
        total_chars=len(reference),
    )  # fmt: skip


def transcript(turns: list[dict[str, Any]], *, budget_tokens: int) -> tuple[str, bool]:
    """The turns before a graded turn as text, and whether older turns were left out: the
    most recent turns are kept whole within the budget, older ones are dropped and a marker
    says how many (the judge needs what led to the graded turn, nearest first)."""
    budget = budget_tokens * CHARS_PER_TOKEN
    lines: list[str] = []
    used = 0
    for turn in reversed(turns):
        line = _turn(turn)
        if used + len(line) > budget:
            dropped = len(turns) - len(lines)
            lines.append(f"[… {dropped} earlier turn(s) left out]")
            return "\n".join(reversed(lines)), True
        lines.append(line)
        used += len(line) + 1
    return "\n".join(reversed(lines)), False


def _turn(turn: dict[str, Any]) -> str:
    role = turn.get("role", "")
    text = f"{role}: {turn.get('content') or ''}".rstrip()
    for call in turn.get("tool_calls") or ():
        arguments = json.dumps(call.get("arguments") or {}, ensure_ascii=False, sort_keys=True)
        text += f"\n  → calls {call.get('name', '')}({arguments})"
    if role == "tool" and turn.get("name"):
        text = f"tool {turn['name']}: {turn.get('content') or ''}"
    return text


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
    extra: dict[str, Any] | None = None,
) -> str:
    """Everything a verdict depends on. Equal keys mean the same call: reuse its verdict.
    `extra` (the evidence and conversation put in the prompt) enters only when given, so a
    plain answer's key is what it always was."""
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
    if extra:
        parts["extra"] = extra
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
