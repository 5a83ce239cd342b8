"""The operator decides what agents may do with a call: confirmation before destructive calls
(elicitation), rate limits per client and per tool, and an audit trail of every call, refused or
not, readable with `toolscout audit`. Real sessions with the App `serve` builds, over the notes
server (tests/upstreams): in memory, and over HTTP with two tokens."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from support.asgi import serve_asgi
from support.gateway_session import app_config, app_config_here, text_of
from support.registries import python_server, write_registry

from toolscout.app import App
from toolscout.cli import main
from toolscout.errors import ConfigError
from toolscout.gateway import GatewayOptions
from toolscout.serving.clients import load_client_tokens
from toolscout.serving.http import http_app
from toolscout.serving.options import ServingOptions

pytestmark = pytest.mark.anyio

ALPHA, BETA = "alpha-token-0123456789abcdef", "beta-token-0123456789abcdef"


class Person:
    """A user answering every confirmation with `action`, and what they were shown."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.asked: list[str] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action=self.action, content={} if self.action == "accept" else None)  # type: ignore[arg-type]


def execute(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


@asynccontextmanager
async def notes_app(tmp_path: Path, serving: ServingOptions, **entry: Any) -> AsyncIterator[App]:
    """The notes server (in this process) behind the App `serve` builds with `serving`."""
    registry = write_registry(tmp_path / "r.json", {"notes": python_server("notes_server.py", **entry)})
    async with App(app_config_here(registry, serving=serving)) as app:
        await app.gateway.ready(30)
        yield app


async def test_a_declined_destructive_call_never_reaches_the_upstream_and_an_accepted_one_runs_once(tmp_path: Path) -> None:
    no, yes = Person("decline"), Person("accept")
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions(confirm="destructive")) as app:
            async with Client(app.server, mode="legacy", elicitation_callback=no.elicit) as declining, \
                    Client(app.server, mode="legacy", elicitation_callback=yes.elicit) as accepting:
                created = await declining.call_tool("execute_tool", execute("notes__create_note", title="keep", body="me"))
                declined = await declining.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
                still = await declining.call_tool("execute_tool", execute("notes__search", text="keep"))
                accepted = await accepting.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
                gone = await accepting.call_tool("execute_tool", execute("notes__search", text="keep"))
    assert not created.is_error and no.asked[1:] == [] and len(no.asked) == 1  # only the delete was asked about
    assert declined.is_error and "the user answered 'decline'" in text_of(declined) and "not run" in text_of(declined)
    assert text_of(still) == "1: keep"  # the upstream never saw the declined call
    assert text_of(accepted) == "deleted note 1" and text_of(gone) == "no notes match"
    assert "'delete_note' of server 'notes'" in yes.asked[0] and '{"note_id": 1}' in yes.asked[0]


async def test_a_client_that_cannot_elicit_is_refused_with_the_setting_that_allows_the_tool(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions(confirm="destructive")) as app:
            async with Client(app.server, mode="legacy") as plain:
                await plain.call_tool("execute_tool", execute("notes__create_note", title="keep", body="me"))
                refused = await plain.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
                still = await plain.call_tool("execute_tool", execute("notes__search", text="keep"))
    assert refused.is_error and "did not declare the elicitation capability" in text_of(refused)
    assert '"confirm": {"delete_note": "none"}' in text_of(refused) and "--confirm none" in text_of(refused)
    assert text_of(still) == "1: keep"


async def test_a_client_bound_to_a_profile_is_asked_and_audited_all_the_same(tmp_path: Path) -> None:
    registry = tmp_path / "r.json"
    registry.write_text(json.dumps({
        "mcpServers": {"notes": python_server("notes_server.py")},
        "profiles": {"keeper": {"servers": ["notes"]}},
    }))
    person = Person("decline")
    with anyio.fail_after(60):
        async with App(app_config(registry, serving=ServingOptions(confirm="destructive", profile="keeper"))) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy", elicitation_callback=person.elicit) as client:
                declined = await client.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
    assert declined.is_error and len(person.asked) == 1
    assert [(e["client"], e["profile"], e["outcome"]) for e in audit_lines("--json")] == [("stdio", "keeper", "declined")]


async def test_the_registry_entry_decides_per_tool_over_the_serve_flag(tmp_path: Path) -> None:
    person = Person("decline")
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions(confirm="none"), confirm={"create_note": "all"}) as app:
            async with Client(app.server, mode="legacy", elicitation_callback=person.elicit) as client:
                create = await client.call_tool("execute_tool", execute("notes__create_note", title="t", body="b"))
                search = await client.call_tool("execute_tool", execute("notes__search", text="t"))
    assert create.is_error and len(person.asked) == 1
    assert text_of(search) == "no notes match"


async def test_a_limit_on_a_tool_for_everyone_refuses_the_call_over_it_with_a_retry_time(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions(), limits={"search": "2/minute"}) as app:
            async with Client(app.server, mode="legacy") as client:
                answers = [await client.call_tool("execute_tool", execute("notes__search", text="x")) for _ in range(3)]
                other_tool = await client.call_tool("execute_tool", execute("notes__create_note", title="t", body="b"))
    assert [a.is_error for a in answers] == [False, False, True]
    assert "rate limit of 2/minute" in text_of(answers[2]) and "Retry in" in text_of(answers[2])
    assert not other_tool.is_error


def write_tokens(path: Path, alpha_limits: dict[str, str]) -> Path:
    path.write_text(json.dumps({"clients": [
        {"name": "alpha", "token": ALPHA, "limits": alpha_limits}, {"name": "beta", "token": BETA},
    ]}))
    path.chmod(0o600)
    return path


async def test_two_tokens_a_client_limit_refuses_only_that_client_and_the_audit_lists_every_call_after_a_restart(
    tmp_path: Path,
) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    tokens = load_client_tokens(write_tokens(tmp_path / "tokens.json", {"notes__create_note": "2/minute"}))
    serving = ServingOptions(transport="http", clients=tokens)
    with anyio.fail_after(60):
        async with notes_app(tmp_path, serving) as app, anyio.create_task_group() as tg:
            asgi = http_app(app.server, host="127.0.0.1", clients=tokens, gateway=app.gateway, metrics=app.metrics)
            url, uvicorn = await serve_asgi(asgi, tg)
            answers: dict[str, list[types.CallToolResult]] = {}
            for name, token in (("alpha", ALPHA), ("beta", BETA)):
                async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http, \
                        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client:
                    await client.call_tool("search_tools", {"query": "make a note"})
                    answers[name] = [
                        await client.call_tool("execute_tool", execute("notes__create_note", title=name, body="b"))
                        for _ in range(3)
                    ]
                    await client.call_tool("execute_tool", execute("notes__nothing_here"))
            async with httpx2.AsyncClient() as plain:
                metrics = (await plain.get(f"{url}/metrics", headers={"Authorization": f"Bearer {ALPHA}"})).text
            assert app.metrics is not None  # the dashboard's Activity charts this row beside the servers'
            assert sum(minute.calls for minute in app.metrics.recent.minutes("refused calls")) == 3
            uvicorn.should_exit = True
    assert [a.is_error for a in answers["alpha"]] == [False, False, True]
    assert "client 'alpha'" in text_of(answers["alpha"][2]) and "Retry in" in text_of(answers["alpha"][2])
    assert [a.is_error for a in answers["beta"]] == [False, False, False]  # the other client is not affected
    assert 'toolscout_refused_calls_total{reason="limited"} 1.0' in metrics
    assert 'toolscout_refused_calls_total{reason="invalid"} 2.0' in metrics

    # The gateway has stopped: the trail is read from the state store, as `serve` wrote it.
    entries = audit_lines("--json")
    assert [(e["client"], e["tool"], e["outcome"]) for e in entries] == [
        (name, tool, outcome)
        for name, limited in (("alpha", "limited"), ("beta", "ok"))
        for tool, outcome in (("search_tools", "ok"), *[("notes__create_note", "ok")] * 2,
                              ("notes__create_note", limited), ("notes__nothing_here", "invalid"))
    ]
    assert all(e["request_id"] and e["duration_ms"] >= 0 for e in entries)
    assert "beta" not in json.dumps(entries[1]["arguments"])  # a digest, never the values
    assert [e["outcome"] for e in audit_lines("--json", "--client", "beta", "--tool", "notes__create_note")] == ["ok"] * 3


def audit_lines(*args: str) -> list[dict[str, Any]]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["audit", *args]) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_stdio_calls_are_audited_as_stdio_and_the_audit_command_prints_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions()) as app:
            async with Client(app.server, mode="legacy") as client:
                await client.call_tool("execute_tool", execute("notes__search", text="x"))
                await client.call_tool("execute_tool", execute("notes__search", wrong="x"))
    assert main(["audit", "--since", "10m"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[1:4] for line in lines] == [
        ["stdio", "notes__search", "ok"], ["stdio", "notes__search", "invalid"],
    ]
    assert main(["audit", "--since", "yesterday-ish"]) == 2
    assert "neither an age" in capsys.readouterr().err


def test_a_limit_that_is_not_a_rate_is_a_clear_error_at_start(tmp_path: Path) -> None:
    from toolscout.registry.loading import load_registries
    from toolscout.serving.rate_limits import client_limits

    tokens = load_client_tokens(write_tokens(tmp_path / "tokens.json", {"*": "lots"}))
    with pytest.raises(ConfigError, match=r"client 'alpha', limit '\*'.*like \"10/minute\""):
        client_limits(tokens)
    registry = write_registry(tmp_path / "r.json", {"notes": python_server("notes_server.py", limits={"search": "3/fortnight"})})
    with pytest.raises(ConfigError, match=r"'limits.search' must be a rate like \"10/minute\""):
        load_registries([registry])
    registry = write_registry(tmp_path / "r.json", {"notes": python_server("notes_server.py", confirm="sometimes")})
    with pytest.raises(ConfigError, match=r"'confirm'"):
        load_registries([registry])


async def test_a_kill_9_during_a_burst_of_calls_loses_at_most_the_call_in_flight(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from support.serve_process import serve_command, served_url

    registry = write_registry(tmp_path / "r.json", {"notes": python_server("notes_server.py")})
    answered, enough, counted = 0, anyio.Event(), None

    async def burst(client: Client) -> None:
        nonlocal answered
        try:
            while True:
                await client.call_tool("execute_tool", execute("notes__create_note", title="t", body="b"))
                answered += 1
                if answered == 25:
                    enough.set()
        except Exception:  # noqa: BLE001 - the server was killed under the call in flight
            return

    with anyio.fail_after(90):
        command = serve_command(registry, "--transport", "http", "--port", "0")
        async with await anyio.open_process(command) as process:
            url = await served_url(process)
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, process)
                try:
                    async with Client(streamable_http_client(url), mode="legacy") as client:
                        tg.start_soon(burst, client)
                        await enough.wait()
                        process.kill()
                        counted = answered  # the session's tasks fail once it is gone, ending this block
                        await process.wait()
                except Exception:  # noqa: BLE001 - a killed server's session cannot be closed
                    pass
                tg.cancel_scope.cancel()
    assert counted is not None
    recorded = [e for e in audit_lines("--json") if e["tool"] == "notes__create_note"]
    assert counted <= len(recorded) <= counted + 1
    assert all(e["outcome"] == "ok" for e in recorded)


async def drain(process: Any) -> None:
    assert process.stderr is not None
    async for _chunk in process.stderr:
        pass


def test_the_audit_log_filters_and_prunes_alike_on_sqlite_and_postgres(location: str) -> None:
    from toolscout.state.audit import AuditEntry, AuditLog, open_audit_state

    state = open_audit_state(location)
    try:
        log = AuditLog(state)
        for at, client, tool in ((100.0, "alpha", "a__x"), (200.0, "beta", "a__x"), (300.0, "alpha", "b__y")):
            log.write(AuditEntry(at=at, client=client, tool=tool, arguments="{}", outcome="ok", duration_ms=1.0))
        assert [e.at for e in log.read(client="alpha")] == [100.0, 300.0]
        assert [e.client for e in log.read(tool="a__x", since=150.0)] == ["beta"]
        assert [e.at for e in log.read(limit=2)] == [200.0, 300.0]  # the newest two, oldest first
        assert log.prune(older_than=250.0) == 2
        assert [e.tool for e in log.read()] == ["b__y"]
    finally:
        state.close()


async def test_a_2026_07_28_client_confirms_in_its_retry_and_its_answer_holds_for_that_call_only(tmp_path: Path) -> None:
    no, yes = Person("decline"), Person("accept")
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions(confirm="destructive"), limits={"delete_note": "2/minute"}) as app:
            async with Client(app.server, mode="2026-07-28", elicitation_callback=no.elicit) as declining, \
                    Client(app.server, mode="2026-07-28", elicitation_callback=yes.elicit) as accepting, \
                    Client(app.server, mode="2026-07-28") as unable:
                await accepting.call_tool("execute_tool", execute("notes__create_note", title="keep", body="me"))
                declined = await declining.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
                refused = await unable.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
                still = await accepting.call_tool("execute_tool", execute("notes__search", text="keep"))
                accepted = await accepting.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
    assert declined.is_error and "answered 'decline'" in text_of(declined)
    assert refused.is_error and "did not declare the elicitation capability" in text_of(refused)
    assert text_of(still) == "1: keep"
    # The question and its retry are one call for the limit (2/minute): the accepted call still runs.
    assert text_of(accepted) == "deleted note 1" and len(yes.asked) == 1 and "'delete_note' of server 'notes'" in yes.asked[0]


async def test_an_edit_of_the_registrys_limits_and_confirm_applies_without_restarting_the_server(tmp_path: Path) -> None:
    from support.waiting import wait_until

    registry = write_registry(tmp_path / "r.json", {"notes": python_server("notes_server.py")})
    with anyio.fail_after(60):
        async with App(app_config(registry)) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy") as client:
                await client.call_tool("execute_tool", execute("notes__create_note", title="keep", body="me"))
                write_registry(registry, {"notes": python_server(
                    "notes_server.py", limits={"search": "1/minute"}, confirm={"delete_note": "all"},
                )})
                await wait_until(lambda: app.policies.confirmation.mode_of(  # type: ignore[union-attr]
                    app.gateway.catalog.by_id["notes__delete_note"]) == "all", timeout=30)
                first = await client.call_tool("execute_tool", execute("notes__search", text="keep"))
                second = await client.call_tool("execute_tool", execute("notes__search", text="keep"))
                delete = await client.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
            restarts = app.gateway.status_of("notes").restarts  # type: ignore[union-attr]
    assert text_of(first) == "1: keep" and restarts == 0  # the note is still there: the same process
    assert second.is_error and "rate limit of 1/minute" in text_of(second)
    assert delete.is_error and "needs the user's confirmation" in text_of(delete)
    assert "registry entry of server 'notes'" in text_of(delete) and "--confirm none" not in text_of(delete)  # the entry decided


async def test_the_arguments_values_are_kept_only_when_the_operator_asks_and_secrets_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NOTES_SECRET", "hunter2-very-secret")
    entry = {"env": {"NOTES_KEY": "${NOTES_SECRET}"}}
    with anyio.fail_after(60):
        async with notes_app(tmp_path, ServingOptions(audit_arguments=True), **entry) as app:
            async with Client(app.server, mode="legacy") as client:
                await client.call_tool("execute_tool", execute("notes__search", text="hunter2-very-secret and more"))
    [entry_] = audit_lines("--json", "--tool", "notes__search")
    assert entry_["arguments"]["names"] == ["text"]
    assert entry_["arguments"]["values"] == '{"text":"*** and more"}'


async def test_a_call_of_a_down_servers_tool_is_audited_as_unavailable(tmp_path: Path) -> None:
    from support.registries import failing_server

    from toolscout.gateway import GatewayOptions

    registry = write_registry(tmp_path / "r.json", {"broken": failing_server("no database configured")})
    with anyio.fail_after(60):
        async with App(app_config(registry, gateway=GatewayOptions(max_restarts=0))) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy") as client:
                refused = await client.call_tool("execute_tool", execute("broken__query", sql="select 1"))
    assert refused.is_error and "no database configured" in text_of(refused)
    [entry] = audit_lines("--json")
    assert (entry["tool"], entry["outcome"]) == ("broken__query", "unavailable")
    assert "no database configured" in entry["detail"]


async def test_with_the_dashboard_open_a_call_no_client_can_confirm_waits_there_for_an_operator(tmp_path: Path) -> None:
    """Over HTTP with an operator token: a client without elicitation calls a destructive tool;
    the call waits on the dashboard's Calls page; Deny refuses it (the upstream sees nothing),
    Allow runs it once. With the dashboard closed, the same call is refused at once."""
    import re

    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    tokens_file = tmp_path / "tokens.json"
    tokens_file.write_text(json.dumps({"clients": [
        {"name": "ops", "token": BETA, "operator": True}, {"name": "alpha", "token": ALPHA}]}))
    tokens_file.chmod(0o600)
    tokens = load_client_tokens(tokens_file)
    operator = {"Authorization": f"Bearer {BETA}"}
    with anyio.fail_after(90):
        async with notes_app(tmp_path, ServingOptions(transport="http", clients=tokens, confirm="destructive")) as app, \
                anyio.create_task_group() as tg:
            asgi = http_app(app.server, host="127.0.0.1", clients=tokens, gateway=app.gateway, dashboard=app.dashboard)
            url, uvicorn = await serve_asgi(asgi, tg)

            async with httpx2.AsyncClient(base_url=url, headers={**operator, "Origin": url}) as dashboard:

                async def answer(decision: str) -> str:
                    """Wait for the call on the Calls page and press `decision`; the page's text."""
                    while 'data-tool="notes__delete_note"' not in (shown := (await dashboard.get("/ui/calls")).text):
                        await anyio.sleep(0.05)
                    key = re.search(r'name="key" value="([^"]+)"', shown)
                    csrf = re.search(r'name="csrf" value="(\w+)"', shown)
                    assert key is not None and csrf is not None
                    decided = await dashboard.post("/ui/calls/decide", data={
                        "csrf": csrf.group(1), "key": key.group(1), "decision": decision})
                    assert decided.status_code == 303, decided.text
                    return shown

                async with create_mcp_http_client(headers={"Authorization": f"Bearer {ALPHA}"}) as http, \
                        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as plain:
                    closed = await plain.call_tool("execute_tool", execute("notes__delete_note", note_id=1))
                    await plain.call_tool("execute_tool", execute("notes__create_note", title="keep", body="me"))
                    await dashboard.get("/ui")  # the operator opens the dashboard
                    results: dict[str, types.CallToolResult] = {}
                    for decision in ("deny", "allow"):
                        async with anyio.create_task_group() as calls:
                            async def call(decision: str = decision) -> None:
                                results[decision] = await plain.call_tool(
                                    "execute_tool", execute("notes__delete_note", note_id=1))
                            calls.start_soon(call)
                            page = await answer(decision)
                        if decision == "deny":
                            still = await plain.call_tool("execute_tool", execute("notes__search", text="keep"))
                    gone = await plain.call_tool("execute_tool", execute("notes__search", text="keep"))
                after = (await dashboard.get("/ui/calls")).text
            uvicorn.should_exit = True
    assert closed.is_error and "did not declare the elicitation capability" in text_of(closed)
    assert "dashboard open" in text_of(closed)
    assert "alpha" in page and "{&#34;note_id&#34;: 1}" in page  # the client and the arguments, shown
    denied = results["deny"]
    assert denied.is_error and "operator 'ops' denied 'notes__delete_note'" in text_of(denied)
    assert text_of(still) == "1: keep"  # the upstream never saw the denied call
    assert text_of(results["allow"]) == "deleted note 1" and text_of(gone) == "no notes match"
    assert "No call waits" in after
