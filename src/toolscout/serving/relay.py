"""An upstream's questions during a client's call, relayed to that client and no other.

An upstream running a tool may ask the client's model for a completion (sampling) or the user for
input (elicitation). toolscout declares both to its upstreams and, while a client's call is in
flight, sends such a request to that client, with the upstream named, and its answer back:

    caller = ClientCaller(ctx)                 # the client of the request (MetaTools.execute)
    result = await gateway.call(..., caller=caller)
    result = caller.noted(result)              # says what could not be relayed, if anything

A client that did not declare the capability (or cannot be asked: no back-channel) is not asked;
the upstream gets an error, and the call's result says why, instead of waiting for an answer
that never comes.

A client on 2026-07-28 is not asked back at all: the upstream's "input required" result becomes
the call's own (`asking_client`), its requests naming the upstream and its state wrapped with the
tool it belongs to (sealed on the wire by the SDK's RequestStateBoundary); the client retries with
its answers, which go to the upstream with its own state (`InputRound`).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout.errors import ToolCallError
from toolscout.upstream.session import InputRound

__all__ = ["ClientCaller", "asking_client", "input_round"]

logger = logging.getLogger(__name__)


class ClientCaller:
    """The client of one request, as the `Caller` an upstream's sampling and elicitation reach."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self.ctx = ctx
        self.notes: list[str] = []
        self.asks_back = ctx.session.protocol_version not in MODERN_PROTOCOL_VERSIONS

    # Several calls of one client session are one caller: its questions may go to it.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientCaller) and other.ctx.session is self.ctx.session

    def __hash__(self) -> int:
        return id(self.ctx.session)

    async def sample(self, server: str, params: types.CreateMessageRequestParams) -> Any:
        return await self._ask(server, types.CreateMessageRequest(params=params), types.CreateMessageResult)

    async def elicit(self, server: str, params: types.ElicitRequestParams) -> Any:
        return await self._ask(server, types.ElicitRequest(params=params), types.ElicitResult)

    def missing(self, request: Any) -> str | None:
        """Why this client cannot be sent `request` (an upstream's sampling or elicitation), or None."""
        capability = _CAPABILITY[type(request)]
        declared = self.ctx.session.client_capabilities
        if declared is None or getattr(declared, capability) is None:
            return f"this client did not declare the {capability} capability"
        return None

    async def _ask(self, server: str, request: Any, result_type: type) -> Any:
        what = _WHAT[type(request)]
        if (why := self.missing(request)) is not None:
            return self._refused(server, what, why)
        request = named(server, request)
        try:
            return await self.ctx.session.send_request(
                request, result_type, metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id)
            )
        except Exception as exc:  # noqa: BLE001 - the upstream gets an error; the agent learns why
            return self._refused(server, what, f"the client could not answer: {exc}")

    def refused(self, server: str, request: Any, why: str) -> types.ErrorData:
        """Note that `request` of `server` could not be relayed, and why; the error for the upstream."""
        return self._refused(server, _WHAT[type(request)], why)

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


_CAPABILITY = {types.CreateMessageRequest: "sampling", types.ElicitRequest: "elicitation", types.ListRootsRequest: "roots"}
_WHAT = {
    types.CreateMessageRequest: "sample with your model (sampling/createMessage)",
    types.ElicitRequest: "ask the user (elicitation/create)",
    types.ListRootsRequest: "list your roots (roots/list)",
}


def named(server: str, request: Any) -> Any:
    """An upstream's request to the client, saying which upstream asks."""
    if isinstance(request, types.CreateMessageRequest):
        lead = f"(Asked by the upstream server '{server}' through toolscout.)"
        params = request.params.model_copy(update={"system_prompt": f"{lead} {request.params.system_prompt or ''}".strip()})
        return request.model_copy(update={"params": params})
    if isinstance(request, types.ElicitRequest):
        params = request.params.model_copy(update={"message": f"Upstream server '{server}' asks: {request.params.message}"})
        return request.model_copy(update={"params": params})
    return request


def asking_client(caller: ClientCaller, server: str, key: str, asked: types.InputRequiredResult) -> types.InputRequiredResult | str:
    """An upstream's "input required" as the client request's own: its requests naming the upstream,
    its state wrapped with `key` (what was asked: a tool id, `prompt:NAME`); or, when the client
    lacks a capability asked for, why not (noted on `caller`)."""
    requests = dict(asked.input_requests or {})
    for request in requests.values():
        if (why := caller.missing(request)) is not None:
            caller.refused(server, request, why)
            return f"Upstream server '{server}' needs input for '{key}' that this client cannot give: {why}."
    state = json.dumps({"for": key, "state": asked.request_state})
    return types.InputRequiredResult(
        input_requests={name: named(server, request) for name, request in requests.items()} or None,
        request_state=state,
    )


def input_round(key: str, responses: types.InputResponses | None, state: str | None) -> InputRound | None:
    """What a client's retry of `key` carries for the upstream; ToolCallError if its state is another's."""
    if state is None:
        return InputRound(responses) if responses else None
    try:
        wrapped = json.loads(state)
        own, asked_for = wrapped["state"], wrapped["for"]
    except (ValueError, KeyError, TypeError):
        raise ToolCallError("'requestState' is not one toolscout gave; make the request again without it.") from None
    if asked_for != key:
        raise ToolCallError(f"'requestState' belongs to a request for '{asked_for}', not '{key}'; retry that one.")
    return InputRound(responses, own)

