"""`toolscout install <host>` and `uninstall`, run as a person runs them, on each host's file format:
the host then sees toolscout alone, its other keys untouched; `toolscout search` over what was
installed finds the moved servers' tools; uninstall gives the original back byte for byte; secrets
never reach the output; a file that cannot be rewritten without loss is refused with what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.registries import python_server

SECRET = "sk-live-do-not-print-0123456789"


def toolscout(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ.copy()
    if home is not None:
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([sys.executable, "-m", "toolscout.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, check=False)


def three_servers(*, typed: bool = False) -> dict[str, Any]:
    servers = {
        "weather": python_server("weather_server.py", env={"WEATHER_API_KEY": SECRET}),
        "notes": python_server("notes_server.py"),
        "paged": python_server("paged_server.py"),
    }
    return {name: {"type": "stdio", **entry} for name, entry in servers.items()} if typed else servers


# Each host's format: its servers' key, and unrelated keys of the kind the host keeps there.
FORMATS = {
    "claude-desktop": lambda: {"globalShortcut": "Ctrl+Space", "mcpServers": three_servers(), "theme": "dark"},
    "cursor": lambda: {"mcpServers": three_servers()},
    "vscode": lambda: {"inputs": [{"id": "key", "type": "promptString", "password": True}],
                       "servers": three_servers(typed=True)},
    "claude-code": lambda: {"numStartups": 12, "projects": {"/src/app": {"mcpServers": {}}},
                            "mcpServers": three_servers(typed=True), "tipsHistory": {"x": 1}},
    "windsurf": lambda: {"mcpServers": three_servers()},
}
KEY = {"vscode": "servers"}


def write_host_file(path: Path, document: dict[str, Any], indent: int = 4) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=indent) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path.read_bytes()


@pytest.mark.parametrize("host", list(FORMATS))
def test_install_leaves_toolscout_alone_and_uninstall_restores_the_file_byte_for_byte(tmp_path: Path, host: str) -> None:
    config = tmp_path / "host.json"
    original = write_host_file(config, FORMATS[host]())
    key = KEY.get(host, "mcpServers")

    done = toolscout("install", host, "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "weather, notes, paged" in done.stdout and SECRET not in done.stdout + done.stderr
    after = json.loads(config.read_text(encoding="utf-8"))
    before = json.loads(original)
    assert list(after) == list(before)  # every key kept, in its place
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in before.items() if k != key}
    (entry,) = after[key].values()
    assert list(after[key]) == ["toolscout"] and entry["command"] == "uvx"
    assert entry["args"][:2] == ["toolscout", "serve"]
    assert ("type" in entry) == (host == "vscode")
    assert config.stat().st_mode & 0o777 == 0o600
    assert SECRET not in config.read_text(encoding="utf-8")

    done = toolscout("uninstall", host, "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert config.read_bytes() == original
    assert not (tmp_path / "host.json.before-toolscout").exists()


def test_search_over_the_installed_setup_finds_the_three_servers_tools(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    write_host_file(config, FORMATS["claude-desktop"]())
    assert toolscout("install", "claude-desktop", "--config", str(config)).returncode == 0
    args = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["toolscout"]["args"]
    served = args[args.index("serve") + 1:]  # what the host will pass to `toolscout serve`
    done = toolscout("tools", "--refresh", "--json", *served)
    assert done.returncode == 0, done.stderr
    assert {row["name"]: row["state"] for row in json.loads(done.stdout)} == {
        "weather": "up", "notes": "up", "paged": "up"}
    for query, tool in (("forecast for Paris", "weather__get_forecast"), ("delete a note", "notes__delete_note")):
        done = toolscout("search", query, "--json", "--model", "none", *served)
        assert done.returncode == 0, done.stderr
        assert tool in [found["name"] for found in json.loads(done.stdout)["tools"]]
    assert SECRET not in done.stdout + done.stderr


def test_dry_run_shows_the_change_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    original = write_host_file(config, FORMATS["cursor"]())
    done = toolscout("install", "cursor", "--config", str(config), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Would change {config} (Cursor):")
    assert '"toolscout": {' in done.stdout and SECRET not in done.stdout
    assert config.read_bytes() == original and not (tmp_path / "mcp.json.before-toolscout").exists()


def test_without_config_the_hosts_usual_file_in_home_is_changed(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    original = write_host_file(config, FORMATS["cursor"]())
    assert toolscout("install", "cursor", home=tmp_path).returncode == 0
    assert list(json.loads(config.read_text(encoding="utf-8"))["mcpServers"]) == ["toolscout"]
    assert toolscout("uninstall", "cursor", home=tmp_path).returncode == 0
    assert config.read_bytes() == original


def test_a_file_with_comments_is_refused_with_what_to_do(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{\n  // my servers\n  "servers": {}\n}\n', encoding="utf-8")
    done = toolscout("install", "vscode", "--config", str(config))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not valid JSON: line 2" in done.stderr
    assert "VS Code also accepts comments and trailing commas, which a rewrite would lose" in done.stderr
    assert "make it plain JSON, or add toolscout by hand" in done.stderr
    assert not (tmp_path / "mcp.json.before-toolscout").exists()


def test_installing_twice_and_uninstalling_what_was_never_installed_say_what_to_do(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    write_host_file(config, FORMATS["windsurf"]())
    done = toolscout("uninstall", "windsurf", "--config", str(config))
    assert done.returncode == 2 and "toolscout is not installed in" in done.stderr
    assert toolscout("install", "windsurf", "--config", str(config)).returncode == 0
    done = toolscout("install", "windsurf", "--config", str(config))
    assert done.returncode == 2 and "run `toolscout uninstall windsurf` first" in done.stderr
    missing = toolscout("install", "windsurf", "--config", str(tmp_path / "nowhere.json"))
    assert missing.returncode == 2 and "does not exist: is Windsurf set up on this machine?" in missing.stderr


def test_uninstall_after_the_host_rewrote_its_file_restores_the_servers_and_keeps_the_rest(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    write_host_file(config, FORMATS["claude-code"]())
    assert toolscout("install", "claude-code", "--config", str(config)).returncode == 0
    # Claude Code keeps its own state in the same file, and a server added by `claude mcp add`.
    document = json.loads(config.read_text(encoding="utf-8"))
    document["numStartups"] = 13
    document["mcpServers"]["added"] = python_server("notes_server.py")
    write_host_file(config, document)
    done = toolscout("uninstall", "claude-code", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "kept the servers added since: added" in done.stdout
    restored = json.loads(config.read_text(encoding="utf-8"))
    assert restored["numStartups"] == 13
    assert list(restored["mcpServers"]) == ["weather", "notes", "paged", "added"]
    assert restored["mcpServers"]["weather"]["env"] == {"WEATHER_API_KEY": SECRET}


def test_a_local_wheel_is_what_uvx_runs_until_a_release_is_published(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    write_host_file(config, {"mcpServers": {}})
    wheel = tmp_path / "toolscout-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert toolscout("install", "cursor", "--config", str(config), "--from", str(wheel)).returncode == 0
    entry = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["toolscout"]
    assert entry == {"command": "uvx", "args": ["--from", str(wheel), "toolscout", "serve"]}


def test_the_readmes_first_screen_has_the_command_a_new_user_types() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    first_screen = "\n".join(readme.splitlines()[:60])
    for host in FORMATS:
        assert f"uvx toolscout install {host}`" in first_screen
    assert '"command": "uvx", "args": ["toolscout", "serve"' in first_screen
    assert "docs/dashboard/" in first_screen and "| toolbench_stb" in first_screen
    assert "fusion" not in first_screen.lower() and "calibrat" not in first_screen.lower()
