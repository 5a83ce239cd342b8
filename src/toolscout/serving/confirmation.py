"""Confirmation before a call: the user is asked (MCP elicitation) before a destructive call, or
before any, and the tool runs only on "accept".

The policy per tool, first that applies: its name in its registry entry's "confirm" object, the
entry's "*" (or "confirm" given as one mode for the whole server), then `serve --confirm`:

    "destructive"  ask before a tool marked destructiveHint: true, or whose name or description
                   begins with a destructive verb (the words search demotes: `search.destructive`)
    "all"          ask before every call of the tool
    "none"         never ask

The question shows the tool, its server and the arguments. A client of the handshake era is
asked on its session; a 2026-07-28 client gets the question as the call's "input required"
result and retries with its answer, the request state (sealed on the wire by the SDK's
RequestStateBoundary) naming the tool and a digest of the arguments confirmed, so an answer
cannot be carried over to another call. Decline, cancel, no answer within `CONFIRM_TIMEOUT`, or a
client that cannot be asked (no elicitation capability) refuse the call; the refusal names the
setting that would let it through without asking. Where the gateway has a dashboard
(`pending_calls.py`), a call no client can be asked about waits there instead, for an operator to
allow or deny it within the same time. Nothing reaches the upstream first.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from toolscout.errors import CallRefused
from toolscout.registry.rates import CONFIRM_MODES
from toolscout.search.destructive import is_destructive

if TYPE_CHECKING:
    from toolscout.catalog import ToolRecord
    from toolscout.registry.spec import ServerSpec
    from toolscout.serving.pending_calls import PendingCalls
    from toolscout.serving.relay import ClientCaller

__all__ = ["CONFIRM_KEY", "CONFIRM_TIMEOUT", "Answers", "Confirmation", "carry_confirmation", "needs_confirmation"]

logger = logging.getLogger(__name__)

# How long the user has to answer before the call is refused.
CONFIRM_TIMEOUT = 300.0
# The input request of a 2026-07-28 client's confirmation, among an "input required" result's.
CONFIRM_KEY = "toolscout_confirm"
# A client's retry: its input responses and the request state it was given.
Answers = tuple[types.InputResponses | None, str | None]
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

    def __init__(
        self, default: str = "none", specs: Sequence[ServerSpec] = (), *, timeout: float = CONFIRM_TIMEOUT,
        pending: PendingCalls | None = None,
    ) -> None:
        if default not in CONFIRM_MODES:
            raise ValueError(f"confirm mode must be one of {', '.join(CONFIRM_MODES)}; got {default!r}")
        self.default = default
        self.timeout = timeout
        # Where a call no client can be asked about waits for an operator (None: it is refused).
        self.pending = pending
        self._servers: dict[str, Mapping[str, str]] = {}
        self.reconfigure(specs)

    def reconfigure(self, specs: Sequence[ServerSpec]) -> None:
        self._servers = {spec.name: spec.confirm for spec in specs}

    def mode_of(self, tool: ToolRecord) -> str:
        entry = self._servers.get(tool.server, {})
        return entry.get(tool.name) or entry.get("*") or self.default

    async def confirmed(
        self, tool: ToolRecord, arguments: dict[str, Any], caller: ClientCaller | None, answers: Answers = (None, None),
        *, client: str = "",
    ) -> types.InputRequiredResult | Answers:
        """What the call may go on with: the answers for its upstream (the confirmation's taken out),
        when no question is needed or the user (or an operator, on the dashboard) accepted; or the
        question, as a 2026-07-28 client's "input required". CallRefused ("declined",
        "unconfirmed") saying why it may not. `client` names the caller on the dashboard."""
        mode = self.mode_of(tool)
        if not needs_confirmation(tool, mode):
            return answers
        why = _cannot_ask(caller)
        if why is not None and self.pending is not None and self.pending.watched():
            return await self._operator_confirmed(tool, arguments, answers, client)
        if why is not None or caller is None:
            raise CallRefused("unconfirmed", f"Refused: '{tool.id}' needs the user's confirmation, but {why}. "
                                             f"{self._allowing(tool)}{_dashboard_note(self.pending)}")
        if caller.asks_back:
            answer = await self._ask(caller, tool, arguments)
        else:
            if _confirmed_before(tool, arguments, answers[1]):
                return answers  # the upstream's own questions, within a call the user confirmed
            responses = dict(answers[0] or {})
            given = responses.pop(CONFIRM_KEY, None)
            if given is None or _state_of(answers[1]).get("confirm") != _digest(tool, arguments):
                return _question(tool, arguments)
            answer = given.action if isinstance(given, types.ElicitResult) else "an answer that is not a confirmation"
            if answer == "accept":
                return (responses or None), None
        if answer == "accept":
            return answers
        said = "did not answer in time" if answer == "timeout" else f"answered {answer!r}"
        logger.info("the user %s to run '%s'", said, tool.id)
        raise CallRefused("declined", f"Refused: the user {said} when asked to confirm '{tool.id}' (server "
                                      f"'{tool.server}'); it was not run. Do not retry unless the user asks for it.")

    async def _operator_confirmed(self, tool: ToolRecord, arguments: dict[str, Any], answers: Answers, client: str) -> Answers:
        assert self.pending is not None
        answer, operator = await self.pending.decision(
            tool.id, tool.server, _shown_arguments(arguments), client=client or "unnamed", timeout=self.timeout
        )
        if answer == "accept":
            return answers
        if answer == "timeout":
            raise CallRefused("unconfirmed", f"Refused: '{tool.id}' needs confirmation; no client could be asked, and "
                                             f"no operator allowed it on the dashboard within {self.timeout:g} s. It was "
                                             f"not run. {self._allowing(tool)}")
        raise CallRefused("declined", f"Refused: operator '{operator}' denied '{tool.id}' (server '{tool.server}') on "
                                      "the dashboard; it was not run. Do not retry unless the user asks for it.")

    def _allowing(self, tool: ToolRecord) -> str:
        """How the operator lets `tool` run without asking: the setting that decided, named."""
        setting = f"\"confirm\": {{\"{tool.name}\": \"none\"}} in the registry entry of server '{tool.server}'"
        entry = self._servers.get(tool.server, {})
        if tool.name in entry or "*" in entry:
            return f"The operator can let it run without asking: {setting}."
        return f"The operator can let it run without asking: {setting}, or `toolscout serve --confirm none`."

    async def _ask(self, caller: ClientCaller, tool: ToolRecord, arguments: dict[str, Any]) -> str:
        ctx = caller.ctx
        with anyio.move_on_after(self.timeout):
            try:
                result = await ctx.session.elicit_form(
                    _message(tool, arguments), _NO_FIELDS, related_request_id=ctx.request_id
                )
            except Exception as exc:  # noqa: BLE001 - an unanswerable question refuses the call
                logger.info("asking to confirm '%s' failed: %s", tool.id, exc)
                return "error"
            return result.action
        return "timeout"


def _dashboard_note(pending: PendingCalls | None) -> str:
    if pending is None:
        return ""
    return " While an operator has this gateway's dashboard open, such a call waits there for them to allow it."


def _cannot_ask(caller: ClientCaller | None) -> str | None:
    if caller is None:
        return "this call has no client to ask"
    declared = caller.ctx.session.client_capabilities
    if declared is None or declared.elicitation is None:
        return "this client did not declare the elicitation capability, so the user cannot be asked"
    return None


# The question asks for nothing but the answer.
_NO_FIELDS: dict[str, Any] = {"type": "object", "properties": {}}


def _shown_arguments(arguments: dict[str, Any]) -> str:
    shown = json.dumps(arguments, ensure_ascii=False, default=str)
    return shown[:_SHOWN_ARGUMENTS] + " ... (cut)" if len(shown) > _SHOWN_ARGUMENTS else shown


def _message(tool: ToolRecord, arguments: dict[str, Any]) -> str:
    return (f"Allow the agent to run '{tool.name}' of server '{tool.server}' (tool '{tool.id}') with these "
            f"arguments?\n{_shown_arguments(arguments)}")


def _digest(tool: ToolRecord, arguments: dict[str, Any]) -> str:
    """What a confirmation was given for: this tool with exactly these arguments."""
    text = json.dumps([tool.id, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _question(tool: ToolRecord, arguments: dict[str, Any]) -> types.InputRequiredResult:
    """The question as a 2026-07-28 client's "input required"; its state is shaped as `relay.input_round` reads."""
    request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=_message(tool, arguments), requested_schema=_NO_FIELDS))
    state = {"for": tool.id, "state": None, "confirm": _digest(tool, arguments)}
    return types.InputRequiredResult(input_requests={CONFIRM_KEY: request}, request_state=json.dumps(state))


def _state_of(state: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(state) if state else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _confirmed_before(tool: ToolRecord, arguments: dict[str, Any], state: str | None) -> bool:
    return _state_of(state).get("confirmed") == _digest(tool, arguments)


def carry_confirmation(tool: ToolRecord, arguments: dict[str, Any], asked: types.InputRequiredResult) -> types.InputRequiredResult:
    """An upstream's "input required" during a confirmed call, its state saying the call was
    confirmed, so the client's retry is not asked again."""
    state = _state_of(asked.request_state)
    if not state:
        return asked
    return asked.model_copy(update={"request_state": json.dumps({**state, "confirmed": _digest(tool, arguments)})})
