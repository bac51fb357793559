"""An answer's verdicts in one run, built once for every page that shows them: the run's
answer page (evaluation.runs.views.run_answer) and the answer page
(evaluation.answer_pages.views.answer_detail) draw the result with
templates/evaluation/answers/_verdicts.html, so the two cannot show the same run
differently."""

from __future__ import annotations

from typing import Any

from evaluation.answers.models import Answer
from evaluation.runs import grading, selectors
from evaluation.runs.access import hide_raw_outputs
from evaluation.runs.models import Run


def answer_in_run(user: Any, run: Run, answer: Answer) -> dict[str, Any]:
    """The template context of _verdicts.html: `checklists` (each criterion's votes, final
    outcome and labels, laid out by group with the strategy value and undecided count) and
    `grades` (the 1–5 graded view), raw outputs hidden from those who do not manage judges."""
    verdicts = selectors.answer_verdicts(run, answer)
    grades = grading.answer_grades(run, answer)
    votes = (vote for _, rows in verdicts for row in rows for vote in row.votes)
    hide_raw_outputs(user, [*votes, *grades])
    return {"checklists": selectors.answer_rubrics(run, answer, verdicts), "grades": grades}
