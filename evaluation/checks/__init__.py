"""No-LLM checks: deterministic heuristics, pure Python, no Django.

    from evaluation.checks import offline_verdict
    result = offline_verdict(criterion="States Q3 revenue of $4.12 billion.", kind="fact", answer=a)
    result.outcome, result.check  # ("pass", "figures")
    result.rationale  # "No-LLM check (figures): the answer states $4.12 billion."

See docs/no-llm-checks.md for what each check does and where it stops.

The heuristics (deterministic, figures, formats, trajectory, words) are pure Python with no
Django. Beside them, how a criterion is graded beyond its text: a criterion's check as
stored (models.CriterionCheck, one-to-one to annotation's Criterion), its form, page and
receivers (docs/judging.md); those modules are Django's and import the pure ones, never
the other way.
"""

from __future__ import annotations

from evaluation.checks.deterministic import (
    PREFIX,
    AnswerIndex,
    CheckResult,
    check_figures,
    check_format,
    check_keywords,
    figures_in,
    index_answer,
    offline_verdict,
)

__all__ = [
    "PREFIX",
    "AnswerIndex",
    "CheckResult",
    "check_figures",
    "check_format",
    "check_keywords",
    "figures_in",
    "index_answer",
    "offline_verdict",
]
