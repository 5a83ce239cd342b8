"""The MCP face: the meta-tool server, its descriptions, argument checks, result packing, HTTP and learning hooks."""

from toolscout.serving.http import http_app, serve_http
from toolscout.serving.server import build_server

__all__ = ["build_server", "http_app", "serve_http"]
