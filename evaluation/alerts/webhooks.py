"""Where a regression alert's webhook may go, and the POST itself.

A dataset admin types the webhook's URL, and the server's workers POST to it. The address
rule is config/egress.py's, shared with judges' endpoints:

- `ALERT_WEBHOOK_ALLOWED_HOSTS` set: only those hosts (an entry starting with a dot: every
  subdomain of it), wherever they point (the operator vouches for them), except a
  link-local or cloud metadata address, which is never called.
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
import socket
import ssl

from django.conf import settings

from config import egress

# The rule's outcomes under the names the alerts code has always used.
WebhookRefused = egress.Refused
Unresolved = egress.Unresolved
Target = egress.Target


def allowed_hosts() -> tuple[str, ...]:
    return egress.host_list(settings.ALERT_WEBHOOK_ALLOWED_HOSTS)


def check(url: str, *, resolve: bool = True) -> Target:
    """The URL as a `Target` the server may POST to, or WebhookRefused saying why. Without
    `resolve`, a host on the allow-list is taken as it is (its `addresses` empty): where it
    points matters only when sending. A name off the list is always resolved."""
    hosts = allowed_hosts()
    policy = egress.Policy("webhooks", "ALERT_WEBHOOK_ALLOWED_HOSTS", hosts)
    return egress.check(url, policy, resolve=resolve or not hosts)


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
