"""Reads about people: a dataset's members and pending invitations, what a member leaves
behind, an invitation's state, a user's tokens."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from rest_framework.authtoken.models import Token

from accounts import keys
from accounts.models import ApiToken, Invitation
from annotation import roles
from annotation.models import Checklist, Dataset, DatasetUserObjectPermission, Query
from evaluation.labels.models import Adjudication, HumanLabel, ReviewAssignment

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


class InvitationState(StrEnum):
    VALID = "valid"
    UNKNOWN = "unknown"  # no invitation has this key: mistyped, cut short or tampered with
    USED = "used"
    REVOKED = "revoked"
    EXPIRED = "expired"
    GONE = "gone"  # its dataset is being deleted


def members(dataset: Dataset) -> list[tuple[AbstractBaseUser, roles.DatasetRole | None]]:
    """Users granted permissions on the dataset directly, with their role (None: a set of
    permissions that is no role, shown as "custom"), by username. Two queries, however many
    members (guardian's get_users_with_perms asks once per member for their permissions)."""
    granted: dict[int, set[str]] = defaultdict(set)
    for user_id, codename in DatasetUserObjectPermission.objects.filter(
        content_object=dataset
    ).values_list("user_id", "permission__codename"):
        granted[user_id].add(codename)
    users = get_user_model().objects.filter(pk__in=granted).order_by("username")
    return [(user, roles.role_for_permissions(granted[user.pk])) for user in users]


def pending_invitations(dataset: Dataset) -> QuerySet[Invitation]:
    """Open invitations (expired ones too, until revoked), by address."""
    return (
        Invitation.objects.filter(dataset=dataset, accepted_at=None, revoked_at=None)
        .select_related("invited_by")
        .order_by("email", "pk")
    )


def invitation_for_key(key: str) -> Invitation | None:
    if not key or len(key) > 200:
        return None
    return (
        Invitation.objects.select_related("dataset", "invited_by")
        .filter(key_digest=keys.digest(key))
        .first()
    )


def invitation_state(invitation: Invitation | None) -> InvitationState:
    if invitation is None:
        return InvitationState.UNKNOWN
    if invitation.accepted_at is not None:
        return InvitationState.USED
    if invitation.revoked_at is not None:
        return InvitationState.REVOKED
    if invitation.dataset.deleting_since is not None:
        return InvitationState.GONE
    if invitation.is_expired:
        return InvitationState.EXPIRED
    return InvitationState.VALID


def active_accounts_with_email(email: str) -> list[AbstractBaseUser]:
    """At most two: one is the account to use, two means the address is ambiguous."""
    if not email:
        return []
    return list(get_user_model().objects.filter(email__iexact=email, is_active=True)[:2])


@dataclass(frozen=True)
class Footprint:
    """What a member made in a dataset: it stays when they are removed."""

    checklists: int
    submitted: int
    labels: int
    adjudications: int
    assigned_queries: int
    review_assignments: int


def member_footprint(dataset: Dataset, user: AbstractBaseUser) -> Footprint:
    checklists = Checklist.objects.filter(query__dataset=dataset, author=user)
    return Footprint(
        checklists=checklists.count(),
        submitted=checklists.filter(status=Checklist.Status.SUBMITTED).count(),
        labels=HumanLabel.objects.filter(answer__query__dataset=dataset, reviewer=user).count(),
        adjudications=Adjudication.objects.filter(
            answer__query__dataset=dataset, decided_by=user
        ).count(),
        assigned_queries=Query.objects.filter(dataset=dataset, assigned_experts=user).count(),
        review_assignments=ReviewAssignment.objects.filter(
            answer__query__dataset=dataset, assignee=user
        ).count(),
    )


def tokens_for_user(user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return (
        ApiToken.objects.filter(user_id=user.pk)
        .prefetch_related("datasets")
        .order_by("-created_at", "-pk")
    )


def legacy_token(user: AbstractBaseUser) -> Token | None:
    """The user's DRF token (made with `manage.py drf_create_token` or the Django admin)."""
    return Token.objects.filter(user=user).first()
