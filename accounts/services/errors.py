from __future__ import annotations

from typing import TYPE_CHECKING

from annotation.roles import with_article

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotation.roles import DatasetRole


class Refused(Exception):
    """A change the rules forbid. The message is for the person; `field` is the form field
    it belongs to (None: the form as a whole)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvitationUnusable(Exception):
    """The invitation cannot be accepted (any more); `state` says why
    (accounts.selectors.InvitationState)."""

    def __init__(self, state: str) -> None:
        super().__init__(state)
        self.state = state


class RoleChangeUnconfirmed(Exception):
    """Inviting `email` would change the role its account holds on the dataset (`held`) to
    `role`: the inviter confirms first (accounts.services.people.invite, `replaces`)."""

    def __init__(
        self, *, user: AbstractBaseUser, email: str, held: DatasetRole, role: DatasetRole
    ) -> None:
        name = user.get_username()
        super().__init__(f"{name} is {with_article(held)}; make them {with_article(role)}?")
        self.user = user
        self.email = email
        self.held = held
        self.role = role
