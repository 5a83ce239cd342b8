"""Text a person does not see but a model reads: invisible Unicode, terminal escapes, markup.

Two jobs, both pure functions over one string:

- `hidden_signals(text)` reports each hiding technique present (tag characters, zero-width runs,
  bidirectional overrides, ANSI escapes, whitespace gaps, HTML comments, hidden markup, base64).
- `visible_form(text)` is what phrase rules match against: NFKC-normalised, invisible characters
  removed, common Cyrillic/Greek look-alikes folded to Latin. `revealed_texts(text)` returns the
  payloads a hiding technique carried (decoded tag characters, base64) so they are scanned too.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass

from toolscout.printable import BIDI_CONTROLS, ZERO_WIDTH, terminal_safe

__all__ = [
    "Signal",
    "decode_tags",
    "hidden_signals",
    "printable_excerpt",
    "revealed_texts",
    "terminal_safe",
    "visible_form",
]

# Unicode tag characters mirror ASCII (U+E0020..U+E007E); models read them, screens show nothing.
_TAG_RANGE = (0xE0000, 0xE007F)
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
# Variation selectors carry data when strung after one character ("emoji smuggling"); an honest
# emoji takes at most one.
_VARIATION_RUN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{3,}")
_ZW_RUN = re.compile(f"[{ZERO_WIDTH}]{{2,}}")
# A zero-width character between two Latin letters splits a word so that filters miss it;
# Persian and emoji use ZWNJ/ZWJ between non-Latin characters, which stays unflagged.
_ZW_IN_LATIN = re.compile(f"(?<=[A-Za-z])[{ZERO_WIDTH}](?=[A-Za-z])")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x9b[0-9;?]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Enough blank space that the rest scrolls out of a confirmation dialog or tooltip.
_WHITESPACE_GAP = re.compile(r"\S(?:[ \t\u00a0]{40,}|(?:[ \t]*\n){8,})\s*\S")
_HTML_COMMENT = re.compile(r"<!--(.*?)-->", re.S)
_HIDDEN_MARKUP = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?![.\d])"
    r"|^\s*\[(?://|comment)\]\s*:\s*#",
    re.I | re.M,
)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/])")

# Look-alike letters used to dodge keyword filters ("іgnore" with a Cyrillic і).
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁɡһԛԝАВЕКМНОРСТХІЈЅοαειντρκΑΒΕΖΗΙΚΜΝΟΡΤΧ",
    "aeopcyxijsdghqwABEKMHOPCTXIJSoaeivtpkABEZHIKMNOPTX",
)
_LATIN_WORD_WITH_LOOKALIKE = re.compile(r"\b(?=\w*[a-zA-Z])(?=\w*[а-яіјѕԁһԛԝα-ω])\w+\b")


_LEET = str.maketrans("013457", "oieast")
_LEET_WORD = re.compile(r"(?<![\w.@])(?=[\w']*[a-zA-Z])(?=[\w']*[013457])[\w']{3,}(?![\w.@])")


@dataclass(frozen=True)
class Signal:
    """One hiding technique found in a text."""

    kind: str
    reason: str
    start: int
    end: int


def _is_tag(char: str) -> bool:
    return _TAG_RANGE[0] <= ord(char) <= _TAG_RANGE[1]


def decode_tags(text: str) -> str:
    """The ASCII message carried by tag characters (empty when there are none)."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if _is_tag(c) and 0x20 <= ord(c) - 0xE0000 < 0x7F)


def _decoded_base64(blob: str) -> str | None:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    printable = sum(ch.isprintable() for ch in decoded)
    # Words with spaces, not an opaque key or hash that happens to be valid base64.
    if decoded and printable / len(decoded) > 0.95 and decoded.count(" ") >= 3:
        return decoded
    return None


def _first_span(pattern: re.Pattern[str], text: str) -> tuple[int, int] | None:
    match = pattern.search(text)
    return match.span() if match else None


def hidden_signals(text: str) -> list[Signal]:
    """Every hiding technique present in `text`, at most one signal per kind."""
    signals: list[Signal] = []

    def add(kind: str, reason: str, span: tuple[int, int] | None) -> None:
        if span is not None:
            signals.append(Signal(kind, reason, span[0], span[1]))

    tag_positions = [i for i, c in enumerate(text) if _is_tag(c)] if _TAG_RUN.search(text) else []
    if tag_positions:
        add("tag-characters", f"{len(tag_positions)} invisible Unicode tag characters",
            (tag_positions[0], tag_positions[-1] + 1))
    span = _first_span(_ZW_RUN, text)
    interleaved = _ZW_IN_LATIN.findall(text)
    if span is None and len(interleaved) >= 3:
        span = _first_span(_ZW_IN_LATIN, text)
    add("zero-width", "run of zero-width characters", span)
    add("bidi-control", "bidirectional override characters", _first_span(re.compile(f"[{BIDI_CONTROLS}]"), text))
    add("variation-selectors", "run of variation selectors carrying hidden data", _first_span(_VARIATION_RUN, text))
    add("ansi-escape", "terminal escape sequence", _first_span(_ANSI, text))
    if not any(s.kind == "ansi-escape" for s in signals):
        add("control-character", "non-printing control character", _first_span(_CONTROL, text))
    add("whitespace-gap", "long run of blank space pushing text out of view",
        _first_span(_WHITESPACE_GAP, text))
    for match in _HTML_COMMENT.finditer(text):
        if len(match.group(1).strip()) >= 10:
            add("html-comment", "HTML comment carrying text", match.span())
            break
    add("hidden-markup", "markup that hides text from display", _first_span(_HIDDEN_MARKUP, text))
    for match in _BASE64.finditer(text):
        if _decoded_base64(match.group()) is not None:
            add("base64-text", "base64-encoded text", match.span())
            break
    mixed = _LATIN_WORD_WITH_LOOKALIKE.search(text)
    if mixed:
        add("mixed-script", "word mixing Latin and look-alike letters", mixed.span())
    return signals


def revealed_texts(text: str) -> list[tuple[str, str]]:
    """(technique, payload) for content a hiding technique carried, to be scanned like plain text."""
    found: list[tuple[str, str]] = []
    tags = decode_tags(text)
    if tags.strip():
        found.append(("tag characters", tags))
    for match in _BASE64.finditer(text):
        decoded = _decoded_base64(match.group())
        if decoded is not None:
            found.append(("base64", decoded))
    return found


def visible_form(text: str) -> str:
    """`text` as phrase rules read it: escapes and invisible characters gone, look-alikes folded."""
    text = _ANSI.sub(" ", text)
    text = _TAG_RUN.sub("", text)
    text = _VARIATION_RUN.sub("", re.sub(f"[{ZERO_WIDTH}{BIDI_CONTROLS}\u200e\u200f\u00ad]", "", text))
    text = unicodedata.normalize("NFKC", text)
    # Fold look-alikes only inside words that mix them with Latin letters (the evasion trick);
    # words written wholly in Cyrillic or Greek stay as they are, so rules in those languages match.
    text = _LATIN_WORD_WITH_LOOKALIKE.sub(lambda m: m.group().translate(_CONFUSABLES), text)
    # Same for digits standing in for letters ("1gn0r3"), only in words that also have letters.
    text = _LEET_WORD.sub(lambda m: m.group().translate(_LEET), text)
    return re.sub(r"[ \t\u00a0]+", " ", text)


def printable_excerpt(text: str, start: int, end: int, context: int = 60) -> str:
    """A short excerpt around [start, end) with every invisible character shown as an escape."""
    lo, hi = max(0, start - context), min(len(text), end + context)
    piece = _TAG_RUN.sub(lambda m: f"[tag characters: {decode_tags(m.group())[:80]!r}]", text[lo:hi])
    piece = _ZW_RUN.sub(lambda m: f"[{len(m.group())} zero-width characters]", piece)
    piece = _VARIATION_RUN.sub(lambda m: f"[{len(m.group())} variation selectors]", piece)
    shown = []
    for char in piece:
        if char in "\n\t":
            shown.append(" ")
        elif char in ZERO_WIDTH or char in BIDI_CONTROLS or not char.isprintable():
            shown.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
        else:
            shown.append(char)
    excerpt = re.sub(r" {3,}", " ... ", "".join(shown)).strip()
    return ("..." if lo > 0 else "") + excerpt + ("..." if hi < len(text) else "")
