"""The first search after a restart over a known catalog is already semantic (vectors from the cache)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client
from support.fake_encoder import HashingEncoder
from support.gateway_session import here_over, text_of
from support.registries import python_server, write_registry

from toolscout.catalog import ToolRecord
from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.engine import PENDING_NOTICE
from toolscout.serving.server import build_server

QUERY = "will I need an umbrella in Oslo tomorrow"


class SlowToComplete(ToolSearch):
    """An engine whose background `complete()` (loading the model, embedding) has not got far yet."""

    def __init__(self, settings: SearchSettings) -> None:
        super().__init__(settings)
        self.release = threading.Event()

    def complete(self, progress=None) -> None:  # type: ignore[no-untyped-def]
        self.release.wait(120)
        super().complete(progress)


async def _first_search(registry: Path, engine: ToolSearch, *, wait_complete: bool, query: str = QUERY) -> dict:
    """Start a gateway, search at once through an MCP session (after `complete()` if asked)."""
    async with Gateway(load_registries([registry]), engine, here_over(registry)) as gateway:
        await gateway.ready(30)
        if wait_complete:
            await gateway.wait_complete()
        async with Client(build_server(gateway), mode="legacy") as client:
            return json.loads(text_of(await client.call_tool("search_tools", {"query": query, "limit": 3})))


@pytest.mark.anyio
async def test_the_first_search_after_a_restart_with_a_warm_cache_is_semantic(tmp_path: Path) -> None:
    # The packaged model, for real, and a real cache directory. The restarted gateway's background
    # completion is held back, as a model that takes seconds to load holds it back: the first
    # search used to answer meanwhile "semantic index is still being built".
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    settings = SearchSettings(cache_dir=tmp_path / "cache")
    restarted_engine = SlowToComplete(settings)
    try:
        with anyio.fail_after(180):
            settled = await _first_search(registry, ToolSearch(settings), wait_complete=True)
            restarted = await _first_search(registry, restarted_engine, wait_complete=False)
    finally:
        restarted_engine.release.set()
    assert settled["notice"] is None
    assert restarted["notice"] is None
    assert restarted["tools"] == settled["tools"]
    assert restarted_engine._embedder is not None and restarted_engine._embedder.encoded == 0


@pytest.mark.anyio
async def test_a_new_catalog_is_searched_by_keywords_while_it_is_embedded(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    engine = SlowToComplete(SearchSettings(cache_dir=tmp_path / "cache"))
    try:
        with anyio.fail_after(120):
            first = await _first_search(registry, engine, wait_complete=False, query="weather forecast")
    finally:
        engine.release.set()
    assert first["notice"] == PENDING_NOTICE and first["tools"]


CATALOG = [
    ToolRecord(id=f"srv__tool_{i}", name=f"tool_{i}", server="srv", description=f"Does thing number {i}.")
    for i in range(5)
]


def test_a_known_catalog_is_searched_semantically_before_complete_a_new_tool_is_not(tmp_path: Path) -> None:
    settings = SearchSettings(cache_dir=tmp_path)
    warm = ToolSearch(settings, encoder=HashingEncoder())
    warm.index(CATALOG)
    warm.complete()

    restarted = ToolSearch(settings, encoder=HashingEncoder())
    restarted.index(CATALOG)
    known = restarted.search("thing number 3", limit=1)
    assert not restarted.pending and known.notice is None and "dense" in known.signals

    grown = [*CATALOG, ToolRecord(id="srv__new", name="new", server="srv", description="Something never embedded.")]
    restarted.index(grown)
    new = restarted.search("thing number 3", limit=1)
    assert restarted.pending and new.notice == PENDING_NOTICE and "dense" not in new.signals


def test_a_search_waits_a_bounded_time_for_the_model_another_thread_is_loading(tmp_path: Path) -> None:
    settings = SearchSettings(cache_dir=tmp_path)
    warm = ToolSearch(settings)  # the packaged model: its id is remembered beside the vectors
    warm.index(CATALOG)
    warm.complete()

    restarted = ToolSearch(settings, model_wait=0.1)
    restarted.index(CATALOG)  # vectors from the cache, the model not loaded yet
    assert restarted._embedder is not None
    with restarted._embedder._load_lock:  # as while complete() loads the model in the background
        loading = restarted.search("thing number 3", limit=1)
    loaded = restarted.search("thing number 3", limit=1)
    assert loading.notice == PENDING_NOTICE and "dense" not in loading.signals and loading.hits
    assert loaded.notice is None and "dense" in loaded.signals
