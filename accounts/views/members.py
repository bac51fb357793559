"""A dataset's members page: members and their roles, pending invitations, adding someone
by username, inviting by email (an existing account's role changed only once confirmed),
making an account; and removing a member, confirmed first. Every view needs the permission
to manage the dataset (its admins)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts import access, mail, selectors, services
from accounts.forms import InviteForm, MemberForm, NewAccountForm, refusal_on
from annotation import roles
from annotation.models import Dataset
from config.form_pages import form_status
from config.site import site_url

TEMPLATE = "accounts/dataset_members.html"


def _page(
    request: HttpRequest,
    dataset: Dataset,
    *,
    form: MemberForm | None = None,
    invite_form: InviteForm | None = None,
    account_form: NewAccountForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "dataset": dataset,
        "form": form or MemberForm(),
        "invite_form": invite_form or InviteForm(),
        "account_form": account_form or NewAccountForm(),
        "members": selectors.members(dataset),
        "invitations": selectors.pending_invitations(dataset),
        "expiry_days": settings.INVITATION_EXPIRY_DAYS,
        "email_delivery": mail.delivery(),
        "link_site": site_url(request),
    }
    return render(request, TEMPLATE, context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def dataset_members(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_members(request.user, pk)
    form = MemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.cleaned_data["username"]
        role = roles.DatasetRole(form.cleaned_data["role"])
        try:
            services.member_set_role(dataset=dataset, user=user, role=role, by=request.user)
        except services.Refused as refused:
            messages.error(request, refused.message)
        else:
            messages.success(
                request, f"{user.username} is now {roles.with_article(role)} on this dataset."
            )
        return redirect("dataset-members", pk=dataset.pk)
    return _page(request, dataset, form=form)


@require_POST
@login_required
def dataset_invite(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_members(request.user, pk)
    form = InviteForm(request.POST)
    if form.is_valid():
        role = roles.DatasetRole(form.cleaned_data["role"])
        replaces = form.cleaned_data["replaces"]
        try:
            invited = services.invite(
                dataset=dataset, email=form.cleaned_data["email"], role=role, by=request.user,
                replaces=roles.DatasetRole(replaces) if replaces else None,
                site=site_url(request),  # the address the admin is using, unless SITE_URL
            )  # fmt: skip
        except services.Refused as refused:
            refusal_on(form, refused)
        except services.RoleChangeUnconfirmed as unconfirmed:
            # The second step: the change, said in full, and a button that makes it.
            context = {"dataset": dataset, "change": unconfirmed}
            return render(request, "accounts/invite_confirm.html", context)
        else:
            if invited.user is not None:
                name = invited.user.get_username()
                if invited.before == role:
                    messages.info(
                        request,
                        f"{name} already has an account with this address and is already "
                        f"{roles.with_article(role)} on this dataset: nothing changed.",
                    )
                    return redirect("dataset-members", pk=dataset.pk)
                note = "" if invited.notified else " (the email telling them could not be sent)"
                was = f" (they were {roles.with_article(invited.before)})" if invited.before else ""
                messages.success(
                    request,
                    f"{name} already has an account with this address: they are now "
                    f"{roles.with_article(role)} on this dataset{was}{note}.",
                )
            else:
                messages.success(
                    request,
                    f"Invitation sent to {invited.invitation.email}; the link works until "
                    f"{invited.invitation.expires_at:%Y-%m-%d %H:%M} UTC.",
                )
            return redirect("dataset-members", pk=dataset.pk)
    return _page(request, dataset, invite_form=form, status=form_status(form))


@require_POST
@login_required
def dataset_account_create(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access.access_members(request.user, pk)
    form = NewAccountForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        role = roles.DatasetRole(data["role"])
        try:
            user = services.user_create(
                dataset=dataset,
                username=data["username"],
                email=data["email"],
                password=data["password1"],
                role=role,
                by=request.user,
            )
        except services.Refused as refused:
            refusal_on(form, refused)
        else:
            messages.success(
                request,
                f"Account {user.get_username()} made: {roles.with_article(role)} on this dataset.",
            )
            return redirect("dataset-members", pk=dataset.pk)
    return _page(request, dataset, account_form=form, status=form_status(form))


@require_POST
@login_required
def invitation_revoke(request: HttpRequest, pk: int, invitation_id: int) -> HttpResponse:
    invitation = access.access_invitation(request.user, pk, invitation_id)
    if services.invitation_revoke(invitation=invitation):
        messages.success(request, f"Invitation to {invitation.email} revoked: its link is dead.")
    else:
        messages.error(request, f"The invitation to {invitation.email} was no longer open.")
    return redirect("dataset-members", pk=invitation.dataset.pk)


@require_http_methods(["GET", "POST"])
@login_required
def dataset_member_remove(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    """GET: what removing the member does and keeps, and the button. POST with `confirm`
    removes; a POST without it (a stale form, a script) changes nothing and shows the page."""
    dataset, member, granted = access.access_member(request.user, pk, user_id)
    if request.method == "POST" and request.POST.get("confirm") == "remove":
        try:
            services.member_remove(dataset=dataset, user=member, by=request.user)
        except services.Refused as refused:
            messages.error(request, refused.message)
        else:
            messages.success(
                request,
                f"{member.get_username()} no longer has access to this dataset; "
                "what they made stays.",
            )
        return redirect("dataset-members", pk=dataset.pk)
    context = {
        "dataset": dataset,
        "member": member,
        "role": roles.role_for_permissions(granted),
        "footprint": selectors.member_footprint(dataset, member),
        "is_self": member.pk == request.user.pk,
    }
    return render(request, "accounts/member_remove.html", context)
