"""Access helpers for people's objects. An invitation and a member are reached through their
dataset, with the permission to manage it; a token only by its owner. Anything else is a 404,
as if it did not exist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.http import Http404

from accounts.models import ApiToken, Invitation
from annotation import access, roles
from annotation.models import DatasetUserObjectPermission
from config.ids import parse_id

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotation.models import Dataset


def access_members(user: AbstractBaseUser, pk: int) -> Dataset:
    """The dataset, if the user may manage its members (its admins): 404 / 403 otherwise."""
    return access.access_dataset(user, pk, roles.CHANGE)


def access_invitation(user: AbstractBaseUser, pk: int, invitation_id: int) -> Invitation:
    dataset = access_members(user, pk)
    if parse_id(invitation_id) is None:
        raise Http404("No such invitation.")
    invitation = Invitation.objects.filter(pk=invitation_id, dataset=dataset).first()
    if invitation is None:
        raise Http404("No such invitation.")
    invitation.dataset = dataset
    return invitation


def access_member(
    user: AbstractBaseUser, pk: int, user_id: int
) -> tuple[Dataset, AbstractBaseUser, set[str]]:
    """The dataset, one of its members (a user granted permissions on it directly, as the
    members page lists them) and the permissions they were granted."""
    dataset = access_members(user, pk)
    if parse_id(user_id) is None:
        raise Http404("No such member.")
    member = get_user_model().objects.filter(pk=user_id).first()
    # Direct grants only: what a superuser or a group's member holds otherwise, removing
    # cannot take away. Inactive members count: they are listed, so they can be removed.
    granted = set(
        DatasetUserObjectPermission.objects.filter(
            user_id=user_id, content_object=dataset
        ).values_list("permission__codename", flat=True)
    )
    if member is None or not granted:
        raise Http404("No such member.")
    return dataset, member, granted


def access_token(user: AbstractBaseUser, pk: int) -> ApiToken:
    """The user's own token; anyone else's is a 404, for superusers too."""
    if parse_id(pk) is None:  # a number past the column is no token either
        raise Http404("No such token.")
    token = ApiToken.objects.filter(pk=pk, user_id=user.pk).first()
    if token is None:
        raise Http404("No such token.")
    return token
