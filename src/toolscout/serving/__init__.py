"""The MCP face: the meta-tool server, its descriptions, argument checks, result packing, HTTP and learning hooks.

`build_server`, `http_app` and `serve_http` are imported when first used: a module of this package
that needs no MCP SDK (e.g. `describe`) does not load it.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolscout.serving.http import http_app, serve_http
    from toolscout.serving.server import build_server

__all__ = ["build_server", "http_app", "serve_http"]

_MODULES = {"build_server": "server", "http_app": "http", "serve_http": "http"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        import importlib

        return getattr(importlib.import_module(f"toolscout.serving.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
