"""Weak matches say so: through a real MCP session, a request no connected tool serves gets a
notice naming the closest tools (and `weak_match`), a good request does not. The engine's dense
signal runs on a deterministic hashing encoder, judged by a cosine rule given in the settings (a
model's own rule is chosen for it by benchmarks/weak_match.py and stored in its ranker file)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client
from support.fake_encoder import HashingEncoder
from support.gateway_session import here_over
from support.registries import python_server, write_registry
from test_search_engine import tool

from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.confidence import GAP_RANK, CosineRule, match_strength
from toolscout.search.ranker import LearnedRanker, Linear
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

# Thresholds for the hashing encoder's cosines (unrelated words score near 0, shared words well above).
RULE = CosineRule(max_cosine=0.33, max_gap=0.11)


async def test_a_request_no_tool_serves_gets_a_weak_match_notice_and_a_good_one_does_not(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "paged": python_server("paged_server.py"),
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    })
    settings = SearchSettings(cache_dir=tmp_path / "cache", weak_match_rule=RULE)
    engine = ToolSearch(settings, encoder=HashingEncoder(dimension=4096))
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), engine, here_over(registry)) as gateway:
            await gateway.ready(40)
            await gateway.wait_complete()
            async with Client(build_server(gateway), mode="legacy") as client:
                bad = (await client.call_tool("search_tools", {"query": "book a flight to Paris"})).structured_content
                good = (await client.call_tool("search_tools", {"query": "weather forecast for a city"})).structured_content
                text = (await client.call_tool("search_tools", {"query": "book a flight to Paris"})).content[0].text
    assert bad["weak_match"] is True, bad
    assert bad["notice"].startswith("No connected tool matches this request closely")
    # Every tool the answer returns is named, best first, not only the first few.
    assert f"Closest, best first: {', '.join(tool['id'] for tool in bad['tools'])}." in bad["notice"]
    assert "No connected tool matches this request closely" in text
    assert good["weak_match"] is False and not good["notice"]
    assert good["tools"][0]["id"] == "weather__get_forecast"


def test_the_verdict_needs_a_low_best_cosine_and_nothing_standing_out() -> None:
    flat = np.full(20, 0.15)
    assert match_strength(flat, RULE).weak
    standing_out = flat.copy()
    standing_out[3] = 0.3  # low, but well above the rest: a terse request for a real tool
    assert not match_strength(standing_out, RULE).weak
    assert not match_strength(np.full(20, 0.5), RULE).weak  # close matches everywhere
    assert match_strength(np.zeros(GAP_RANK - 1), RULE) is None  # too few tools to judge
    assert match_strength(flat, None) is None  # no rule chosen for the model: no verdict


def _engine(tmp_path: Path, ranker: LearnedRanker, **settings) -> ToolSearch:
    ranker.write(tmp_path / "ranker.json")
    # Without tfidf the ranker cannot run: the cosine rule judges the match.
    settings = SearchSettings(cache_dir=tmp_path / "cache", ranker_file=tmp_path / "ranker.json",
                              weights={"dense": 1.0, "bm25_description": 0.5}, **settings)
    engine = ToolSearch(settings, encoder=HashingEncoder(dimension=4096))
    engine.index([tool(f"server{i % 3}", f"tool_{i}", f"Keeps record number {i} of the ledger.") for i in range(12)])
    engine.complete()
    return engine


def test_where_the_ranker_cannot_run_the_rule_stored_with_it_judges_only_its_own_models_cosines(tmp_path: Path) -> None:
    linear = Linear(("dense_cosine",), np.zeros(1), np.ones(1), np.ones(1), 0.0)
    stored = LearnedRanker(linear, cosine_rule=RULE)  # fitted for any model
    judged = _engine(tmp_path, stored).search("book a flight to Paris", limit=3)
    assert judged.fusion == "weighted RRF (the learned ranker needs tfidf)"
    assert judged.match is not None and judged.match.rule == RULE and judged.match.weak
    other = dataclasses.replace(stored, model_digest="0" * 16)
    assert _engine(tmp_path, other).search("book a flight to Paris", limit=3).match is None
    # An operator's own rule, for a model without one, stands in.
    given = _engine(tmp_path, other, weak_match_rule=CosineRule(0.0, 0.0)).search("book a flight to Paris", limit=3)
    assert given.match is not None and not given.match.weak
