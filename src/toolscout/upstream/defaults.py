"""How the upstream pool runs by default: importable without the MCP SDK (the command line's help
shows these, and `toolscout search` over a cached catalog never connects)."""

from __future__ import annotations

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_RESTARTS",
    "DEFAULT_READY_WAIT",
    "DEFAULT_RETRY_INTERVAL",
    "DEFAULT_START_TIMEOUT",
    "STABLE_UPTIME",
]

DEFAULT_START_TIMEOUT = 30.0
# Below the 60 s after which hosts give up on a tool call, so the agent gets our clear error first.
DEFAULT_CALL_TIMEOUT = 45.0
# A session that lasted this long was healthy, so its end is an incident rather than a crash loop:
# the upstream is restarted almost at once instead of after the base delay.
STABLE_UPTIME = 10.0
DEFAULT_MAX_RESTARTS = 5
# How long `serve` waits for upstreams before a client's first `initialize` is answered, so that the
# instructions it gets describe them; later ones still join (clients are told with tools/list_changed).
DEFAULT_READY_WAIT = 10.0
# After the fast restarts have failed, an upstream is tried again this often (seconds) for as long as
# the gateway runs: a laptop that booted offline, or a remote server down for maintenance, comes back
# without a restart of the gateway. A search or call that needs it tries at once (see pool.py).
DEFAULT_RETRY_INTERVAL = 60.0
