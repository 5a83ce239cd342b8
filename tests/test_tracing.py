"""OpenTelemetry traces of search_tools and execute_tool.

`toolscout serve --transport http --otel` runs as a subprocess exporting OTLP/HTTP to a real
receiver served here (uvicorn, decoding the exporter's protobuf with opentelemetry-proto); a real
MCP client searches and calls through it. Traces are off without --otel.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import uvicorn
from mcp import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support.registries import python_server, write_registry
from support.serve_process import serve_command, served_over_http
from support.waiting import wait_until

pytestmark = pytest.mark.anyio


class Receiver:
    """An OTLP/HTTP trace receiver: keeps every span it is sent, by name, with its attributes."""

    def __init__(self) -> None:
        self.spans: dict[str, list[dict[str, object]]] = {}
        self.app = Starlette(routes=[Route("/v1/traces", self.receive, methods=["POST"])])

    async def receive(self, request: Request) -> Response:
        message = ExportTraceServiceRequest.FromString(await request.body())
        for resource in message.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    attributes["trace_id"] = span.trace_id.hex()
                    attributes["has_parent"] = bool(span.parent_span_id)
                    self.spans.setdefault(span.name, []).append(attributes)
        return Response(status_code=200)


def _value(value: object) -> object:
    kind = value.WhichOneof("value")  # type: ignore[attr-defined]
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]  # type: ignore[attr-defined]
    return getattr(value, kind) if kind else None


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    received = Receiver()
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(received.app, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        await wait_until(lambda: server.started, timeout=10, interval=0.01)
        yield received, f"http://127.0.0.1:{sock.getsockname()[1]}"
        server.should_exit = True


async def test_serve_with_otel_exports_spans_of_search_and_execute(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    received, endpoint = receiver
    registry = write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"), "notes": python_server("notes_server.py"),
    })
    command = serve_command(registry, "--transport", "http", "--port", "0", "--otel")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with anyio.fail_after(90):
        async with served_over_http(command, env=env) as url:
            async with Client(url, mode="legacy") as client:
                await client.call_tool("search_tools", {"query": "weather forecast for Oslo", "limit": 3})
                await client.call_tool(
                    "execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}}
                )
                await client.call_tool("execute_tool", {"name": "notes__delete_note", "arguments": {"note_id": 404}})
            await wait_until(lambda: len(received.spans.get("toolscout.execute", [])) >= 2, timeout=30)
    [search] = received.spans["toolscout.search"]
    assert search["toolscout.limit"] == 3 and search["toolscout.hits"] == 3
    assert search["toolscout.query.chars"] == len("weather forecast for Oslo")
    assert "tfidf" in search["toolscout.signals"]  # type: ignore[operator]
    assert search["has_parent"]  # inside the SDK's span of the request
    outcomes = {(s["toolscout.tool"], s["toolscout.server"], s["toolscout.outcome"]) for s in received.spans["toolscout.execute"]}
    assert outcomes == {("weather__get_current_weather", "weather", "ok"), ("notes__delete_note", "notes", "error")}
    # The user's words and arguments stay out of toolscout's spans.
    ours = [{k: v for k, v in span.items() if k != "trace_id"}
            for name in ("toolscout.search", "toolscout.execute") for span in received.spans[name]]
    assert "Oslo" not in str(ours) and "404" not in str(ours)


async def test_serve_says_what_to_install_when_otel_is_asked_for_without_it(tmp_path: Path) -> None:
    # A Python that cannot import the OTLP exporter: the same interpreter with it blocked.
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    blocker = tmp_path / "blocked"
    (blocker / "opentelemetry" / "exporter").mkdir(parents=True)
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('opentelemetry.exporter'):\n            raise ImportError(name)\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    with anyio.fail_after(60):
        done = await anyio.run_process(
            serve_command(registry, "--transport", "http", "--port", "0", "--otel"), env=env, check=False
        )
    assert done.returncode == 2
    assert "--otel needs the OpenTelemetry SDK and OTLP exporter: pip install 'toolscout[otel]'" in done.stderr.decode()
