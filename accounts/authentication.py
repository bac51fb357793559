"""The API's token authentication: `Authorization: Token <key>`, for both kinds of token.

Keys that start with keys.TOKEN_MARKER are personal API tokens (accounts.models.ApiToken),
found by their SHA-256; a read-only one is refused on any method that writes. Any other key
is an older DRF token (`manage.py drf_create_token`, the Django admin), kept working with
full access as before.
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import SAFE_METHODS

from accounts import keys, services
from accounts.models import ApiToken

READ_ONLY_REFUSAL = (
    "This token is read-only: it may only read (GET, HEAD, OPTIONS). Make a read-and-write "
    "token on your account page to change anything."
)


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        found = super().authenticate(request)
        if found is None:
            return None
        token = found[1]
        if isinstance(token, ApiToken) and token.read_only and request.method not in SAFE_METHODS:
            # Raised here rather than in each view's permissions, so that no view, however
            # its permission classes are set, lets a read-only key write.
            raise exceptions.PermissionDenied(READ_ONLY_REFUSAL)
        return found

    def authenticate_credentials(self, key: str):
        if not key.startswith(keys.TOKEN_MARKER):
            return super().authenticate_credentials(key)
        token = ApiToken.objects.select_related("user").filter(key_digest=keys.digest(key)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        services.api_token_touch(token=token)
        return (token.user, token)
