"""What a server *is*, for pinning: its name together with how it is launched or reached.

Two registries may both have a `time` server: the bundled one, and a desktop configuration's
with `--local-timezone=Europe/Paris` and other parameter descriptions. They are different servers
and must keep different pins, or each would quarantine the other's tools as a rug pull. So a pin
belongs to a server identity: the name, plus the command line (stdio) or the URL (HTTP). Changing
an entry's command or URL makes it a new server: its tools are trusted on first use again (or
held, with strict pins).

    identity = server_identity(spec)
    identity.key        # "time@3f2a1c0d": how pins are filed and how `toolscout approve --server` names it
    identity.launch     # "uvx mcp-server-time --local-timezone=Europe/Paris": shown to a person

Secrets of the entry (a key in the URL) are hidden in `launch` and never reach the pin file.
The environment and headers are not part of the identity: they carry credentials, which change
without the server changing.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolscout.registry.spec import ServerSpec

__all__ = ["KEY_SEPARATOR", "ServerIdentity", "name_of_key", "server_identity"]

# Between the name and the digest of the launch in a key: "time@3f2a1c0d".
KEY_SEPARATOR = "@"
_DIGEST_CHARS = 8


@dataclass(frozen=True)
class ServerIdentity:
    name: str
    # The command line or URL, secrets hidden; "" when unknown (the key is then the name alone).
    launch: str = ""

    @property
    def key(self) -> str:
        if not self.launch:
            return self.name
        digest = hashlib.sha256(self.launch.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]
        return f"{self.name}{KEY_SEPARATOR}{digest}"


def name_of_key(key: str) -> str:
    """The server name a pin key files under ("time@3f2a1c0d" -> "time"; a bare name is itself)."""
    name, separator, digest = key.rpartition(KEY_SEPARATOR)
    return name if separator and len(digest) == _DIGEST_CHARS else key


def server_identity(spec: ServerSpec) -> ServerIdentity:
    """The identity of a registry entry: its name and its command line (with cwd) or URL."""
    from toolscout.secrets import redact

    if spec.transport == "stdio":
        launch = shlex.join([spec.command or "", *spec.args])
        if spec.cwd:
            launch += f" (in {spec.cwd})"
    else:
        launch = spec.url or ""
    return ServerIdentity(spec.name, redact(launch, spec.secrets))
