"""One answer as every answer page shows it: its final text (rendered and sanitised), and
the trajectory of an agent's answer (turns, tool calls with their arguments and results,
the retrieved context, metadata). The context of the include
templates/evaluation/answers/_answer.html, which the answer page, the run's answer page and
the review page all render; each adds around it what it needs (a run's verdicts, the review
rows, every run's scores)."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.answers.models import Answer
from evaluation.answers.rendering import render_answer
from evaluation.answers.trajectory import CheckRow, Trajectory, trajectory_of


@dataclass(frozen=True)
class AnswerView:
    answer: Answer
    html: str  # safe: rendered from markdown and sanitised (rendering.render_answer)
    trajectory: Trajectory


def answer_view(answer: Answer, checks: list[CheckRow] | None = None) -> AnswerView:
    """The include's context for `answer` (no query), with the trajectory checks' outcomes
    when the page has them (the review page)."""
    return AnswerView(answer, render_answer(answer.text), trajectory_of(answer, checks))
