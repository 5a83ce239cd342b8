"""The exception tree of toolscout.

    ToolscoutError
     +-- ConfigError          a registry or settings file is wrong; message says where and how to fix
     +-- UpstreamError        an upstream server failed to start, died, or timed out
     +-- ToolCallError        a call the agent made cannot be carried out as asked
     |    +-- UnknownToolError
     |    +-- InvalidArgumentsError
     +-- DatasetError         an evaluation data set is malformed

Foreign exceptions (OSError, json errors, MCPError, ...) are translated into these at one seam
each, with ``raise ... from``. This module imports nothing of ours.
"""

from __future__ import annotations


class ToolscoutError(Exception):
    """Base of every error toolscout raises on purpose."""


class ConfigError(ToolscoutError):
    """A registry, overlay or settings file cannot be used as written."""


class UpstreamError(ToolscoutError):
    """An upstream MCP server could not serve a request."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"upstream '{server}': {message}")
        self.server = server


class ToolCallError(ToolscoutError):
    """An execute_tool call cannot be carried out as asked."""


class UnknownToolError(ToolCallError):
    """No tool has the requested id."""


class InvalidArgumentsError(ToolCallError):
    """The arguments do not satisfy the tool's input schema."""


class DatasetError(ToolscoutError):
    """An evaluation data set does not follow the benchmark JSONL format."""
