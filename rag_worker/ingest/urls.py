"""Fetching a URL item of a batch without becoming an SSRF proxy.

Rules, checked on the first URL and again on every redirect:

* http or https only, no user:password in the URL;
* when `LIGHTRAG_MCP_URL_ALLOWED_HOSTS` is set, the host must be one of them (or a
  subdomain of an entry written `.example.com`);
* every address the host resolves to must be public — private, loopback, link-local,
  shared, reserved, multicast and unspecified ranges (IPv4, IPv6 and IPv4-mapped IPv6)
  are refused unless `LIGHTRAG_MCP_URL_ALLOW_PRIVATE` is true;
* an http connection goes to the address that was checked (the host name travels in the
  Host header), so a second DNS answer cannot redirect it; https keeps the name for
  certificate checks;
* the whole fetch, redirects included, is bounded in time and in bytes.

This is the one async module of `rag_worker.ingest`: it waits on the network, not the CPU.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import urllib.parse
from dataclasses import dataclass

import anyio
import httpx

from protocol import ErrorCode, RagError

from .formats import extension_of, normalize_mime, supported_extensions
from .validation import format_size

MAX_REDIRECTS = 5
MAX_URL_CHARS = 2048
USER_AGENT = "lightrag-mcp (document indexer)"

# A name for content whose URL has no usable extension, by its Content-Type.
_NAME_BY_MIME = {
    "text/html": "index.html",
    "application/xhtml+xml": "index.html",
    "application/pdf": "document.pdf",
    "text/markdown": "document.md",
    "text/plain": "document.txt",
    "text/csv": "data.csv",
    "application/json": "data.json",
}


@dataclass(frozen=True)
class UrlPolicy:
    allow_private: bool
    allowed_hosts: tuple[str, ...]
    timeout_s: float
    max_bytes: int

    @classmethod
    def from_settings(cls, settings: object, max_bytes: int) -> UrlPolicy:
        hosts = str(getattr(settings, "url_allowed_hosts", "") or "")
        return cls(
            allow_private=bool(getattr(settings, "url_allow_private", False)),
            allowed_hosts=tuple(h.strip().lower() for h in hosts.split(",") if h.strip()),
            timeout_s=float(getattr(settings, "url_timeout", 30.0)),
            max_bytes=max_bytes,
        )


@dataclass(frozen=True)
class FetchedPage:
    data: bytes
    mime_type: str | None
    filename: str  # a name whose extension tells the format (for detect_format)
    document_name: str  # the stable document name: host and path
    final_url: str


def _refuse(message: str, action: str = "Use a public http(s) URL, or upload the file instead.") -> RagError:
    return RagError(ErrorCode.FORBIDDEN, message, suggested_action=action)


def check_url(url: str, policy: UrlPolicy) -> urllib.parse.SplitResult:
    """The parsed URL if its form and host are allowed (addresses are checked separately)."""
    if len(url) > MAX_URL_CHARS:
        raise RagError(ErrorCode.INVALID_PARAMETER, f"The URL is longer than {MAX_URL_CHARS} characters.")
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise RagError(ErrorCode.INVALID_PARAMETER, "The URL is not valid.") from None
    if parts.scheme not in {"http", "https"}:
        raise _refuse(f"Only http and https URLs can be fetched, not '{parts.scheme or 'none'}:'.")
    if not parts.hostname:
        raise RagError(ErrorCode.INVALID_PARAMETER, "The URL has no host.")
    if parts.username or parts.password:
        raise _refuse("URLs with a user name or password are not fetched.")
    if port is not None and not 0 < port < 65536:
        raise RagError(ErrorCode.INVALID_PARAMETER, "The URL's port is not valid.")
    host = parts.hostname.lower().rstrip(".")
    if policy.allowed_hosts and not any(
        host == entry or (entry.startswith(".") and host.endswith(entry)) for entry in policy.allowed_hosts
    ):
        raise _refuse(
            f"The host '{host}' is not in the allowed list (LIGHTRAG_MCP_URL_ALLOWED_HOSTS).",
            "Use a URL on an allowed host, or ask the administrator to allow this one.",
        )
    return parts


def address_refusal(address: str) -> str | None:
    """Why an address may not be fetched from by default, or None when it is public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private or not ip.is_global:
        return "a private or reserved address"
    if ip.is_multicast:
        return "a multicast address"
    return None


async def resolve_checked(host: str, port: int, policy: UrlPolicy) -> str:
    """One address of `host` to connect to, after checking every address it resolves to."""
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise RagError(
            ErrorCode.FILE_NOT_FOUND,
            f"The host '{host}' could not be resolved.",
            suggested_action="Check the URL's host name.",
        ) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise RagError(ErrorCode.FILE_NOT_FOUND, f"The host '{host}' has no address.")
    if not policy.allow_private:
        for address in addresses:
            reason = address_refusal(address)
            if reason:
                raise _refuse(
                    f"The host '{host}' resolves to {reason}; fetching from private networks is not allowed "
                    "(LIGHTRAG_MCP_URL_ALLOW_PRIVATE).",
                )
    return addresses[0]


async def fetch_url(url: str, policy: UrlPolicy) -> FetchedPage:
    """Download `url` under the policy; redirects are followed by hand and re-checked."""
    try:
        with anyio.fail_after(policy.timeout_s):
            async with httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=policy.timeout_s) as client:
                current = url
                for _ in range(MAX_REDIRECTS + 1):
                    parts = check_url(current, policy)
                    port = parts.port or (443 if parts.scheme == "https" else 80)
                    address = await resolve_checked(parts.hostname or "", port, policy)
                    request = _pinned_request(client, parts, address, port)
                    response = await client.send(request, stream=True)
                    try:
                        if response.is_redirect and "location" in response.headers:
                            current = urllib.parse.urljoin(current, response.headers["location"])
                            continue
                        if response.status_code >= 400:
                            raise RagError(
                                ErrorCode.FILE_NOT_FOUND
                                if response.status_code in {404, 410}
                                else ErrorCode.PROCESSING_FAILED,
                                f"The server answered HTTP {response.status_code} for {_short(current)}.",
                                suggested_action="Check the URL, or retry later.",
                                retryable=response.status_code >= 500,
                            )
                        data = await _read_bounded(response, policy.max_bytes)
                        mime = normalize_mime(response.headers.get("content-type"))
                        return FetchedPage(data, mime, _format_name(parts, mime), _document_name(parts), current)
                    finally:
                        await response.aclose()
                raise RagError(ErrorCode.PROCESSING_FAILED, f"More than {MAX_REDIRECTS} redirects for {_short(url)}.")
    except TimeoutError:
        raise RagError(
            ErrorCode.PROCESSING_TIMEOUT,
            f"Fetching {_short(url)} took longer than {policy.timeout_s:g} s (LIGHTRAG_MCP_URL_TIMEOUT).",
            retryable=True,
        ) from None
    except httpx.HTTPError as exc:
        raise RagError(
            ErrorCode.PROCESSING_FAILED,
            f"Fetching {_short(url)} failed ({type(exc).__name__}).",
            suggested_action="Check that the URL is reachable, or retry later.",
            retryable=True,
        ) from None


def _pinned_request(
    client: httpx.AsyncClient, parts: urllib.parse.SplitResult, address: str, port: int
) -> httpx.Request:
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
    if parts.scheme == "https":  # the name stays for SNI and certificate checks
        return client.build_request("GET", urllib.parse.urlunsplit(parts), headers=headers)
    host = f"[{address}]" if ":" in address else address
    headers["Host"] = parts.netloc
    target = urllib.parse.urlunsplit(("http", f"{host}:{port}", parts.path or "/", parts.query, ""))
    return client.build_request("GET", target, headers=headers)


async def _read_bounded(response: httpx.Response, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise _page_too_large(int(declared), max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > max_bytes:
            raise _page_too_large(size, max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def _page_too_large(size: int, max_bytes: int) -> RagError:
    return RagError(
        ErrorCode.FILE_TOO_LARGE,
        f"The page is over {format_size(max_bytes)} (at least {format_size(size)}; LIGHTRAG_MCP_MAX_FILE_MB).",
    )


def _format_name(parts: urllib.parse.SplitResult, mime: str | None) -> str:
    last = urllib.parse.unquote(parts.path.rsplit("/", 1)[-1])
    if last and extension_of(last) in supported_extensions():
        return last[-200:]
    return _NAME_BY_MIME.get(mime or "", "index.html")


def _document_name(parts: urllib.parse.SplitResult) -> str:
    """`host/path` (plus a short hash of the query): a stable name, so a re-fetch replaces the page."""
    path = urllib.parse.unquote(parts.path).strip("/")
    name = f"{parts.hostname}/{path}" if path else str(parts.hostname)
    if parts.query:
        name += "?" + hashlib.sha256(parts.query.encode()).hexdigest()[:8]
    cleaned = "".join(ch for ch in name if ch.isprintable())
    return cleaned[:400]


def _short(url: str, limit: int = 120) -> str:
    return url if len(url) <= limit else url[:limit] + "…"
