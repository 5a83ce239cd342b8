"""Helpers for the reliability tests: toolscout as `serve` assembles it, over a registry, with an MCP
client session on it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from support.registries import fast_search_settings, in_process_entries
from mcp import Client

from toolscout.app import App, AppConfig
from toolscout.catalog import Catalog
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.server import build_server


def app_config(registry: Path, **config: Any) -> AppConfig:
    """The configuration tests run toolscout with: `registry`, keyword signals only (no model to
    load), and `config`'s other fields of `AppConfig`."""
    return AppConfig(registries=(registry,), search=fast_search_settings(), **config)


def in_process_of(registry: Path) -> dict[str, Any]:
    """Every server of the registry that can run in this process, as its server object
    (`registries.in_process_entries`): for tests whose subject is not the upstream's process."""
    return in_process_entries(json.loads(registry.read_text(encoding="utf-8"))["mcpServers"])


def here_over(registry: Path, options: GatewayOptions | None = None) -> GatewayOptions:
    """`options` with the registry's servers run in this process where they can (`in_process_of`)."""
    options = options or GatewayOptions()
    return dataclasses.replace(options, in_process={**in_process_of(registry), **options.in_process})


def app_config_here(registry: Path, **config: Any) -> AppConfig:
    """`app_config`, its registry's servers run in this process where they can (`here_over`)."""
    return app_config(registry, gateway=here_over(registry, config.pop("gateway", None)), **config)


@asynccontextmanager
async def gateway_session(registry: Path, **options: Any) -> AsyncIterator[tuple[Gateway, Client]]:
    """toolscout as `serve` builds it, every upstream settled, and a client session on its MCP
    server; `options` are those of `GatewayOptions`."""
    async with App(app_config(registry, gateway=GatewayOptions(**options))) as app:
        await app.gateway.ready(30)
        async with Client(app.server, mode="legacy") as client:
            yield app.gateway, client


async def wait_until_serving(gateway: Gateway, client: Client, tool_id: str, arguments: dict[str, Any]) -> None:
    """Wait (the caller bounds it) until a call of `tool_id` succeeds, e.g. after a restart.

    Between attempts it waits for the next catalog change (an upstream going down or coming up).
    """
    changed = anyio.Event()

    async def on_change(catalog: Catalog) -> None:
        changed.set()

    gateway.add_listener(on_change)
    while (await client.call_tool("execute_tool", {"name": tool_id, "arguments": arguments})).is_error:
        await changed.wait()
        changed = anyio.Event()


async def search_answers(
    registry: Path, engine: ToolSearch, queries: tuple[str, ...], *, embedded: bool = True
) -> tuple[dict[str, types.Tool], dict[str, dict[str, Any]]]:
    """The tools listed and each query's `search_tools` answer (structured), through a real MCP
    session on a gateway over `registry` searched by `engine` (the caller bounds the wait);
    `embedded`: wait until the catalog is embedded first."""
    async with Gateway(load_registries([registry]), engine) as gateway:
        await gateway.ready(40)
        if embedded:
            await gateway.wait_complete()
        async with Client(build_server(gateway), mode="legacy") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            answers = {q: (await client.call_tool("search_tools", {"query": q})).structured_content for q in queries}
    return listed, answers


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
