"""Formatting of overlaps (shares in [0, 1]) for the cross-evaluation pages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def pct(value: float | None, digits: int = 0) -> str:
    """0.5 -> "50%"; with digits=1, 0.2941 -> "29.4%"; None -> "—"."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:.{int(digits)}f}%"
