"""Ranking: the search engine, its settings, and how signals are fused and adjusted. No MCP."""

from toolscout.search.base import ProgressCallback, SearchEngine, SearchHit, SearchResponse
from toolscout.search.engine import SignalRankings, ToolSearch
from toolscout.search.settings import SearchSettings, parse_weights

__all__ = [
    "ProgressCallback",
    "SearchEngine",
    "SearchHit",
    "SearchResponse",
    "SearchSettings",
    "SignalRankings",
    "ToolSearch",
    "parse_weights",
]
