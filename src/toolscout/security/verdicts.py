"""What the pin store (`toolscout.security.pinning`) says of tools: each listed tool's verdict
(trusted, new, pending, changed, with the refusal an agent reads for a blocked one), and a
definition waiting for a person (`PendingChange`, what `toolscout approve` and the dashboard show).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from toolscout.security.changes import compare

__all__ = ["Key", "PendingChange", "PinStatus", "PinVerdict", "PinVerdicts"]

# (server identity key, tool name)
Key = tuple[str, str]


class PinStatus(StrEnum):
    TRUSTED = "trusted"
    NEW = "new"
    PENDING = "pending"
    CHANGED = "changed"


@dataclass(frozen=True)
class PinVerdict:
    """What the pin store says about one tool as currently listed by its server."""

    server: str
    name: str
    status: PinStatus
    # For CHANGED/PENDING: which parts changed, naming paths but never quoting the new text.
    changes: tuple[str, ...] = ()
    # The command that approves exactly this definition (`PinStore.approve_command`).
    command: str = ""

    @property
    def blocked(self) -> bool:
        return self.status in (PinStatus.PENDING, PinStatus.CHANGED)

    @property
    def message(self) -> str:
        """The refusal an agent gets from execute_tool for a blocked tool ('' when not blocked)."""
        command = self.command or f"toolscout approve --server {self.server} {self.name}"
        if self.status is PinStatus.CHANGED:
            return (
                f"Tool '{self.name}' of server '{self.server}' is quarantined: its definition changed "
                f"since it was approved ({'; '.join(self.changes)}). It stays unavailable until a person "
                f"reviews the change and runs `{command}`."
            )
        if self.status is PinStatus.PENDING:
            return (
                f"Tool '{self.name}' of server '{self.server}' is new and awaits approval (strict pinning). "
                f"It stays unavailable until a person reviews it and runs `{command}`."
            )
        return ""


@dataclass(frozen=True)
class PinVerdicts:
    """Verdicts of one `check`, by (server, tool name)."""

    by_key: Mapping[Key, PinVerdict]

    def get(self, server: str, name: str) -> PinVerdict | None:
        return self.by_key.get((server, name))

    def allows(self, server: str, name: str) -> bool:
        verdict = self.by_key.get((server, name))
        return verdict is None or not verdict.blocked

    @property
    def blocked(self) -> dict[Key, PinVerdict]:
        return {key: v for key, v in self.by_key.items() if v.blocked}

    def __iter__(self) -> Iterator[PinVerdict]:
        return iter(self.by_key.values())

    def __len__(self) -> int:
        return len(self.by_key)


@dataclass(frozen=True)
class PendingChange:
    """A definition waiting for a person: a changed tool, or a new one in strict mode."""

    server: str
    name: str
    approved: Mapping[str, Any] | None  # None: never approved
    candidate: Mapping[str, Any]
    candidate_fingerprint: str
    seen_at: str
    # The server identity key it is filed under (the name alone for pins from before identities),
    # and how that server is launched, as a person reads it ('' when unknown).
    key: str = ""
    launch: str = ""
    # When and by whom a person rejected this very candidate ('' when nobody did): the tool stays
    # withheld, and the candidate can still be approved later.
    rejected_at: str = ""
    rejected_by: str = ""

    @property
    def pin_key(self) -> str:
        return self.key or self.server

    @property
    def kind(self) -> str:
        return "new" if self.approved is None else "changed"

    @property
    def diff(self) -> str:
        return compare(self.approved, self.candidate).diff

    @property
    def summary(self) -> tuple[str, ...]:
        return compare(self.approved, self.candidate).summary
