"""Confirmation before a call: the user is asked (MCP elicitation) before a destructive call, or
before any, and the tool runs only on "accept".

The policy per tool, first that applies: its name in its registry entry's "confirm" object, the
entry's "*" (or "confirm" given as one mode for the whole server), then `serve --confirm`:

    "destructive"  ask before a tool marked destructiveHint: true, or whose name or description
                   begins with a destructive verb (the words search demotes: `search.destructive`)
    "all"          ask before every call of the tool
    "none"         never ask

The question shows the tool, its server and the arguments. Decline, cancel, no answer within
`CONFIRM_TIMEOUT`, or a client that cannot be asked (no elicitation capability, or a 2026-07-28
client, which has no channel for the gateway's own questions yet) refuse the call; the refusal
names the setting that would let it through without asking. Nothing reaches the upstream first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from toolscout.registry.rates import CONFIRM_MODES
from toolscout.search.destructive import is_destructive

if TYPE_CHECKING:
    from toolscout.catalog import ToolRecord
    from toolscout.registry.spec import ServerSpec
    from toolscout.serving.relay import ClientCaller

__all__ = ["CONFIRM_TIMEOUT", "Confirmation", "needs_confirmation"]

logger = logging.getLogger(__name__)

# How long the user has to answer before the call is refused.
CONFIRM_TIMEOUT = 300.0
# Arguments shown in the question, at most (a huge value is cut, the user sees that it was).
_SHOWN_ARGUMENTS = 2000


def needs_confirmation(tool: ToolRecord, mode: str) -> bool:
    if mode == "all":
        return True
    if mode == "none":
        return False
    return (tool.annotations or {}).get("destructiveHint") is True or is_destructive(tool)


class Confirmation:
    """The confirmation policy of every server, and asking the user."""

    def __init__(self, default: str = "none", specs: Sequence[ServerSpec] = (), *, timeout: float = CONFIRM_TIMEOUT) -> None:
        if default not in CONFIRM_MODES:
            raise ValueError(f"confirm mode must be one of {', '.join(CONFIRM_MODES)}; got {default!r}")
        self.default = default
        self.timeout = timeout
        self._servers: dict[str, Mapping[str, str]] = {}
        self.reconfigure(specs)

    def reconfigure(self, specs: Sequence[ServerSpec]) -> None:
        self._servers = {spec.name: spec.confirm for spec in specs}

    def mode_of(self, tool: ToolRecord) -> str:
        entry = self._servers.get(tool.server, {})
        return entry.get(tool.name) or entry.get("*") or self.default

    async def confirmed(self, tool: ToolRecord, arguments: dict[str, Any], caller: ClientCaller | None) -> tuple[str, str] | None:
        """None when `tool` may run (no question needed, or the user accepted); else the outcome
        ("declined", "unconfirmed") and the refusal the agent reads."""
        mode = self.mode_of(tool)
        if not needs_confirmation(tool, mode):
            return None
        allow = (f"The operator can let it run without asking: \"confirm\": {{\"{tool.name}\": \"none\"}} in server "
                 f"'{tool.server}''s registry entry (or `toolscout serve --confirm none`).")
        why = _cannot_ask(caller)
        if why is not None or caller is None:
            return "unconfirmed", f"Refused: '{tool.id}' needs the user's confirmation, but {why}. {allow}"
        answer = await self._ask(caller, tool, arguments)
        if answer == "accept":
            return None
        said = "did not answer in time" if answer == "timeout" else f"answered {answer!r}"
        logger.info("the user %s to run '%s'", said, tool.id)
        return "declined", (f"Refused: the user {said} when asked to confirm '{tool.id}' (server '{tool.server}'); "
                            "it was not run. Do not retry unless the user asks for it.")

    async def _ask(self, caller: ClientCaller, tool: ToolRecord, arguments: dict[str, Any]) -> str:
        shown = json.dumps(arguments, ensure_ascii=False, default=str)
        if len(shown) > _SHOWN_ARGUMENTS:
            shown = shown[:_SHOWN_ARGUMENTS] + " ... (cut)"
        message = (f"Allow the agent to run '{tool.name}' of server '{tool.server}' (tool '{tool.id}') "
                   f"with these arguments?\n{shown}")
        ctx = caller.ctx
        with anyio.move_on_after(self.timeout):
            try:
                result = await ctx.session.elicit_form(
                    message, {"type": "object", "properties": {}}, related_request_id=ctx.request_id
                )
            except Exception as exc:  # noqa: BLE001 - an unanswerable question refuses the call
                logger.info("asking to confirm '%s' failed: %s", tool.id, exc)
                return "error"
            return result.action
        return "timeout"


def _cannot_ask(caller: ClientCaller | None) -> str | None:
    if caller is None:
        return "this call has no client to ask"
    if not caller.asks_back:
        return "this client speaks protocol 2026-07-28, where toolscout cannot ask it yet"
    declared = caller.ctx.session.client_capabilities
    if declared is None or declared.elicitation is None:
        return "this client did not declare the elicitation capability, so the user cannot be asked"
    return None
