"""The API's token authentication: `Authorization: Token <key>`, for both kinds of token.

Keys that start with keys.TOKEN_MARKER are personal API tokens (accounts.models.ApiToken),
found by their SHA-256. Each token's limits are enforced here, once, for every view however
its permission classes are set: an expired token authenticates nobody; a read-only one is
refused on any method that writes; a rewards-only one is refused outside /api/rewards/; and
one limited to chosen datasets carries that list on the user for the request, which
annotation.access and annotation.selectors apply to every dataset access. Any other key
is an older DRF token (`manage.py drf_create_token`, the Django admin), kept working with
full access as before.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import SAFE_METHODS

from accounts import keys, services
from accounts.models import ApiToken
from annotation.access import LIMITED_DATASETS_ATTRIBUTE
from config import shared_lookups

READ_ONLY_REFUSAL = (
    "This token is read-only: it may only read (GET, HEAD, OPTIONS). Make a read-and-write "
    "token on your account page to change anything."
)
REWARDS_ONLY_REFUSAL = (
    "This token is for rewards only: it may call /api/rewards/ and nothing else. Use a read "
    "or read-and-write token for the rest of the API."
)
# The URL routes a rewards-only token may reach (evaluation.rewards).
REWARDS_ROUTE_PREFIX = "api/rewards/"


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        found = super().authenticate(request)
        if found is None:
            return None
        user, token = found
        if not isinstance(token, ApiToken):
            return found
        if token.read_only and request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied(READ_ONLY_REFUSAL)
        if token.scope == ApiToken.Scope.REWARDS and not _is_rewards_route(request):
            raise exceptions.PermissionDenied(REWARDS_ONLY_REFUSAL)
        limited_to = shared_lookups.once(
            ("token-datasets", token.pk),
            lambda: frozenset(token.datasets.values_list("pk", flat=True)),
        )
        if limited_to:
            setattr(user, LIMITED_DATASETS_ATTRIBUTE, limited_to)
        return found

    def authenticate_credentials(self, key: str):
        if not key.startswith(keys.TOKEN_MARKER):
            return super().authenticate_credentials(key)
        digest = keys.digest(key)
        token = shared_lookups.once(
            ("api-token", digest),
            lambda: ApiToken.objects.select_related("user").filter(key_digest=digest).first(),
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        if token.is_expired:
            expired = timezone.localtime(token.expires_at).strftime("%Y-%m-%d %H:%M")
            raise exceptions.AuthenticationFailed(
                f"This token expired on {expired}: make a new one on your account page."
            )
        services.api_token_touch(token=token)
        return (token.user, token)


def _is_rewards_route(request) -> bool:
    match = getattr(request._request, "resolver_match", None)
    return match is not None and match.route.startswith(REWARDS_ROUTE_PREFIX)
