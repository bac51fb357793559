"""A loopback OpenID Connect provider for the single sign-on tests: a real HTTP server on
127.0.0.1 in a thread, speaking the authorization-code flow with PKCE.

- `GET /.well-known/openid-configuration`: the discovery document;
- `GET /authorize`: signs in `person` at once (no login page) and redirects to the
  redirect_uri with a one-time code and the state;
- `POST /token`: trades the code (checking the client's secret, the redirect_uri and the
  PKCE verifier) for an access token and an id_token signed RS256 with `key`;
- `GET /jwks`: the public half of `key`; `GET /userinfo`: `person`'s claims.

To test the client's checks, change what the provider says: `person` (the claims of whoever
signs in), `id_token_claims` (claims that replace the id_token's own: another `aud`, `nonce`,
`iss`, `exp`), `signing_key` (sign with a key the JWKS does not publish).

`signed_on(settings, provider)` turns single sign-on on against it for one test: the
settings as OIDC_* variables would set them, and the URL conf loaded again (config/urls.py
adds the URLs only when it is on).
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from django.urls import clear_url_caches

KID = "stub-key-1"
BACKEND = "accounts.sso.SsoBackend"


def _reload_urls() -> None:
    import config.urls

    importlib.reload(config.urls)
    clear_url_caches()


@contextmanager
def signed_on(settings, provider: OidcProvider) -> Iterator[OidcProvider]:
    """`settings`: pytest-django's fixture, which puts the values back after the test."""
    enabled = settings.OIDC_ENABLED
    settings.OIDC_ENABLED = True
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.OIDC_LOGIN_LABEL = "Sign in with Stub"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, BACKEND]
    _reload_urls()
    try:
        yield provider
    finally:
        settings.OIDC_ENABLED = enabled
        _reload_urls()


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class OidcProvider:
    def __init__(self, *, client_id: str = "workbench", client_secret: str = "stub-secret"):
        self.client_id = client_id
        self.client_secret = client_secret
        self.key = new_key()
        self.signing_key: rsa.RSAPrivateKey | None = None
        self.person: dict[str, Any] = {
            "sub": "stub-person-1",
            "email": "rosa@example.com",
            "email_verified": True,
            "preferred_username": "rosa",
            "given_name": "Rosa",
            "family_name": "Stub",
        }
        self.id_token_claims: dict[str, Any] = {}
        self.token_requests = 0
        self._codes: dict[str, dict[str, Any]] = {}
        self._access: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._json(200, provider.discovery())
                elif url.path == "/authorize":
                    self._redirect(provider.authorize(query))
                elif url.path == "/jwks":
                    self._json(200, provider.jwks())
                elif url.path == "/userinfo":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    claims = provider._access.get(token)
                    if claims:
                        self._json(200, claims)
                    else:
                        self._json(401, {"error": "invalid_token"})
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if urlsplit(self.path).path == "/token":
                    status, body = provider.token(form)
                    self._json(status, body)
                else:
                    self._json(404, {"error": "not_found"})

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _redirect(self, location: str) -> None:
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OidcProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- The protocol --------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def authorize(self, query: dict[str, str]) -> str:
        """The person is signed in at the provider already: back at once with a code."""
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = {"person": dict(self.person), **query}
        back = {"code": code, "state": query.get("state", "")}
        return f"{query['redirect_uri']}?{urlencode(back)}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.token_requests += 1
            grant = self._codes.pop(form.get("code", ""), None)  # a code works once
        if grant is None or form.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant"}
        if (form.get("client_id"), form.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ) or grant.get("client_id") != self.client_id:
            return 401, {"error": "invalid_client"}
        if form.get("redirect_uri") != grant.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        if challenge.rstrip(b"=").decode() != grant.get("code_challenge"):
            return 400, {"error": "invalid_grant"}
        person = grant["person"]
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": person["sub"],
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": grant.get("nonce"),
            **self.id_token_claims,
        }
        id_token = jwt.encode(
            claims, self.signing_key or self.key, algorithm="RS256", headers={"kid": KID}
        )
        access_token = secrets.token_urlsafe(16)
        with self._lock:
            self._access[access_token] = person
        return 200, {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": id_token,
        }
