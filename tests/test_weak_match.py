"""Weak matches say so: through a real MCP session, a request no connected tool serves gets a
notice naming the closest tools (and `weak_match`), a good request does not. The engine's dense
signal runs on a deterministic hashing encoder; the thresholds are the calibrated ones
(benchmarks/weak_match.py measures them with the real model)."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client
from support.fake_encoder import HashingEncoder
from support.registries import python_server, write_registry

from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.confidence import GAP_RANK, match_strength
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio


async def test_a_request_no_tool_serves_gets_a_weak_match_notice_and_a_good_one_does_not(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "paged": python_server("paged_server.py"),
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    })
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path / "cache"), encoder=HashingEncoder(dimension=4096))
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), engine) as gateway:
            await gateway.ready(40)
            await gateway.wait_complete()
            async with Client(build_server(gateway), mode="legacy") as client:
                bad = (await client.call_tool("search_tools", {"query": "book a flight to Paris"})).structured_content
                good = (await client.call_tool("search_tools", {"query": "weather forecast for a city"})).structured_content
                text = (await client.call_tool("search_tools", {"query": "book a flight to Paris"})).content[0].text
    assert bad["weak_match"] is True, bad
    assert bad["notice"].startswith("Nothing here serves this request well")
    assert f"Closest: {bad['tools'][0]['id']}" in bad["notice"]
    assert "Nothing here serves this request well" in text
    assert good["weak_match"] is False and not good["notice"]
    assert good["tools"][0]["id"] == "weather__get_forecast"


def test_the_verdict_needs_a_low_best_cosine_and_nothing_standing_out() -> None:
    flat = np.full(20, 0.15)
    assert match_strength(flat).weak
    standing_out = flat.copy()
    standing_out[3] = 0.3  # low, but well above the rest: a terse request for a real tool
    assert not match_strength(standing_out).weak
    assert not match_strength(np.full(20, 0.5)).weak  # close matches everywhere
    assert match_strength(np.zeros(GAP_RANK - 1)) is None  # too few tools to judge
