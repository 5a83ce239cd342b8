"""Secrets of the registries kept out of every log line, whichever library writes it.

Our own messages redact what they quote, but the SDK and the HTTP stack log too (request URLs
with a `?key=...`, exceptions quoting headers) when run with -vv. A filter on the root logger's
handlers sees every record that is written, so it is the one place that catches them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["Redaction", "RedactingFilter", "redact", "redact_logs"]


class RedactingFilter(logging.Filter):
    """Replaces each secret in a record's message and traceback text with `***`."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = frozenset(secret for secret in secrets if secret)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        return True


def redact_logs(secrets: Iterable[str]) -> None:
    """Add `secrets` to what every handler of the root logger hides (idempotent per handler)."""
    secrets = frozenset(secrets)
    if not secrets:
        return
    for handler in logging.getLogger().handlers:
        existing = next((f for f in handler.filters if isinstance(f, RedactingFilter)), None)
        if existing is None:
            handler.addFilter(RedactingFilter(secrets))
        else:
            existing.secrets = existing.secrets | secrets


def redact(text: str, secrets: frozenset[str] | set[str] | Sequence[str]) -> str:
    """Replace every secret value in ``text`` with ``***`` (longest first, so parts can't leak)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


_Message = TypeVar("_Message")


@dataclass(frozen=True)
class Redaction:
    """The secrets of one upstream's registry entry, hidden in whatever it sends that is relayed or
    logged: `text` for a string, `message` for a wire message (a result, a log message, a request
    for the client), every string of it."""

    secrets: frozenset[str] = frozenset()

    def text(self, text: str) -> str:
        return redact(text, self.secrets)

    def message(self, message: _Message) -> _Message:
        if not self.secrets or not isinstance(message, BaseModel):
            return message
        dumped = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        redacted = _redacted_json(dumped, self.text)
        return message if redacted == dumped else type(message).model_validate(redacted)


def _redacted_json(value: Any, redact_text: Callable[[str], str]) -> Any:
    """`value` (parsed JSON) with `redact_text` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redacted_json(item, redact_text) for item in value]
    if isinstance(value, dict):
        return {redact_text(key): _redacted_json(item, redact_text) for key, item in value.items()}
    return value
