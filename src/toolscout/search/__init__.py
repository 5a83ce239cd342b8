"""Ranking: the search engine, its settings, and how signals are fused and adjusted. No MCP."""

from toolscout.search.engine import (
    ProgressCallback,
    SearchHit,
    SearchResponse,
    SearchSettings,
    SignalRankings,
    ToolSearch,
    parse_weights,
)

__all__ = [
    "ProgressCallback",
    "SearchHit",
    "SearchResponse",
    "SearchSettings",
    "SignalRankings",
    "ToolSearch",
    "parse_weights",
]
