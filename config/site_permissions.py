"""Pages of site-wide objects (judges, panels, guidelines, new datasets): the Admin group's
model permissions decide who may open them (annotation.roles.GROUP_MODEL_PERMISSIONS), not a
role on a dataset, and a refusal says so in words (templates/403.html shows them), instead
of the dataset pages' "your role on this dataset"."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from annotation.roles import Group

# Judges' connection details (base URL, API key variable) and what an endpoint answered that
# was not a verdict (an unparseable output) are for the people who manage judges: the
# Admin group and superusers. Everyone else sees judges by name (docs/judging.md).
MANAGE_JUDGES = "evaluation.change_judge"


def manages_judges(user: object) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.has_perm(MANAGE_JUDGES))


def refusal(action: str) -> str:
    """What a person without the permission reads, `action` being what the page does
    ("Managing judges")."""
    return (
        f"{action} needs the {Group.ADMIN.value} role site-wide (the {Group.ADMIN.value} "
        "group). A role on a dataset, even its admin role, does not give it: ask a site "
        f"administrator to add you to the {Group.ADMIN.value} group."
    )


def site_permission_required(perm: str, *, action: str) -> Callable:
    """permission_required(perm, raise_exception=True), with the refusal in words."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def checked(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if not request.user.has_perm(perm):
                raise PermissionDenied(refusal(action))
            return view(request, *args, **kwargs)

        return checked

    return decorator
