"""Upstream registries: which MCP servers toolscout connects to, and how.

Contract used by the gateway (the loader itself is being written):

    specs = load_registries([Path("servers.json"), ...])   # list[ServerSpec]
    env = upstream_environment(spec)                      # the environment a stdio upstream gets

`load_registries` raises ConfigError for problems of a whole file (unreadable, bad JSON, unknown
shape, the same server name in two files). A problem of one entry (e.g. a missing ${VAR}) does not
raise: the spec carries `error`, and the gateway marks that server down with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Transport = Literal["stdio", "http", "sse"]


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
