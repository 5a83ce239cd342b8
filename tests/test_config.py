"""Registry loading: shapes, server.json translation, ${VAR} expansion, errors, environment rule."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from toolscout.errors import ConfigError
from toolscout.registry.loading import load_registries
from toolscout.registry.sources import default_registry_path, follow_text_symlink
from toolscout.registry.spec import ServerSpec
from toolscout.secrets import redact
from toolscout.upstream.launch import resolve_command, upstream_environment


def write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def load_one(tmp_path: Path, data: object) -> list[ServerSpec]:
    return load_registries([write(tmp_path, "servers.json", data)])


def server_json(**overrides: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.example/weather",
        "description": "Weather forecasts",
        "version": "1.2.0",
    }
    doc.update(overrides)
    return doc


# --- Claude Desktop / Cursor / VS Code shapes ---------------------------------------------------


def test_mcp_servers_stdio_entry_keeps_command_args_env_and_cwd(tmp_path):
    (spec,) = load_one(tmp_path, {"mcpServers": {"files": {
        "command": "python", "args": ["-m", "srv", "--root", "."],
        "env": {"MODE": "fast"}, "cwd": "work",
    }}})
    assert spec.name == "files"
    assert spec.transport == "stdio"
    assert spec.command == "python"
    assert spec.args == ("-m", "srv", "--root", ".")
    assert dict(spec.env) == {"MODE": "fast"}
    assert spec.cwd == str(tmp_path / "work")
    assert spec.source == str(tmp_path / "servers.json")
    assert spec.error is None and spec.timeout is None


def test_remote_entries_become_http_or_sse_by_their_type(tmp_path):
    specs = load_one(tmp_path, {"mcpServers": {
        "plain": {"url": "https://a.example/mcp"},
        "http": {"url": "https://b.example/mcp", "type": "http", "headers": {"X-Team": "blue"}},
        "streamable": {"url": "https://c.example/mcp", "type": "streamable-http"},
        "events": {"url": "https://d.example/sse", "type": "sse"},
    }})
    kinds = {s.name: s.transport for s in specs}
    assert kinds == {"plain": "http", "http": "http", "streamable": "http", "events": "sse"}
    assert dict(specs[1].headers) == {"X-Team": "blue"}
    assert specs[1].url == "https://b.example/mcp"


def test_vs_code_servers_key_is_accepted(tmp_path):
    specs = load_one(tmp_path, {"servers": {
        "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
        "remote": {"type": "http", "url": "https://x.example/mcp"},
    }})
    assert [(s.name, s.transport) for s in specs] == [("time", "stdio"), ("remote", "http")]


def test_disabled_entries_are_skipped_and_unknown_host_keys_are_ignored(tmp_path):
    specs = load_one(tmp_path, {"mcpServers": {
        "off": {"command": "a", "disabled": True},
        "on": {"command": "b", "disabled": False, "autoApprove": ["x"], "description": "ok"},
    }})
    assert [s.name for s in specs] == ["on"]


def test_timeout_is_read_in_seconds(tmp_path):
    (spec,) = load_one(tmp_path, {"mcpServers": {"slow": {"command": "a", "timeout": 12}}})
    assert spec.timeout == 12.0


@pytest.mark.parametrize("bad", [0, -3, "10", True])
def test_a_timeout_that_is_not_a_positive_number_is_a_file_error(tmp_path, bad):
    with pytest.raises(ConfigError, match=r"server 'slow'.*'timeout' must be a positive number"):
        load_one(tmp_path, {"mcpServers": {"slow": {"command": "a", "timeout": bad}}})


# --- file-level errors ---------------------------------------------------------------------------


def test_invalid_json_reports_the_file_line_and_column(tmp_path):
    path = write(tmp_path, "broken.json", '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}')
    with pytest.raises(ConfigError) as info:
        load_registries([path])
    assert str(path) in str(info.value)
    assert "registry file" in str(info.value) and "is not valid JSON: line 3, column" in str(info.value)


def test_an_unreadable_file_names_the_path_and_the_flag(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match=r"cannot read registry file .*nope\.json.*--registry"):
        load_registries([missing])


def test_an_unknown_shape_says_which_shapes_are_accepted(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown registry shape.*mcpServers"):
        load_one(tmp_path, {"tools": []})
    with pytest.raises(ConfigError, match=r"'mcpServers' must be an object"):
        load_one(tmp_path, {"mcpServers": [{"command": "a"}]})


def test_an_entry_with_neither_command_nor_url_is_a_file_error(tmp_path):
    with pytest.raises(ConfigError, match=r"server 'empty': needs 'command'.*or 'url'"):
        load_one(tmp_path, {"mcpServers": {"empty": {"args": ["x"]}}})


def test_an_entry_with_both_command_and_url_is_a_file_error(tmp_path):
    with pytest.raises(ConfigError, match=r"server 'both': has both 'command' and 'url'"):
        load_one(tmp_path, {"mcpServers": {"both": {"command": "a", "url": "https://x"}}})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "a", "args": "--flag"}, r"'args' must be a list \(got \"--flag\"\)"),
        ({"command": "a", "args": ["ok", 5]}, r"'args\[1\]' must be a string \(got 5\)"),
        ({"command": "a", "env": {"PORT": 8080}}, r"'env.PORT' must be a string \(got 8080\)"),
        ({"url": "https://x", "headers": ["a"]}, r"'headers' must be an object"),
        ({"url": "https://x", "type": "websocket"}, r"'type' must be one of .*\"sse\""),
        ({"command": "a", "type": "http"}, r"'type' is 'http' but the entry has a 'command'"),
        ("python server.py", r"'the entry' must be an object"),
    ],
)
def test_wrong_types_name_the_server_the_field_and_the_expected_type(tmp_path, entry, message):
    with pytest.raises(ConfigError, match=r"servers\.json: server 'srv': " + message):
        load_one(tmp_path, {"mcpServers": {"srv": entry}})


def test_the_same_server_name_in_two_files_names_both_files(tmp_path):
    first = write(tmp_path, "a.json", {"mcpServers": {"time": {"command": "a"}}})
    second = write(tmp_path, "b.json", {"mcpServers": {"time": {"command": "b"}}})
    with pytest.raises(ConfigError) as info:
        load_registries([first, second])
    assert "server 'time'" in str(info.value)
    assert str(first) in str(info.value) and str(second) in str(info.value)


def test_the_same_server_name_twice_in_one_file_is_an_error_not_a_silent_override(tmp_path):
    path = write(tmp_path, "dup.json", '{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}')
    with pytest.raises(ConfigError, match=r"key 'a' appears twice"):
        load_registries([path])


def test_files_are_merged_in_order(tmp_path):
    first = write(tmp_path, "a.json", {"mcpServers": {"one": {"command": "a"}}})
    second = write(tmp_path, "b.json", [server_json(remotes=[{"type": "sse", "url": "https://w"}])])
    specs = load_registries([first, second])
    assert [(s.name, s.source) for s in specs] == [("one", str(first)), ("weather", str(second))]


# --- official server.json documents -------------------------------------------------------------


def test_a_pypi_package_launches_with_uvx_pinned_to_its_version(tmp_path):
    doc = server_json(packages=[{
        "registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0",
        "runtimeHint": "uvx", "transport": {"type": "stdio"},
        "runtimeArguments": [{"type": "named", "name": "--python", "value": "3.12"}],
        "packageArguments": [
            {"type": "positional", "value": "serve"},
            {"type": "named", "name": "--units", "default": "metric"},
            {"type": "named", "name": "--verbose", "description": "optional, no value: left out"},
        ],
        "environmentVariables": [
            {"name": "WEATHER_REGION", "value": "eu-{zone}", "variables": {"zone": {"default": "west"}}},
        ],
    }])
    (spec,) = load_one(tmp_path, [doc])
    assert spec.name == "weather"
    assert spec.command == "uvx"
    assert spec.args == ("--python", "3.12", "weather-mcp==1.2.0", "serve", "--units", "metric")
    assert dict(spec.env) == {"WEATHER_REGION": "eu-west"}


def test_an_npm_package_launches_with_npx_yes_at_its_version(tmp_path):
    doc = server_json(packages=[{
        "registryType": "npm", "identifier": "@example/weather", "version": "0.3.1",
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "positional", "valueHint": "root", "default": "/srv"}],
    }])
    (spec,) = load_one(tmp_path, doc)  # a single document, not a list, is accepted too
    assert (spec.command, spec.args) == ("npx", ("-y", "@example/weather@0.3.1", "/srv"))


def test_required_server_json_inputs_without_a_value_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WEATHER_API_KEY", "k-123456")
    monkeypatch.delenv("REGION", raising=False)
    doc = server_json(packages=[{
        "registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0",
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "named", "name": "--region", "isRequired": True}],
        "environmentVariables": [
            {"name": "WEATHER_API_KEY", "isRequired": True, "isSecret": True},
            {"name": "OPTIONAL_FLAG", "description": "not required and no value: not set"},
        ],
    }])
    (spec,) = load_one(tmp_path, [doc])
    assert dict(spec.env) == {"WEATHER_API_KEY": "k-123456"}
    assert "k-123456" in spec.secrets
    assert spec.error is not None and "REGION" in spec.error and "weather" in spec.error


def test_a_remote_becomes_streamable_http_or_sse_with_its_headers(tmp_path, monkeypatch):
    monkeypatch.setenv("WEATHER_TOKEN", "tok-abcdef")  # {weather_token} -> ${WEATHER_TOKEN}
    doc = server_json(remotes=[{
        "type": "streamable-http", "url": "https://api.example/mcp",
        "headers": [{"name": "Authorization", "value": "Bearer {weather_token}",
                     "variables": {"weather_token": {"isRequired": True, "isSecret": True}}}],
    }])
    events = server_json(name="io.github.example/events",
                         remotes=[{"type": "sse", "url": "https://api.example/sse"}])
    weather, sse = load_one(tmp_path, [doc, {"server": events, "_meta": {}}])
    assert (weather.transport, weather.url) == ("http", "https://api.example/mcp")
    assert dict(weather.headers) == {"Authorization": "Bearer tok-abcdef"}
    assert {"Bearer tok-abcdef", "tok-abcdef"} <= weather.secrets
    assert (sse.name, sse.transport) == ("events", "sse")


def test_a_stdio_package_is_preferred_over_remotes(tmp_path):
    doc = server_json(
        packages=[{"registryType": "pypi", "identifier": "w", "version": "1",
                   "transport": {"type": "stdio"}}],
        remotes=[{"type": "streamable-http", "url": "https://api.example/mcp"}],
    )
    (spec,) = load_one(tmp_path, [doc])
    assert spec.transport == "stdio" and spec.args == ("w==1",)


def test_a_registry_api_listing_is_accepted(tmp_path):
    listing = {"servers": [{"server": server_json(remotes=[{"type": "sse", "url": "https://w"}]),
                            "_meta": {"io.modelcontextprotocol.registry/official": {}}}]}
    (spec,) = load_one(tmp_path, listing)
    assert spec.name == "weather" and spec.url == "https://w"


def test_a_server_json_with_nothing_launchable_is_a_file_error(tmp_path):
    doc = server_json(packages=[{"registryType": "nuget", "identifier": "W", "version": "1",
                                 "transport": {"type": "stdio"}}])
    with pytest.raises(ConfigError, match=r"registryType 'nuget' is not supported"):
        load_one(tmp_path, [doc])
    with pytest.raises(ConfigError, match=r"nothing toolscout can launch"):
        load_one(tmp_path, [server_json()])


# --- ${VAR} expansion and secrets ----------------------------------------------------------------


def test_variables_expand_in_env_headers_args_and_url(tmp_path, monkeypatch):
    monkeypatch.setenv("TS_TOKEN", "secret-token")
    monkeypatch.setenv("TS_DIR", "/data/notes")
    monkeypatch.delenv("TS_UNSET", raising=False)
    local, remote = load_one(tmp_path, {"mcpServers": {
        "local": {"command": "srv", "args": ["--dir", "${TS_DIR}", "--mode=${TS_UNSET:-quick}"],
                  "env": {"API_KEY": "${TS_TOKEN}"}},
        "remote": {"url": "https://h.example/${TS_DIR}", "headers": {"Authorization": "Bearer ${TS_TOKEN}"}},
    }})
    assert local.args == ("--dir", "/data/notes", "--mode=quick")
    assert dict(local.env) == {"API_KEY": "secret-token"}
    assert remote.url == "https://h.example//data/notes"
    assert dict(remote.headers) == {"Authorization": "Bearer secret-token"}
    assert local.error is None and remote.error is None


def test_a_missing_variable_marks_only_that_server_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("TS_MISSING_KEY", raising=False)
    path = write(tmp_path, "servers.json", {"mcpServers": {
        "needs_key": {"command": "srv", "env": {"API_KEY": "${TS_MISSING_KEY}"}},
        "fine": {"command": "srv"},
    }})
    broken, fine = load_registries([path])
    assert fine.error is None
    assert broken.error is not None
    for part in ("needs_key", "TS_MISSING_KEY", str(path), "env.API_KEY"):
        assert part in broken.error


def test_secrets_are_the_expanded_env_and_header_values(tmp_path, monkeypatch):
    monkeypatch.setenv("TS_TOKEN", "tok-98765")
    local, remote = load_one(tmp_path, {"mcpServers": {
        "local": {"command": "srv", "args": ["--public-arg"], "env": {"KEY": "${TS_TOKEN}", "ON": "1"}},
        "remote": {"url": "https://h.example/mcp", "headers": {"X-Api-Key": "literal-key-value"}},
    }})
    assert local.secrets == {"tok-98765"}  # "1" is too short to be a secret; args are not secrets
    assert remote.secrets == {"literal-key-value"}


def test_redact_hides_every_secret_including_one_inside_another():
    text = "sent Authorization: Bearer tok-98765 to https://h?key=tok-98765"
    assert redact(text, {"Bearer tok-98765", "tok-98765"}) == (
        "sent Authorization: *** to https://h?key=***"
    )
    assert redact("nothing here", frozenset()) == "nothing here"


# --- the environment of a stdio upstream ---------------------------------------------------------


def test_an_upstream_inherits_only_the_allowlist_plus_its_own_env(monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/corp.pem")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    monkeypatch.setenv("UV_INDEX_URL", "https://mirror/simple")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/cache")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-gateway-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("UV_PUBLISH_TOKEN", "pypi-token")
    monkeypatch.setenv("VIRTUAL_ENV", "/gateway/venv")
    spec = ServerSpec(name="s", transport="stdio", command="srv", env={"MODE": "x", "LC_ALL": "POSIX"})
    env = upstream_environment(spec)
    for inherited in ("SSL_CERT_FILE", "HTTPS_PROXY", "https_proxy", "UV_INDEX_URL", "XDG_CACHE_HOME"):
        assert env[inherited] == os.environ[inherited]
    for private in ("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "UV_PUBLISH_TOKEN", "VIRTUAL_ENV"):
        assert private not in env
    assert env["MODE"] == "x"
    assert env["LC_ALL"] == "POSIX"  # the entry's own env wins over inherited values


def test_the_gateway_interpreters_folder_is_on_the_upstream_path(monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/local/bin", "/usr/bin"]))
    env = upstream_environment(ServerSpec(name="s", transport="stdio", command="srv"))
    own_bin = os.path.dirname(sys.executable)
    assert env["PATH"].split(os.pathsep) == ["/usr/local/bin", "/usr/bin", own_bin]


def test_resolve_command_finds_programs_on_the_upstream_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    program = tmp_path / "my-server"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert resolve_command(ServerSpec(name="s", transport="stdio", command="my-server")) == str(program)
    # uvx shipped next to the gateway's interpreter is found though PATH does not name it.
    if (Path(sys.executable).parent / "uvx").exists():
        found = resolve_command(ServerSpec(name="s", transport="stdio", command="uvx"))
        assert found == str(Path(sys.executable).parent / "uvx")


def test_resolve_command_says_what_to_install_when_the_program_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    spec = ServerSpec(name="notes", transport="stdio", command="npx", source="reg.json")
    with pytest.raises(ConfigError, match=r"server 'notes' \(reg\.json\): command 'npx' not found.*Node\.js"):
        resolve_command(spec)


# --- the bundled default registry ----------------------------------------------------------------


def test_the_default_registry_is_packaged_and_loads_with_pinned_uvx_servers():
    path = default_registry_path()
    assert path.is_file()
    specs = load_registries([path])
    assert len(specs) >= 4
    for spec in specs:
        assert spec.error is None
        assert spec.command == "uvx" and spec.transport == "stdio"
        assert any("==" in arg for arg in spec.args), f"{spec.name} is not pinned"


def test_a_symlink_checked_out_as_text_still_leads_to_the_registry_file(tmp_path):
    # What git writes for src/toolscout/data/default.json where symlinks are unsupported.
    data = tmp_path / "src" / "toolscout" / "data"
    data.mkdir(parents=True)
    (data / "default.json").write_text("../../../registry/default.json")
    (tmp_path / "registry").mkdir()
    (tmp_path / "registry" / "default.json").write_text('{"mcpServers": {}}')
    assert follow_text_symlink(data / "default.json") == tmp_path / "registry" / "default.json"
    assert follow_text_symlink(tmp_path / "registry" / "default.json") == tmp_path / "registry" / "default.json"
