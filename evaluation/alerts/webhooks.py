"""Where a regression alert's webhook may go, and the POST itself.

A dataset admin types the webhook's URL, and the server's workers POST to it: without a
check, an admin could make them reach what only the server can (a database, a cloud
metadata endpoint at 169.254.169.254, an admin port on localhost). So:

- `ALERT_WEBHOOK_ALLOWED_HOSTS` set: only those hosts (an entry starting with a dot: every
  subdomain of it), wherever they point: the operator vouches for them.
- Empty: any host, except one that resolves to an address that is not public (loopback,
  private, link-local, reserved, multicast, unspecified, shared; IPv6 forms that carry an
  IPv4 address are judged by it). Every address the name resolves to must pass.

The URL is checked when the alert is saved, and again when sending (DNS can change; an
alert saved in the site administration or before this check). When sending, the POST goes
to the very address that was checked (the name is not resolved twice: no DNS rebinding in
between), with the URL's host in `Host` and in TLS's server name, and a redirect is
answered as it is, never followed to another address.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

SCHEMES = {"http": 80, "https": 443}
# IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, RFC 6052 / 8215).
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(Exception):
    """The URL may not be called; the message says why, for the admin."""


class Unresolved(WebhookRefused):
    """The host's name did not resolve: refused when the alert is saved, but worth another
    try when sending (DNS can fail for a moment)."""


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`addresses`, already resolved) and what to ask."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def allowed_hosts() -> tuple[str, ...]:
    return tuple(h.strip().lower() for h in settings.ALERT_WEBHOOK_ALLOWED_HOSTS if h.strip())


def _on_list(host: str, hosts: Sequence[str]) -> bool:
    return any(host == h or (h.startswith(".") and host.endswith(h)) for h in hosts)


def _public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo:
            embedded = address.teredo[1]  # the client's address
        if embedded is None and any(address in net for net in _NAT64):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and not _public(embedded):
            return False
    # is_global leaves out the private, loopback, link-local, reserved, unspecified and
    # shared (100.64/10) ranges; some multicast ranges count as global, so ask both.
    return address.is_global and not address.is_multicast


def _parts(url: str) -> SplitResult:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise WebhookRefused("Not a valid address.") from None
    if parts.scheme.lower() not in SCHEMES:
        raise WebhookRefused("An http(s) address.")
    # No user name or password: the signature authenticates the POST, and an "@" is how a
    # URL hides its real host from the reader ("http://good.example@127.0.0.1/").
    if "@" in parts.netloc or "\\" in url:
        raise WebhookRefused("An address without a user name or password (no @).")
    if not parts.hostname:
        raise WebhookRefused("An address with a host name.")
    return parts


def check(url: str, *, resolve: bool = True) -> Target:
    """The URL as a `Target` the server may POST to, or WebhookRefused saying why. Without
    `resolve`, a host on the allow-list is taken as it is (its `addresses` empty): where it
    points matters only when sending."""
    parts = _parts(url)
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    port = parts.port or SCHEMES[scheme]
    path = parts.path or "/"
    if parts.query:
        path += f"?{parts.query}"
    hosts = allowed_hosts()
    if hosts and not _on_list(host, hosts):
        raise WebhookRefused(
            "This host is not in ALERT_WEBHOOK_ALLOWED_HOSTS: webhooks may go only to "
            + ", ".join(hosts)
            + "."
        )
    if hosts and not resolve:
        return Target(scheme, host, port, path, ())
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Unresolved(f"The host {host} could not be resolved.") from None
    # An IPv6 address may come with its zone ("fe80::1%eth0"); the zone is not the address.
    addresses = tuple(dict.fromkeys(info[4][0].split("%", 1)[0] for info in found))
    if not hosts:
        for address in addresses:
            if not _public(ipaddress.ip_address(address)):
                raise WebhookRefused(
                    f"The host {host} is at a private or reserved address ({address}): "
                    "webhooks go only to public addresses unless the operator lists the "
                    "host in ALERT_WEBHOOK_ALLOWED_HOSTS."
                )
    return Target(scheme, host, port, path, addresses)


def problem(url: str) -> str | None:
    """Why an alert may not have this webhook URL, or None (the form's check)."""
    try:
        check(url, resolve=False)
    except WebhookRefused as refused:
        return str(refused)
    return None


class _Pinned(http.client.HTTPConnection):
    """Connects to the checked `address` rather than resolving the host again; HTTPS
    (`_PinnedTLS`) still verifies the certificate against the URL's host name."""

    address = ""

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedTLS(http.client.HTTPSConnection, _Pinned):
    """HTTPSConnection.connect opens the socket through _Pinned.connect, then wraps it in
    TLS with the URL's host as the server name."""


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> int:
    """POST to the checked URL; the response's status (a redirect's too: not followed).
    Raises WebhookRefused (not allowed) or OSError (unreachable, timed out)."""
    target = check(url)
    error: OSError | None = None
    for address in target.addresses:
        if target.scheme == "https":
            connection: _Pinned = _PinnedTLS(
                target.host, target.port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            connection = _Pinned(target.host, target.port, timeout=timeout)
        connection.address = address
        try:
            connection.request("POST", target.path, body=body, headers=headers)
            return connection.getresponse().status
        except ConnectionRefusedError as refused:  # as create_connection: try the next one
            error = refused
        except (OSError, http.client.HTTPException) as failed:
            raise OSError(str(failed) or type(failed).__name__) from failed
        finally:
            connection.close()
    raise error or OSError("no address")
