"""URL items: which URLs and addresses are refused before anything is fetched (SSRF)."""

from __future__ import annotations

import pytest

from protocol import ErrorCode, RagError
from rag_worker.ingest.urls import UrlPolicy, address_refusal, check_url, resolve_checked

pytestmark = pytest.mark.anyio

DEFAULT = UrlPolicy(allow_private=False, allowed_hosts=(), timeout_s=5, max_bytes=1000)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # shared address space
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:10.1.2.3",
        "224.0.0.1",
        "240.0.0.1",
    ],
)
def test_private_loopback_link_local_and_reserved_addresses_are_refused(address: str) -> None:
    assert address_refusal(address) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(address) is None


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("file:///etc/passwd", ErrorCode.FORBIDDEN),
        ("ftp://example.com/a.txt", ErrorCode.FORBIDDEN),
        ("gopher://example.com/", ErrorCode.FORBIDDEN),
        ("http://user:pw@example.com/", ErrorCode.FORBIDDEN),
        ("http:///nohost", ErrorCode.INVALID_PARAMETER),
        ("http://example.com:99999/", ErrorCode.INVALID_PARAMETER),
        ("http://" + "a" * 3000 + ".com/", ErrorCode.INVALID_PARAMETER),
    ],
)
def test_bad_urls_get_their_code(url: str, code: ErrorCode) -> None:
    with pytest.raises(RagError) as caught:
        check_url(url, DEFAULT)
    assert caught.value.code == code


def test_the_allowed_host_list_takes_exact_hosts_and_dot_suffixes() -> None:
    policy = UrlPolicy(False, ("docs.example.com", ".example.org"), 5, 1000)
    check_url("https://docs.example.com/a", policy)
    check_url("https://wiki.example.org/a", policy)
    for url in ["https://example.com/", "https://evil-example.org/", "https://docs.example.com.evil.net/"]:
        with pytest.raises(RagError) as caught:
            check_url(url, policy)
        assert caught.value.code == ErrorCode.FORBIDDEN


async def test_a_dns_name_resolving_to_loopback_is_refused_unless_allowed() -> None:
    with pytest.raises(RagError) as caught:
        await resolve_checked("localhost", 80, DEFAULT)
    assert caught.value.code == ErrorCode.FORBIDDEN and "loopback" in caught.value.message
    allowed = UrlPolicy(True, (), 5, 1000)
    assert address_refusal(await resolve_checked("localhost", 80, allowed)) == "a loopback address"
