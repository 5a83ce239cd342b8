"""A real HTTP registry on a free port of 127.0.0.1, in a thread: the official MCP Registry API's
list endpoint (v0.1: `search`, `version`, `limit`, `cursor`, ETags) and plain documents.

    with HttpRegistry() as registry:
        registry.servers = [server_json(...), ...]        # what /v0.1/servers lists
        registry.documents["/servers.json"] = [...]        # a plain document
        registry.url("/v0.1/servers?search=weather")
        registry.requests                                  # [(path, If-None-Match), ...]

Paths that misbehave on purpose: `/hang` never answers (until the registry stops), `/broken` is not
JSON, `/elsewhere` redirects to the same server under another host name (localhost),
`/moved` redirects within the same origin to `/v0.1/servers`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["HttpRegistry", "listed"]


def listed(document: dict[str, Any], *, latest: bool = True, status: str = "active") -> dict[str, Any]:
    """One entry of an API listing: the server.json and the registry's own _meta."""
    official = {"status": status, "isLatest": latest, "publishedAt": "2026-01-01T00:00:00Z"}
    return {"server": document, "_meta": {"io.modelcontextprotocol.registry/official": official}}


class HttpRegistry:
    def __init__(self) -> None:
        self.servers: list[dict[str, Any]] = []
        self.documents: dict[str, Any] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.page_size = 2
        self._release = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._http.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> HttpRegistry:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._http.shutdown()
        self._http.server_close()

    def _listing(self, query: dict[str, list[str]]) -> dict[str, Any]:
        entries = self.servers
        if "search" in query:
            entries = [e for e in entries if query["search"][0] in e["server"]["name"]]
        if query.get("version") == ["latest"]:
            entries = [e for e in entries if e["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"]]
        limit = int(query.get("limit", [self.page_size])[0])
        start = int(query.get("cursor", ["0"])[0])
        page = entries[start:start + limit]
        metadata: dict[str, Any] = {"count": len(page)}
        if start + limit < len(entries):
            metadata["nextCursor"] = str(start + limit)
        return {"servers": page, "metadata": metadata}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                registry.requests.append((self.path, self.headers.get("If-None-Match")))
                if parts.path == "/hang":
                    registry._release.wait()
                    return
                if parts.path == "/broken":
                    return self._send(200, b'{"servers": [', "application/json")
                if parts.path in ("/elsewhere", "/moved"):
                    host = "localhost" if parts.path == "/elsewhere" else "127.0.0.1"
                    self.send_response(302)
                    self.send_header("Location", f"http://{host}:{registry.port}/v0.1/servers")
                    self.end_headers()
                    return
                if parts.path == "/v0.1/servers":
                    document: Any = registry._listing(parse_qs(parts.query))
                elif parts.path in registry.documents:
                    document = registry.documents[parts.path]
                else:
                    return self._send(404, b'{"error": "not found"}', "application/json")
                body = json.dumps(document).encode()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self._send(200, body, "application/json", etag)

            def _send(self, status: int, body: bytes, kind: str, etag: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                if etag:
                    self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body)

        return Handler
