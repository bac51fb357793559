"""The trajectory of an agent's answer as every answer page shows it: its turns (with tool
calls, their arguments, tool results), the context it retrieved, its metadata, and (on the
review page) which trajectory checks failed and why. The builder of the context of one
template include, templates/evaluation/answers/_trajectory.html, used by the answer page,
the run's answer page and the review page. Plain shaping; every text stays text (the
template escapes it: tool results and context are untrusted)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from evaluation.answers.models import Answer

PREVIEW = 160  # characters of a folded tool result or passage shown in its summary


@dataclass(frozen=True)
class Call:
    name: str
    ident: str
    arguments: str  # pretty JSON


@dataclass(frozen=True)
class Turn:
    number: int
    role: str
    content: str
    calls: list[Call] = field(default_factory=list)
    tool_name: str = ""
    tool_call_id: str = ""

    @property
    def preview(self) -> str:
        return _preview(self.content)


@dataclass(frozen=True)
class Passage:
    ident: str
    title: str
    source: str
    text: str

    @property
    def preview(self) -> str:
        return _preview(self.text)


@dataclass(frozen=True)
class CheckRow:
    criterion: str
    kind: str
    outcome: str  # pass, fail, or "" when no run decided it
    rationale: str


@dataclass(frozen=True)
class Trajectory:
    turns: list[Turn]
    context: list[Passage]
    metadata: list[tuple[str, str]]
    checks: list[CheckRow]

    @property
    def shown(self) -> bool:
        return bool(self.turns or self.context or self.metadata or self.checks)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW else flat[: PREVIEW - 1] + "…"


def trajectory_of(answer: Answer, checks: list[CheckRow] | None = None) -> Trajectory:
    """The answer's trajectory (no query: it reads the answer's own fields)."""
    turns = [
        Turn(
            number=i,
            role=t.get("role", ""),
            content=t.get("content") or "",
            calls=[
                Call(
                    c.get("name", ""),
                    c.get("id", ""),
                    json.dumps(c.get("arguments") or {}, ensure_ascii=False, indent=2),
                )
                for c in t.get("tool_calls") or ()
            ],
            tool_name=t.get("name", ""),
            tool_call_id=t.get("tool_call_id", ""),
        )
        for i, t in enumerate(answer.turns or (), start=1)
    ]
    context = [
        Passage(str(p.get("id", "")), p.get("title", ""), p.get("source", ""), p.get("text", ""))
        for p in answer.context or ()
    ]
    metadata = [
        (str(k), v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
        for k, v in (answer.metadata or {}).items()
    ]
    return Trajectory(turns, context, metadata, list(checks or ()))
