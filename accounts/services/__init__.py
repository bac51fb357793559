"""Writes about people. Each checks its own preconditions and raises Refused, whose message
is shown to the person as it is (and names the form field it belongs to).

Callers check access first (accounts.access, annotation.access).
"""

from __future__ import annotations

from accounts.services.errors import InvitationUnusable, Refused, RoleChangeUnconfirmed
from accounts.services.people import (
    Invited,
    dataset_role,
    invitation_accept,
    invitation_accept_as,
    invitation_revoke,
    invite,
    member_remove,
    member_set_role,
    role_set,
    user_create,
)
from accounts.services.tokens import (
    api_token_create,
    api_token_revoke,
    api_token_touch,
    legacy_token_revoke,
)

__all__ = [
    "InvitationUnusable",
    "Invited",
    "Refused",
    "RoleChangeUnconfirmed",
    "api_token_create",
    "api_token_revoke",
    "api_token_touch",
    "dataset_role",
    "invitation_accept",
    "invitation_accept_as",
    "invitation_revoke",
    "invite",
    "legacy_token_revoke",
    "member_remove",
    "member_set_role",
    "role_set",
    "user_create",
]
