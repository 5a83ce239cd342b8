"""Poisoning scan: hidden instructions in a tool's description, titles and schema texts.

A model reads every word of a tool definition; a person approving a server rarely does. Tool
poisoning hides orders in that text (read ~/.ssh and pass it as an argument, tell nobody, change
what another tool sends), often behind invisible Unicode or blank space. The scan collects every
piece of text in a definition, looks for hiding techniques (`toolscout.security.hidden`) and
weighted phrase rules (`toolscout.security.rules`), and flags a tool when the weights of the
distinct rules it triggers reach `THRESHOLD`.

    findings = scan_tool(record)      # [] when the tool is not flagged
    if findings: print(summarize(findings))

Pure functions over a ToolRecord: no MCP, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from toolscout.catalog import ToolRecord
from toolscout.security.hidden import hidden_signals, printable_excerpt, revealed_texts, visible_form
from toolscout.security.rules import DIRECTIVE, INGREDIENTS, PHRASE_RULES

__all__ = [
    "THRESHOLD", "Assessment", "Finding", "assess_tool", "scan_tool", "summarize", "text_sentences", "tool_texts",
    "with_findings",
]

THRESHOLD = 1.0

# Hiding techniques and how much each weighs. Invisible Unicode that smuggles text, terminal
# escapes and bidi overrides have no honest use in a tool description; blank space and comments do
# occasionally, so they only count together with something else.
_SIGNAL_WEIGHTS = {
    "tag-characters": 2.0,
    "zero-width": 1.0,
    "bidi-control": 1.0,
    "ansi-escape": 1.0,
    "control-character": 0.5,
    "whitespace-gap": 0.6,
    "html-comment": 0.6,
    "hidden-markup": 0.8,
    "base64-text": 0.5,
    "mixed-script": 0.5,
    "variation-selectors": 1.0,
    "oversized-text": 0.6,
}
# Rules are linear but not free: text beyond this (head and tail kept) is not read. No honest tool
# needs tens of thousands of characters to describe itself, so the excess is a finding of its own.
MAX_SCANNED_CHARS = 20_000
_TAIL_CHARS = 4_000
MAX_TEXTS = 2_000  # pieces of text per tool (description, titles, every schema string)
# Every string of a schema is read, whatever its key: descriptions and titles, and also defaults,
# enums, examples and constants (which clients show the model as they are), formats and patterns,
# vendor keys such as "x-instructions" that some clients pass on verbatim, and nested schemas under
# properties, items, anyOf/oneOf/allOf, $defs and additionalProperties. Under these keys the keys
# of a mapping are names (read as names); under _DATA_KEYS a value is data, not a schema, so its
# mapping keys are read as text too ("default": {"Ignore all previous instructions": 1}).
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_DATA_KEYS = frozenset({"default", "examples", "example", "const", "enum"})
_MAX_DEPTH = 32
_CACHE: dict[str, Assessment] = {}
_CACHE_SIZE = 50_000
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|\n")


@dataclass(frozen=True)
class Finding:
    """One reason a tool looks poisoned."""

    rule: str
    reason: str
    where: str  # "description", "title", or a path such as "input_schema.properties.note.description"
    # or "output_schema.properties.result.description"
    excerpt: str  # printable: invisible characters shown as escapes
    weight: float


@dataclass(frozen=True)
class Assessment:
    """Everything the scan found in one tool, flagged or not (for reports and tuning)."""

    score: float
    findings: tuple[Finding, ...]

    @property
    def flagged(self) -> bool:
        return self.score >= THRESHOLD


def _schema_texts(node: Any, path: str, depth: int = 0, named: bool = False) -> Iterator[tuple[str, str]]:
    """Every string in a schema; `named`: the keys of `node` are property names, not keywords."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, Mapping):
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            # Parameter names are read by the model too; "send_keys_here" is a sentence in disguise.
            for name in properties:
                if isinstance(name, str):
                    yield f"{path}.properties.{name} (name)", _CAMEL.sub(" ", name).replace("_", " ")
        for key, value in node.items():
            if not named and key in _DATA_KEYS:
                yield from _data_texts(value, f"{path}.{key}", depth + 1)
            else:
                yield from _schema_texts(value, f"{path}.{key}", depth + 1, key in _NAME_MAPS and not named)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _schema_texts(item, f"{path}[{index}]", depth + 1)
    elif isinstance(node, str) and node.strip():
        yield path, node


def _data_texts(node: Any, path: str, depth: int) -> Iterator[tuple[str, str]]:
    """Every string in a value a schema carries (a default, an example): mapping keys included."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, Mapping):
        # Entries by position: a key may be the payload, and `where` reaches the agent in reasons.
        for index, (key, value) in enumerate(node.items()):
            if isinstance(key, str) and key.strip():
                yield f"{path}[{index}] (key)", key
            yield from _data_texts(value, f"{path}[{index}]", depth + 1)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _data_texts(item, f"{path}[{index}]", depth + 1)
    elif isinstance(node, str) and node.strip():
        yield path, node


def tool_texts(record: ToolRecord) -> Iterator[tuple[str, str]]:
    """(where, text) for every piece of text of a tool definition that a model reads."""
    yield "name", _CAMEL.sub(" ", record.name).replace("_", " ")
    if record.description:
        yield "description", record.description
    if record.title:
        yield "title", record.title
    if record.annotations and isinstance(record.annotations.get("title"), str):
        yield "annotations.title", record.annotations["title"]
    yield from _schema_texts(record.input_schema, "input_schema")
    # Clients show the output schema to the model too (search_tools returns it with each tool).
    if record.output_schema:
        yield from _schema_texts(record.output_schema, "output_schema")


def text_sentences(text: str) -> list[str]:
    """The sentences of `text` as the rules read them (visible form, one per item)."""
    return [s for s in _SENTENCE_BREAK.split(visible_form(text)) if s.strip()]


def _windows(sentences: list[str]) -> list[str]:
    """Each sentence, then each pair of neighbours: an order split in two ("Read X. Then put it in
    the note argument.") still has both halves in one window."""
    return sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:])]


def _phrase_findings(text: str, where: str) -> Iterator[Finding]:
    sentences = text_sentences(text)
    paired = _windows(sentences)
    lines = "\n".join(sentences)
    in_parameter = where.startswith("input_schema")
    for rule in PHRASE_RULES:
        if rule.parameters_only and not in_parameter:
            continue
        if len(rule.patterns) == 1:
            # One search over all sentences at once, one per line: no pattern crosses a newline.
            match = rule.patterns[0].search(lines)
            if match:
                start = lines.rfind("\n", 0, match.start()) + 1
                end = lines.find("\n", match.end())
                sentence = lines[start : len(lines) if end < 0 else end]
                excerpt = printable_excerpt(sentence, match.start() - start, match.end() - start)
                yield Finding(rule.id, rule.reason, where, excerpt, rule.weight)
            continue
        for sentence in paired if rule.spans_sentences else sentences:
            first = rule.patterns[0].search(sentence)
            if first and all(p.search(sentence) for p in rule.patterns[1:]):
                excerpt = printable_excerpt(sentence, *first.span())
                yield Finding(rule.id, rule.reason, where, excerpt, rule.weight)
                break


def _combination_findings(text: str, where: str) -> Iterator[Finding]:
    """A directive sentence mixing several ingredients of an attack, whatever its wording."""
    best: tuple[int, str, list[str]] | None = None
    for sentence in _windows(text_sentences(text)):
        if not DIRECTIVE.search(sentence):
            continue
        present = [name for name, patterns in INGREDIENTS.items() if any(p.search(sentence) for p in patterns)]
        # Secrets moving into an argument are weighed by their own phrase rules; as a pair they
        # add nothing here, or an honest "pass the API key in the key parameter" would tip over.
        if present == ["sensitive data", "moving it out"]:
            continue
        if len(present) >= 2 and (best is None or len(present) > best[0]):
            best = (len(present), sentence, present)
    if best is not None:
        count, sentence, present = best
        weight = 1.0 if count >= 3 else 0.4
        excerpt = printable_excerpt(sentence, 0, min(len(sentence), 120), context=0)
        yield Finding(f"directive-combination-{min(count, 3)}", "order combining " + ", ".join(present),
                      where, excerpt, weight)


def _text_findings(where: str, text: str) -> Iterator[Finding]:
    if len(text) > MAX_SCANNED_CHARS:
        yield Finding("oversized-text", f"text of {len(text)} characters, only its start and end scanned",
                      where, printable_excerpt(text, 0, 80, context=0), _SIGNAL_WEIGHTS["oversized-text"])
        text = text[: MAX_SCANNED_CHARS - _TAIL_CHARS] + "\n" + text[-_TAIL_CHARS:]
    for signal in hidden_signals(text):
        excerpt = printable_excerpt(text, signal.start, signal.end)
        yield Finding(signal.kind, signal.reason, where, excerpt, _SIGNAL_WEIGHTS[signal.kind])
    yield from _phrase_findings(text, where)
    yield from _combination_findings(text, where)
    for technique, payload in revealed_texts(text):
        yield from _phrase_findings(payload, f"{where} (hidden in {technique})")
        yield from _combination_findings(payload, f"{where} (hidden in {technique})")


def assess_tool(record: ToolRecord) -> Assessment:
    """Score a tool: the sum over distinct rules of the heaviest finding of each.

    Results are remembered by definition (a few ms per tool adds up over thousands of tools that
    are re-listed on every catalog change); the server name plays no part in the result.
    """
    key = record.fingerprint  # covers every text scanned (name, titles, description, both schemas)
    cached = _CACHE.get(key)
    if cached is None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        cached = _CACHE[key] = _assess(record)
    return cached


def with_findings(assessment: Assessment, extra: tuple[Finding, ...]) -> Assessment:
    """`assessment` with findings of another reader (the learned one) weighed in the same way."""
    return _weighed([*assessment.findings, *extra]) if extra else assessment


def _assess(record: ToolRecord) -> Assessment:
    texts = list(islice(tool_texts(record), MAX_TEXTS + 1))
    findings = [f for where, text in texts[:MAX_TEXTS] for f in _text_findings(where, text)]
    if len(texts) > MAX_TEXTS:
        findings.append(Finding("oversized-text", f"more than {MAX_TEXTS} texts in the definition, the rest not scanned",
                                "input_schema", "", _SIGNAL_WEIGHTS["oversized-text"]))
    return _weighed(findings)


def _weighed(findings: list[Finding]) -> Assessment:
    heaviest: dict[str, float] = {}
    for finding in findings:
        heaviest[finding.rule] = max(heaviest.get(finding.rule, 0.0), finding.weight)
    ordered = sorted(findings, key=lambda f: (-f.weight, f.rule, f.where))
    return Assessment(round(sum(heaviest.values()), 3), tuple(ordered))


def scan_tool(record: ToolRecord) -> list[Finding]:
    """The findings that make `record` look poisoned, heaviest first; [] when it is not flagged."""
    assessment = assess_tool(record)
    return list(assessment.findings) if assessment.flagged else []


def summarize(findings: list[Finding] | tuple[Finding, ...], limit: int = 3) -> str:
    """One line for `toolscout tools --flagged` and logs: the heaviest distinct reasons and where."""
    seen: dict[str, Finding] = {}
    for finding in findings:
        seen.setdefault(finding.rule, finding)
    parts = [f"{f.reason} ({f.where})" for f in list(seen.values())[:limit]]
    more = len(seen) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
