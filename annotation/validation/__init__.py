"""Guideline rules for checklist criteria: pure Python, no Django, cheap enough for keystrokes.

    from annotation.validation import FINANCE, validate_checklist
    report = validate_checklist(checklist, FINANCE)
    if report.blocking: ...

See docs/guidelines.md for the rules, the presets and the config JSON.
"""

from __future__ import annotations

from annotation.validation.presets import FINANCE, FINANCE_ACTION_VERBS, GENERIC, PRESETS, preset
from annotation.validation.rules import (
    RULE_IDS,
    RULES,
    describe_rules,
    rule_info,
    validate_checklist,
    validate_criterion,
)
from annotation.validation.types import (
    KINDS,
    SEVERITIES,
    ChecklistInput,
    CitationInput,
    CriterionInput,
    Finding,
    GuidelineConfig,
    Issue,
    Report,
    RuleInfo,
    RuleSetting,
    Scope,
    Severity,
)

__all__ = [
    "FINANCE",
    "FINANCE_ACTION_VERBS",
    "GENERIC",
    "KINDS",
    "PRESETS",
    "RULES",
    "RULE_IDS",
    "SEVERITIES",
    "ChecklistInput",
    "CitationInput",
    "CriterionInput",
    "Finding",
    "GuidelineConfig",
    "Issue",
    "Report",
    "RuleInfo",
    "RuleSetting",
    "Scope",
    "Severity",
    "describe_rules",
    "preset",
    "rule_info",
    "validate_checklist",
    "validate_criterion",
]
