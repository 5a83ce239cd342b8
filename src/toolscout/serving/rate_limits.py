"""Rate limits on calls: per client (the token file), per tool for everyone (the registry entry),
and per client and tool; a call over any of them is refused at once, saying when to retry.

    {"clients": [{"name": "alpha", "token": "...", "limits": {"notes__delete_note": "3/minute", "*": "100/hour"}}]}
    "mcpServers": {"notes": {"command": "...", "limits": {"delete_note": "10/minute", "*": "600/hour"}}}

A client's "*" counts all of its calls together, a tool id counts its calls of that tool; an
entry's "*" counts everyone's calls of that server's tools together, a tool name everyone's calls
of that tool. Windows slide: N calls in any period. Counts are kept in this process: each replica
limits on its own (docs/operations.md says why).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from toolscout.errors import ConfigError
from toolscout.registry.rates import Rate, parse_rate

if TYPE_CHECKING:
    from toolscout.catalog import ToolRecord
    from toolscout.registry.spec import ServerSpec
    from toolscout.serving.clients import ClientTokens

__all__ = ["RateLimits", "client_limits"]

# A limit's key: whose calls it counts, and which.
_Key = tuple[str, str, str]


def client_limits(clients: ClientTokens | None) -> dict[str, dict[str, Rate]]:
    """The limits of each client of the token file; ConfigError naming the client and the limit."""
    limits: dict[str, dict[str, Rate]] = {}
    for client in clients.clients if clients is not None else ():
        given = client.options.get("limits")
        if given is None:
            continue
        if not isinstance(given, dict):
            raise ConfigError(f"client '{client.name}' of the token file: 'limits' must be an object like "
                              "{\"<tool id or *>\": \"3/minute\"}")
        limits[client.name] = {tool: parse_rate(rate, f"client '{client.name}', limit '{tool}'")
                               for tool, rate in given.items()}
    return limits


def server_limits(specs: Iterable[ServerSpec]) -> dict[str, dict[str, Rate]]:
    return {spec.name: {tool: parse_rate(rate, f"server '{spec.name}', limit '{tool}'")
                        for tool, rate in spec.limits.items()} for spec in specs if spec.limits}


class RateLimits:
    """The limits in force and the calls each has counted (sliding windows, in memory)."""

    def __init__(
        self, clients: dict[str, dict[str, Rate]], specs: Sequence[ServerSpec] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clients = clients
        self._servers = server_limits(specs)
        self._clock = clock
        self._calls: dict[_Key, deque[float]] = {}

    def reconfigure(self, specs: Sequence[ServerSpec]) -> None:
        self._servers = server_limits(specs)

    def _applying(self, client: str, tool: ToolRecord) -> list[tuple[_Key, Rate, str]]:
        """The limits on `client` calling `tool`: (key, rate, whose limit, in words)."""
        found = []
        mine = self._clients.get(client, {})
        if tool.id in mine:
            found.append((("client", client, tool.id), mine[tool.id], f"client '{client}' on '{tool.id}'"))
        if "*" in mine:
            found.append((("client", client, "*"), mine["*"], f"client '{client}' on all tools"))
        server = self._servers.get(tool.server, {})
        if tool.name in server:
            found.append((("tool", tool.server, tool.name), server[tool.name], f"'{tool.id}' for every client"))
        if "*" in server:
            found.append((("tool", tool.server, "*"), server["*"], f"server '{tool.server}' for every client"))
        return found

    def over(self, client: str, tool: ToolRecord) -> str | None:
        """Why a call of `client` to `tool` would be refused now, and when to retry; None if it would not."""
        now = self._clock()
        for key, rate, whose in self._applying(client, tool):
            calls = self._calls.setdefault(key, deque())
            while calls and calls[0] <= now - rate.period:
                calls.popleft()
            if len(calls) >= rate.calls:
                retry = max(1, math.ceil(calls[0] + rate.period - now))
                return (f"Refused: '{tool.id}' is over the rate limit of {rate} ({whose}). "
                        f"Retry in {retry} s; the operator sets limits in the token file and the registry entry.")
        return None

    def admit(self, client: str, tool: ToolRecord) -> str | None:
        """Count a call of `client` to `tool` and None; or, over a limit, why and when to retry
        (and the call is not counted)."""
        if (why := self.over(client, tool)) is not None:
            return why
        now = self._clock()
        for key, _rate, _whose in self._applying(client, tool):
            self._calls[key].append(now)
        return None
