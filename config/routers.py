"""The API router: detail routes match ids only (ASCII digits, at most 18), so
`/api/verdicts/abc/` or `/api/verdicts/²/` is a 404 like any unknown URL instead of reaching
a lookup that raises on a non-number."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from config.ids import MAX_DIGITS

ID_REGEX = f"[0-9]{{1,{MAX_DIGITS}}}"  # ASCII only: \d would take "²" and "٣"


class Router(DefaultRouter):
    def get_lookup_regex(self, viewset, lookup_prefix: str = "") -> str:
        if not hasattr(viewset, "lookup_value_regex"):
            lookup_field = getattr(viewset, "lookup_field", "pk")
            kwarg = getattr(viewset, "lookup_url_kwarg", None) or lookup_field
            return f"(?P<{lookup_prefix}{kwarg}>{ID_REGEX})"
        return super().get_lookup_regex(viewset, lookup_prefix)
