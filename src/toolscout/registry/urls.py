"""Which URLs toolscout fetches a registry from or lets a fetched registry point at.

A registry decides what runs on this machine, so it is fetched over HTTPS; plain HTTP is accepted
only to this machine (a registry served from a local folder or a test), where nobody on the
network can rewrite it.

    is_registry_url("https://registry.example/v0.1/servers")   # True: fetched, not read as a path
    require_secure_url(url, "--registry")                        # ConfigError when it is not https
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from toolscout.errors import ConfigError

__all__ = ["is_loopback_host", "is_registry_url", "require_secure_url"]


def is_registry_url(text: str) -> bool:
    """Whether a --registry value names a URL rather than a file."""
    return urlsplit(text).scheme.lower() in ("http", "https")


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_secure_url(url: str, what: str) -> str:
    """`url` itself when it is https (or http to this machine); ConfigError saying why otherwise."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{what}: '{_shown(url)}' is not an http(s) URL with a host")
    if scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            f"{what}: '{_shown(url)}' uses plain http, which anyone on the network can rewrite; use "
            "https (plain http is accepted only to this machine: localhost, 127.0.0.1, ::1)"
        )
    return url


def _shown(url: str) -> str:
    """The URL without a user:password part, which must not reach a log line."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    return parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")).geturl()
