"""The exception tree of toolscout.

    ToolscoutError
     +-- ConfigError               a registry or settings file is wrong; message says where and how to fix
     |    +-- StateError           the state store cannot be used (damaged, newer schema, ...)
     |         +-- PinStateError   the pin state cannot be read, written or locked
     |         +-- StateUnavailable  the store cannot be reached now (a database restarting, ...)
     +-- UpstreamError             an upstream server failed to start, died, or timed out
     |    +-- UpstreamConfigurationError  it cannot work until a person changes its entry: never retried
     +-- SignInRequired            an OAuth upstream has no usable token; message names the login command
     +-- StdoutFault               a stdio upstream broke the framing of its stdout (ends its session)
     +-- ToolCallError             a call the agent made cannot be carried out as asked
     |    +-- UnknownToolError
     |    +-- InvalidArgumentsError
     |    +-- ScriptError          a run_code script failed, was refused or was stopped at a limit
     |    +-- CallRefused          a policy refused it (withheld, declined, over a limit); `outcome` says which
     +-- RequestError              a resource, prompt or completion request cannot be carried out as asked
     |    +-- NotOfferedError      no upstream offers that resource or prompt (now)
     +-- SamplingUnavailableError  the MCP client cannot or will not sample (phrase generation stops)
     +-- DatasetError              an evaluation data set is malformed
     +-- AccessRefused             a request may not use the dashboard (401, 403); message says what it takes

Foreign exceptions (OSError, json errors, MCPError, ...) are translated into these at one seam
each, with ``raise ... from``: file reads in `toolscout.json_files` and the registry loader, the
upstream's failures in `toolscout.upstream.connection` (`describe_failure`), the client's sampling
errors in `toolscout.learning.sampling_mcp`. Private exceptions used for control flow inside one
module (a leading underscore) are not part of the tree. This module imports nothing of ours.
"""

from __future__ import annotations

__all__ = [
    "AccessRefused",
    "CallRefused",
    "ConfigError",
    "DatasetError",
    "InvalidArgumentsError",
    "NotOfferedError",
    "PinStateError",
    "RequestError",
    "SamplingUnavailableError",
    "ScriptError",
    "SignInRequired",
    "StateError",
    "StateUnavailable",
    "StdoutFault",
    "ToolCallError",
    "ToolscoutError",
    "UnknownToolError",
    "UpstreamConfigurationError",
    "UpstreamError",
]


class ToolscoutError(Exception):
    """Base of every error toolscout raises on purpose."""


class ConfigError(ToolscoutError):
    """A registry, overlay or settings file cannot be used as written."""


class StateError(ConfigError):
    """The state store (`toolscout.state`) cannot be used as it is."""


class PinStateError(StateError):
    """The pin state cannot be read, written or locked."""


class StateUnavailable(StateError):
    """The state store cannot be reached now; trying again later may work."""


class UpstreamError(ToolscoutError):
    """An upstream MCP server could not serve a request."""

    def __init__(self, server: str, message: str, *, transient: bool = True) -> None:
        super().__init__(f"upstream '{server}': {message}")
        self.server = server
        # False: trying the same call again later will fail the same way (the upstream refused it,
        # or answered nonsense, or a person must change the configuration first).
        self.transient = transient


class UpstreamConfigurationError(UpstreamError):
    """An upstream cannot start or serve until a person changes its configuration: do not retry.

    Which start failures are such errors is decided in `toolscout.upstream.failures`.
    """

    def __init__(self, server: str, message: str) -> None:
        super().__init__(server, message, transient=False)
        self.detail = message


class SignInRequired(ToolscoutError):
    """An OAuth-protected upstream has no token toolscout may use (none yet, expired, or unreadable)."""


class StdoutFault(ToolscoutError):
    """The upstream broke the stdio framing: a line too long, or a flood of lines that are not JSON."""


class ToolCallError(ToolscoutError):
    """An execute_tool call cannot be carried out as asked."""


class UnknownToolError(ToolCallError):
    """No tool has the requested id."""


class InvalidArgumentsError(ToolCallError):
    """The arguments do not satisfy the tool's input schema."""


class ScriptError(ToolCallError):
    """A run_code script cannot be run, failed, or was stopped at one of its limits."""


class CallRefused(ToolCallError):
    """A policy refused the call before it reached its upstream; `outcome` names which, for the
    audit trail and the metrics ("withheld", "declined", "unconfirmed", "limited")."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


class RequestError(ToolscoutError):
    """A client's resource, prompt or completion request cannot be carried out as asked."""


class NotOfferedError(RequestError):
    """No upstream offers the resource or prompt asked for (it may be down, or withheld)."""


class SamplingUnavailableError(ToolscoutError):
    """The client cannot or will not sample (no capability, no back-channel, refused): stop asking."""


class DatasetError(ToolscoutError):
    """An evaluation data set does not follow the benchmark JSONL format."""


class AccessRefused(ToolscoutError):
    """A request may not use the operator's dashboard: `status` (401 or 403) and why, for a person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
