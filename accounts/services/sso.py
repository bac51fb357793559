"""The account made at a person's first single sign-on (accounts/sso.py)."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import transaction

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

# What Django's username validator accepts, less the length kept for a "-2" suffix.
NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")
USERNAME_LENGTH = 140


def _username_base(hint: str, email: str) -> str:
    for candidate in (hint, email.partition("@")[0]):
        cleaned = NOT_IN_USERNAME.sub("", candidate)[:USERNAME_LENGTH]
        if cleaned:
            return cleaned
    return "user"


@transaction.atomic
def sso_account_create(
    *, email: str, username_hint: str = "", first_name: str = "", last_name: str = ""
) -> AbstractBaseUser:
    """An account for someone the provider vouched for, who has none here yet.

    It has no usable password (the person signs in through the provider; an admin can set
    one in the site administration), no site-wide group and no role on any dataset: it sees
    no dataset until an admin gives it a role on a dataset's members page, or the person
    accepts an invitation sent to this address.
    """
    users = get_user_model().objects
    base = _username_base(username_hint, email)
    username, n = base, 1
    while users.filter(username__iexact=username).exists():
        n += 1
        username = f"{base}-{n}"
    user = users.create_user(
        username=username,
        email=users.normalize_email(email),
        password=None,  # an unusable password: no password login until one is set
        first_name=first_name[:150],
        last_name=last_name[:150],
    )
    logger.info("Single sign-on made the account %s (no role yet)", user)
    return user
