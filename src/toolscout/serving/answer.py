"""The answer to one search, as `search_tools` returns it and `toolscout search --json` prints it.

    answer = search_answer(response, statuses, catalog, servers=None, max_tokens=None)
    answer["tools"]        # search entries, best first (`describe.search_entry`)
    answer["notice"]       # what the agent should know: a weak match, servers down, tools left out
    answer["confidence"]   # P(the first tool serves the request), calibrated; None where not computed
    answer["weak_match"]   # True: no tool matches well (low confidence); the notice names the closest
    answer["omitted"]      # tools left out to fit max_tokens
    answer["servers"]      # the servers connected now, with tool counts and purposes

`explain_hit(hit)` and `match_verdict(response)` are what `--explain` adds (and the dashboard's
search playground shows): each signal's rank, the reranker's score, the weak-match verdict.

It needs no MCP SDK: the command line builds the same answer from a cached catalog.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from toolscout.search.confidence import weak_notice
from toolscout.serving.describe import search_entry, search_servers
from toolscout.upstream.status import State

if TYPE_CHECKING:
    from toolscout.catalog import Catalog
    from toolscout.search import SearchResponse
    from toolscout.search.base import SearchHit
    from toolscout.upstream.status import UpstreamStatus

__all__ = ["explain_hit", "match_verdict", "search_answer"]


def search_answer(
    response: SearchResponse,
    statuses: Sequence[UpstreamStatus],
    catalog: Catalog,
    *,
    servers: Collection[str] | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The search_tools result for `response`; `servers`: the servers the search was limited to."""
    entries = [search_entry(hit) for hit in response.hits]
    omitted = 0
    if max_tokens is not None:
        from toolscout.serving.packing import pack  # tiktoken: only when a budget is asked for

        entries, omitted = pack(entries, max_tokens, lambda entry: json.dumps(entry, ensure_ascii=False))
    notices = [response.notice] if response.notice else []
    weak = response.match is not None and response.match.weak and bool(entries)
    if weak:
        notices.insert(0, weak_notice([entry["id"] for entry in entries]))
    if omitted:
        notices.append(f"{omitted} matching tool(s) left out to fit max_tokens={max_tokens}.")
    if not entries and not omitted:
        notices.append("No tool matched. Try other words, or a broader description of the task.")
    asked = [s for s in statuses if not s.skipped and (servers is None or s.name in servers)]
    starting = [s.name for s in asked if s.state is State.STARTING]
    down = [s.name for s in asked if s.state is State.DOWN]
    notices.extend(_starting_notices(entries, starting, catalog))
    if down:
        notices.append(f"Not available right now (their tools cannot be found): {', '.join(down)}.")
    return {
        "tools": entries,
        "notice": " ".join(notices) or None,
        "omitted": omitted,
        "confidence": _confidence(response) if entries else None,
        "weak_match": weak,
        "servers": search_servers(statuses, catalog),
    }


def _starting_notices(entries: list[dict[str, Any]], starting: list[str], catalog: Catalog) -> list[str]:
    """Marks the entries of servers still starting (found in their last listing), and says which
    servers those are and which have nothing to search yet."""
    for entry in entries:
        if entry["server"] in starting:
            entry["server_state"] = "starting"
    listed_before = {tool.server for tool in catalog.tools} & set(starting)
    notices = []
    if listed_before:
        notices.append(
            f"Still starting, searched in the tools they listed last time: {', '.join(sorted(listed_before))} "
            "(their entries say server_state 'starting'; execute_tool waits for the start)."
        )
    if not_listed := [name for name in starting if name not in listed_before]:
        notices.append(f"Still starting (their tools join the search when ready): {', '.join(not_listed)}.")
    return notices


def _confidence(response: SearchResponse) -> float | None:
    """The calibrated probability that the first tool serves the request (`search.calibrated`)."""
    match = response.match
    return None if match is None or match.confidence is None else round(match.confidence, 3)


def explain_hit(hit: SearchHit) -> dict[str, object]:
    """What --explain adds to a hit's entry: each signal's rank, and the reranker's score."""
    extra: dict[str, object] = {"ranks": dict(hit.ranks)}
    if hit.rerank_score is not None:
        extra["reranker_score"] = round(hit.rerank_score, 4)
    return extra


def match_verdict(response: SearchResponse) -> str | None:
    """How sure the search is that its best tool serves the request (what the weak-match notice reads)."""
    match = response.match
    if match is None:
        return None
    verdict = "weak" if match.weak else "not weak"
    if match.confidence is not None:
        below = "never weak" if match.confidence_below is None else f"weak below {match.confidence_below:.3f}"
        read = "keyword signals only" if match.probability is None else f"ranker's best probability {match.probability:.3f}"
        return f"{verdict}: confidence {match.confidence:.3f} that the first tool serves the request ({below}; {read})"
    if match.probability is not None:
        below = "no threshold" if match.weak_below is None else f"threshold {match.weak_below:.3f}"
        return f"{verdict}: best probability {match.probability:.3f} ({below})"
    if match.best_cosine is None or match.gap is None:
        return f"{verdict}: no confidence (keyword signals only, and no keyword-only calibration found)"
    return f"{verdict}: best cosine {match.best_cosine:.3f}, gap {match.gap:.3f}"
