"""No-LLM checks: deterministic heuristics that grade a criterion for free.

They serve twice: as cheap checks next to LLM-judged criteria, and as the offline judge of
the embedded demo (a run can be watched end to end without an API key). They are
heuristics and say so: every rationale starts with "No-LLM check (…):", and no result ever
claims to come from a model. See docs/no-llm-checks.md.

Per answer, the expensive work (figures, vocabulary, formats) is done once, in an
`AnswerIndex`; every check accepts either the answer text or its index, and text is indexed
through a small cache, so grading 40 criteria against one answer parses it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Literal

from evaluation.checks.figures import Figure, FigureIndex, figures_in, parse_figures, scan_figures
from evaluation.checks.formats import describe, present_formats, requested_formats
from evaluation.checks.words import content_words, word_keys

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

PREFIX = "No-LLM check"
# Rationales list at most this many figures or words; a criterion is one sentence, but a
# pasted paragraph must not produce a rationale of a thousand items.
_MAX_LISTED = 8


@dataclass(frozen=True)
class CheckResult:
    outcome: Literal["pass", "fail"]
    rationale: str  # starts with "No-LLM check (<check>):"
    check: str  # which check decided: "figures", "keywords", "format:table", …
    score: float | None = None  # the trajectory checks' score in [0, 1] (checks.trajectory)

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"


@dataclass(frozen=True)
class AnswerIndex:
    """What the checks need from one answer, computed once."""

    text: str
    figures: FigureIndex = field(repr=False, compare=False)
    words: frozenset[str] = field(repr=False, compare=False)
    formats: frozenset[str] = field(compare=False)

    @classmethod
    def build(cls, answer: str) -> AnswerIndex:
        answer = answer or ""
        return cls(
            text=answer,
            figures=FigureIndex(scan_figures(answer)),
            words=word_keys(answer),
            formats=present_formats(answer),
        )


@lru_cache(maxsize=32)
def index_answer(answer: str) -> AnswerIndex:
    """The index of an answer, cached: a run grades every criterion of a checklist in turn."""
    return AnswerIndex.build(answer)


def _index(answer: str | AnswerIndex) -> AnswerIndex:
    return answer if isinstance(answer, AnswerIndex) else index_answer(answer or "")


def _result(passed: bool, check: str, detail: str) -> CheckResult:
    if not detail.endswith("."):
        detail += "."  # a figure such as "6:00 p.m." may already end the sentence
    return CheckResult("pass" if passed else "fail", f"{PREFIX} ({check}): {detail}", check)


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def check_figures(criterion: str, answer: str | AnswerIndex) -> CheckResult | None:
    """Pass when every figure the criterion names appears in the answer; None without figures.

    Figures are compared by value after normalisation (see evaluation.checks.figures), never
    approximately: "about $4 billion" does not state "$4.12 billion".
    """
    wanted = _unique(parse_figures(criterion or ""))
    if not wanted:
        return None
    index = _index(answer)
    found = [f.text for f in wanted if index.figures.has_figure(f)]
    missing = [f.text for f in wanted if f.text not in found]
    if not missing:
        return _result(True, "figures", f"the answer states {_listed(found)}")
    detail = f"the answer does not state {_listed(missing)}"
    if found:
        detail += f" (it does state {_listed(found)})"
    return _result(False, "figures", detail)


def _unique(figures: tuple[Figure, ...]) -> list[Figure]:
    return list({f.text: f for f in figures}.values())


def check_keywords(
    criterion: str, answer: str | AnswerIndex, *, min_share: float = 0.6
) -> CheckResult:
    """Pass when at least `min_share` of the criterion's content words appear in the answer.

    Content words: the criterion's words minus stop words and its leading action verb,
    compared case-insensitively after folding plurals and inflections.
    """
    if not 0.0 <= min_share <= 1.0:
        raise ValueError(f"min_share must lie in [0, 1], got {min_share!r}")
    wanted = content_words(criterion or "")
    if not wanted:
        # Nothing to look for: the check cannot vouch for the answer.
        return _result(False, "keywords", "the criterion has no content words to look for.")
    index = _index(answer)
    found = [word for word, key in wanted if key in index.words]
    missing = [word for word, key in wanted if key not in index.words]
    share = len(found) / len(wanted)
    # Exact fractions, so that 3 of 5 words meet 0.6 whatever the float rounding.
    passed = Fraction(len(found), len(wanted)) >= Fraction(repr(float(min_share)))
    detail = (
        f"{len(found)} of {len(wanted)} content words found ({share:.0%}; {min_share:.0%} needed)"
    )
    if missing:
        detail += f"; missing: {_listed(missing)}"
    return _result(passed, "keywords", detail)


def check_format(criterion: str, answer: str | AnswerIndex) -> CheckResult | None:
    """Whether the answer has the format the criterion asks for; None when it asks for none.

    A criterion may ask for several formats ("a table with the totals in bold"): all are
    required. "Does not use a table" requires the answer to have none.
    """
    requests = requested_formats(criterion or "")
    if not requests:
        return None
    formats = _index(answer).formats
    check = "format:" + "+".join(r.name for r in requests)
    problems = [
        _format_problem(r.name, wanted=r.wanted, present=r.name in formats)
        for r in requests
        if r.wanted != (r.name in formats)
    ]
    if problems:
        return _result(False, check, "; ".join(problems))
    found = [describe(r.name, present=r.wanted) for r in requests]
    return _result(True, check, f"the answer has {_listed(found)}")


def _format_problem(name: str, *, wanted: bool, present: bool) -> str:
    if wanted:
        return f"the answer has {describe(name, present=present)}"
    return f"the answer has {describe(name, present=present)}, which the criterion rules out"


def offline_verdict(*, criterion: str, kind: str, answer: str | AnswerIndex) -> CheckResult:
    """The offline judge: route a criterion to the check that can decide it.

    - format criteria: the format check; keywords when no known format is named
      ("Lists the announcements in date order.");
    - criteria naming a figure: the figures check. When every figure is only a year or a
      date ("Mentions the patent expiry of Solavex in 2028."), the year says when, not what,
      so the keyword check must pass too;
    - anything else: the keyword check.
    """
    index = _index(answer)
    if (kind or "").strip().casefold() == "format":
        return check_format(criterion, index) or check_keywords(criterion, index)
    figures = check_figures(criterion, index)
    if figures is None:
        return check_keywords(criterion, index)
    if not all(f.is_period for f in parse_figures(criterion)):
        return figures
    return _both(figures, check_keywords(criterion, index))


def _both(first: CheckResult, second: CheckResult) -> CheckResult:
    """Both checks must pass; the rationale keeps both details under one label."""
    check = f"{first.check}+{second.check}"
    details = [r.rationale.split(": ", 1)[1] for r in (first, second)]
    return _result(first.passed and second.passed, check, " ".join(details))
