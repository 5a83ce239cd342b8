"""What indexing derives from a catalog alone, built once per content and read back after.

Indexing a 100,000-tool catalog spends most of its time in per-tool Python: tokenizing three
fields, building their BM25 indexes, the dense documents, the destructive and exact-name tables.
None of it depends on anything but the tools, the settings that shape it and the code that derives
it, so it is kept in the content store (`toolscout.state.fits`, kind "catalog": the machine's own
cache, or Postgres shared by replicas), in two parts, each under a key hashing exactly its inputs:

- the base part: everything that never reads a tool's `expansion` field (the name and description
  BM25 indexes, the dense documents, the destructive, exact-name and name-word tables, and the
  name and description tokens the TF-IDF documents repeat), keyed by every other field of every
  tool in catalog order;
- the expansion part: what the learned phrases feed (the expansion BM25 index and the key of the
  TF-IDF fit, whose documents join all three fields, and, where any tool has phrases, the key of a
  second fit without them, which requests no past request is close to are scored with), keyed by
  the base key and every tool's `expansion`.

Learning from use changes only `expansion`, so a re-index after learning reads the base part back
and builds only the expansion part. Both keys also hash the settings, the versions of bm25s and
PyStemmer, and the source of the modules that derive them (an edited tokenizer never meets an index
it did not build). A restart over a known catalog, or a second replica, reads both back; a part
that is missing, damaged, or built for another key is built afresh, and a read or write the store
refuses costs a build, never an answer.

Kept as zip archives of plain data, never pickles (a shared store's row is not trusted code): each
BM25 index in bm25s's own saved form (`BM25Retriever.save`), tokens as text, the per-tool tables
as JSON, and the key of the TF-IDF fit, which is kept in its own table
(`toolscout.index.tfidf`) and read back by it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Any

from toolscout.catalog import ToolRecord
from toolscout.index.base import Retriever
from toolscout.index.bm25 import BM25Retriever
from toolscout.index.text import dense_document, description_document, expansion_document, name_document, tokenize
from toolscout.index.tfidf import FitStore, TfidfRetriever
from toolscout.search.destructive import is_destructive
from toolscout.search.settings import SearchSettings

__all__ = ["BM25_FIELDS", "IDENTIFIER", "CatalogIndex", "CatalogKeys", "catalog_index", "catalog_keys"]

logger = logging.getLogger(__name__)

# Bump when what is kept or how it is laid out changes (the modules' source is hashed as well).
# 2: kept in two parts (base, expansion); an archive of format 1 is simply never found.
_FORMAT = 3
# The TF-IDF fit over the name and description alone, kept beside the one with the phrases (see
# `toolscout.search.pipeline`, where the two become the one tfidf signal).
TFIDF_WITHOUT_PHRASES = "tfidf_without_phrases"
_TFIDF_FITS = ("tfidf", TFIDF_WITHOUT_PHRASES)
# Each BM25 signal and the document of a tool it indexes.
BM25_FIELDS: Mapping[str, Callable[[ToolRecord], str]] = {
    "bm25_name": name_document,
    "bm25_description": description_document,
    "bm25_expansion": expansion_document,
}
# The fields of the base part's tokens, in the order the TF-IDF documents join them.
_BASE_FIELDS = ("bm25_name", "bm25_description")
# The modules whose code decides what is derived: any edit to them gives every catalog a new key.
_DERIVING_MODULES = (
    "toolscout.index.text",
    "toolscout.index.bm25",
    "toolscout.index.tfidf",
    "toolscout.search.destructive",
    __name__,
)
# The only files a kept BM25 index may hold (bm25s's names); nothing else is ever written out.
_BM25_FILES = (
    "params.index.json",
    "vocab.index.json",
    "data.csc.index.npy",
    "indices.csc.index.npy",
    "indptr.csc.index.npy",
)
# The base part's tokens: one line per document (each field's documents in turn), its tokens
# separated by spaces (a token never holds whitespace: `tokenize` splits on it).
_TOKENS = "tokens.txt"
# Words of a query that may be a tool id or identifier-like name ("semgrep_scan", "srv__get-x").
IDENTIFIER = re.compile(r"[\w][\w\-.:/]*[\w]")


@dataclass(frozen=True)
class CatalogIndex:
    """Everything the engine derives from the tools alone, position by position."""

    retrievers: Mapping[str, Retriever]
    dense_texts: tuple[str, ...]
    # Per tool: deletes, resets or overwrites something (toolscout.search.destructive).
    destructive: tuple[bool, ...]
    # Per tool: the stemmed words of its name (the learned ranker counts those a request shares).
    name_words: tuple[frozenset[str], ...]
    # Lower-cased exact forms (ids, names) -> tool positions, and the identifier-like subset that
    # may also match inside a longer query.
    exact: Mapping[str, tuple[int, ...]]
    contained: Mapping[str, tuple[int, ...]]
    # The parts read back from the store rather than built here ("base", "expansion").
    read_back: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CatalogKeys:
    """What each kept part must have been built from (see the module's docstring)."""

    base: str
    expansion: str


@dataclass(frozen=True)
class _Base:
    """The base part: the index without what the expansion field feeds."""

    index: CatalogIndex
    # The name and description tokens per tool (by field), decoded only when the TF-IDF documents
    # are built; empty when TF-IDF is off.
    tokens: Callable[[], Mapping[str, list[list[str]]]]


def catalog_index(
    tools: Sequence[ToolRecord],
    settings: SearchSettings,
    *,
    dense: bool,
    indexes: FitStore | None = None,
    fits: FitStore | None = None,
) -> CatalogIndex:
    """The catalog index of `tools`: each part read back from `indexes` (with the TF-IDF fit from
    `fits`) when one was kept for exactly its inputs; else built, and kept there."""
    keys = catalog_keys(tools, settings, dense=dense) if indexes is not None else None
    base_key, expansion_key = (keys.base, keys.expansion) if keys is not None else (None, None)
    read_back = set()
    base = _read_part(indexes, base_key, _read_base, len(tools), dense=dense, tokens=settings.enabled("tfidf"))
    if base is None:
        built = base = _build_base(tools, settings, dense=dense)
        _keep(indexes, base_key, lambda key: _pack_base(key, built))
    else:
        read_back.add("base")
    # Only now is a new expansion part written: the base part, just read (or written), is then
    # among the most recently used, which the store keeps.
    expansion = _read_part(indexes, expansion_key, _read_expansion, len(tools), fits=fits)
    if expansion is None:
        fitted = expansion = _build_expansion(tools, settings, base.tokens, fits=fits)
        _keep(indexes, expansion_key, lambda key: _pack(key, len(tools), fitted))
    else:
        read_back.add("expansion")
    both = {**base.index.retrievers, **expansion}
    # The signals in one order however each was obtained: fusion adds their scores in this order.
    retrievers = {name: both[name] for name in (*BM25_FIELDS, *_TFIDF_FITS) if name in both}
    return replace(base.index, retrievers=retrievers, read_back=frozenset(read_back))


def catalog_keys(tools: Sequence[ToolRecord], settings: SearchSettings, *, dense: bool) -> CatalogKeys | None:
    """The keys of a catalog's kept parts; None when the deriving code cannot be read (then nothing
    is kept: an index of unknown code is never trusted)."""
    code = _code()
    if code is None:
        return None
    names = [f.name for f in fields(ToolRecord) if f.name != "expansion"]
    # Catalog order and each mapping's own order: both shape the documents (and so the index).
    rows = list(map(attrgetter(*names), tools))
    context = [_FORMAT, code, _shape(settings, dense)]
    base = _digest([*context, "base", names, rows])
    # The TF-IDF documents join the base fields' tokens, so this part depends on the base too.
    return CatalogKeys(base, _digest([*context, "expansion", base, [tool.expansion for tool in tools]]))


def _digest(inputs: list[Any]) -> str:
    text = json.dumps(inputs, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _shape(settings: SearchSettings, dense: bool) -> dict[str, Any]:
    """The settings that change what is derived."""
    return {
        "stem": settings.stem,
        "signals": sorted(name for name in [*BM25_FIELDS, "tfidf"] if settings.enabled(name)),
        "dense": dense,
    }


@lru_cache(maxsize=1)
def _code() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    try:
        for name in _DERIVING_MODULES:
            digest.update(Path(sys.modules[name].__file__ or "").read_bytes())
        for package in ("bm25s", "PyStemmer"):
            digest.update(version(package).encode("ascii"))
    except (OSError, KeyError, PackageNotFoundError) as exc:
        logger.info("catalog indexes are not kept: the code that derives them is unknown (%s)", exc)
        return None
    return digest.hexdigest()


def _build_base(tools: Sequence[ToolRecord], settings: SearchSettings, *, dense: bool) -> _Base:
    retrievers: dict[str, Retriever] = {}
    tokens: dict[str, list[list[str]]] = {}
    for signal in _BASE_FIELDS:
        if settings.enabled(signal) or settings.enabled("tfidf"):
            documents = [tokenize(BM25_FIELDS[signal](t), stem=settings.stem) for t in tools]
            if settings.enabled("tfidf"):
                tokens[signal] = documents
            if settings.enabled(signal):
                retrievers[signal] = BM25Retriever(documents)
    exact, contained = _exact_forms(tools)
    index = CatalogIndex(
        retrievers=retrievers,
        dense_texts=tuple(dense_document(t) for t in tools) if dense else (),
        destructive=tuple(is_destructive(t) for t in tools),
        name_words=tuple(frozenset(tokenize(t.name, stem=settings.stem)) for t in tools),
        exact=exact,
        contained=contained,
    )
    return _Base(index, lambda: tokens)


def _build_expansion(
    tools: Sequence[ToolRecord],
    settings: SearchSettings,
    base_tokens: Callable[[], Mapping[str, list[list[str]]]],
    *,
    fits: FitStore | None,
) -> dict[str, Retriever]:
    retrievers: dict[str, Retriever] = {}
    if not (settings.enabled("bm25_expansion") or settings.enabled("tfidf")):
        return retrievers
    phrases = [tokenize(expansion_document(t), stem=settings.stem) for t in tools]
    if settings.enabled("bm25_expansion"):
        retrievers["bm25_expansion"] = BM25Retriever(phrases)
    if settings.enabled("tfidf"):
        # The name field counts twice, like a title: a word in the tool's name says more about
        # it than the same word deep in a parameter description (toollens_train, both halves:
        # Full Recall@10 +0.002 / +0.006, MRR@10 +0.006 / +0.003).
        tokens = base_tokens()
        names, descriptions = tokens["bm25_name"], tokens["bm25_description"]
        plain = [[*names[i], *names[i], *descriptions[i]] for i in range(len(tools))]
        retrievers["tfidf"] = TfidfRetriever([[*doc, *words] for doc, words in zip(plain, phrases)], store=fits)
        if any(phrases):
            retrievers[TFIDF_WITHOUT_PHRASES] = TfidfRetriever(plain, store=fits)
    return retrievers


def _exact_forms(tools: Sequence[ToolRecord]) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    exact: dict[str, list[int]] = {}
    contained: dict[str, list[int]] = {}
    for position, tool in enumerate(tools):
        for form in {tool.id.lower(), tool.name.lower()}:
            exact.setdefault(form, []).append(position)
        for raw in {tool.id, tool.name}:
            # Only identifier-like names are distinctive enough to match inside a sentence:
            # a tool called "search" must not jump first for every query that says "search".
            if IDENTIFIER.fullmatch(raw) and (re.search(r"[_\-.:/]", raw) or re.search(r"[a-z][A-Z]", raw)):
                contained.setdefault(raw.lower(), []).append(position)
    return {k: tuple(v) for k, v in exact.items()}, {k: tuple(v) for k, v in contained.items()}


def _keep(indexes: FitStore | None, key: str | None, pack: Callable[[str], bytes | None]) -> None:
    if indexes is None or key is None:
        return
    try:
        packed = pack(key)
    except Exception as exc:  # noqa: BLE001 - not keeping it costs the next start a build, nothing else
        logger.warning("the catalog index is not kept (%s)", exc)
        return
    if packed is not None:
        indexes.write(key, packed)


def _pack_base(key: str, base: _Base) -> bytes | None:
    index = base.index
    tables: dict[str, Any] = {
        "dense_texts": index.dense_texts,
        "destructive": index.destructive,
        "name_words": [sorted(words) for words in index.name_words],
        "exact": index.exact,
        "contained": index.contained,
    }
    tokens = base.tokens()  # empty when TF-IDF is off
    text = "\n".join(" ".join(document) for signal in _BASE_FIELDS for document in tokens[signal]) if tokens else None
    return _pack(key, len(index.destructive), index.retrievers, tables, text)


def _pack(
    key: str,
    size: int,
    retrievers: Mapping[str, Retriever],
    tables: Mapping[str, Any] | None = None,
    tokens: str | None = None,
) -> bytes | None:
    """The archive kept for `key`; None when it cannot be kept whole (its TF-IDF fit was not)."""
    fits = {name: r for name, r in retrievers.items() if isinstance(r, TfidfRetriever)}
    if any(not r.fit_key and not r.empty for r in fits.values()):
        return None  # fitted but not kept (no fit store): it could not be read back
    meta = {
        "key": key,
        "size": size,
        "bm25": {name: not r.empty for name, r in retrievers.items() if isinstance(r, BM25Retriever)},
        "tfidf": {name: r.fit_key for name, r in fits.items()},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive, tempfile.TemporaryDirectory() as folder:
        archive.writestr("meta.json", json.dumps(meta))
        archive.writestr("tables.json", json.dumps(tables or {}, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if tokens is not None:
            # Fast compression: at 100,000 tools, 24 MB of words become 7 MB in a quarter second.
            data = tokens.encode("utf-8", "surrogatepass")
            archive.writestr(_TOKENS, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
        for name, retriever in retrievers.items():
            if isinstance(retriever, BM25Retriever) and not retriever.empty:
                retriever.save(Path(folder) / name)
                for file in _BM25_FILES:
                    archive.write(Path(folder) / name / file, f"{name}/{file}")
    return buffer.getvalue()


def _read_part(indexes: FitStore | None, key: str | None, read: Callable[..., Any], size: int, **options: Any) -> Any:
    """The part kept under `key`, by `read`; None when there is none, or it cannot be used."""
    if indexes is None or key is None:
        return None
    kept = indexes.read(key)
    if kept is None:
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(kept)) as archive:
            part = read(key, archive, size, **options)
    except Exception as exc:  # noqa: BLE001 - a damaged part costs one build, nothing else
        logger.info("kept catalog index part %s unusable (%s); building it again", key[:12], exc)
        return None
    if part is not None:
        logger.info("catalog index part of %d tools read back from %s", size, _where(indexes))
    return part


def _read_base(key: str, archive: zipfile.ZipFile, size: int, *, dense: bool, tokens: bool) -> _Base | None:
    retrievers = _read_retrievers(key, archive, size, signals=_BASE_FIELDS, fits=None)
    if retrievers is None:
        return None
    tables = json.loads(archive.read("tables.json").decode("utf-8", "surrogatepass"))
    dense_texts = tuple(tables["dense_texts"])
    destructive = tuple(tables["destructive"])
    name_words = tuple(frozenset(words) for words in tables["name_words"])
    exact = _positions(tables["exact"], size)
    contained = _positions(tables["contained"], size)
    if (
        len(dense_texts) != (size if dense else 0)
        or not all(isinstance(text, str) for text in dense_texts)
        or len(destructive) != size
        or not all(isinstance(flag, bool) for flag in destructive)
        or len(name_words) != size
        or not all(isinstance(word, str) for words in name_words for word in words)
        or tokens != (_TOKENS in archive.namelist())
    ):
        return None
    index = CatalogIndex(retrievers, dense_texts, destructive, name_words, exact, contained)
    return _Base(index, _read_tokens(archive, size) if tokens else dict)


def _read_tokens(archive: zipfile.ZipFile, size: int) -> Callable[[], dict[str, list[list[str]]]]:
    """The base part's tokens, checked now and split into words at the first call."""
    text = archive.read(_TOKENS).decode("utf-8", "surrogatepass")
    lines = text.split("\n") if size else []
    if len(lines) != len(_BASE_FIELDS) * size:
        raise ValueError("tokens that do not fit the catalog")

    def documents() -> dict[str, list[list[str]]]:
        return {signal: [line.split() for line in lines[n * size : (n + 1) * size]] for n, signal in enumerate(_BASE_FIELDS)}

    return documents


def _read_expansion(key: str, archive: zipfile.ZipFile, size: int, *, fits: FitStore | None) -> dict[str, Retriever] | None:
    return _read_retrievers(key, archive, size, signals=("bm25_expansion", *_TFIDF_FITS), fits=fits)


def _read_retrievers(
    key: str, archive: zipfile.ZipFile, size: int, *, signals: Sequence[str], fits: FitStore | None
) -> dict[str, Retriever] | None:
    """The retrievers (of `signals` only) of an archive kept for `key` and `size` tools; None when
    it was kept for another, or its TF-IDF fit is gone (or damaged)."""
    meta = json.loads(archive.read("meta.json"))
    if meta["key"] != key or meta["size"] != size:
        return None
    retrievers: dict[str, Retriever] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, indexed in meta["bm25"].items():
            if name not in signals:
                return None
            saved = None
            if indexed:
                saved = Path(folder) / name
                saved.mkdir()
                for file in _BM25_FILES:
                    (saved / file).write_bytes(archive.read(f"{name}/{file}"))
            retrievers[name] = BM25Retriever.load(saved, size)
    for name, fit_key in meta["tfidf"].items():
        if name not in signals:
            return None
        tfidf = TfidfRetriever([[]] * size)
        if fit_key:
            if fits is None:
                return None
            tfidf = TfidfRetriever.stored(fit_key, size, fits)
            if tfidf is None:
                return None
        retrievers[name] = tfidf
    return retrievers


def _positions(table: Mapping[str, Sequence[int]], size: int) -> dict[str, tuple[int, ...]]:
    positions = {str(form): tuple(found) for form, found in table.items()}
    if not all(isinstance(p, int) and 0 <= p < size for found in positions.values() for p in found):
        raise ValueError("a tool position out of the catalog")
    return positions


def _where(store: FitStore) -> str:
    return str(getattr(store, "location", "the store"))
