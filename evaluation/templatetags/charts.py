"""`{% bar_chart chart %}`: a bar chart (evaluation.charts.bars.bar_chart) drawn by its
Jinja2 macro, templates/jinja2/evaluation/charts/bar_chart.jinja (decision 0006)."""

from __future__ import annotations

from django import template
from markupsafe import Markup

from config.jinja import macros

register = template.Library()

BAR_CHART_TEMPLATE = "evaluation/charts/bar_chart.jinja"


@register.simple_tag
def bar_chart(chart) -> Markup:
    """The chart's <figure>, escaped by Jinja2's autoescape."""
    return macros(BAR_CHART_TEMPLATE).bar_chart(chart)
