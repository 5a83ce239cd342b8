"""Expansions written by the connected client's model, in the background, once per tool version.

This module is MCP-free: it talks to the model through an `Ask` callable (prompt -> reply text).
`toolscout.learning.sampling_mcp.sampling_ask` builds one from an MCP server session; tests build
deterministic ones. The `Expander` asks about each tool missing from the cache, one request at a
time and at most `requests_per_minute`, so it never floods the user's client or their model quota.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from toolscout.catalog import ToolRecord
from toolscout.errors import SamplingUnavailableError, StateError
from toolscout.learning.expansion_cache import ExpansionCache
from toolscout.learning.phrases import clean_phrase, merge_phrases

__all__ = [
    "MAX_GENERATED_CHARS",
    "MAX_GENERATED_PHRASES",
    "Ask",
    "Expander",
    "ExpansionReport",
    "ProgressCallback",
    "build_expansion_prompt",
    "parse_expansion_reply",
]

logger = logging.getLogger(__name__)

Ask = Callable[[str], Awaitable[str]]
ProgressCallback = Callable[[int, int], None]

# A reply is trusted for at most this many phrases, each at most this long (words, not essays).
MAX_GENERATED_PHRASES = 24
MAX_GENERATED_CHARS = 120
# What of a tool the prompt shows: enough to understand it, bounded for huge descriptions/schemas.
_DESCRIPTION_CHARS = 1_200
_PARAMETERS = 12
_PARAMETER_CHARS = 120

_FENCE = re.compile(r"^```[A-Za-z]*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+(.*)$")


def _truncate(text: str, limit: int) -> str:
    text = clean_phrase(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def _parameter_lines(schema: Any) -> list[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    lines = []
    for name, spec in list(properties.items())[:_PARAMETERS]:
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type", "value")
        about = _truncate(str(spec.get("description", "")), _PARAMETER_CHARS)
        lines.append(f"- {name} ({kind})" + (f": {about}" if about else ""))
    return lines


def build_expansion_prompt(record: ToolRecord) -> str:
    """The request sent to the client's model for one tool; bounded whatever the tool's size."""
    title = f' "{record.display_title}"' if record.display_title != record.name else ""
    parts = [
        "A tool search engine needs to understand when a user would want this software tool.",
        "",
        f"Tool: {record.name}{title} (from the '{record.server}' server)",
        f"Description: {_truncate(record.description, _DESCRIPTION_CHARS) or '(none)'}",
    ]
    parameters = _parameter_lines(record.input_schema)
    if parameters:
        parts += ["Parameters:", *parameters]
    parts += [
        "",
        "Write 12 to 20 short phrases a user might type when they need this tool, in everyday",
        "language rather than the tool's own wording: requests as a person would ask them",
        '(e.g. "what changed in my project last week"), and synonyms or related words for what',
        "the tool does and what it works on. Do not just repeat the tool's name.",
        "Answer with only a JSON array of strings.",
    ]
    return "\n".join(parts)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    if isinstance(value, dict):
        # e.g. {"phrases": [...], "synonyms": [...], "examples": [...]}: every list, in order.
        return [text for item in value.values() for text in _strings(item)]
    return []


def _json_phrases(text: str) -> list[str] | None:
    candidates = [text]
    for opening, closing in ("[]", "{}"):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return _strings(json.loads(candidate))
        except json.JSONDecodeError:
            continue
    return None


def _line_phrases(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    bullets = [match.group(1) for line in lines if (match := _BULLET.match(line))]
    # Without list markers, take plain lines but not headings such as "Here are some phrases:".
    return bullets or [line for line in lines if not line.rstrip().endswith(":")]


def parse_expansion_reply(text: str) -> list[str]:
    """The phrases in a model's reply: a JSON array or object of lists, or a bullet/numbered list.

    Quotes and trailing commas around items are removed; empty, over-long and duplicate phrases
    are dropped; at most MAX_GENERATED_PHRASES are kept.
    """
    body = _FENCE.sub("", text).strip()
    phrases = _json_phrases(body)
    if phrases is None:
        phrases = _line_phrases(body)
    cleaned = (clean_phrase(phrase).strip(" ,;").strip("\"'\u201c\u201d`").strip() for phrase in phrases)
    return list(merge_phrases(
        (phrase for phrase in cleaned if len(phrase) <= MAX_GENERATED_CHARS),
        limit=MAX_GENERATED_PHRASES,
    ))


@dataclass
class ExpansionReport:
    """What one `Expander.run` did."""

    expanded: int = 0
    failed: int = 0
    # Why the run stopped early (sampling unavailable, too many failures in a row), else None.
    stopped: str | None = None


def _log_progress(done: int, total: int) -> None:
    logger.info("expanding tools with the client's model: %d/%d", done, total)


class Expander:
    """Expands tools missing from the cache through `ask`, one at a time, rate-limited.

    A failed tool is logged and skipped (it is tried again on a later run); `SamplingUnavailableError`
    or `max_consecutive_failures` failures in a row stop the run, since asking on is pointless.
    `clock` and `sleep` are injectable so the rate limit is testable without waiting.
    """

    def __init__(
        self,
        cache: ExpansionCache,
        ask: Ask,
        *,
        requests_per_minute: float = 10.0,
        request_timeout_s: float = 120.0,
        max_consecutive_failures: int = 3,
        model: str = "",
        progress: ProgressCallback | None = _log_progress,
        on_expanded: Callable[[ToolRecord, tuple[str, ...]], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        if requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        self.cache = cache
        self._ask = ask
        self._interval_s = 60.0 / requests_per_minute
        self._timeout_s = request_timeout_s
        self._max_failures = max_consecutive_failures
        self._model = model
        self._progress = progress
        self._on_expanded = on_expanded
        self._clock = clock
        self._sleep = sleep
        self._last_request: float | None = None
        # One request at a time even if the gateway starts a second run (e.g. on list_changed).
        self._one_at_a_time = anyio.Lock()

    async def _wait_for_slot(self) -> None:
        if self._last_request is not None:
            delay = self._last_request + self._interval_s - self._clock()
            if delay > 0:
                await self._sleep(delay)
        self._last_request = self._clock()

    async def _expand(self, record: ToolRecord) -> tuple[str, ...]:
        await self._wait_for_slot()
        with anyio.fail_after(self._timeout_s):
            reply = await self._ask(build_expansion_prompt(record))
        phrases = tuple(parse_expansion_reply(reply))
        if not phrases:
            # Cached anyway: the model answered, and asking it the same question again would not help.
            logger.warning("the model's reply for %s held no usable phrases", record.id)
        # The store's calls block (a Postgres round trip, SQLite's write lock): off the event loop,
        # so the gateway's sessions go on meanwhile.
        await anyio.to_thread.run_sync(lambda: self.cache.put(record, phrases, model=self._model))
        return phrases

    async def run(self, records: Sequence[ToolRecord]) -> ExpansionReport:
        """Expand every record whose current version is not in the cache yet."""
        async with self._one_at_a_time:
            report = ExpansionReport()
            try:
                missing = await anyio.to_thread.run_sync(self.cache.missing, records)
                todo = list({record.fingerprint: record for record in missing}.values())
            except StateError as exc:
                # Tried again at the next catalog change; nothing is asked meanwhile.
                logger.warning("not expanding tools now: %s", exc)
                return report
            failures_in_a_row = 0
            for done, record in enumerate(todo, start=1):
                try:
                    if await anyio.to_thread.run_sync(self.cache.get, record.fingerprint) is not None:
                        continue  # filled meanwhile, e.g. by another toolscout sharing the cache
                    phrases = await self._expand(record)
                except SamplingUnavailableError as exc:
                    report.stopped = f"sampling is not available: {exc}"
                    break
                except Exception as exc:  # noqa: BLE001 - one tool's failure must not end the others
                    logger.warning("could not expand %s: %s", record.id, exc or type(exc).__name__)
                    report.failed += 1
                    failures_in_a_row += 1
                    if failures_in_a_row >= self._max_failures:
                        report.stopped = f"{failures_in_a_row} expansion requests failed in a row"
                        break
                    continue
                failures_in_a_row = 0
                report.expanded += 1
                if self._on_expanded is not None:
                    self._on_expanded(record, phrases)
                if self._progress is not None:
                    self._progress(done, len(todo))
            if report.stopped:
                logger.warning("stopped expanding tools: %s", report.stopped)
            return report
