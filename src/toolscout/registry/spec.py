"""One upstream server as a registry describes it: the value every part that starts, signs in to
or names an upstream is handed (`toolscout.registry.loading` builds it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from toolscout.catalog import ToolOverride

__all__ = ["OAuthSettings", "ServerSpec", "Transport"]

Transport = Literal["stdio", "http", "sse"]


@dataclass(frozen=True)
class OAuthSettings:
    """How toolscout signs in to a remote server with OAuth 2.1 (the entry's "oauth" key).

    Nothing set: discovery, then a client ID metadata document where the authorization server
    accepts one (`client_metadata_url`), else dynamic client registration."""

    # A client registered beforehand with the authorization server; the secret, if any, is a secret.
    client_id: str | None = None
    client_secret: str | None = None
    # Scopes to ask for; none: what the server's metadata or its 401 challenge names.
    scopes: tuple[str, ...] = ()
    # An https URL of a client ID metadata document describing toolscout, for servers that accept one.
    client_metadata_url: str | None = None
    # The loopback address the sign-in redirect comes back to (a pre-registered client needs a
    # fixed one); none: a free port of 127.0.0.1 chosen at sign-in.
    redirect_uri: str | None = None


@dataclass(frozen=True)
class ServerSpec:
    """One upstream server as a registry describes it, variables already expanded."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Per-call timeout in seconds for this server; None means the gateway default.
    timeout: float | None = None
    # The registry file this entry came from, for error messages.
    source: str = ""
    # Values that must never appear in logs or output (expanded env and header values).
    secrets: frozenset[str] = frozenset()
    # Why this entry cannot be started, when it cannot (the others still start).
    error: str | None = None
    # OAuth 2.1 sign-in of a remote server; None: no OAuth (a stdio server, "oauth": false, or an
    # entry that sends its own Authorization header).
    oauth: OAuthSettings | None = None
    # The operator's reshaping of some of its tools, by the upstream's own tool name ("overrides").
    overrides: Mapping[str, ToolOverride] = field(default_factory=dict)
    # Which calls of this server's tools the user confirms first: upstream tool name (or "*", the
    # rest) -> "destructive", "all" or "none" (`toolscout.serving.confirmation`); empty: --confirm.
    # Not compared: a policy edit applies at once (`App._reload_registry`) without restarting the server.
    confirm: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Calls allowed to everyone together: upstream tool name (or "*", all of this server's tools
    # together) -> "N/minute" (`toolscout.serving.rate_limits`).
    limits: Mapping[str, str] = field(default_factory=dict, compare=False)
