"""`toolscout tools` and `toolscout search` against real upstream subprocesses."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import anyio
import pytest
from support.registries import failing_server, python_server, write_registry
from support.gateway_session import gateway_session, text_of

from toolscout.cli import build_parser, main
from toolscout.app import load_specs
from toolscout.commands._gateway import command_options


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_registry(
        tmp_path_factory.mktemp("cli") / "servers.json",
        {
            "notes": python_server("notes_server.py"),
            "weather": python_server("weather_server.py"),
            "broken": failing_server("error: cannot open database /nonexistent/db.sqlite"),
        },
    )


def test_tools_lists_each_upstream_with_its_status_tool_count_and_failure_reason(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", "--registry", str(registry), "--json", "--start-timeout", "30"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["notes"]["state"] == "up" and rows["notes"]["tool_count"] == 4
    assert rows["weather"]["state"] == "up" and rows["weather"]["tool_count"] == 3
    assert rows["broken"]["state"] == "down"
    assert "cannot open database /nonexistent/db.sqlite" in rows["broken"]["reason"]


def test_search_prints_the_ranked_tools_with_each_signals_rank(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "delete a note", "--registry", str(registry), "--model", "none", "-k", "2", "--explain"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(" 1. notes__delete_note")
    assert any(line.strip().startswith("ranks: bm25") for line in lines)
    # What decided the order: without a model, weighted RRF of the keyword signals.
    assert "fusion: weighted RRF (the learned ranker needs the dense signal)" in lines


def test_a_registry_that_cannot_be_read_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "anything", "--registry", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_a_secret_an_upstream_prints_at_start_up_never_reaches_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLSCOUT_TEST_TOKEN", "tok-8f3a91c2d7e4")
    leaky = failing_server("ignored")
    leaky["args"] = ["-c", "import os, sys; sys.stderr.write('bad token ' + os.environ['API_TOKEN']); sys.exit(1)"]
    leaky["env"] = {"API_TOKEN": "${TOOLSCOUT_TEST_TOKEN}"}
    registry = write_registry(tmp_path / "servers.json", {"leaky": leaky})
    assert main(["tools", "--registry", str(registry), "--json"]) == 0
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)
    assert "bad token ***" in row["reason"]
    assert "tok-8f3a91c2d7e4" not in captured.out + captured.err


def test_a_registry_secret_is_hidden_from_every_log_line_even_those_of_other_libraries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCOUT_TEST_KEY", "key-93be0c41aa")
    remote = {"url": "https://api.example.com/mcp?key=${TOOLSCOUT_TEST_KEY}", "headers": {"X-Key": "${TOOLSCOUT_TEST_KEY}"}}
    registry = write_registry(tmp_path / "servers.json", {"remote": remote})
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.getLogger().addHandler(handler)
    try:
        load_specs(command_options(build_parser().parse_args(["tools", "--registry", str(registry)])))
        logging.getLogger("httpx").warning("HTTP Request: POST %s", "https://api.example.com/mcp?key=key-93be0c41aa")
        try:
            raise ValueError("bad header X-Key: key-93be0c41aa")
        except ValueError:
            logging.getLogger("mcp.client").exception("request failed")
    finally:
        logging.getLogger().removeHandler(handler)
    written = stream.getvalue()
    assert "mcp?key=***" in written and "X-Key: ***" in written
    assert "key-93be0c41aa" not in written


@pytest.mark.anyio
async def test_a_registry_secret_an_upstream_quotes_in_a_result_reaches_the_agent_as_stars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCOUT_TEST_KEY", "key-5c0d27e9b1")
    entry = python_server("hostile_server.py", env={"API_KEY": "${TOOLSCOUT_TEST_KEY}", "DB_PASSWORD": "literal-4e8a7f"})
    registry = write_registry(tmp_path / "servers.json", {"hostile": entry})
    with anyio.fail_after(30):
        async with gateway_session(registry, max_restarts=0) as (_, client):
            results = [  # an isError result and a JSON-RPC error, each quoting the secret
                await client.call_tool("execute_tool", {"name": f"hostile__{tool}", "arguments": {"name": name}})
                for tool in ("fail_quoting_env", "reject_quoting_env") for name in ("API_KEY", "DB_PASSWORD")
            ]
            # A successful result quoting them is redacted too, its structured content included.
            returned = await client.call_tool("execute_tool", {"name": "hostile__env_value", "arguments": {"name": "API_KEY"}})
    for result in results:
        assert result.is_error and "the key *** was refused" in text_of(result)
        assert "key-5c0d27e9b1" not in str(result) and "literal-4e8a7f" not in str(result)
    assert not returned.is_error and text_of(returned) == "***"
    assert returned.structured_content == {"result": "***"} and "key-5c0d27e9b1" not in str(returned)


@pytest.mark.anyio
async def test_the_tools_table_of_the_real_cli_keeps_its_columns_names_skipped_entries_and_stays_quiet(
    tmp_path: Path,
) -> None:
    import socket
    import sys

    import uvicorn
    from upstreams import weather_server

    sock = socket.create_server(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(weather_server.server.streamable_http_app(), log_level="warning", lifespan="on"))
    registry = write_registry(tmp_path / "servers.json", {
        "remote": {"url": f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"},
        "twolines": failing_server("error: cannot open the database\nhint: run the migrations first"),
        "myself": {"command": sys.executable, "args": ["-m", "toolscout", "serve"]},
    })
    tools = [sys.executable, "-m", "toolscout.cli", "tools", "--registry", str(registry), "--start-timeout", "30"]
    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(web.serve, [sock])
            # -v: the INFO level `serve` logs at by default.
            refreshed = await anyio.run_process([*tools, "--refresh", "-v"], check=False)
            quiet = await anyio.run_process([*tools, "-q"], check=False)
            web.should_exit = True
    table, log = refreshed.stdout.decode(), refreshed.stderr.decode()
    assert refreshed.returncode == 0, log
    rows = {line.split()[0]: line for line in table.splitlines()[1:] if not line.startswith(" ")}
    assert set(rows) == {"remote", "twolines", "myself"}
    # An entry that would start toolscout itself is skipped on purpose, not down.
    assert rows["myself"].split()[1] == "skipped"
    assert rows["twolines"].split()[1] == "down"
    # The second stderr line stays in the DETAIL column, under the first.
    detail_column = table.splitlines()[0].index("DETAIL")
    [continued] = [line for line in table.splitlines() if "run the migrations first" in line]
    assert continued.index("hint:") == detail_column and not continued[:detail_column].strip()
    # No INFO line per HTTP request to the remote upstream.
    assert "HTTP Request" not in log and "httpx" not in log
    # -q: errors only; the table alone, from the catalog just seen, without saying so.
    assert quiet.returncode == 0 and quiet.stderr.decode() == ""
    assert quiet.stdout.decode() == table
