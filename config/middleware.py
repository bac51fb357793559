"""Request guards and response headers that apply to every route.

InputGuardMiddleware refuses, before any view runs, the inputs that would otherwise reach
code unable to handle them: a body larger than any form or import needs (413, before it is
read) and a NUL character in the query string or a form field (400: PostgreSQL cannot store
one, and no text of this application contains one). API paths answer JSON `{"detail": …}`,
pages the 400 page with the message.
"""

from __future__ import annotations

from collections.abc import Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
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


class _Both:
    """A middleware that runs as its chain does: sync under WSGI, on the event loop under
    ASGI (the rewards service), so that an async view is never sent through Django's one
    thread for sync code. Subclasses say what to do before (`refused`) and after (`after`)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if self.is_async:
            return self._acall(request)
        return self.refused(request) or self.after(self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self.refused(request) or self.after(await self.get_response(request))

    def refused(self, request: HttpRequest) -> HttpResponse | None:
        return None

    def after(self, response: HttpResponse) -> HttpResponse:
        return response


class InputGuardMiddleware(_Both):
    def refused(self, request: HttpRequest) -> HttpResponse | None:
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
        return None


def _has_nul(items) -> bool:
    return any("\x00" in key or any("\x00" in v for v in values) for key, values in items)


class SecurityHeadersMiddleware(_Both):
    """Permissions-Policy on every response (Django sets the other security headers)."""

    def after(self, response: HttpResponse) -> HttpResponse:
        response.headers.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response


def forwarded_client_ip(request: HttpRequest) -> str:
    """The client's address behind one trusted proxy: the right-most X-Forwarded-For entry,
    which that proxy appended (entries to its left come from the client and may be forged)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    last = forwarded.rsplit(",", 1)[-1].strip()
    return last or request.META.get("REMOTE_ADDR", "")
