"""Registries by URL: fetching a registry document or an MCP Registry API listing, and keeping the
last good copy.

    fetched = fetch_registry("https://registry.modelcontextprotocol.io/v0.1/servers?search=github",
                             validate=check)
    fetched.pages        # one parsed JSON document per page, in order
    fetched.stale        # None, or why the network copy could not be had (the cached one is used)

The URL may name one JSON document, or the official registry API's list endpoint (v0.1), whose
filters (`search`, `version`, `updated_since`, `limit`) are passed through as written; its pages
are followed by `metadata.nextCursor`. Each page is sent with the ETag it was last received with,
so an unchanged registry costs a 304. The pages are cached together in `<data dir>/registries/`
once `validate` accepted them; when the registry cannot be reached (offline, a timeout, a server
error, a malformed answer, a redirect to another host), the last good copy is used and its age
logged. Without one, the failure is a ConfigError saying what went wrong.

Only https is fetched (http to this machine too); redirects are followed within the same scheme,
host and port only, so a registry cannot hand the decision of what runs here to another host.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import httpx2

from toolscout import __version__
from toolscout.errors import ConfigError
from toolscout.state.files import data_dir
from toolscout.registry.urls import require_secure_url
from toolscout.state.files import write_private_json
from toolscout.wording import describe_age

__all__ = [
    "DEFAULT_FETCH_TIMEOUT",
    "FetchedRegistry",
    "fetch_registry",
    "registries_dir",
]

logger = logging.getLogger(__name__)

# A registry answers a list request in well under a second; 15 s covers a slow network without
# leaving a person wondering whether toolscout hangs.
DEFAULT_FETCH_TIMEOUT = 15.0
# An API listing that pages forever (or repeats a cursor) must not hang the start.
MAX_PAGES = 200
# The official registry's whole catalogue is a few MB; more than this on one page is not a registry.
MAX_PAGE_BYTES = 16 * 1024 * 1024
_MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_VERSION = 1


def registries_dir() -> Path:
    return data_dir() / "registries"


@dataclass(frozen=True)
class FetchedRegistry:
    """A registry as fetched (or as last fetched, when it could not be reached now)."""

    url: str
    pages: tuple[Any, ...]
    # When these pages were last confirmed by the registry (seconds since the epoch).
    fetched_at: float
    # None when fresh; else why the registry could not be fetched now (the cached copy is used).
    stale: str | None = None

    def age(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.fetched_at)


class _FetchFailed(Exception):
    """Why the registry could not be had from the network (the cache may still serve)."""


def fetch_registry(
    url: str,
    *,
    validate: Callable[[list[Any]], object] = lambda pages: None,
    timeout: float = DEFAULT_FETCH_TIMEOUT,
    directory: Path | None = None,
    transport: httpx2.BaseTransport | None = None,
) -> FetchedRegistry:
    """The registry at `url`, fresh when it can be had, else the last good copy.

    `validate(pages)` raises ConfigError when the pages are not a usable registry; pages it refuses
    are never cached. ConfigError when the URL is refused, or nothing usable is fetched or cached.
    """
    require_secure_url(url, "--registry")
    cache_path = (directory or registries_dir()) / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.json"
    cached = _read_cache(cache_path, url)
    try:
        with httpx2.Client(
            timeout=timeout, follow_redirects=False, transport=transport,
            headers={"Accept": "application/json", "User-Agent": f"toolscout/{__version__}"},
        ) as client:
            pages = _fetch_pages(client, url, {page["url"]: page for page in cached["pages"]} if cached else {})
        validate([page["document"] for page in pages])
    except (_FetchFailed, ConfigError) as exc:
        if cached is None:
            raise ConfigError(f"registry {url}: {exc}") from None
        stale = FetchedRegistry(url, tuple(p["document"] for p in cached["pages"]), cached["fetched_at"], str(exc))
        logger.warning("registry %s: %s; using the copy fetched %s ago", url, exc, describe_age(stale.age()))
        return stale
    fetched_at = time.time()
    try:
        write_private_json(cache_path, {"version": _VERSION, "url": url, "fetched_at": fetched_at, "pages": pages})
    except OSError as exc:
        logger.warning("registry %s: cannot keep a copy for offline use in %s: %s", url, cache_path, exc)
    return FetchedRegistry(url, tuple(page["document"] for page in pages), fetched_at)


def _fetch_pages(client: httpx2.Client, url: str, cached: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    seen: set[str] = set()
    page_url: str | None = url
    while page_url is not None:
        if page_url in seen or len(pages) >= MAX_PAGES:
            raise _FetchFailed(f"the listing did not end after {len(pages)} pages (a cursor repeats or "
                               "never runs out); narrow it with ?search=... or ?version=latest")
        seen.add(page_url)
        page = _fetch_page(client, page_url, cached.get(page_url))
        pages.append(page)
        page_url = _next_page(url, page["document"])
    return pages


def _fetch_page(client: httpx2.Client, url: str, cached: dict[str, Any] | None) -> dict[str, Any]:
    """One page: {"url", "etag", "document"}; the cached one when the server answers 304."""
    headers = {"If-None-Match": cached["etag"]} if cached and cached.get("etag") else {}
    answer = _get(client, url, headers)
    if answer.status == 304 and cached is not None:
        return cached
    if answer.status != 200:
        raise _FetchFailed(f"the server answered HTTP {answer.status} {answer.reason}".rstrip())
    try:
        document = json.loads(answer.body.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise _FetchFailed("the answer is not UTF-8 text, so not a registry document") from None
    except json.JSONDecodeError as exc:
        raise _FetchFailed(f"the answer is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return {"url": url, "etag": answer.etag, "document": document}


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str
    etag: str | None
    body: bytes


def _get(client: httpx2.Client, url: str, headers: dict[str, str]) -> _Answer:
    """GET following redirects within the same origin only; the body read up to MAX_PAGE_BYTES."""
    origin = _origin(url)
    for _ in range(_MAX_REDIRECTS + 1):
        try:
            with client.stream("GET", url, headers=headers) as response:
                if response.status_code in _REDIRECTS and "Location" in response.headers:
                    target = urljoin(url, response.headers.get("Location", ""))
                    if _origin(target) != origin:
                        raise _FetchFailed(
                            f"the server redirects to {_origin(target)}, another host than the one named; "
                            "give that URL itself if you trust it"
                        )
                    url = target
                    continue
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_PAGE_BYTES:
                        raise _FetchFailed(f"one answer is larger than {MAX_PAGE_BYTES // 2**20} MiB; "
                                           "that is not a registry document")
                return _Answer(response.status_code, response.reason_phrase, response.headers.get("ETag"), bytes(body))
        except httpx2.TimeoutException:
            raise _FetchFailed(f"no answer within {client.timeout.read:g} s") from None
        except httpx2.HTTPError as exc:
            raise _FetchFailed(f"cannot reach it: {exc or type(exc).__name__}") from None
    raise _FetchFailed(f"more than {_MAX_REDIRECTS} redirects")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(scheme)


def _next_page(url: str, document: object) -> str | None:
    """The URL of the API listing's next page, when this page names a cursor."""
    metadata = document.get("metadata") if isinstance(document, dict) else None
    cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
    if not isinstance(cursor, str) or not cursor:
        return None
    parts = urlsplit(url)
    query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key != "cursor"]
    return parts._replace(query=urlencode([*query, ("cursor", cursor)])).geturl()


def _read_cache(path: Path, url: str) -> dict[str, Any] | None:
    """The last good copy of `url`'s pages, or None (a damaged copy is as good as none)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict) or data.get("version") != _VERSION or data.get("url") != url
        or not isinstance(data.get("pages"), list) or not isinstance(data.get("fetched_at"), (int, float))
        or not all(isinstance(p, dict) and "url" in p and "document" in p for p in data["pages"])
    ):
        return None
    return data
