"""Secrets shown to a person once and kept only as digests: API token keys and invitation
keys. Plain Python, no Django.

A key is 32 random bytes (URL-safe base64, 43 characters) after a short marker; the database
keeps its SHA-256 and nothing else. A fast unsalted hash is right here, unlike for passwords:
the key is random and long, so no dictionary or brute force reaches it, and the digest can be
looked up through a unique index.
"""

from __future__ import annotations

import hashlib
import secrets

# API token keys start with this, so that the authentication class tells them from the
# older DRF tokens (40 hex digits) without a database look-up, and a key found in a log or
# a repository is recognisable for what it is.
TOKEN_MARKER = "cwb_"  # noqa: S105 (a marker every key starts with, not a secret)
# Characters of a token key kept in clear to tell tokens apart on the profile page.
TOKEN_PREFIX_LENGTH = len(TOKEN_MARKER) + 6


def new_key(marker: str = "") -> str:
    return marker + secrets.token_urlsafe(32)


def digest(key: str) -> str:
    """The SHA-256 of the key, as 64 hexadecimal digits."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def token_prefix(key: str) -> str:
    return key[:TOKEN_PREFIX_LENGTH]
