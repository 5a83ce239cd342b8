"""The shared tokenizer and the one function that builds each index field from a tool record.

Fields (each lexical signal indexes exactly one of them):
- name: the tool name split into words, the server name, the title, and the name's leading verb
  again (the verb says what the tool does; repeating it weighs it like a title word);
- description: the description, parameter names, their descriptions and enum values;
- expansion: user-language phrases attached to the tool (overlays, examples; empty by default);
- dense: natural prose for the embedding model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import Stemmer

from toolscout.catalog import ToolRecord

__all__ = [
    "dense_document",
    "description_document",
    "expansion_document",
    "leading_verb",
    "lexical_text",
    "name_document",
    "split_identifier",
    "tokenize",
]

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])")
# Letters and digits of any script ("météo", "東京"); underscores separate words.
_WORD = re.compile(r"[^\W_]+")
# Function words plus the filler of requests ("can you please help me find ..."): they match every
# tool description equally and only add noise. Verbs that name operations (get, list, find,
# search, create, delete, send) are kept: tool names are built from them.
_STOPWORDS = frozenset(
    """a about all also am an and any are as at be been being but by can could did do does doing
    for from had has have having he her here hers him his how i i'm if in into is it its itself
    just let me more most my myself no nor not of off on once only or other our ours out over own
    please same she should so some such than that the their theirs them then there these they this
    those through to too under until up very was we were what when where which while who whom why
    will with would you your yours yourself d ll m re s t ve want wants need needs like know help
    thank thanks""".split()
)
# Deep schemas (nested objects, arrays of objects) are walked to this depth only.
_MAX_SCHEMA_DEPTH = 3
_MAX_ENUM_VALUES = 20


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


def split_identifier(text: str) -> list[str]:
    """Words of identifiers and prose: snake_case, camelCase, kebab-case, dotted and digits apart."""
    # One substitution over the whole text: camel boundaries never span a non-word character.
    return _WORD.findall(_CAMEL.sub(" ", text))


def tokenize(text: str, *, stem: bool = False) -> list[str]:
    """Lower-cased words with identifiers split and stopwords dropped; optionally Snowball-stemmed."""
    # Whitespace never joins two words (identifier boundaries lie between letters and digits), so
    # each whitespace-separated chunk is tokenized on its own, once: a catalog repeats most of its
    # words, and indexing 100,000 tools spent most of its time splitting the same words again.
    return [token for chunk in text.split() for token in _chunk_tokens(chunk, stem)]


@lru_cache(maxsize=131072)
def _chunk_tokens(chunk: str, stem: bool) -> tuple[str, ...]:
    words = [part.lower() for part in split_identifier(chunk)]
    words = [word for word in words if word not in _STOPWORDS]
    return tuple(_stem(word) for word in words) if stem else tuple(words)


def leading_verb(name: str) -> str:
    """The first word of a tool name (`get` in get_weather, `List` in ListIssues)."""
    # Chunk by chunk (no word spans whitespace): the first word of a long description is found
    # without splitting all of it.
    for chunk in name.split():
        words = split_identifier(chunk)
        if words:
            return words[0]
    return ""


def name_document(tool: ToolRecord) -> str:
    words = " ".join(split_identifier(tool.name))
    title = tool.display_title if tool.display_title != tool.name else ""
    return " ".join(filter(None, [words, tool.server, title, leading_verb(tool.name)]))


def description_document(tool: ToolRecord) -> str:
    return " ".join(filter(None, [tool.description, *_schema_words(tool.input_schema, 0)]))


def expansion_document(tool: ToolRecord) -> str:
    return " ".join(tool.expansion)


def dense_document(tool: ToolRecord) -> str:
    """Prose the way a person would describe the tool; the model reads sentences, not field dumps."""
    name = " ".join(split_identifier(tool.name))
    parts = [f"{name} ({tool.server})."]
    if tool.title and tool.title != tool.name:
        parts.append(f"{tool.title}.")
    if tool.description:
        parts.append(tool.description.strip())
    params = [_param_phrase(key, spec) for key, spec in _properties(tool.input_schema)]
    if params:
        parts.append("Parameters: " + "; ".join(params) + ".")
    return " ".join(parts)


def lexical_text(tool: ToolRecord) -> str:
    """Everything a keyword model may match on, for signals that index one document per tool."""
    return " ".join(
        filter(None, [name_document(tool), description_document(tool), expansion_document(tool)])
    )


def _properties(schema: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, spec in properties.items():
                yield str(key), spec if isinstance(spec, Mapping) else {}


def _param_phrase(key: str, spec: Mapping[str, Any]) -> str:
    words = " ".join(split_identifier(key))
    description = spec.get("description")
    return f"{words} ({description.strip()})" if isinstance(description, str) else words


def _schema_words(schema: Any, depth: int) -> Iterator[str]:
    if depth >= _MAX_SCHEMA_DEPTH:
        return
    for key, spec in _properties(schema):
        yield key
        if isinstance(spec.get("description"), str):
            yield spec["description"]
        enum = spec.get("enum")
        if isinstance(enum, list):
            yield " ".join(str(value) for value in enum[:_MAX_ENUM_VALUES])
        yield from _schema_words(spec, depth + 1)
        yield from _schema_words(spec.get("items"), depth + 1)
