"""A judge's base URL as pages show it: query values and credentials masked
(evaluation.judging.keys.shown_url)."""

from __future__ import annotations

from django import template

from evaluation.judging.keys import shown_url

register = template.Library()
register.filter("shown_url", shown_url)
