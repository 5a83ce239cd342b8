"""Call rates as operators write them ("10/minute"), for the limits of a registry entry and of a
client in the token file (`toolscout.serving.rate_limits` enforces them)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolscout.errors import ConfigError

__all__ = ["CONFIRM_MODES", "RATE_PATTERN", "Rate", "parse_rate"]

# How a server's or tool's calls are confirmed (`toolscout.serving.confirmation`).
CONFIRM_MODES = ("destructive", "all", "none")
_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
RATE_PATTERN = r"^\s*[0-9]+\s*/\s*(second|minute|hour|day)s?\s*$"
_RATE = re.compile(RATE_PATTERN)


@dataclass(frozen=True)
class Rate:
    """At most `calls` calls in any `period` seconds."""

    calls: int
    period: float
    text: str

    def __str__(self) -> str:
        return self.text


def parse_rate(text: object, where: str) -> Rate:
    """A rate from "N/unit"; ConfigError naming `where` and the form otherwise."""
    match = _RATE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ConfigError(
            f"{where}: a limit must be a rate like \"10/minute\" (N per second, minute, hour or day); got {text!r}"
        )
    count, unit = text.split("/")
    calls = int(count)
    if calls < 1:
        raise ConfigError(f"{where}: a limit of {text!r} allows no call at all; remove the tool instead, or allow 1 or more")
    return Rate(calls, _SECONDS[unit.strip().rstrip("s")], f"{calls}/{unit.strip().rstrip('s')}")
