"""The shared tokenizer and the text each index field is built from."""

from __future__ import annotations

import re

from toolscout.catalog import ToolRecord

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+")
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have i in is it its me my of on or our please that the "
    "this to was were will with you your can could would should".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased words, identifiers split on snake_case/camelCase/kebab, stopwords dropped."""
    words = []
    for raw in _WORD.findall(text):
        for part in _CAMEL.sub(" ", raw).split():
            word = part.lower()
            if word not in _STOPWORDS:
                words.append(word)
    return words


def tool_document(tool: ToolRecord) -> str:
    """Name, server, title and description in one document."""
    return " ".join(filter(None, [tool.name, tool.server, tool.title, tool.description]))
