"""Learning: the example requests learned from use (`toolscout examples`) and the phrases the
client's model wrote for each tool (--expand), each with a Remove button. The stores are the
gateway's own; a removal reaches the index at the next rebuild, which it asks for at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.dashboard.parts import UI_PATH, back_to
from toolscout.dashboard.render import page

if TYPE_CHECKING:
    from toolscout.dashboard.parts import DashboardParts

__all__ = ["routes"]

_SHOWN = 500


def routes(dashboard: DashboardParts) -> list[Route]:
    async def learning(request: Request) -> Response:
        usage, cache = dashboard.usage, dashboard.phrases
        examples = (await anyio.to_thread.run_sync(usage.entries))[:_SHOWN] if usage is not None else None
        phrases = await anyio.to_thread.run_sync(cache.entries) if cache is not None else None
        return page(request, "learning.html", examples=examples, phrases=phrases)

    async def remove_example(request: Request) -> Response:
        form = await request.form()
        if dashboard.usage is not None:
            await anyio.to_thread.run_sync(dashboard.usage.remove, str(form.get("query") or ""), str(form.get("tool") or ""))
            dashboard.gateway.rescreen()
        return back_to(f"{UI_PATH}/learning")

    async def remove_phrases(request: Request) -> Response:
        form = await request.form()
        if dashboard.phrases is not None:
            await anyio.to_thread.run_sync(dashboard.phrases.forget, [str(form.get("tool") or "")])
            dashboard.gateway.rescreen()
        return back_to(f"{UI_PATH}/learning")

    return [
        Route(f"{UI_PATH}/learning", learning, methods=["GET"]),
        Route(f"{UI_PATH}/learning/examples/remove", remove_example, methods=["POST"]),
        Route(f"{UI_PATH}/learning/phrases/remove", remove_phrases, methods=["POST"]),
    ]
