"""An upstream's questions during a client's call, relayed to that client and no other.

An upstream running a tool may ask the client's model for a completion (sampling) or the user for
input (elicitation). toolscout declares both to its upstreams and, while a client's call is in
flight, sends such a request to that client, with the upstream named, and its answer back:

    with relaying(ctx) as caller:              # around the gateway call (MetaTools.execute)
        result = await gateway.call(...)
    result = caller.noted(result)              # says what could not be relayed, if anything

A client that did not declare the capability (or cannot be asked: no back-channel) is not asked;
the upstream gets an error, and the call's result says why, instead of waiting for an answer
that never comes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata

from toolscout.upstream.connection import CURRENT_CALLER

__all__ = ["ClientCaller", "relaying"]

logger = logging.getLogger(__name__)


class ClientCaller:
    """The client of one request, as the `Caller` an upstream's sampling and elicitation reach."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self.ctx = ctx
        self.notes: list[str] = []

    # Several calls of one client session are one caller: its questions may go to it.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientCaller) and other.ctx.session is self.ctx.session

    def __hash__(self) -> int:
        return id(self.ctx.session)

    async def sample(self, server: str, params: types.CreateMessageRequestParams) -> Any:
        named = f"(Asked by the upstream server '{server}' through toolscout.)"
        params = params.model_copy(update={"system_prompt": f"{named} {params.system_prompt or ''}".strip()})
        return await self._ask(
            server, "sampling", "sample with your model (sampling/createMessage)",
            types.CreateMessageRequest(params=params), types.CreateMessageResult,
        )

    async def elicit(self, server: str, params: types.ElicitRequestParams) -> Any:
        params = params.model_copy(update={"message": f"Upstream server '{server}' asks: {params.message}"})
        return await self._ask(
            server, "elicitation", "ask the user (elicitation/create)", types.ElicitRequest(params=params),
            types.ElicitResult,
        )

    async def _ask(self, server: str, capability: str, what: str, request: Any, result_type: type) -> Any:
        declared = self.ctx.session.client_capabilities
        if declared is None or getattr(declared, capability) is None:
            return self._refused(server, what, f"this client did not declare the {capability} capability")
        try:
            return await self.ctx.session.send_request(
                request, result_type, metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id)
            )
        except Exception as exc:  # noqa: BLE001 - the upstream gets an error; the agent learns why
            return self._refused(server, what, f"the client could not answer: {exc}")

    def _refused(self, server: str, what: str, why: str) -> types.ErrorData:
        note = f"[toolscout: upstream '{server}' asked to {what} during this call, but {why}; it was told so.]"
        if note not in self.notes:
            self.notes.append(note)
        logger.info("upstream '%s' asked to %s, but %s", server, what, why)
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"toolscout could not relay the request: {why}")

    def noted(self, result: types.CallToolResult) -> types.CallToolResult:
        """`result` with a line for each question that could not be relayed."""
        if not self.notes:
            return result
        notes = [types.TextContent(text=note) for note in self.notes]
        return result.model_copy(update={"content": [*result.content, *notes]})


@contextmanager
def relaying(ctx: ServerRequestContext[Any]) -> Iterator[ClientCaller]:
    """Within this block, upstream requests made during the client's request go to its client."""
    caller = ClientCaller(ctx)
    token = CURRENT_CALLER.set(caller)
    try:
        yield caller
    finally:
        CURRENT_CALLER.reset(token)
