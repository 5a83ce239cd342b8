"""Secrets of the registries kept out of every log line, whichever library writes it.

Our own messages redact what they quote, but the SDK and the HTTP stack log too (request URLs
with a `?key=...`, exceptions quoting headers) when run with -vv. A filter on the root logger's
handlers sees every record that is written, so it is the one place that catches them all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from toolscout.registry.loading import redact

__all__ = ["RedactingFilter", "redact_logs"]


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
