"""Template context every page may use."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def costs(request: HttpRequest) -> dict[str, str]:
    """The currency of judge prices and cost estimates (settings.COST_CURRENCY)."""
    return {"cost_currency": settings.COST_CURRENCY}
