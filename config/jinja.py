"""The Jinja2 environment of the templates under templates/jinja2/.

Django's own engine renders every page; Jinja2 renders only the few fragments that a page
repeats hundreds of times under load (the review page's criterion rows: with them in
Jinja2 the page's CPU per view fell from 29 to 16 ms, for the same HTML; the review
queues' rows; the agreement page's tables and matrices; the bar charts; decision record
0006). Filters here stand in for the Django ones those fragments use.
"""

from __future__ import annotations

import datetime as dt

from django.forms.renderers import Jinja2 as Jinja2FormRenderer
from django.template import engines
from django.template.defaultfilters import add, floatformat, truncatechars
from django.utils.formats import date_format
from django.utils.timezone import template_localtime
from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

from evaluation.metrics.rubrics import outcome_shown

# Django's own Jinja2 templates of the form widgets (django/forms/jinja2/), for a widget of
# hundreds of options: Django's engine renders a <select> one template per option, and the
# start-run form's 200 queries were a third of the runs page's CPU (132 ms of Python, 95
# ms with these; docs/benchmarks.md, "Where a reader's time in the server goes"). The same
# HTML but for blank lines and entity spelling (&#34; for &quot;). Not site-wide: the
# admin's widget wrappers exist only as Django templates.
WIDGET_RENDERER = Jinja2FormRenderer()


def local_date(value: dt.datetime | None, format_string: str) -> str:
    """Django's `date` filter: the value in the current time zone, in Django's format."""
    if value is None:
        return ""
    return date_format(template_localtime(value), format_string)


def outcome_badge(outcome: str, is_penalty: bool = False, prefix: str = "") -> Markup:
    """The Django tag `outcome_badge` (evaluation.templatetags.outcome_words), the same HTML:
    a penalty's verdict reads "avoided" or "committed"."""
    word, css = outcome_shown(outcome or "", bool(is_penalty))
    return Markup('<span class="badge verdict-{}" data-outcome="{}">{}{}</span>').format(
        css, outcome, prefix, escape(word)
    )


def macros(name: str):
    """The macros of the fragment `name` (under templates/jinja2/), to call from Python or
    from a template tag: each returns its HTML as Markup, escaped by autoescape."""
    return engines["jinja2"].get_template(name).template.module


def environment(**options) -> Environment:
    # Everything printed is escaped, as in Django's templates. A name a fragment misspells
    # raises, in tests and in production alike (Django's default would print it in DEBUG and
    # nothing otherwise).
    options = {**options, "undefined": StrictUndefined}
    options.pop("autoescape", None)
    env = Environment(autoescape=True, **options)
    env.filters["local_date"] = local_date
    # Django's own, so that a fragment prints what the Django template it replaced did.
    env.filters["truncatechars"] = truncatechars
    env.filters["floatformat"] = floatformat
    env.filters["add"] = add
    env.globals["outcome_badge"] = outcome_badge
    env.globals["outcome_shown"] = outcome_shown
    return env
