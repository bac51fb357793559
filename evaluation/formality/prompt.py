"""The LLM formality check of a criterion: is it specific, deterministic, self-contained
(no vague references such as "the table") and answerable yes or no? Advice only.

Prompt building and parsing are plain Python; the call goes through judging.client.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

PROMPT_VERSION = "formality-v1"
ASPECTS = ("specific", "deterministic", "self_contained", "yes_no")
ASPECT_LABELS = {
    "specific": "specific",
    "deterministic": "deterministic",
    "self_contained": "free of vague references",
    "yes_no": "answerable yes or no",
}

SCHEMA = {
    "type": "object",
    "properties": {
        **{aspect: {"type": "boolean"} for aspect in ASPECTS},
        "reason": {"type": "string"},
    },
    "required": [*ASPECTS, "reason"],
    "additionalProperties": False,
}

SYSTEM = (
    "You review criteria that graders use to check long-form answers, one yes/no criterion "
    "at a time. Judge the criterion itself, not any answer. A criterion is specific when it "
    "names exactly what must appear; deterministic when two careful graders would agree; "
    "self-contained when it has no vague reference a grader cannot resolve (such as 'the "
    "table', 'the above', 'this company'); yes_no when it can be answered yes or no. Reply "
    "with a JSON object with the boolean keys specific, deterministic, self_contained, "
    "yes_no and a one-sentence reason that says what to change, if anything."
)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()


def messages(*, query: str, query_date: dt.date, criterion: str) -> list[dict[str, str]]:
    user = f"Query ({query_date.isoformat()}): {query}\n\nCriterion: {criterion}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class Advice:
    specific: bool
    deterministic: bool
    self_contained: bool
    yes_no: bool
    reason: str

    @property
    def ok(self) -> bool:
        return self.specific and self.deterministic and self.self_contained and self.yes_no


def parse(data: dict | None) -> Advice | None:
    """None unless every aspect is a boolean and the reason a string."""
    if not data or not all(isinstance(data.get(a), bool) for a in ASPECTS):
        return None
    reason = data.get("reason")
    if not isinstance(reason, str):
        return None
    return Advice(**{a: data[a] for a in ASPECTS}, reason=reason.strip()[:1000])
