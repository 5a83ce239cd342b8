"""Registries by URL, against a real HTTP registry on 127.0.0.1: the official API's listing
(filters, pagination), ETags and the offline copy, and every way a URL registry is refused."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.asgi import serve_asgi
from support.http_registry import HttpRegistry, listed
from support.registries import fast_search_settings
from upstreams import weather_server

from toolscout.app import App, AppConfig
from toolscout.errors import ConfigError
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.fetching import registries_dir
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.upstream import State


def server_json(name: str, version: str = "1.0.0", **package: Any) -> dict[str, Any]:
    return {
        "name": f"io.github.example/{name}",
        "description": f"{name} tools",
        "version": version,
        "packages": [{"registryType": "pypi", "identifier": f"mcp-{name}", "version": version,
                      "transport": {"type": "stdio"}, **package}],
    }


@pytest.fixture
def registry() -> Any:
    with HttpRegistry() as served:
        yield served


def test_an_api_listing_is_followed_page_by_page_with_its_filters(registry: HttpRegistry) -> None:
    registry.servers = [listed(server_json(name)) for name in ("weather", "notes", "git", "time", "weather-alerts")]
    specs = load_registries([registry.url("/v0.1/servers")])
    assert [s.name for s in specs] == ["weather", "notes", "git", "time", "weather-alerts"]
    assert [path for path, _ in registry.requests] == [
        "/v0.1/servers", "/v0.1/servers?cursor=2", "/v0.1/servers?cursor=4"]
    assert specs[0].command == "uvx" and specs[0].args == ("mcp-weather==1.0.0",)

    registry.requests.clear()
    filtered = load_registries([registry.url("/v0.1/servers?search=weather&version=latest")])
    assert [s.name for s in filtered] == ["weather", "weather-alerts"]
    assert all("search=weather" in path and "version=latest" in path for path, _ in registry.requests)


def test_older_versions_and_deleted_servers_of_a_listing_are_left_out(registry: HttpRegistry) -> None:
    registry.servers = [
        listed(server_json("weather", "0.9.0"), latest=False),
        listed(server_json("weather", "1.0.0")),
        listed(server_json("gone"), status="deleted"),
    ]
    (spec,) = load_registries([registry.url("/v0.1/servers")])
    assert spec.args == ("mcp-weather==1.0.0",)


def test_an_unchanged_registry_is_revalidated_with_its_etag(registry: HttpRegistry) -> None:
    registry.documents["/servers.json"] = [server_json("weather")]
    first = load_registries([registry.url("/servers.json")])
    second = load_registries([registry.url("/servers.json")])
    assert first == second
    (_, none), (_, etag) = registry.requests
    assert none is None and etag and etag.startswith('"')
    # The copy kept for offline use is this user's alone.
    (copy,) = registries_dir().glob("*.json")
    assert copy.stat().st_mode & 0o077 == 0


def test_an_unreachable_registry_is_read_from_its_last_copy_with_its_age(caplog: pytest.LogCaptureFixture) -> None:
    with HttpRegistry() as registry:
        registry.servers = [listed(server_json(name)) for name in ("weather", "notes", "git")]
        url = registry.url("/v0.1/servers")
        assert len(load_registries([url])) == 3
    (copy,) = registries_dir().glob("*.json")
    kept = json.loads(copy.read_text())
    copy.write_text(json.dumps({**kept, "fetched_at": kept["fetched_at"] - 3 * 3600}))
    with caplog.at_level(logging.WARNING):
        specs = load_registries([url])
    assert [s.name for s in specs] == ["weather", "notes", "git"]
    assert "cannot reach it" in caplog.text and "using the copy fetched 3 h ago" in caplog.text


def test_a_registry_that_never_answers_is_a_clear_error(registry: HttpRegistry) -> None:
    with pytest.raises(ConfigError, match=r"registry http://127\.0\.0\.1:\d+/hang: no answer within 0\.5 s"):
        load_registries([registry.url("/hang")], fetch_timeout=0.5)


def test_a_malformed_document_is_a_clear_error_and_never_replaces_the_last_good_copy(
    registry: HttpRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ConfigError, match=r"/broken: the answer is not valid JSON: line 1, column 14"):
        load_registries([registry.url("/broken")])
    registry.documents["/servers.json"] = [server_json("weather")]
    load_registries([registry.url("/servers.json")])
    registry.documents["/servers.json"] = {"what": "not a registry"}
    with caplog.at_level(logging.WARNING):
        (spec,) = load_registries([registry.url("/servers.json")])
    assert spec.name == "weather"
    assert "unknown registry shape" in caplog.text and "using the copy fetched" in caplog.text


def test_a_redirect_to_another_host_is_refused_and_one_within_the_origin_followed(registry: HttpRegistry) -> None:
    registry.servers = [listed(server_json("weather"))]
    with pytest.raises(ConfigError, match=r"redirects to .*localhost.*another host than the one named"):
        load_registries([registry.url("/elsewhere")])
    assert [s.name for s in load_registries([registry.url("/moved")])] == ["weather"]


def test_plain_http_is_refused_except_to_this_machine() -> None:
    with pytest.raises(ConfigError, match="uses plain http, which anyone on the network can rewrite; use https"):
        load_registries(["http://registry.example.com/v0.1/servers"])
    # On the command line it is a usage error before anything starts.
    result = subprocess.run(
        [sys.executable, "-m", "toolscout.cli", "tools", "--registry", "http://registry.example.com/servers.json"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "uses plain http" in result.stderr and "Traceback" not in result.stderr


def test_a_downloaded_file_cannot_name_a_command(registry: HttpRegistry) -> None:
    registry.documents["/claude.json"] = {"mcpServers": {"x": {"command": "sh", "args": ["-c", "id"]}}}
    with pytest.raises(ConfigError, match="must hold server.json documents"):
        load_registries([registry.url("/claude.json")])


def test_servers_from_a_url_run_only_pinned_packages_with_their_own_runner(
    registry: HttpRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    registry.documents["/servers.json"] = [
        server_json("floating", "latest"),
        server_json("ranged", "^1.2.0"),
        server_json("shell", runtimeHint="bash"),
        {**server_json("plain-remote"), "packages": [], "remotes": [{"type": "streamable-http", "url": "http://mcp.example.com/mcp"}]},
        server_json("good", "2.1.0"),
    ]
    with caplog.at_level(logging.WARNING):
        specs = load_registries([registry.url("/servers.json")])
    assert [s.name for s in specs] == ["good"]
    for reason in ("'latest' is not one pinned release", "'^1.2.0' is not one pinned release",
                   "runtimeHint 'bash' is not a runner for pypi packages", "uses plain http"):
        assert reason in caplog.text


def test_environment_values_come_from_the_user_never_from_the_registry(
    registry: HttpRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_API_KEY", "user-secret-1234")
    monkeypatch.delenv("WEATHER_UNITS", raising=False)
    monkeypatch.delenv("NOTES_TOKEN", raising=False)
    registry.documents["/servers.json"] = [
        server_json("weather", environmentVariables=[
            {"name": "NODE_OPTIONS", "value": "--require /tmp/evil.js"},
            {"name": "WEATHER_API_KEY", "isRequired": True, "default": "registry-chosen"},
            {"name": "WEATHER_UNITS", "default": "metric"},
        ]),
        server_json("notes", environmentVariables=[{"name": "NOTES_TOKEN", "isRequired": True}]),
    ]
    weather, notes = load_registries([registry.url("/servers.json")])
    assert dict(weather.env) == {"WEATHER_API_KEY": "user-secret-1234"}
    assert weather.error is None and "user-secret-1234" in weather.secrets
    assert notes.error and "NOTES_TOKEN not set" in notes.error


def test_a_registry_file_can_name_registry_urls(registry: HttpRegistry, tmp_path: Path) -> None:
    registry.servers = [listed(server_json("weather"))]
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({
        "registries": [registry.url("/v0.1/servers?version=latest")],
        "mcpServers": {"local": {"command": "local-server"}},
    }))
    assert [s.name for s in load_registries([config])] == ["local", "weather"]
    config.write_text(json.dumps({"registries": [registry.url("/v0.1/servers")]}))
    assert [s.name for s in load_registries([config])] == ["weather"]
    config.write_text(json.dumps({"registries": "https://one.example"}))
    with pytest.raises(ConfigError, match="'registries' must be a list of registry URLs or file paths"):
        load_registries([config])


@pytest.fixture
async def weather_url() -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        base, server = await serve_asgi(weather_server.server.streamable_http_app(), tg)
        yield f"{base}/mcp"
        server.should_exit = True


@pytest.mark.anyio
async def test_a_remote_server_listed_by_a_url_registry_is_searched_and_called(
    registry: HttpRegistry, weather_url: str
) -> None:
    registry.servers = [listed({"name": "io.github.example/weather", "version": "1.0.0",
                                "description": "Weather", "remotes": [{"type": "streamable-http", "url": weather_url}]})]
    specs = load_registries([registry.url("/v0.1/servers?version=latest")])
    with anyio.fail_after(30):
        async with Gateway(specs, ToolSearch(fast_search_settings()),
                           GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            assert [s.state for s in gateway.statuses()] == [State.UP]
            hit = (await gateway.search("forecast for a city", limit=1)).hits[0]
            result = await gateway.call(hit.tool, {"city": "Lisbon", "days": 1})
    assert result.structured_content == {"city": "Lisbon", "days": 1, "summary": ["day 1: sunny, 21 C"]}


@pytest.mark.anyio
async def test_toolscout_assembled_over_a_registry_url_serves_it_instead_of_failing_to_watch_it_as_a_file(
    registry: HttpRegistry, weather_url: str
) -> None:
    registry.servers = [listed({"name": "io.github.example/weather", "version": "1.0.0",
                                "description": "Weather", "remotes": [{"type": "streamable-http", "url": weather_url}]})]
    config = AppConfig(registries=(registry.url("/v0.1/servers"),), search=fast_search_settings())
    with anyio.fail_after(30):
        async with App(config) as app:
            # Its background work (the watch of registry files among them) runs beside this.
            await app.gateway.ready(20)
            hit = (await app.gateway.search("forecast for a city", limit=1)).hits[0]
            result = await app.gateway.call(hit.tool, {"city": "Oslo", "days": 1})
    assert result.structured_content["city"] == "Oslo"


@pytest.mark.anyio
async def test_the_cli_searches_the_servers_of_a_registry_url(registry: HttpRegistry, weather_url: str) -> None:
    registry.servers = [listed({"name": "io.github.example/weather", "version": "1.0.0",
                                "description": "Weather", "remotes": [{"type": "streamable-http", "url": weather_url}]})]
    command = [sys.executable, "-m", "toolscout.cli", "search", "--registry", registry.url("/v0.1/servers"),
               "--model", "none", "forecast for a city"]
    with anyio.fail_after(90):
        first = await anyio.run_process(command, check=False)
        again = await anyio.run_process(command, check=False)
    assert first.returncode == 0, first.stderr.decode()
    assert "1. weather__get_forecast" in first.stdout.decode()
    # The second run answers from the catalog seen over the same registry URL.
    assert again.stdout == first.stdout and "from the catalog seen" in again.stderr.decode()
