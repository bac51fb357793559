"""Opening an invitation link. The key in the link is the credential: no login is needed,
and a key that matches nothing, or an invitation used, revoked or expired, gets a page that
says which and what to do."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts import selectors, services
from accounts.forms import AcceptInvitationForm, refusal_on
from accounts.selectors import InvitationState
from annotation import roles
from config.form_pages import form_status

# An unknown key is "not found"; an invitation that existed but is over is "gone".
UNUSABLE_STATUS = {InvitationState.UNKNOWN: 404}


def _unusable(request: HttpRequest, state: str) -> HttpResponse:
    status = UNUSABLE_STATUS.get(state, 410)
    return render(request, "accounts/invitation_unusable.html", {"state": state}, status=status)


def _welcome(request: HttpRequest, invitation) -> HttpResponse:
    dataset = invitation.dataset
    messages.success(
        request,
        f"Welcome! You joined “{dataset.name}” as {roles.with_article(invitation.role)}: "
        "here it is.",
    )
    return redirect("dataset-detail", pk=dataset.pk)


@never_cache  # the page carries a form for a one-time link; never from a shared cache
@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, key: str) -> HttpResponse:
    invitation = selectors.invitation_for_key(key)
    state = selectors.invitation_state(invitation)
    if state != InvitationState.VALID:
        return _unusable(request, state)
    context = {"invitation": invitation, "dataset": invitation.dataset}
    user = request.user
    if user.is_authenticated:
        # Signed in: the invitation can go to this account only if it is the address invited.
        context["is_theirs"] = (user.email or "").lower() == invitation.email.lower()
        if request.method == "POST" and context["is_theirs"]:
            try:
                services.invitation_accept_as(key=key, user=user)
            except services.InvitationUnusable as unusable:
                return _unusable(request, unusable.state)
            return _welcome(request, invitation)
        return render(request, "accounts/invitation_signed_in.html", context)
    if selectors.active_accounts_with_email(invitation.email):
        # An account made with this address since the invitation was sent: log in with it.
        return render(request, "accounts/invitation_log_in.html", context)
    form = AcceptInvitationForm(
        request.POST if request.method == "POST" else None, email=invitation.email
    )
    if request.method == "POST" and form.is_valid():
        try:
            new_user = services.invitation_accept(
                key=key,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
            )
        except services.InvitationUnusable as unusable:
            return _unusable(request, unusable.state)
        except services.Refused as refused:
            refusal_on(form, refused)
        else:
            login(request, new_user, backend="django.contrib.auth.backends.ModelBackend")
            return _welcome(request, invitation)
    context["form"] = form
    return render(request, "accounts/invitation_accept.html", context, status=form_status(form))
