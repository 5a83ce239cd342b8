"""Who the gateway tells of a change, and how: each listener in turn, one's failure logged and
never stopping the others or the gateway's own work."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from toolscout.catalog import Catalog

__all__ = ["CatalogListener", "NoticeListener", "OfferingsListener", "ServerFilter", "tell_all"]

logger = logging.getLogger(__name__)

CatalogListener = Callable[[Catalog], Awaitable[None]]
# Awaited when the resources (or templates) or the prompts clients would list changed:
# (resources changed, prompts changed).
OfferingsListener = Callable[[bool, bool], Awaitable[None]]
# Awaited with what an upstream announced for clients: (server, the MCP notification), e.g. a log
# message or an updated resource.
NoticeListener = Callable[[str, Any], Awaitable[None]]
# Whether a client may reach a server (a profile's limit); None where a client may reach all.
ServerFilter = Callable[[str], bool]


async def tell_all(listeners: Sequence[Callable[..., Awaitable[None]]], *args: Any, what: str) -> None:
    """Await each of `listeners` with `args`; a failure is logged as "`what` listener failed"."""
    for listener in listeners:
        try:
            await listener(*args)
        except Exception:  # noqa: BLE001 - a listener's failure must not stop the others, nor the caller
            logger.exception("%s listener failed", what)
