"""What reaches the person running toolscout is safe to show and to keep: escapes from upstreams
are shown as codes, damaged state files are set aside and rebuilt with one line saying so, state
files are private, and no library leaves a telemetry file behind."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.registries import python_server, write_registry
from support.serve_process import serve_command

from toolscout.state.content import open_content_store
from toolscout.state.vectors import StoredEmbeddings

pytestmark = pytest.mark.anyio

# OSC 52 (set the clipboard), a colour change and a C1 control: what a hostile stderr may carry.
ESCAPES = "\x1b]52;c;ZXZpbA==\x07 \x1b[31mred\x1b[0m \x9b2J"


def _toolscout(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", *args]


def _data_dir() -> Path:
    return Path(os.environ["TOOLSCOUT_DATA_DIR"])


async def test_escapes_in_an_upstreams_stderr_reach_neither_the_terminal_nor_the_log_raw(tmp_path: Path) -> None:
    script = f"import sys; sys.stderr.write({('fatal: ' + ESCAPES)!r} + '\\n'); sys.exit(3)"
    registry = write_registry(tmp_path / "servers.json", {"hostile": {"command": sys.executable, "args": ["-c", script]}})
    with anyio.fail_after(60):
        shown = await anyio.run_process(_toolscout("tools", "--registry", str(registry), "--refresh"), check=False)
        as_json = await anyio.run_process(_toolscout("tools", "--registry", str(registry), "--json", "--refresh"), check=False)
    for stream in (shown.stdout, shown.stderr, as_json.stdout, as_json.stderr):
        text = stream.decode()
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "\\u001b]52;c;ZXZpbA==\\u0007" in shown.stdout.decode()  # shown, as codes
    (row,) = json.loads(as_json.stdout)
    assert "fatal: " + ESCAPES in row["reason"]  # the JSON still says exactly what was written


async def test_a_damaged_usage_store_is_set_aside_and_rebuilt_and_the_new_one_is_private(tmp_path: Path) -> None:
    data = _data_dir()
    data.mkdir(parents=True, exist_ok=True)
    (data / "usage.sqlite3").write_bytes(b"this is not a database" * 100)
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    command = serve_command(registry)
    log = tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with anyio.fail_after(90), log.open("w") as errlog:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            found = await client.call_tool("search_tools", {"query": "weather forecast"})
            called = await client.call_tool(
                "execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}}
            )
    assert not found.is_error and not called.is_error
    damaged = [line for line in log.read_text().splitlines() if "is damaged" in line]
    assert len(damaged) == 1 and "usage.sqlite3" in damaged[0] and "Traceback" not in log.read_text()
    (aside,) = data.glob("usage.sqlite3.damaged-*")
    assert aside.read_bytes().startswith(b"this is not a database")
    for name in ("usage.sqlite3", "usage.sqlite3-wal"):
        if (data / name).exists():
            assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name


def test_a_damaged_embedding_cache_is_set_aside_and_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(b"\x00garbage" * 1000)
    cache = StoredEmbeddings(open_content_store(None, tmp_path))
    import numpy as np

    cache.put("model", {"h": np.ones(3, dtype=np.float32)})
    assert list(cache.get("model", ["h"])) == ["h"]
    assert len(list(tmp_path.glob("embeddings.sqlite3.damaged-*"))) == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [r for r in caplog.records if "is damaged" in r.getMessage()]


def test_loading_the_bundled_model_leaves_no_telemetry_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import tempfile; from pathlib import Path; "
        "from toolscout.index.model_files import resolve_model; "
        "from toolscout.index.dense import load_encoder; "
        "encoder = load_encoder(resolve_model('bundled'), backend='onnx', work_dir=Path(tempfile.mkdtemp())); "
        "print(encoder.encode(['hello']).shape)"
    )
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("XDG_CACHE_HOME", None)
    env.pop("ORT_DISABLE_TELEMETRY", None)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [str(p.relative_to(home)) for p in home.rglob("*") if "Microsoft" in str(p) or "onnxruntime" in str(p)] == []
