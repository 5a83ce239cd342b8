"""How `serve` is reached (stdio, or streamable HTTP with its guards), as one value the
application (`toolscout.app.AppConfig`) carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolscout.upstream.defaults import DEFAULT_READY_WAIT

if TYPE_CHECKING:
    from toolscout.serving.clients import ClientTokens
    from toolscout.serving.http import SessionLimits

__all__ = ["ServingOptions"]


@dataclass(frozen=True)
class ServingOptions:
    """How `serve` is reached: stdio, or streamable HTTP with its guards."""

    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    auth_token: str | None = None
    # Several named clients, each with its own token (serving/clients.py); not with `auth_token`.
    clients: ClientTokens | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    ready_wait: float = DEFAULT_READY_WAIT
    # Sessions per client and their idle timeout (serving/http.py); None: the defaults.
    sessions: SessionLimits | None = None
    # The profile a client gets unless its HTTP path names another (`toolscout.registry.profiles`);
    # None: the whole gateway.
    profile: str | None = None
    # Open the dashboard's sign-in link in a browser once serving (`toolscout ui`).
    open_dashboard: bool = False
    # Which calls the user confirms first unless a registry entry says otherwise
    # (`toolscout.serving.confirmation`): "destructive", "all" or "none".
    confirm: str = "none"
    # Days the audit trail keeps a call (`toolscout.serving.audit`); None: no audit trail in the store.
    audit_days: float | None = 30.0
    # Keep the arguments' values in the audit trail (the registries' secrets redacted), not only a digest.
    audit_arguments: bool = False
