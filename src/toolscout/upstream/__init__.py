"""Upstream MCP servers: one connection's lifecycle (`connection`), all of them (`pool`)."""

from toolscout.catalog import Catalog
from toolscout.upstream.connection import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    ProgressFn,
    State,
    Upstream,
    UpstreamStatus,
)
from toolscout.upstream.limits import Limits
from toolscout.upstream.pool import UpstreamPool
from toolscout.upstream.records import build_catalog, tool_record

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "Catalog",
    "Limits",
    "ProgressFn",
    "State",
    "Upstream",
    "UpstreamPool",
    "UpstreamStatus",
    "build_catalog",
    "tool_record",
]
