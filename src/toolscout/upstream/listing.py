"""What one upstream offers, listed at connection and kept current: its tools, and its resources,
resource templates and prompts when it declares them.

    listing = Listing(name, redaction=redaction, call_timeout=30.0, on_change=..., on_notice=..., subscriptions=...)
    await listing.list_first(client)          # every page of each kind the upstream offers
    listing.tools, listing.offer
    async with anyio.create_task_group() as tg:
        listing.follow(tg, client)            # re-listed after each list_changed, in both protocol eras

Every kind is listed the same way (`list_all`: each page, up to `MAX_PAGES`, a repeated cursor
ending it); tools are one group and the other kinds another, each re-listed as a whole when the
upstream says it changed. The handshake era says so with notifications on the session
(`on_message`); 2026-07-28 only on a `subscriptions/listen` stream (`_listen_for_changes`), which
also carries the updates of the resources clients subscribed to.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.subscriptions import ListenNotSupportedError, ResourceUpdated, SubscriptionLost, ToolsListChanged

from toolscout.secrets import Redaction
from toolscout.upstream.offerings import UpstreamOffer
from toolscout.upstream.status import describe_failure

__all__ = ["MAX_PAGES", "PROMPTS", "RESOURCES", "TEMPLATES", "TOOLS", "Kind", "Listing", "Subscriptions", "list_all"]

logger = logging.getLogger(__name__)

# A server that pages forever (or repeats a cursor) must not hang the gateway.
MAX_PAGES = 500
# Pause before opening another listen stream after one ended, doubling while they keep ending.
_RELISTEN_BASE_DELAY = 1.0
_RELISTEN_MAX_DELAY = 60.0


@dataclass(frozen=True)
class Kind:
    """One kind of offering: the field of its pages and the client's method that lists one page.
    `optional`: a server declaring the capability may still not implement it (lists nothing)."""

    field: str
    method: str
    optional: bool = False


TOOLS = Kind("tools", "list_tools")
RESOURCES = Kind("resources", "list_resources")
TEMPLATES = Kind("resource_templates", "list_resource_templates", optional=True)
PROMPTS = Kind("prompts", "list_prompts")


@dataclass
class Subscriptions:
    """The upstream's resources clients subscribed to (its own URIs), kept across its sessions; on
    2026-07-28 a listen stream carries them, and `relisten` asks for a stream for a changed set."""

    uris: set[str] = field(default_factory=set)
    relisten: anyio.Event = field(default_factory=anyio.Event)


async def list_all(client: Client, kind: Kind, *, server: str, redaction: Redaction) -> tuple[Any, ...]:
    """Every page of one listing, each item's registry secrets hidden."""
    fetch: Callable[..., Awaitable[Any]] = getattr(client, kind.method)
    items: list[Any] = []
    cursor: str | None = None
    seen_cursors: set[str] = set()
    for _ in range(MAX_PAGES):
        try:
            page = await fetch(cursor=cursor)
        except MCPError as exc:
            if kind.optional and exc.code == types.METHOD_NOT_FOUND:
                return ()
            raise
        # A definition an upstream words with a registry secret in it reaches no client with it.
        items.extend(redaction.message(item) for item in getattr(page, kind.field))
        cursor = page.next_cursor
        if not cursor or cursor in seen_cursors:
            break
        seen_cursors.add(cursor)
    else:
        logger.warning("upstream '%s' listed more than %d pages of %s; kept those", server, MAX_PAGES,
                       kind.field.replace("_", " "))
    return tuple(items)


@dataclass
class _Group:
    """Kinds re-listed together after a change, and how the logs name them."""

    what: str  # "tools", "resources and prompts"
    attribute: str  # the `Listing` attribute that holds them
    changed_line: Callable[[Any], str]  # logged after the server's name when a re-listing differs
    changed: anyio.Event = field(default_factory=anyio.Event)


class Listing:
    """The tools and other offerings of one upstream, across its sessions."""

    def __init__(
        self,
        name: str,
        *,
        redaction: Redaction,
        call_timeout: float,
        subscriptions: Subscriptions,
        on_change: Callable[[], None],
        on_updated: Callable[[types.ResourceUpdatedNotification], None],
    ) -> None:
        self.name = name
        self._redaction = redaction
        self._call_timeout = call_timeout
        self._subscriptions = subscriptions
        self._on_change = on_change
        self._on_updated = on_updated
        self.tools: tuple[types.Tool, ...] = ()
        self.offer = UpstreamOffer()
        self._tools = _Group("tools", "tools", lambda tools: f"changed its tools: now {len(tools)}")
        self._offer = _Group("resources and prompts", "offer", lambda offer: "changed its resources or prompts")

    async def list_tools(self, client: Client) -> tuple[types.Tool, ...]:
        return await list_all(client, TOOLS, server=self.name, redaction=self._redaction)

    async def list_offer(self, client: Client) -> UpstreamOffer:
        """Its resources, resource templates and prompts, each only if it declares them."""
        capabilities = client.server_capabilities
        resources: Sequence[types.Resource] = ()
        templates: Sequence[types.ResourceTemplate] = ()
        prompts: Sequence[types.Prompt] = ()
        if capabilities.resources is not None:
            resources = await list_all(client, RESOURCES, server=self.name, redaction=self._redaction)
            templates = await list_all(client, TEMPLATES, server=self.name, redaction=self._redaction)
        if capabilities.prompts is not None:
            prompts = await list_all(client, PROMPTS, server=self.name, redaction=self._redaction)
        return UpstreamOffer(tuple(resources), tuple(templates), tuple(prompts))

    async def list_first(self, client: Client) -> None:
        """Everything it offers, at connection: its tools (a failure fails the connection), then the
        rest (a failure there costs only those, not its tools)."""
        self.tools = await self.list_tools(client)
        try:
            with anyio.fail_after(self._call_timeout):
                self.offer = await self.list_offer(client)
        except Exception as exc:  # noqa: BLE001 - its tools are served all the same
            logger.warning("upstream '%s': listing its resources and prompts failed: %s; its tools are served",
                           self.name, self._redaction.text(describe_failure(exc)))
            self.offer = UpstreamOffer()

    def follow(self, tasks: anyio.abc.TaskGroup, client: Client) -> None:
        """Keep both groups current for as long as `tasks` runs (the session)."""
        tasks.start_soon(self._follow, client, self._tools, self.list_tools)
        tasks.start_soon(self._follow, client, self._offer, self.list_offer)
        tasks.start_soon(self._listen_for_changes, client)

    def on_message(self, message: Any) -> bool:
        """A handshake-era list_changed notification on the session (True: it was one).
        Runs inside the session's receive path: only signals."""
        if isinstance(message, types.ToolListChangedNotification):
            self._tools.changed.set()
        elif isinstance(message, (types.ResourceListChangedNotification, types.PromptListChangedNotification)):
            self._offer.changed.set()
        else:
            return False
        return True

    async def _follow(self, client: Client, group: _Group, relist: Callable[[Client], Awaitable[Any]]) -> None:
        """Re-list after each change of `group`; a burst of notifications costs one re-list, and one
        with nothing changed costs no re-index."""
        while True:
            await group.changed.wait()
            group.changed = anyio.Event()
            try:
                with anyio.fail_after(self._call_timeout):
                    listed = await relist(client)
            except Exception as exc:  # noqa: BLE001 - keep serving the previous list
                logger.warning("upstream '%s': re-listing %s failed: %s", self.name, group.what,
                               self._redaction.text(describe_failure(exc)))
                continue
            if listed == getattr(self, group.attribute):
                continue
            setattr(self, group.attribute, listed)
            logger.info("upstream '%s' %s", self.name, group.changed_line(listed))
            self._on_change()

    async def _listen_for_changes(self, client: Client) -> None:
        """On 2026-07-28 an upstream announces list changes (tools, and resources and prompts when it
        offers them) only on a `subscriptions/listen` stream.

        Such a stream has no replay, so everything is listed again each time one opens: a change
        made while none was open is not missed. A stream that ends, on purpose or not, is opened
        again after a pause that doubles while streams keep ending without a change: over HTTP
        nothing else tells that the upstream restarted (a proxy may also cut idle streams).
        On the handshake era the announcements come on the session itself (`on_message`).
        """
        capabilities = client.server_capabilities
        tools = bool(capabilities.tools is not None and capabilities.tools.list_changed)
        resources = bool(capabilities.resources is not None and capabilities.resources.list_changed)
        prompts = bool(capabilities.prompts is not None and capabilities.prompts.list_changed)
        if not (tools or resources or prompts):
            return
        ended = 0  # streams in a row that ended without announcing a change
        while True:
            try:
                self._subscriptions.relisten = anyio.Event()
                with anyio.CancelScope() as stream_scope:
                    async with client.listen(
                        tools_list_changed=tools, resources_list_changed=resources, prompts_list_changed=prompts,
                        resource_subscriptions=sorted(self._subscriptions.uris),
                    ) as subscription:
                        self._tools.changed.set()
                        self._offer.changed.set()
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(_cancel_when, self._subscriptions.relisten, stream_scope)
                            async for change in subscription:
                                ended = 0
                                self._on_listen_event(change)
                            tg.cancel_scope.cancel()
                if stream_scope.cancelled_caught:
                    ended = 0
                    continue  # the resources subscribed to changed: open a stream for the new set
                logger.debug("upstream '%s' closed its listen stream", self.name)
            except ListenNotSupportedError:
                return
            except SubscriptionLost as exc:
                logger.debug("upstream '%s': listen stream lost: %s", self.name, self._redaction.text(str(exc)))
            except MCPError as exc:
                log = logger.warning if ended == 0 else logger.debug
                log("upstream '%s': cannot open a listen stream for its list changes: %s",
                    self.name, self._redaction.text(exc.message))
            await anyio.sleep(min(_RELISTEN_BASE_DELAY * 2**ended, _RELISTEN_MAX_DELAY))
            ended += 1

    def _on_listen_event(self, change: Any) -> None:
        if isinstance(change, ToolsListChanged):
            self._tools.changed.set()
        elif isinstance(change, ResourceUpdated):
            # Relayed as the handshake era's notification: one shape for the gateway's listeners.
            self._on_updated(types.ResourceUpdatedNotification(
                params=types.ResourceUpdatedNotificationParams(uri=change.uri)
            ))
        else:
            self._offer.changed.set()


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
