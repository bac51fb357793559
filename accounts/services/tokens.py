"""Personal API tokens: made, revoked, and their last use recorded."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.authtoken.models import Token

from accounts import keys
from accounts.models import ApiToken
from accounts.services.errors import Refused
from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Dataset

if TYPE_CHECKING:
    from collections.abc import Iterable

    from django.contrib.auth.models import AbstractBaseUser

# Enough for every script and machine a person runs; a bound so that a loop gone wrong
# cannot fill the table.
MAX_TOKENS_PER_USER = 50
# "Last used" is written at most this often per token: a script polling every second must
# not turn each of its reads into a write.
LAST_USED_SPACING = dt.timedelta(minutes=1)


def api_token_create(
    *,
    user: AbstractBaseUser,
    name: str,
    scope: str = ApiToken.Scope.READ,
    datasets: Iterable[Dataset] = (),
    expires_at: dt.datetime | None = None,
    made_with: ApiToken | None = None,
) -> tuple[ApiToken, str]:
    """A new token and its key. The key is returned this once and never stored.

    `datasets` limits it (none: every dataset of the user); the user must be a member of
    each, and an admin of each for a rewards token, which must name at least one.
    `made_with` is the token the request came with, if any: what it makes may reach no
    further and live no longer than itself, so a leaked limited key cannot mint a wider one.
    """
    name = " ".join(name.split())
    if not name:
        raise Refused("Give the token a name, such as the script or machine that uses it.", "name")
    if scope not in ApiToken.Scope.values:
        raise Refused(f"Not a scope: {scope!r}.", "scope")
    datasets = _checked_datasets(user, scope, list(datasets))
    if expires_at is not None and expires_at <= timezone.now():
        raise Refused("The expiry must be in the future.", "expires_at")
    if made_with is not None:
        _within(made_with, datasets, expires_at)
    if ApiToken.objects.filter(user=user, name=name).exists():
        raise Refused(f"You already have a token called “{name}”.", "name")
    if ApiToken.objects.filter(user=user).count() >= MAX_TOKENS_PER_USER:
        raise Refused(f"You have {MAX_TOKENS_PER_USER} tokens: revoke some first.")
    key = keys.new_key(keys.TOKEN_MARKER)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user,
                name=name,
                scope=scope,
                prefix=keys.token_prefix(key),
                key_digest=keys.digest(key),
                expires_at=expires_at,
            )
            token.datasets.set(datasets)
    except IntegrityError:  # the same name, made a moment ago
        raise Refused(f"You already have a token called “{name}”.", "name") from None
    return token, key


def _checked_datasets(user: AbstractBaseUser, scope: str, datasets: list[Dataset]) -> list[Dataset]:
    needed = roles.CHANGE if scope == ApiToken.Scope.REWARDS else roles.VIEW
    if scope == ApiToken.Scope.REWARDS and not datasets:
        raise Refused(
            "A rewards token is made for chosen datasets: choose the ones it may score for.",
            "datasets",
        )
    for dataset in datasets:
        if needed not in dataset_permissions(user, dataset):
            role = "an admin" if needed == roles.CHANGE else "a member"
            raise Refused(f"You are not {role} of the dataset “{dataset.name}”.", "datasets")
    return datasets


def _within(made_with: ApiToken, datasets: list[Dataset], expires_at: dt.datetime | None) -> None:
    allowed = set(made_with.datasets.values_list("pk", flat=True))
    if allowed and (not datasets or not {d.pk for d in datasets} <= allowed):
        raise Refused(
            "The token this request came with is limited to some datasets: the token it makes "
            "must be limited to some of those.",
            "datasets",
        )
    if made_with.expires_at is not None and (
        expires_at is None or expires_at > made_with.expires_at
    ):
        raise Refused(
            "The token this request came with expires: the token it makes must expire no later.",
            "expires_at",
        )


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> None:
    """Delete the token: the next request that sends its key is refused."""
    token.delete()


def api_token_touch(*, token: ApiToken) -> None:
    """Record that the token was used now, unless that was recorded in the last minute."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_SPACING:
        return
    # Conditional, so that concurrent requests write once between them.
    ApiToken.objects.filter(pk=token.pk).filter(
        Q(last_used_at=None) | Q(last_used_at__lte=now - LAST_USED_SPACING)
    ).update(last_used_at=now)
    token.last_used_at = now


@transaction.atomic
def legacy_token_revoke(*, user: AbstractBaseUser) -> bool:
    """Delete the user's older DRF token (full access, kept in clear). True if there was one."""
    return bool(Token.objects.filter(user=user).delete()[0])
