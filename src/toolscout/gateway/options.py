"""How a gateway runs its upstreams, as one value."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from toolscout.upstream.defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_RESTARTS,
    DEFAULT_RETRY_INTERVAL,
    DEFAULT_START_TIMEOUT,
    STABLE_UPTIME,
)
from toolscout.upstream.limits import Limits

__all__ = ["GatewayOptions"]


@dataclasses.dataclass(frozen=True)
class GatewayOptions:
    """How a gateway runs its upstreams: built once (from the command line by
    `toolscout.commands._gateway.command_options`, or by a test) and passed whole."""

    start_timeout: float = DEFAULT_START_TIMEOUT
    # Per call, unless a registry entry's "timeout" says otherwise.
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    # Failed restarts in a row before an upstream is given up on; 0: one attempt, never restarted.
    max_restarts: int = DEFAULT_MAX_RESTARTS
    # A session up at least this long is restarted at once when it ends (`toolscout.upstream.pool`).
    stable_uptime: float = STABLE_UPTIME
    # After the fast restarts, how often an upstream is tried again; None: given up on instead.
    retry_interval: float | None = DEFAULT_RETRY_INTERVAL
    limits: Limits = Limits()
    # Upstreams reached in this process rather than as their registry entry says: server name -> an
    # MCP server object, over the SDK's in-memory transport (no process, no port). The entry still
    # names the server, and pins, overrides and policies judge it as they would; tests use it.
    in_process: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False, compare=False)
