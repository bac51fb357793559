"""Outcomes as pages show them: a penalty's verdicts read "avoided" / "committed"
(evaluation.metrics.rubrics.outcome_shown), never a red "fail" when the pitfall was avoided."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from evaluation.metrics.rubrics import outcome_shown

register = template.Library()


@register.simple_tag
def outcome_badge(outcome: str, is_penalty: bool = False, prefix: str = "") -> SafeString:
    """<span class="badge verdict-…">word</span> for an outcome on a criterion."""
    word, css = outcome_shown(outcome or "", bool(is_penalty))
    return format_html(
        '<span class="badge verdict-{}" data-outcome="{}">{}{}</span>', css, outcome, prefix, word
    )


@register.filter
def outcome_css(outcome: str, is_penalty: bool = False) -> str:
    """The colour an outcome is shown in (`final-…`, `verdict-…`): a penalty avoided is a
    pass's green, a penalty committed a failure's red."""
    return outcome_shown(outcome or "", bool(is_penalty))[1]
