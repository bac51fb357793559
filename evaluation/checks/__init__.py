"""No-LLM checks: deterministic heuristics, pure Python, no Django.

    from evaluation.checks import offline_verdict
    result = offline_verdict(criterion="States Q3 revenue of $4.12 billion.", kind="fact", answer=a)
    result.outcome, result.check  # ("pass", "figures")
    result.rationale  # "No-LLM check (figures): the answer states $4.12 billion."

See docs/no-llm-checks.md for what each check does and where it stops.
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
