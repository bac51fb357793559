"""The account page: who you are, your password, and your API tokens. Only ever your own:
no id in these URLs reaches another person's token."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts import access, selectors, services
from accounts.forms import TokenForm, refusal_on
from accounts.models import ApiToken
from config.form_pages import form_status
from config.site import site_url


def _page(
    request: HttpRequest, *, form: TokenForm | None = None, created=None, key: str = ""
) -> HttpResponse:
    form = form or TokenForm(user=request.user)
    context = {
        "form": form,
        "tokens": selectors.tokens_for_user(request.user),
        "legacy_token": selectors.legacy_token(request.user),
        "created": created,
        "key": key,
        "ready_request": _ready_request(request, created, key) if key else "",
    }
    return render(request, "accounts/profile.html", context, status=form_status(form))


def _ready_request(request: HttpRequest, token, key: str) -> str:
    """A request the new token answers as it is, to copy into a terminal: the datasets it
    may read (GET /api/datasets/). None for a rewards-only token, which may call the reward
    endpoints alone: each dataset's Rewards page shows a request with its ids."""
    if token.scope == ApiToken.Scope.REWARDS:
        return ""
    url = site_url(request) + reverse("api:dataset-list")
    return f'curl -H "Authorization: Token {key}" {url}'


@require_GET
@login_required
def profile(request: HttpRequest) -> HttpResponse:
    return _page(request)


@never_cache  # the response shows a key, once: no cache may keep it
@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            token, key = services.api_token_create(user=request.user, **form.token_fields())
        except services.Refused as refused:
            refusal_on(form, refused)
        else:
            # Rendered, not redirected: the key must not pass through the session or a
            # message cookie, and this response is the only place it is ever shown.
            return _page(request, created=token, key=key)
    return _page(request, form=form)


@require_POST
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = access.access_token(request.user, pk)
    services.api_token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked: its key no longer works.")
    return redirect("account")


@require_POST
@login_required
def legacy_token_revoke(request: HttpRequest) -> HttpResponse:
    if services.legacy_token_revoke(user=request.user):
        messages.success(request, "Your older full-access token is revoked.")
    return redirect("account")
