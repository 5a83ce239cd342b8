"""Retrieval that learns, wired into the running gateway (the parts in `toolscout.learning` are pure).

    sources = LearningSources.load(overlays, example_files, usage=store, cache=cache)
    gateway = Gateway(specs, engine, enrich=sources)          # expansion field filled at each build
    async with Learning(gateway, tracker=tracker, expansion=SamplingExpansion(gateway, cache)) as learning:
        server = build_server(gateway, observers=learning.observers)
        learning.install(server)                            # sampling starts when a client can sample

- `LearningSources` (`toolscout.learning.sources`, re-exported here) fills each tool's expansion
  field before every index build, from overlays, example files, examples learned from use and
  phrases the client's model generated.
- `UsageRecorder` sees every meta-tool call: a search's query and the ids it returned, then a
  successful execute_tool of one of them within the same session, is recorded when it is evidence
  (`UsageTracker`: ranked high without a server filter, not corrected later), in a worker thread:
  SQLite never runs on the event loop. The next index build uses it.
- `SamplingExpansion` (`serve --expand`) asks a client that declared sampling to write phrases for
  each tool not yet in the cache, in the background and rate-limited; each answer re-indexes.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession

from toolscout.catalog import Catalog
from toolscout.errors import ToolCallError
from toolscout.gateway import Gateway
from toolscout.learning import Expander, ExpansionCache, UsageTracker
from toolscout.learning.sampling_mcp import sampling_ask, session_supports_sampling
from toolscout.learning.sources import LearningSources
from toolscout.learning.usage import EVIDENCE_RANK, Evidence
from toolscout.registry.profiles import Profile
from toolscout.serving.scoped import ProfileChooser
from toolscout.serving.meta_tools import EXECUTE_TOOL, SEARCH_TOOL
from toolscout.serving.server import CallObserver
from toolscout.serving.validation import resolve_tool

__all__ = [
    "LOCAL_SESSION",
    "Learning",
    "LearningSources",
    "SamplingExpansion",
    "UsageRecorder",
    "session_key",
]

logger = logging.getLogger(__name__)

# Learning from use needs to know which calls come from one client session. Over stdio (and in
# process) there is one client per toolscout; over streamable HTTP the session id header tells
# clients apart. Requests without one (the sessionless 2026-07-28 protocol) are not linked.
LOCAL_SESSION = "local"
_SESSION_HEADER = "mcp-session-id"
# Executions waiting to be written; beyond this (a flood of calls) new evidence is dropped.
_PENDING_RECORDS = 1024
_DRAIN_TIMEOUT = 5.0


def session_key(ctx: ServerRequestContext[Any]) -> Hashable | None:
    """Which client session a request belongs to, or None when that cannot be told."""
    request = ctx.request
    if request is None:
        return LOCAL_SESSION
    headers = getattr(request, "headers", None)
    session_id = headers.get(_SESSION_HEADER) if headers is not None else None
    return ("http", session_id) if session_id else None


class UsageRecorder:
    """A call observer feeding the UsageTracker; writes happen in `run()`, off the event loop."""

    def __init__(self, gateway: Gateway, tracker: UsageTracker) -> None:
        self.gateway = gateway
        self.tracker = tracker
        self._send, self._receive = anyio.create_memory_object_stream[Evidence](_PENDING_RECORDS)
        self.finished = anyio.Event()

    def observe(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, Any], result: types.CallToolResult
    ) -> None:
        if result.is_error:
            return
        key = session_key(ctx)
        if key is None:
            return
        if name == SEARCH_TOOL and isinstance(result.structured_content, dict):
            returned = [entry.get("id") for entry in result.structured_content.get("tools", ())]
            # In memory only: cheap enough for the event loop, and it must precede the execution.
            self.tracker.on_search(
                key, str(arguments.get("query", "")), [i for i in returned if isinstance(i, str)],
                filtered=bool(arguments.get("servers")),
            )
        elif name == EXECUTE_TOOL and isinstance(arguments.get("name"), str):
            try:
                tool = resolve_tool(arguments["name"].strip(), self.gateway.catalog.tools)
            except ToolCallError:
                return
            # Matched to its search now: searches made before the write happens must not count.
            evidence = self.tracker.match(key, tool.id, tool.server)
            if evidence is None:
                return
            try:
                self._send.send_nowait(evidence)
            except anyio.WouldBlock:
                logger.debug("usage recording is behind; dropped the execution of %s", tool.id)

    async def run(self) -> None:
        try:
            async with self._receive:
                async for evidence in self._receive:
                    await anyio.to_thread.run_sync(
                        lambda: self.tracker.commit(evidence, ranks_high=self._ranks_high)
                    )
        finally:
            self.finished.set()

    def _ranks_high(self, query: str, tool_id: str) -> bool:
        """Whether the unfiltered search ranks `tool_id` among its first EVIDENCE_RANK for `query`
        (in the recorder's worker thread: a search may encode the query)."""
        try:
            response = self.gateway.engine.search(query, limit=EVIDENCE_RANK)
        except Exception:  # noqa: BLE001 - no evidence then; the agent's call is unaffected
            logger.exception("could not check the rank of %s for a learned request", tool_id)
            return False
        return any(hit.tool.id == tool_id for hit in response.hits)

    def close(self) -> None:
        """No more records; `run()` writes what is pending, then returns."""
        self._send.close()


class SamplingExpansion:
    """`serve --expand`: the client's model writes phrases for each tool not yet in the cache.

    Starts when a client that declared sampling completes its handshake, runs again when the
    catalog changes (only new or changed tools are asked about), and stops asking a session that
    cannot sample. Each expanded tool re-indexes the catalog, so its phrases count at once.
    """

    def __init__(
        self,
        gateway: Gateway,
        cache: ExpansionCache,
        *,
        requests_per_minute: float = 10.0,
        profiles: ProfileChooser | None = None,
    ) -> None:
        self.gateway = gateway
        self.cache = cache
        self._rate = requests_per_minute
        self._profiles = profiles
        # The profile of the sampling client: its model is told of that profile's tools only.
        self._profile: Profile | None = None
        self._session: ServerSession | None = None
        self._wanted = anyio.Event()

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            if session_supports_sampling(ctx.session):
                self._session = ctx.session
                self._profile = self._profiles.choose(ctx.request) if self._profiles else None
                self._wanted.set()
            else:
                logger.info("the client did not declare sampling: --expand asks its model nothing")
        return result

    async def on_catalog(self, catalog: Catalog) -> None:
        # A run over an unchanged catalog asks nothing: the cache already has every tool.
        if self._session is not None:
            self._wanted.set()

    async def run(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted = anyio.Event()
            session = self._session
            if session is None:
                continue
            expander = Expander(
                self.cache, sampling_ask(session), requests_per_minute=self._rate,
                on_expanded=lambda record, phrases: self.gateway.rescreen(),
            )
            # Only tools agents may use: a withheld (e.g. poisoned) definition is never sent to the
            # model, nor one outside the sampling client's profile.
            profile = self._profile
            tools = [t for t in self.gateway.catalog.tools if profile is None or profile.allows(t.id, t.server)]
            report = await expander.run(tools)
            if report.stopped and self._session is session:
                self._session = None  # this client cannot or will not sample; wait for another


class Learning:
    """The running parts of learning: the usage recorder's writer and the sampling expansion."""

    def __init__(
        self, gateway: Gateway, *, tracker: UsageTracker | None = None, expansion: SamplingExpansion | None = None
    ) -> None:
        self.recorder = UsageRecorder(gateway, tracker) if tracker is not None and tracker.enabled else None
        self.expansion = expansion
        self.gateway = gateway
        self._task_group: anyio.abc.TaskGroup | None = None

    @property
    def observers(self) -> list[CallObserver]:
        return [self.recorder.observe] if self.recorder is not None else []

    def install(self, server: Server[Any]) -> None:
        """Let the sampling expansion see clients complete their handshake."""
        if self.expansion is not None:
            server.middleware.append(self.expansion.middleware)

    async def __aenter__(self) -> Learning:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        if self.recorder is not None:
            self._task_group.start_soon(self.recorder.run, name="usage recorder")
        if self.expansion is not None:
            self.gateway.add_listener(self.expansion.on_catalog)
            self._task_group.start_soon(self.expansion.run, name="sampling expansion")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._task_group is not None
        if self.recorder is not None:
            # Pending usage records are written first (bounded); the expansion is simply abandoned.
            self.recorder.close()
            with anyio.move_on_after(_DRAIN_TIMEOUT, shield=True):
                await self.recorder.finished.wait()
        self._task_group.cancel_scope.cancel()
        await self._task_group.__aexit__(None, None, None)
        return None
