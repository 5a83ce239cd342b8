"""How `serve` is reached (stdio, or streamable HTTP with its guards), as one value the
application (`toolscout.app.AppConfig`) carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolscout.upstream.defaults import DEFAULT_READY_WAIT

if TYPE_CHECKING:
    from toolscout.serving.clients import ClientTokens
    from toolscout.serving.http import SessionLimits

__all__ = ["CodeModeLimits", "ServingOptions"]


@dataclass(frozen=True)
class CodeModeLimits:
    """What one `run_code` script may use (`serving/code_mode.py`); each has a `serve` option.

    The defaults fit a script that searches, makes a handful of calls and combines their results;
    an agent needing more makes several scripts, each bounded.
    """

    # Seconds from the script's start to its end, tool calls included.
    wall_seconds: float = 30.0
    # Seconds the interpreter itself may compute (its clock stops while a tool call runs).
    cpu_seconds: float = 5.0
    memory_bytes: int = 64 * 1024 * 1024
    max_tool_calls: int = 50
    # What comes back to the agent: printed text and the last value, together.
    max_result_bytes: int = 64 * 1024
    # Deep enough for any reasonable script, shallow enough to stop runaway recursion at once.
    max_recursion_depth: int = 200
    # Scripts run at once (one sandbox worker process each); more wait their turn.
    workers: int = 2


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
    # The third meta-tool, run_code, with these limits (`serve --code-mode`); None: off.
    code_mode: CodeModeLimits | None = None
    # Which calls the user confirms first unless a registry entry says otherwise
    # (`toolscout.serving.confirmation`): "destructive", "all" or "none".
    confirm: str = "none"
    # Days the audit trail keeps a call (`toolscout.serving.audit`); None: no audit trail in the store.
    audit_days: float | None = 30.0
    # Keep the arguments' values in the audit trail (the registries' secrets redacted), not only a digest.
    audit_arguments: bool = False
