"""Single sign-on through OpenID Connect: the authorization-code flow of mozilla-django-oidc,
with the provider's endpoints from its discovery document and the checks this site needs.

Only loaded when OIDC_ENABLED (config/settings.py adds the backend, config/urls.py the two
URLs). What it adds to the library:

- the provider's endpoints come from `OIDC_ISSUER/.well-known/openid-configuration`, fetched
  at the first sign-in and kept for the life of the process, unless each is set explicitly;
- the id_token's audience, issuer and expiry are checked, not only its signature and nonce;
- people are matched to accounts by a verified email, case-insensitively; a first sign-in
  makes an account with no password and no role (accounts/services/sso.py);
- every refusal says why on the login page instead of a bare redirect or a 400 page.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from accounts.services.sso import sso_account_create

logger = logging.getLogger(__name__)

# The library's setting names for the endpoints, and their keys in a discovery document.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
UNREACHABLE = (
    "The sign-in provider could not be reached. Try again later, or log in with a password."
)
UNCHECKED = "The sign-in provider's answer could not be checked, so you were not signed in."
# An OAuth error code from the provider (RFC 6749 §4.1.2.1) is shown; its free-text
# description is not, since anyone can put text into a link to the callback.
ERROR_CODE = re.compile(r"[a-z_]{1,40}")


class SsoRefused(Exception):
    """A sign-in refused; the message is shown to the person as it is."""


@functools.lru_cache(maxsize=4)
def discovery(issuer: str) -> dict[str, Any]:
    """The provider's discovery document (OpenID Connect Discovery 1.0 §4). Failures are not
    cached: the next sign-in asks again."""
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        logger.warning("OpenID Connect discovery at %s failed: %s", url, exc)
        raise SsoRefused(UNREACHABLE) from exc
    if document.get("issuer") != issuer:
        # §4.3: a document naming another issuer is not this provider's.
        logger.error("%s names the issuer %r, not OIDC_ISSUER", url, document.get("issuer"))
        raise SsoRefused(UNREACHABLE)
    return document


def endpoint(name: str) -> str:
    """One of the provider's endpoints: set explicitly, or from the discovery document."""
    explicit = getattr(settings, name, None)
    if explicit:
        return explicit
    found = discovery(settings.OIDC_ISSUER).get(DISCOVERED[name])
    if not found:
        logger.error("The discovery document of %s has no %s", settings.OIDC_ISSUER, name)
        raise SsoRefused(UNREACHABLE)
    return found


def _refused(request: HttpRequest, message: str) -> HttpResponse:
    messages.error(request, message)
    return redirect("login")


class SsoBackend(OIDCAuthenticationBackend):
    """Answers the sign-in callback only (a request with `code` and `state`); returns None
    for every other login, password logins included."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not the library's __init__: it reads the endpoints, and Django makes every backend
        # for every login; a password login must not wait for (or fail with) the provider.
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.UserModel = get_user_model()

    # The library's attribute names, resolved at their first use rather than in __init__.
    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return endpoint("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:
        return endpoint("OIDC_OP_USER_ENDPOINT")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return endpoint("OIDC_OP_JWKS_ENDPOINT")

    def get_user(self, user_id: int):
        # Django's, which drops the session of a deactivated account; the library's does not.
        return ModelBackend.get_user(self, user_id)

    def _verify_jws(self, payload: str, key: Any) -> dict[str, Any]:
        # The library checks the signature alone; the audience, issuer and expiry are
        # checked here too (OpenID Connect Core §3.1.3.7).
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=60,  # clocks a little apart
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.InvalidAudienceError as exc:
            raise SsoRefused(
                "The sign-in provider's answer was issued to another application (audience), "
                "so you were not signed in."
            ) from exc
        except jwt.InvalidIssuerError as exc:
            raise SsoRefused(
                "The sign-in answer came from another provider (issuer), so you were not signed in."
            ) from exc
        except jwt.ExpiredSignatureError as exc:
            raise SsoRefused("The sign-in answer had expired. Sign in again.") from exc
        except jwt.InvalidSignatureError as exc:
            raise SsoRefused(
                "The sign-in answer's signature is not the provider's, so you were not signed in."
            ) from exc
        except jwt.InvalidTokenError as exc:
            logger.warning("An id_token was refused: %s", exc)
            raise SsoRefused(UNCHECKED) from exc

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload = self._verify_jws(token, self.retrieve_matching_jwk(token))
        if payload.get("nonce") != kwargs.get("nonce"):
            # The answer belongs to another sign-in than the one this browser started.
            raise SsoRefused(
                "The sign-in answer belongs to another sign-in (nonce). Sign in again."
            )
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict) -> dict[str, Any]:
        claims = super().get_userinfo(access_token, id_token, payload)
        if claims.get("sub") != payload.get("sub"):
            # OpenID Connect Core §5.3.2: userinfo about someone else must not be used.
            raise SsoRefused(UNCHECKED)
        return claims

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        email = (claims.get("email") or "").strip()
        if not email:
            raise SsoRefused(
                "The sign-in provider gave no email address, which this site needs to know "
                "who you are. Ask its administrator to release the email claim."
            )
        if settings.OIDC_REQUIRE_VERIFIED_EMAIL and claims.get("email_verified") not in (
            True,
            "true",  # some providers send the claim as a string
        ):
            raise SsoRefused(
                f"The sign-in provider has not verified the address {email}. Verify it there "
                "first, then sign in again."
            )
        domain = email.rpartition("@")[2].lower()
        allowed = settings.OIDC_ALLOWED_EMAIL_DOMAINS
        if allowed and domain not in allowed:
            raise SsoRefused(
                f"Addresses at {domain} cannot sign in to this site. Ask an admin for access."
            )
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]):
        # The active account with this address; failing that, any (an inactive one is then
        # refused with a message that says so, rather than a second account made).
        users = self.UserModel.objects.filter(email__iexact=claims["email"].strip())
        active = users.filter(is_active=True)
        if len(active) > 1:
            raise SsoRefused(
                "Several accounts use your email address, so single sign-on cannot tell which "
                "is yours. Ask an admin to give each its own address."
            )
        return active if active else users[:1]

    def create_user(self, claims: dict[str, Any]):
        return sso_account_create(
            email=claims["email"].strip(),
            username_hint=claims.get("preferred_username") or "",
            first_name=claims.get("given_name") or "",
            last_name=claims.get("family_name") or "",
        )


class SsoLoginView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider's authorization endpoint, with a state, a nonce and
    a PKCE challenge kept in the session for the callback."""

    def __init__(self, **kwargs: Any) -> None:
        # Not the library's __init__: it reads the endpoint (a request to the provider)
        # before get() could say that the provider is down.
        View.__init__(self, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            self.OIDC_OP_AUTH_ENDPOINT = endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except SsoRefused as refused:
            return _refused(request, str(refused))
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: checks the answer, logs the person in, or
    says on the login page why not."""

    def get(self, request: HttpRequest) -> HttpResponse:
        state = request.GET.get("state")
        if "code" in request.GET and state not in request.session.get("oidc_states", {}):
            # Not a sign-in this browser started (a forged or replayed link), or one already
            # finished: the library would answer 400 with no word of why.
            return _refused(
                request,
                "This sign-in answer does not belong to a sign-in started in this browser "
                "(state), or was used already. Sign in again.",
            )
        try:
            return super().get(request)
        except SsoRefused as refused:
            logger.info("Single sign-on refused: %s", refused)
            return _refused(request, str(refused))
        except SuspiciousOperation as exc:  # e.g. no published key matches the token's
            logger.warning("Single sign-on refused: %s", exc)
            return _refused(request, UNCHECKED)
        except requests.RequestException as exc:
            logger.warning("Single sign-on: the provider failed: %s", exc)
            return _refused(request, UNREACHABLE)

    def login_failure(self) -> HttpResponse:
        user = getattr(self, "user", None)
        error = self.request.GET.get("error", "")
        if user is not None and not user.is_active:
            message = "This account is deactivated. Ask an admin to reactivate it."
        elif error:
            code = error if ERROR_CODE.fullmatch(error) else "error"
            message = f"The sign-in provider did not sign you in ({code})."
        else:
            message = "Single sign-on did not sign you in. Sign in again."
        return _refused(self.request, message)
