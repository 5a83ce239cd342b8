"""A load balancer inside an HTTP client: each request goes to one of several servers in turn.

    async with httpx.AsyncClient(transport=Balancer([url_a, url_b])) as http: ...   # round robin
    Balancer([url_a, url_b], affinity=True)   # a request with an Mcp-Session-Id goes to the server
                                              # that issued that session; others in turn

The URLs the client asks for name any of the servers; only the port is rewritten (every test
server listens on 127.0.0.1).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import httpx2 as httpx

__all__ = ["Balancer"]

SESSION_HEADER = "mcp-session-id"


class Balancer(httpx.AsyncBaseTransport):
    def __init__(self, servers: Sequence[str], *, affinity: bool = False) -> None:
        self._ports = [httpx.URL(url).port for url in servers]
        self._turn = itertools.cycle(range(len(self._ports)))
        self._affinity = affinity
        self._owner: dict[str, int] = {}
        self._inner = httpx.AsyncHTTPTransport()
        # Which server answered each request, in order.
        self.routed: list[int] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = request.headers.get(SESSION_HEADER)
        target = self._owner[session] if self._affinity and session in self._owner else next(self._turn)
        request.url = request.url.copy_with(port=self._ports[target])
        self.routed.append(target)
        response = await self._inner.handle_async_request(request)
        issued = response.headers.get(SESSION_HEADER)
        if issued:
            self._owner.setdefault(issued, target)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
