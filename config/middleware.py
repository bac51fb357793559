"""Request guards and response headers that apply to every route.

InputGuardMiddleware refuses, before any view runs, the inputs that would otherwise reach
code unable to handle them: a body larger than any form or import needs (413, before it is
read) and a NUL character in the query string or a form field (400: PostgreSQL cannot store
one, and no text of this application contains one). API paths answer JSON `{"detail": …}`,
pages the 400 page with the message.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from config import limits
from config.ids import parse_id

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def error_response(request: HttpRequest, status: int, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return render(request, "error.html", {"status": status, "message": message}, status=status)


class InputGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = parse_id(request.META.get("CONTENT_LENGTH") or "0") or 0
        limit = limits.request_max_bytes()
        if length > limit:
            return error_response(
                request,
                413,
                f"The request is {length / 1_048_576:.1f} MB; the largest accepted is "
                f"{limit / 1_048_576:.0f} MB (files up to "
                f"{limits.upload_max_bytes() / 1_048_576:.0f} MB).",
            )
        if _has_nul(request.GET.lists()) or (
            request.method == "POST"
            and request.content_type in FORM_TYPES
            and _has_nul(request.POST.lists())
        ):
            return error_response(request, 400, "NUL characters are not accepted in any field.")
        return self.get_response(request)


def _has_nul(items) -> bool:
    return any("\x00" in key or any("\x00" in v for v in values) for key, values in items)


class SecurityHeadersMiddleware:
    """Permissions-Policy on every response (Django sets the other security headers)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response


def forwarded_client_ip(request: HttpRequest) -> str:
    """The client's address behind one trusted proxy: the right-most X-Forwarded-For entry,
    which that proxy appended (entries to its left come from the client and may be forged)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    last = forwarded.rsplit(",", 1)[-1].strip()
    return last or request.META.get("REMOTE_ADDR", "")
