"""DRF's browsable API under the Content-Security-Policy: its scripts load from files, but
its jQuery and Bootstrap apply inline styles, allowed on those HTML pages alone."""

from __future__ import annotations

from rest_framework import renderers


class BrowsableAPIRenderer(renderers.BrowsableAPIRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None:
            response._csp_update = {"style-src": ["'unsafe-inline'"]}  # read by django-csp
        return super().render(data, accepted_media_type, renderer_context)
