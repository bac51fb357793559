"""Which addresses the server may send a request to when a user typed the URL: regression
alerts' webhooks (evaluation/alerts/webhooks.py) and judges' endpoints
(evaluation/judging/keys.py). One rule for both, so that they cannot drift apart.

A person who may type such a URL could otherwise make the server's workers reach what only
the server can: a cloud metadata endpoint at 169.254.169.254 (and the credentials it hands
out), a database, an admin port on localhost. Every address is one of three kinds:

- `FORBIDDEN`: link-local (169.254.0.0/16, fe80::/10) and the cloud metadata addresses.
  Never called, whatever the settings say: no model server or webhook receiver lives there,
  and the credentials that do are the server's own.
- `PRIVATE`: every other address that is not public (loopback, private, shared 100.64/10,
  unique local fc00::/7, reserved, multicast, unspecified). Called only when the operator
  says so: the host is on the allow list, or the caller's switch for private networks is on
  (judges: a self-hosted model server such as vLLM or Ollama).
- `PUBLIC`: the rest. Called unless an allow list is set and the host is not on it.

IPv6 forms that carry an IPv4 address (IPv4-mapped and -compatible, 6to4, Teredo, NAT64)
are judged by the IPv4 address they carry: `[::ffff:169.254.169.254]` is forbidden too.

No URL with a user name or password ("@" in its authority) passes: credentials have their
own place, and an "@" is how a URL hides its real host ("http://good.example@127.0.0.1/").

Plain Python, no Django: callers pass their settings in a `Policy`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

SCHEMES = {"http": 80, "https": 443}

PUBLIC, PRIVATE, FORBIDDEN = "public", "private", "forbidden"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, RFC 6052 / 8215).
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
# Metadata services outside the link-local range: AWS's over IPv6 (fd00:ec2::254) and
# Alibaba Cloud's (100.100.100.200, in the shared range). AWS, GCP, Azure, Oracle and
# DigitalOcean use 169.254.169.254, which the link-local rule covers.
_METADATA = frozenset(ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200"))


class Refused(Exception):
    """The URL may not be called; the message says why, naming the host and the setting.
    `reason` says which rule refused it, for a caller that words it otherwise: "invalid",
    "scheme", "credentials", "not_listed", "forbidden", "private" or "unresolved"."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class Unresolved(Refused):
    """The host's name did not resolve: where it points is unknown. A caller may refuse it
    (a webhook being saved), try again later (a webhook being sent) or let it be (a judge
    being saved: the name may resolve only where the workers run)."""


@dataclass(frozen=True)
class Policy:
    """A caller's settings: `what` the requests are ("webhooks", "judges") and the setting
    that lists the allowed hosts (`hosts`: an entry starting with a dot allows every
    subdomain); `private_switch` names the setting that lets private addresses through, and
    `private_ok` says whether it is on."""

    what: str
    setting: str
    hosts: tuple[str, ...] = ()
    private_switch: str = ""
    private_ok: bool = False


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`addresses`, as resolved; empty when not resolved)
    and what to ask."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def host_list(entries: Iterable[str]) -> tuple[str, ...]:
    """An allow-list setting's entries as `Policy.hosts` takes them."""
    return tuple(h.strip().lower() for h in entries if h.strip())


def on_list(host: str, hosts: Sequence[str]) -> bool:
    return any(host == h or (h.startswith(".") and host.endswith(h)) for h in hosts)


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (other than IPv4-mapped: see address_kind)."""
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]  # the client's address
    if any(address in net for net in _NAT64) or int(address) >> 32 == 0:  # NAT64, ::a.b.c.d
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_kind(address: IPAddress) -> str:
    """PUBLIC, PRIVATE or FORBIDDEN (see the module's docstring)."""
    if isinstance(address, ipaddress.IPv6Address):
        address = address.ipv4_mapped or address  # then judged as the IPv4 address it is
    if address.is_link_local or address in _METADATA:
        return FORBIDDEN
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried is not None and (kind := address_kind(carried)) != PUBLIC:
            return kind
    # is_global leaves out the private, loopback, link-local, reserved, unspecified and
    # shared (100.64/10) ranges; some multicast ranges count as global, so ask both.
    return PUBLIC if address.is_global and not address.is_multicast else PRIVATE


def _parts(url: str) -> SplitResult:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise Refused("Not a valid address.", "invalid") from None
    if parts.scheme.lower() not in SCHEMES:
        raise Refused("An http(s) address.", "scheme")
    if "@" in parts.netloc or "\\" in url:
        raise Refused("An address without a user name or password (no @).", "credentials")
    if not parts.hostname:
        raise Refused("An address with a host name.", "invalid")
    return parts


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # without an IPv6 zone
    except ValueError:
        return None


def check(url: str, policy: Policy, *, resolve: bool = True) -> Target:
    """The URL as a `Target` the server may call, or Refused saying why. A host written as
    an address is always judged; a name is resolved and every address it resolves to must
    pass, unless `resolve` is off (then only the URL and the allow list are checked: where
    the name points matters when the request is made)."""
    parts = _parts(url)
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    port = parts.port or SCHEMES[scheme]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    listed = on_list(host, policy.hosts)
    if policy.hosts and not listed:
        raise Refused(
            f"This host is not in {policy.setting}: {policy.what} may go only to "
            + ", ".join(policy.hosts)
            + ".",
            "not_listed",
        )
    if (literal := _literal(host)) is not None:
        addresses: tuple[str, ...] = (str(literal),)
    elif not resolve:
        return Target(scheme, host, port, path, ())
    else:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise Unresolved(f"The host {host} could not be resolved.", "unresolved") from None
        # An IPv6 address may come with its zone ("fe80::1%eth0"); the zone is not the address.
        addresses = tuple(dict.fromkeys(info[4][0].split("%", 1)[0] for info in found))
    for address in addresses:
        kind = address_kind(ipaddress.ip_address(address))
        if kind == FORBIDDEN:
            raise Refused(
                f"The host {host} is at a link-local or cloud metadata address ({address}): "
                f"{policy.what} never go there, even when the host is listed in "
                f"{policy.setting}.",
                "forbidden",
            )
        if kind == PRIVATE and not (listed or policy.private_ok):
            switch = f" or sets {policy.private_switch}=1" if policy.private_switch else ""
            raise Refused(
                f"The host {host} is at a private or reserved address ({address}): "
                f"{policy.what} go only to public addresses unless the operator lists the "
                f"host in {policy.setting}{switch}.",
                "private",
            )
    return Target(scheme, host, port, path, addresses)
