"""Upstream MCP servers: one connection's lifecycle (`connection`), all of them (`pool`).

`Upstream`, `UpstreamPool` and `ProgressFn` come with the MCP SDK and are imported when first
used; the rest (defaults, limits, statuses, records) is light, for commands that never connect.
"""

from typing import TYPE_CHECKING, Any

from toolscout.catalog import Catalog
from toolscout.upstream.defaults import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT
from toolscout.upstream.limits import Limits
from toolscout.upstream.records import build_catalog, tool_record
from toolscout.upstream.status import State, UpstreamStatus

if TYPE_CHECKING:
    from toolscout.upstream.connection import Upstream
    from toolscout.upstream.session import ProgressFn
    from toolscout.upstream.pool import UpstreamPool

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

_WITH_THE_SDK = {"ProgressFn": "session", "Upstream": "connection", "UpstreamPool": "pool"}


def __getattr__(name: str) -> Any:
    if name in _WITH_THE_SDK:
        import importlib

        return getattr(importlib.import_module(f"toolscout.upstream.{_WITH_THE_SDK[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
