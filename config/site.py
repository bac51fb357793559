"""The site's own address, for links that leave it (emails).

SITE_URL when it is set (production, and `dev.py run`, which sets it from HOST and PORT).
Unset, the address of the request being answered: an admin inviting someone from
http://127.0.0.1:8310/ sends a link to http://127.0.0.1:8310/…. That is safe to use because
Django refuses a Host header that ALLOWED_HOSTS does not name before any view runs, so a
forged Host cannot put another site's address into an email. Without either (a worker
sending an alert), the development server's default address.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

FALLBACK = "http://127.0.0.1:8000"


def site_url(request: HttpRequest | None = None) -> str:
    """The base address, without a trailing slash."""
    if settings.SITE_URL:
        return settings.SITE_URL.rstrip("/")
    if request is not None:
        return request.build_absolute_uri("/").rstrip("/")
    return FALLBACK


def absolute(path: str, request: HttpRequest | None = None) -> str:
    return site_url(request) + path
