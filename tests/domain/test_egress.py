"""The address rule shared by webhooks and judges (config/egress.py), without a database:
which addresses are forbidden whatever the settings, which only when the operator allows
them, and how a Policy's allow list and private switch apply."""

from __future__ import annotations

import ipaddress

import pytest

from config import egress

FORBIDDEN = [
    "169.254.169.254",  # AWS, GCP, Azure, Oracle metadata
    "169.254.170.2",  # ECS task metadata
    "fe80::1",
    "fd00:ec2::254",  # AWS metadata over IPv6
    "100.100.100.200",  # Alibaba Cloud metadata
    "::ffff:169.254.169.254",  # IPv4-mapped
    "::ffff:a9fe:a9fe",  # the same, in hex
    "64:ff9b::a9fe:a9fe",  # NAT64
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64
    "2002:a9fe:a9fe::",  # 6to4
    "::a9fe:a9fe",  # IPv4-compatible
]
PRIVATE = [
    "127.0.0.1", "127.1.2.3", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
    "fc00::1", "fd12::1", "0.0.0.0", "::", "224.0.0.1", "240.0.0.1", "::ffff:10.0.0.1",
    "64:ff9b::a00:1", "2002:7f00:1::",
]  # fmt: skip
PUBLIC = ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "64:ff9b::808:808"]

JUDGES = egress.Policy("judges", "JUDGE_ALLOWED_HOSTS", (), "JUDGE_ALLOW_PRIVATE_NETWORK")


@pytest.mark.parametrize("address", FORBIDDEN)
def test_link_local_and_metadata_addresses_are_forbidden(address):
    assert egress.address_kind(ipaddress.ip_address(address)) == egress.FORBIDDEN


@pytest.mark.parametrize("address", PRIVATE)
def test_loopback_and_private_addresses_are_private(address):
    assert egress.address_kind(ipaddress.ip_address(address)) == egress.PRIVATE


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address):
    assert egress.address_kind(ipaddress.ip_address(address)) == egress.PUBLIC


def url(address: str) -> str:
    return f"http://[{address}]/v1" if ":" in address else f"http://{address}/v1"


@pytest.mark.parametrize("address", FORBIDDEN)
def test_forbidden_whatever_the_switch_and_the_list(address):
    for policy in (
        JUDGES,
        egress.Policy("judges", "JUDGE_ALLOWED_HOSTS", (), "X", private_ok=True),
        egress.Policy("judges", "JUDGE_ALLOWED_HOSTS", (address,), "X", private_ok=True),
    ):
        for resolve in (True, False):
            with pytest.raises(egress.Refused) as refused:
                egress.check(url(address), policy, resolve=resolve)
            assert refused.value.reason == "forbidden"
            assert "link-local or cloud metadata" in str(refused.value)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "fc00::1"])
def test_private_only_with_the_switch_or_the_list(address):
    with pytest.raises(egress.Refused, match="JUDGE_ALLOW_PRIVATE_NETWORK=1") as refused:
        egress.check(url(address), JUDGES)
    assert refused.value.reason == "private"
    switched = egress.Policy("judges", "JUDGE_ALLOWED_HOSTS", (), "X", private_ok=True)
    assert egress.check(url(address), switched).addresses == (address,)
    listed = egress.Policy("judges", "JUDGE_ALLOWED_HOSTS", (address,))
    assert egress.check(url(address), listed).addresses == (address,)


def test_a_list_admits_only_its_hosts():
    listed = egress.Policy("judges", "JUDGE_ALLOWED_HOSTS", ("api.openai.com", ".azure.com"))
    assert egress.check("https://api.openai.com/v1", listed, resolve=False).host == "api.openai.com"
    assert egress.check("https://x.azure.com/v1", listed, resolve=False).addresses == ()
    with pytest.raises(egress.Refused, match="not in JUDGE_ALLOWED_HOSTS") as refused:
        egress.check("https://93.184.215.14/v1", listed)
    assert refused.value.reason == "not_listed"


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("http://user:pass@93.184.215.14/v1", "credentials"),
        ("http://good.example@127.0.0.1/", "credentials"),
        ("ftp://93.184.215.14/", "scheme"),
        ("http://[::1/", "invalid"),
        ("http:///v1", "invalid"),
    ],
)
def test_malformed_urls(address, reason):
    with pytest.raises(egress.Refused) as refused:
        egress.check(address, JUDGES)
    assert refused.value.reason == reason


def test_a_name_that_does_not_resolve_is_unresolved():
    with pytest.raises(egress.Unresolved) as refused:
        egress.check("http://no-such-host.invalid/v1", JUDGES)
    assert refused.value.reason == "unresolved"
    # Without resolving, a name is taken as it is.
    assert egress.check("http://no-such-host.invalid/v1", JUDGES, resolve=False).addresses == ()
