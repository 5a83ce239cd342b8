"""toolscout installs as a tool: `uv build` gives a wheel and an sdist; the wheel carries the
bundled model and registry; `uvx --from <wheel> toolscout serve` answers search_tools over stdio
from a fresh HOME; `uv tool install <wheel>` puts `toolscout` on PATH.

The fresh environments reuse uv's download cache (downloads are not what is tested), and nothing
of this checkout reaches them: no PYTHONPATH, no virtual environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.registries import python_server, write_registry

ROOT = Path(__file__).resolve().parents[1]
UV = shutil.which("uv", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(UV is None, reason="uv is not installed (a dev dependency: bash scripts/setup.sh)")]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([UV, "build", "--out-dir", str(out), str(ROOT)], check=True, capture_output=True, timeout=300)
    return out


def fresh_environment(folder: Path) -> dict[str, str]:
    cache = subprocess.run([UV, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith(("XDG_", "UV_"))}
    (folder / "home").mkdir(exist_ok=True)
    return {**env, "HOME": str(folder / "home"), "UV_CACHE_DIR": cache, "UV_TOOL_DIR": str(folder / "tools"),
            "UV_TOOL_BIN_DIR": str(folder / "bin"), "UV_PYTHON": sys.executable}


def wheel_of(built: Path) -> Path:
    (wheel,) = built.glob("toolscout-*.whl")
    return wheel


def test_uv_build_gives_a_wheel_and_an_sdist_carrying_the_model_and_the_bundled_registry(built: Path) -> None:
    assert [path.name for path in built.glob("toolscout-*.tar.gz")] == [f"toolscout-{version('toolscout')}.tar.gz"]
    names = set(zipfile.ZipFile(wheel_of(built)).namelist())
    model = ROOT / "src" / "toolscout" / "index" / "model"
    shipped = {f"toolscout/{path.relative_to(model.parents[1]).as_posix()}" for path in model.rglob("*") if path.is_file()}
    assert shipped and shipped <= names
    assert {"toolscout/data/default.json", "toolscout/dashboard/templates/base.html"} <= names
    registry = zipfile.ZipFile(wheel_of(built)).read("toolscout/data/default.json")
    assert registry == (ROOT / "registry" / "default.json").read_bytes()  # the file, not a symlink's path


async def test_uvx_from_the_wheel_serves_search_tools_over_stdio_from_a_fresh_home(built: Path, tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    params = StdioServerParameters(
        command=UV, args=["tool", "run", "--from", str(wheel_of(built)), "toolscout", "serve", "--registry", str(registry)],
        env=fresh_environment(tmp_path),
    )
    with anyio.fail_after(240):
        async with Client(stdio_client(params)) as client:
            listed = await client.list_tools()
            found = await client.call_tool("search_tools", {"query": "weather forecast for Paris"})
    assert [tool.name for tool in listed.tools] == ["search_tools", "execute_tool"]
    assert not found.is_error
    assert "weather__get_forecast" in found.content[0].text


def test_uv_tool_install_puts_toolscout_on_path(built: Path, tmp_path: Path) -> None:
    env = fresh_environment(tmp_path)
    subprocess.run([UV, "tool", "install", str(wheel_of(built))], env=env, check=True, capture_output=True, timeout=300)
    done = subprocess.run([str(tmp_path / "bin" / "toolscout"), "--version"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"toolscout {version('toolscout')}"
