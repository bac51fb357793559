"""Members, invitations and accounts made in the app."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import keys, mail, selectors
from accounts.models import Invitation
from accounts.services.errors import InvitationUnusable, Refused, RoleChangeUnconfirmed
from annotation import roles
from annotation.access import held_permissions
from annotation.services import dataset_set_role
from audit.models import RoleChange

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotation.models import Dataset

logger = logging.getLogger(__name__)

# The site-wide group a new account joins with its first role. A dataset admin joins none:
# the Admin group's rights (creating datasets, judges, panels) are a site admin's to give,
# in the Django admin, never a dataset admin's.
ROLE_GROUPS = {
    roles.DatasetRole.EXPERT: roles.Group.EXPERT,
    roles.DatasetRole.REVIEWER: roles.Group.REVIEWER,
}


@dataclass(frozen=True)
class Invited:
    """What inviting an address did: an invitation sent, or, when an account already used
    the address, that account given the role (`before`: its role until then, None for
    none; `notified`: whether the notice was sent). An account that already held the role
    is left as it was (`before` is the role, nothing sent)."""

    invitation: Invitation | None = None
    user: AbstractBaseUser | None = None
    before: roles.DatasetRole | None = None
    notified: bool = False


def dataset_role(user: AbstractBaseUser, dataset: Dataset) -> roles.DatasetRole | None:
    """The role granted to `user` on `dataset` (None: no role)."""
    return roles.role_for_permissions(held_permissions(user, dataset))


@transaction.atomic
def role_set(
    *,
    dataset: Dataset,
    user: AbstractBaseUser,
    role: roles.DatasetRole | None,
    by: AbstractBaseUser | None,
    via: RoleChange.Via,
) -> roles.DatasetRole | None:
    """Make `user` hold exactly `role` on `dataset` (None: no role) and record the change in
    the audit history (audit.RoleChange), with who made it (`by`; None: the command line)
    and how. Every role a person gives or takes goes through here. A role already held
    changes nothing and records nothing. Returns the role held before."""
    before = dataset_role(user, dataset)
    if before == role:
        return before
    dataset_set_role(dataset=dataset, user=user, role=role)
    RoleChange.objects.create(
        dataset=dataset, dataset_name=dataset.name, user=user, username=user.get_username(),
        before=before or "", after=role or "", changed_by=by, via=via,
    )  # fmt: skip
    return before


def member_set_role(
    *,
    dataset: Dataset,
    user: AbstractBaseUser,
    role: roles.DatasetRole,
    by: AbstractBaseUser,
    via: RoleChange.Via = RoleChange.Via.MEMBERS,
) -> roles.DatasetRole | None:
    """Returns the role held before."""
    if user.pk == by.pk and role != roles.DatasetRole.ADMIN:
        # An admin demoting themselves could leave the dataset with nobody to run it.
        raise Refused("You cannot change your own role; ask another admin.")
    return role_set(dataset=dataset, user=user, role=role, by=by, via=via)


def member_remove(*, dataset: Dataset, user: AbstractBaseUser, by: AbstractBaseUser) -> None:
    """Take all access away. What the member made (checklists, labels, adjudications) stays,
    under their name; so do their assignments."""
    if user.pk == by.pk:
        raise Refused("You cannot remove yourself; ask another admin.")
    role_set(dataset=dataset, user=user, role=None, by=by, via=RoleChange.Via.MEMBERS)


def invite(
    *,
    dataset: Dataset,
    email: str,
    role: roles.DatasetRole,
    by: AbstractBaseUser,
    replaces: roles.DatasetRole | None = None,
    site: str = "",
) -> Invited:
    """Invite an address to the dataset with a role. If an active account already uses the
    address, that account gets the role at once and a notice instead of a link. Inviting an
    address again replaces its open invitation (the old link stops working).

    An account that holds another role on the dataset keeps it until the inviter confirms
    the change: RoleChangeUnconfirmed until `replaces` names the role it holds now (so a
    confirmation given while another admin changed that role asks again). Inviting an
    address is how one brings people in; it must not silently demote a co-admin.

    The email is sent before the invitation is committed: if it cannot be sent, nothing is
    saved and Refused says so. `site` is the address the links in the email start with
    (config.site.site_url of the inviter's request); empty: config.site's own choice."""
    email = get_user_model().objects.normalize_email(email.strip())
    accounts = selectors.active_accounts_with_email(email)
    if len(accounts) > 1:
        raise Refused("Several accounts use this address: add the person by username.", "email")
    if accounts:
        user = accounts[0]
        if user.pk == by.pk:
            raise Refused("That is your own address.", "email")
        held = dataset_role(user, dataset)
        if held == role:
            return Invited(user=user, before=held)
        if held is not None and replaces != held:
            raise RoleChangeUnconfirmed(user=user, email=email, held=held, role=role)
        before = member_set_role(
            dataset=dataset, user=user, role=role, by=by, via=RoleChange.Via.INVITATION
        )
        notified = mail.send_role_granted(
            dataset=dataset, user=user, role=role.value, by=by, site=site
        )
        return Invited(user=user, before=before, notified=notified)
    try:
        invitation = _invitation_sent(dataset=dataset, email=email, role=role, by=by, site=site)
    except IntegrityError:  # the same address invited by someone else at the same moment
        raise Refused("This address was invited a moment ago; reload the page.", "email") from None
    return Invited(invitation=invitation)


@transaction.atomic
def _invitation_sent(
    *, dataset: Dataset, email: str, role: roles.DatasetRole, by: AbstractBaseUser, site: str
) -> Invitation:
    now = timezone.now()
    Invitation.objects.filter(
        dataset=dataset, email__iexact=email, accepted_at=None, revoked_at=None
    ).update(revoked_at=now)
    key = keys.new_key()
    invitation = Invitation.objects.create(
        dataset=dataset,
        email=email,
        role=role.value,
        key_digest=keys.digest(key),
        invited_by=by,
        created_at=now,
        expires_at=now + dt.timedelta(days=settings.INVITATION_EXPIRY_DAYS),
    )
    try:
        mail.send_invitation(invitation=invitation, key=key, site=site)
    except mail.NotSent as exc:
        raise Refused(
            f"The invitation email could not be sent ({exc}), so no invitation was made. "
            "Ask your operator to check the server's email settings.",
            "email",
        ) from exc
    logger.info("%s invited %s to dataset %s as %s", by, email, dataset.pk, role.value)
    return invitation


@transaction.atomic
def invitation_revoke(*, invitation: Invitation) -> bool:
    """Withdraw an open invitation: its link stops working. False if it was not open."""
    return bool(
        Invitation.objects.filter(pk=invitation.pk, accepted_at=None, revoked_at=None).update(
            revoked_at=timezone.now()
        )
    )


def _open_invitation(key: str) -> Invitation:
    """The invitation for the key, locked until the transaction ends, if it can be used."""
    invitation = (
        Invitation.objects.select_for_update()
        .select_related("dataset")
        .filter(key_digest=keys.digest(key))
        .first()
    )
    state = selectors.invitation_state(invitation)
    if state != selectors.InvitationState.VALID:
        raise InvitationUnusable(state)
    return invitation


def _accepted(invitation: Invitation, user: AbstractBaseUser) -> None:
    role_set(
        dataset=invitation.dataset, user=user, role=roles.DatasetRole(invitation.role),
        by=invitation.invited_by, via=RoleChange.Via.ACCEPTED,
    )  # fmt: skip
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])


def _new_account(
    *, username: str, email: str, password: str, role: roles.DatasetRole
) -> AbstractBaseUser:
    User = get_user_model()
    if User.objects.filter(username__iexact=username).exists():
        raise Refused("A user with that username already exists.", "username")
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=password)
    except IntegrityError:  # the same name taken a moment ago
        raise Refused("A user with that username already exists.", "username") from None
    if role in ROLE_GROUPS:
        user.groups.add(Group.objects.get(name=ROLE_GROUPS[role].value))
    return user


@transaction.atomic
def invitation_accept(*, key: str, username: str, password: str) -> AbstractBaseUser:
    """Create the invitee's account and give it the role; the invitation is used up."""
    invitation = _open_invitation(key)
    user = _new_account(
        username=username,
        email=invitation.email,
        password=password,
        role=roles.DatasetRole(invitation.role),
    )
    _accepted(invitation, user)
    return user


@transaction.atomic
def invitation_accept_as(*, key: str, user: AbstractBaseUser) -> Invitation:
    """Accept for an existing account, signed in, whose address is the invited one (an
    account made after the invitation was sent)."""
    invitation = _open_invitation(key)
    if (user.email or "").lower() != invitation.email.lower():
        raise Refused(f"This invitation is for {invitation.email}, not for your account.")
    _accepted(invitation, user)
    return invitation


@transaction.atomic
def user_create(
    *,
    dataset: Dataset,
    username: str,
    email: str,
    password: str,
    role: roles.DatasetRole,
    by: AbstractBaseUser,
) -> AbstractBaseUser:
    """A new account with its initial password, member of the dataset at once."""
    email = get_user_model().objects.normalize_email(email.strip())
    if selectors.active_accounts_with_email(email):
        raise Refused("An account already uses this address: add it by username.", "email")
    user = _new_account(username=username, email=email, password=password, role=role)
    role_set(dataset=dataset, user=user, role=role, by=by, via=RoleChange.Via.ACCOUNT)
    logger.info("%s created the account %s as %s of dataset %s", by, user, role.value, dataset.pk)
    return user
