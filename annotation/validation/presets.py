"""Ready-made guideline configs: `FINANCE` (the house guideline) and `GENERIC` (other domains).

A stored guideline version is usually one of these plus a few overrides:
`GuidelineConfig.from_dict({"rules": {"compound": {"enabled": false}}}, base=FINANCE)`.
"""

from __future__ import annotations

from annotation.validation.text import words
from annotation.validation.types import GuidelineConfig, RuleSetting

# Third-person action verbs a criterion may start with ("States Q3 revenue of $4.12 billion.").
# British and American spellings are both accepted; compound verbs count by their first word
# ("Breaks down" -> "breaks").
FINANCE_ACTION_VERBS = words(
    """
    acknowledges addresses analyses analyzes answers applies assesses attributes
    breaks calculates categorises categorizes cites clarifies classifies compares computes
    concludes confirms considers contrasts covers defines demonstrates derives describes
    details discloses discusses distinguishes emphasises emphasizes estimates evaluates
    excludes explains expresses flags focuses forecasts gives groups highlights identifies
    includes indicates interprets lists limits mentions names notes orders organises
    organizes outlines presents projects provides quantifies ranks recommends references
    refers relies reports restricts separates shows specifies states structures suggests
    summarises summarizes tabulates traces uses warns
    """
)

BANNED_SOURCE_TYPES = frozenset({"ai-tools"})

FINANCE = GuidelineConfig(
    action_verbs=FINANCE_ACTION_VERBS,
    banned_source_types=BANNED_SOURCE_TYPES,
    # Fewer than 5 criteria cannot pin down scope, facts and format; most checklists have ~20.
    min_criteria=5,
    # Long answers legitimately need 40+ criteria; beyond 60 a checklist is usually several
    # queries in one, so it is a warning, not an error.
    max_criteria=60,
    max_length=300,
    near_duplicate_threshold=0.8,
    rules={},
)

# Rules that only make sense for the finance house style: verb-first statements, anchored
# facts, source-type tagging, methodology criteria and dated citations.
_FINANCE_ONLY = (
    "action-verb",
    # A fact criterion without a figure, date, name or quoted term is too loose for filings
    # and earnings, but most good medical or rubric criteria name plain concepts ("headache",
    # "the hypothesis"): on K-QA and BiGGen it flags 29% and 66%, nearly all false alarms
    # (docs/guidelines.md).
    "fact-anchor",
    "fact-source-type",
    "banned-source-type",
    "methodology-required",
    "citation-after-query-date",
    "citation-missing-date",
)

GENERIC = GuidelineConfig(
    # Only compound uses the verbs here (to spot "… explain X and mention Y?"); action-verb is off.
    action_verbs=FINANCE_ACTION_VERBS,
    banned_source_types=BANNED_SOURCE_TYPES,
    # Rubric-style checklists in other domains are short: 1 to 10 yes/no questions.
    min_criteria=1,
    max_criteria=60,
    max_length=300,
    near_duplicate_threshold=0.8,
    rules={rule_id: RuleSetting(enabled=False) for rule_id in _FINANCE_ONLY},
)

PRESETS: dict[str, GuidelineConfig] = {"finance": FINANCE, "generic": GENERIC}


def preset(name: str) -> GuidelineConfig:
    """A preset by name; ValueError naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"preset: unknown {name!r}; expected one of {', '.join(PRESETS)}"
        ) from None
