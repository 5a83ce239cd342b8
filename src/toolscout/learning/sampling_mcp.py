"""The MCP seam of sampling expansions: ask the connected client's model via sampling/createMessage.

The only module of `toolscout.learning` importing the MCP SDK. Usage in the gateway:

    if session_supports_sampling(ctx.session):
        expander = Expander(cache, sampling_ask(ctx.session))
        task_group.start_soon(expander.run, catalog)

The ask sends on the connection's standalone channel (no related request id), so it keeps working
after the request whose context provided the session has finished.
"""

from __future__ import annotations

import warnings

import mcp_types as types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp_types import METHOD_NOT_FOUND

from toolscout.errors import SamplingUnavailableError
from toolscout.learning.sampling import Ask

__all__ = ["sampling_ask", "session_supports_sampling"]

SYSTEM_PROMPT = (
    "You help a search engine match people's requests to software tools. "
    "Answer with only what is asked, as a JSON array of short strings."
)
# Plenty for 20 short phrases; a cap keeps a chatty model from spending the user's quota.
MAX_TOKENS = 600
# Expansions need breadth of vocabulary, not the strongest model: ask for a fast, cheap one.
MODEL_PREFERENCES = types.ModelPreferences(
    cost_priority=0.8, speed_priority=0.8, intelligence_priority=0.3
)


def session_supports_sampling(session: ServerSession) -> bool:
    """True when the client declared the sampling capability."""
    capabilities = session.client_capabilities
    return capabilities is not None and capabilities.sampling is not None


def sampling_ask(session: ServerSession, *, max_tokens: int = MAX_TOKENS) -> Ask:
    """An `Ask` that sends `prompt` as one user message and returns the model's text reply.

    Raises SamplingUnavailableError when the client cannot sample at all (capability missing, no
    back-channel on this connection, method unknown); other client errors propagate, so the
    Expander counts them as one tool's failure.
    """

    async def ask(prompt: str) -> str:
        if not session_supports_sampling(session):
            raise SamplingUnavailableError("the client did not declare the sampling capability")
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        # Sampling is deprecated from protocol 2026-07-28 on, yet it is how today's clients lend
        # their model; the warning would repeat on every tool, so it is silenced for this call only
        # (the wrapper warns when called, before the coroutine runs, so no await is inside).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            pending = session.create_message(
                [message],
                max_tokens=max_tokens,
                system_prompt=SYSTEM_PROMPT,
                model_preferences=MODEL_PREFERENCES,
                temperature=0.7,
            )
        try:
            result = await pending
        except NoBackChannelError as exc:
            raise SamplingUnavailableError(str(exc)) from exc
        except MCPError as exc:
            if exc.code == METHOD_NOT_FOUND:
                raise SamplingUnavailableError(exc.message) from exc
            raise
        if not isinstance(result.content, types.TextContent):
            raise ValueError(f"the client's model answered with {result.content.type}, not text")
        return result.content.text

    return ask
