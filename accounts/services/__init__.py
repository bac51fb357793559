"""Writes about people. Each checks its own preconditions and raises Refused, whose message
is shown to the person as it is (and names the form field it belongs to).

Callers check access first (accounts.permissions, annotation.permissions).
"""

from __future__ import annotations

from accounts.services.errors import InvitationUnusable, Refused
from accounts.services.people import (
    Invited,
    invitation_accept,
    invitation_accept_as,
    invitation_revoke,
    invite,
    member_remove,
    member_set_role,
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
    "api_token_create",
    "api_token_revoke",
    "api_token_touch",
    "invitation_accept",
    "invitation_accept_as",
    "invitation_revoke",
    "invite",
    "legacy_token_revoke",
    "member_remove",
    "member_set_role",
    "user_create",
]
