"""What the gateway relays besides tools: the resources, templates and prompts the upstreams that
are up offer (screened like tools), and reading, prompting, completing, subscribing and logging at
the upstream that owns each name (`toolscout.naming` gives the names).

`OfferingsRelay` is the part of `Gateway` that does it; it reaches the upstreams only through the
gateway's pool. `allows` (a `ServerFilter`): the servers the asking client may reach (a profile's
view passes its own); a server outside it serves that client nothing, as if it did not exist.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from toolscout.errors import NotOfferedError, RequestError
from toolscout.gateway.listeners import OfferingsListener, ServerFilter, tell_all
from toolscout.naming import namespaced_uri, split_uri
from toolscout.upstream.status import State

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.gateway.indexing import CatalogIndexer
    from toolscout.upstream.offerings import Offerings
    from toolscout.upstream.pool import UpstreamPool
    from toolscout.upstream.session import Caller, InputRound

__all__ = ["OfferingsRelay"]

logger = logging.getLogger(__name__)


class OfferingsRelay:
    """Resources, prompts, completions and logging, relayed through the gateway's pool."""

    _pool: UpstreamPool

    def __init__(self) -> None:
        from toolscout.upstream.offerings import Offerings

        self._offerings: Offerings = Offerings()
        self._offerings_listeners: list[OfferingsListener] = []

    @property
    def offerings(self) -> Offerings:
        """The resources, templates and prompts clients see now: of the upstreams that are up, screened."""
        return self._offerings

    def listed_offerings(self) -> Offerings:
        """What the upstreams that are up offer now besides tools, before the screens withhold any."""
        return self._pool.offerings()

    def add_offerings_listener(self, listener: OfferingsListener) -> None:
        """`listener(resources_changed, prompts_changed)` is awaited after the offerings change."""
        self._offerings_listeners.append(listener)

    async def _sync_offerings(self, indexer: CatalogIndexer) -> None:
        """Screen what is listed now with `indexer`'s screens; tell the listeners what changed."""
        listed = self.listed_offerings()
        withheld = await indexer.withheld(listed.records())
        for name, reason in withheld.items():
            if name not in self._offerings.withheld:
                logger.warning("withholding '%s': %s", name, reason)
        offerings = listed.screened(withheld)
        if offerings.fingerprint == self._offerings.fingerprint:
            return
        resources_changed, prompts_changed = offerings.kinds_changed(self._offerings)
        self._offerings = offerings
        await tell_all(self._offerings_listeners, resources_changed, prompts_changed, what="offerings")

    async def read_resource(
        self, uri: str, round_: InputRound | None = None, *, allows: ServerFilter | None = None,
        caller: Caller | None = None,
    ) -> tuple[str, types.ReadResourceResult | types.InputRequiredResult]:
        """(its server, the resource) read from the upstream that owns it, its contents under our
        names; "input required" only for a client that cannot be asked back."""
        import mcp_types as types

        server, own = self.resource_owner(uri, allows=allows)
        result = await self._pool.upstreams[server].session.read_resource(own, round_, caller=caller)
        if isinstance(result, types.InputRequiredResult):
            return server, result
        contents = [item.model_copy(update={"uri": namespaced_uri(server, item.uri)}) for item in result.contents]
        return server, result.model_copy(update={"contents": contents})

    async def subscribe(self, uri: str, subscribe: bool = True) -> None:
        """Subscribe to (or unsubscribe from) a namespaced resource at the upstream that owns it."""
        server, own = self.resource_owner(uri)
        await self._pool.upstreams[server].session.subscribe(own, subscribe)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str], round_: InputRound | None = None, *,
        allows: ServerFilter | None = None, caller: Caller | None = None,
    ) -> tuple[str, types.GetPromptResult | types.InputRequiredResult]:
        """(its server, the prompt) by its exposed name from its upstream, after checking the
        arguments; "input required" only for a client that cannot be asked back."""
        offerings = self._offerings_for(allows)
        if name in offerings.withheld:
            raise NotOfferedError(f"Prompt '{name}' is withheld: {offerings.withheld[name]}")
        found = offerings.prompt(name)
        if found is None:
            known = ", ".join(p.name for p in offerings.listed_prompts()[:20]) or "none"
            raise NotOfferedError(f"Unknown prompt '{name}'. Prompts offered now: {known}.")
        server, prompt = found
        _check_prompt_arguments(name, prompt, arguments)
        return server, await self._pool.upstreams[server].session.get_prompt(prompt.name, arguments, round_, caller=caller)

    async def complete(
        self, ref: types.PromptReference | types.ResourceTemplateReference, argument: dict[str, str],
        context: dict[str, str] | None, *, allows: ServerFilter | None = None,
    ) -> types.CompleteResult:
        """Route a completion to the upstream that owns the prompt or template, in its own names."""
        import mcp_types as types

        offerings = self._offerings_for(allows)
        if isinstance(ref, types.PromptReference):
            found = offerings.prompt(ref.name)
            if found is None:
                raise NotOfferedError(f"Unknown prompt '{ref.name}'; list prompts for the names offered now.")
            server, prompt = found
            own: types.PromptReference | types.ResourceTemplateReference = ref.model_copy(update={"name": prompt.name})
        else:
            server, uri = self.resource_owner(ref.uri, allows=allows)
            if not offerings.has_template(server, uri):
                raise NotOfferedError(f"Unknown resource template '{ref.uri}'; list resource templates for those offered now.")
            own = ref.model_copy(update={"uri": uri})
        return await self._pool.upstreams[server].session.complete(own, argument, context)

    async def set_logging_level(self, level: types.LoggingLevel) -> None:
        """Forward logging/setLevel to every upstream that is up and declares logging."""
        for upstream in self._pool.upstreams.values():
            if upstream.state is State.UP:
                try:
                    await upstream.session.set_logging_level(level)
                except Exception as exc:  # noqa: BLE001 - one upstream's refusal does not fail the request
                    logger.info("upstream '%s' did not take logging level %s: %s", upstream.name, level, exc)

    def resource_owner(self, uri: str, *, allows: ServerFilter | None = None) -> tuple[str, str]:
        """(server, the upstream's URI) for a namespaced URI, or for an upstream's own URI that
        only one upstream offers; NotOfferedError if none can serve it now (to a client that
        `allows` limits, a server outside its limit serves nothing)."""
        offerings = self._offerings_for(allows)
        owner = split_uri(uri)
        if owner is None or owner[0] not in self._pool.upstreams or (allows is not None and not allows(owner[0])):
            servers = offerings.owners_of(uri)
            if len(servers) != 1:
                several = f" It is offered by several servers ({', '.join(servers)}): name one." if servers else ""
                raise NotOfferedError(
                    f"Unknown resource '{uri}'.{several} Resources here are named toolscout://SERVER/URI, as "
                    "resources/list and resources/templates/list give them."
                )
            owner = (servers[0], uri)
        server, own = owner
        exposed = namespaced_uri(server, own)
        if exposed in offerings.withheld:
            raise NotOfferedError(f"Resource '{uri}' is withheld: {offerings.withheld[exposed]}")
        upstream = self._pool.upstreams[server]
        if upstream.state is not State.UP:
            raise NotOfferedError(f"Resource '{uri}': upstream '{server}' is not available ({upstream.reason or upstream.state.value}).")
        return server, own

    def _offerings_for(self, allows: ServerFilter | None) -> Offerings:
        return self._offerings if allows is None else self._offerings.only(allows)


def _check_prompt_arguments(name: str, prompt: types.Prompt, arguments: Mapping[str, str]) -> None:
    """RequestError naming the missing and unknown arguments of prompt `name`, and what it takes."""
    declared = {a.name: a for a in prompt.arguments or []}
    missing = [a for a, arg in declared.items() if arg.required and a not in arguments]
    unknown = [a for a in arguments if a not in declared]
    if missing or unknown:
        problems = ([f"missing required argument(s): {', '.join(missing)}"] if missing else []) + (
            [f"unknown argument(s): {', '.join(unknown)}"] if unknown else [])
        expected = ", ".join(f"{a}{'' if arg.required else ' (optional)'}" for a, arg in declared.items()) or "none"
        raise RequestError(f"Prompt '{name}': {'; '.join(problems)}. It takes: {expected}.")
