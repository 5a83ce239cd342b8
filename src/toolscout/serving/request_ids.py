"""Request ids: every HTTP request gets one, and every log line written while serving it names it.

The HTTP server (`toolscout.serving.http`) runs asgi-correlation-id's middleware: a client's own
`X-Request-Id` is kept when it is a plain token (a load balancer or the agent's host often sends
one, so one id follows a request through both), otherwise one is made; it is echoed in the response
and held in that library's context variable while the request is served. The MCP server sets it
again around each tool call (`serving_request`), because the SDK runs a session's handlers in tasks
of their own that do not inherit the HTTP request's context.

    2026-11-26 10:21:07 WARNING toolscout.upstream.pool [request=4f1c9a...]: ...

The CLI installs `RequestIdFilter` on its log handler for every command; the middleware's library
(and Starlette with it) is imported only by the HTTP server, never for a log line.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HEADER", "RequestIdFilter", "current_request_id", "serving_request", "usable_request_id"]

HEADER = "X-Request-Id"
_LIBRARY_CONTEXT = "asgi_correlation_id.context"
# What a client may choose: short, and nothing that could forge or garble a log line.
_USABLE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def usable_request_id(value: str) -> bool:
    """Whether a client's `X-Request-Id` is kept as the request id (else a new one is made)."""
    return _USABLE.fullmatch(value) is not None


def current_request_id() -> str | None:
    context = sys.modules.get(_LIBRARY_CONTEXT)
    # Not imported: no HTTP server in this process, so no request is being served.
    return None if context is None else context.correlation_id.get()


@contextmanager
def serving_request(value: str | None) -> Iterator[None]:
    """Log lines written inside name `value`; None leaves the current id as it is."""
    if value is None or not usable_request_id(value):
        yield
        return
    from asgi_correlation_id.context import correlation_id

    token = correlation_id.set(value)
    try:
        yield
    finally:
        correlation_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Sets `record.request` to " [request=ID]" while a request is served, else ""."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = current_request_id()
        record.request = f" [request={current}]" if current else ""
        return True
