"""/favicon.ico: browsers ask for it on every page whatever the page links, so it answers
with a redirect to the static icon (hashed, cached for a year by whitenoise) instead of a
404 in every log. Public, like the login page: an icon tells nothing."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    return HttpResponseRedirect(static("img/favicon.ico"))
