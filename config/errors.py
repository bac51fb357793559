"""The server error answer (`handler500` in config/urls.py): JSON on API paths, the 500 page
elsewhere.

Django calls it for any exception a view or a middleware lets through, once it has logged
the exception with its traceback on the `django.request` logger ("Internal Server Error:
<path>", which ADMINS receive by email when set). An API client reads `{"detail": …}` as it
does every other error, never an HTML page, and never the traceback or the exception's text:
they may name tables, settings or paths.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

SERVER_ERROR = "Server error: the request failed on our side and the error has been logged."


def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": SERVER_ERROR}, status=500)
    return defaults.server_error(request, template_name)
