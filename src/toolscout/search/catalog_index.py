"""What indexing derives from a catalog alone, built once per content and read back after.

Indexing a 100,000-tool catalog spends most of its time in per-tool Python: tokenizing three
fields, building their BM25 indexes, the dense documents, the destructive and exact-name tables.
None of it depends on anything but the tools, the settings that shape it and the code that derives
it, so it is kept in the content store (`toolscout.state.fits`, kind "catalog": the machine's own
cache, or Postgres shared by replicas) under a key hashing exactly those: every field of every tool
in catalog order, the settings, the versions of bm25s and PyStemmer, and the source of the modules
that derive it (an edited tokenizer never meets an index it did not build). A restart over a known
catalog, or a second replica, reads it back; one that is missing, damaged, or built for another key
is built afresh, and a read or write the store refuses costs a build, never an answer.

Kept as a zip archive of plain data, never pickles (a shared store's row is not trusted code): each
BM25 index in bm25s's own saved form (`BM25Retriever.save`), the per-tool tables as JSON, and the
key of the TF-IDF fit, which is kept in its own table (`toolscout.index.tfidf`) and read back by it.
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
from dataclasses import dataclass, fields
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

__all__ = ["BM25_FIELDS", "IDENTIFIER", "CatalogIndex", "catalog_index", "catalog_key"]

logger = logging.getLogger(__name__)

# Bump when what is kept or how it is laid out changes (the modules' source is hashed as well).
_FORMAT = 1
# Each BM25 signal and the document of a tool it indexes.
BM25_FIELDS: Mapping[str, Callable[[ToolRecord], str]] = {
    "bm25_name": name_document,
    "bm25_description": description_document,
    "bm25_expansion": expansion_document,
}
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
    # True when it was read back from the store rather than built here.
    read_back: bool = False


def catalog_index(
    tools: Sequence[ToolRecord],
    settings: SearchSettings,
    *,
    dense: bool,
    indexes: FitStore | None = None,
    fits: FitStore | None = None,
) -> CatalogIndex:
    """The catalog index of `tools`: read back from `indexes` (with its TF-IDF fit from `fits`) when
    one was kept for exactly these tools, settings and code; else built, and kept there."""
    key = catalog_key(tools, settings, dense=dense) if indexes is not None else None
    if indexes is not None and key is not None:
        kept = _unpack(key, indexes.read(key), len(tools), dense=dense, fits=fits)
        if kept is not None:
            logger.info("catalog index of %d tools read back from %s", len(tools), _where(indexes))
            return kept
    built = _build(tools, settings, dense=dense, fits=fits)
    if indexes is not None and key is not None:
        try:
            packed = _pack(key, built)
        except Exception as exc:  # noqa: BLE001 - not keeping it costs the next start a build, nothing else
            logger.warning("the catalog index is not kept (%s)", exc)
            packed = None
        if packed is not None:
            indexes.write(key, packed)
    return built


def catalog_key(tools: Sequence[ToolRecord], settings: SearchSettings, *, dense: bool) -> str | None:
    """What a kept catalog index must have been built from; None when the deriving code cannot be
    read (then nothing is kept: an index of unknown code is never trusted)."""
    code = _code()
    if code is None:
        return None
    names = [f.name for f in fields(ToolRecord)]
    # Catalog order and each mapping's own order: both shape the documents (and so the index).
    rows = list(map(attrgetter(*names), tools))
    text = json.dumps([_FORMAT, code, _shape(settings, dense), names, rows], ensure_ascii=False, default=str)
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


def _build(tools: Sequence[ToolRecord], settings: SearchSettings, *, dense: bool, fits: FitStore | None) -> CatalogIndex:
    retrievers: dict[str, Retriever] = {}
    token_docs: dict[str, list[list[str]]] = {}
    for signal, document in BM25_FIELDS.items():
        if settings.enabled(signal) or settings.enabled("tfidf"):
            token_docs[signal] = [tokenize(document(t), stem=settings.stem) for t in tools]
        if settings.enabled(signal):
            retrievers[signal] = BM25Retriever(token_docs[signal])
    if settings.enabled("tfidf"):
        # The name field counts twice, like a title: a word in the tool's name says more about
        # it than the same word deep in a parameter description (toollens_train, both halves:
        # Full Recall@10 +0.002 / +0.006, MRR@10 +0.006 / +0.003).
        names = token_docs["bm25_name"]
        merged = [[*names[i], *(t for docs in token_docs.values() for t in docs[i])] for i in range(len(tools))]
        retrievers["tfidf"] = TfidfRetriever(merged, store=fits)
    exact, contained = _exact_forms(tools)
    return CatalogIndex(
        retrievers=retrievers,
        dense_texts=tuple(dense_document(t) for t in tools) if dense else (),
        destructive=tuple(is_destructive(t) for t in tools),
        name_words=tuple(frozenset(tokenize(t.name, stem=settings.stem)) for t in tools),
        exact=exact,
        contained=contained,
    )


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


def _pack(key: str, index: CatalogIndex) -> bytes | None:
    """The archive kept for `key`; None when it cannot be kept whole (its TF-IDF fit was not)."""
    tfidf = index.retrievers.get("tfidf")
    if isinstance(tfidf, TfidfRetriever) and not tfidf.fit_key and not tfidf.empty:
        return None  # fitted but not kept (no fit store): it could not be read back
    meta = {
        "key": key,
        "size": len(index.destructive),
        "bm25": {
            name: not retriever.empty
            for name, retriever in index.retrievers.items()
            if isinstance(retriever, BM25Retriever)
        },
        "tfidf": tfidf.fit_key if isinstance(tfidf, TfidfRetriever) else None,
    }
    tables = {
        "dense_texts": index.dense_texts,
        "destructive": index.destructive,
        "name_words": [sorted(words) for words in index.name_words],
        "exact": index.exact,
        "contained": index.contained,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive, tempfile.TemporaryDirectory() as folder:
        archive.writestr("meta.json", json.dumps(meta))
        archive.writestr("tables.json", json.dumps(tables, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        for name, retriever in index.retrievers.items():
            if isinstance(retriever, BM25Retriever) and not retriever.empty:
                retriever.save(Path(folder) / name)
                for file in _BM25_FILES:
                    archive.write(Path(folder) / name / file, f"{name}/{file}")
    return buffer.getvalue()


def _unpack(key: str, kept: bytes | None, size: int, *, dense: bool, fits: FitStore | None) -> CatalogIndex | None:
    if kept is None:
        return None
    try:
        return _read(key, kept, size, dense=dense, fits=fits)
    except Exception as exc:  # noqa: BLE001 - a damaged index costs one build, nothing else
        logger.info("kept catalog index %s unusable (%s); building it again", key[:12], exc)
        return None


def _read(key: str, kept: bytes, size: int, *, dense: bool, fits: FitStore | None) -> CatalogIndex | None:
    with zipfile.ZipFile(io.BytesIO(kept)) as archive, tempfile.TemporaryDirectory() as folder:
        meta = json.loads(archive.read("meta.json"))
        if meta["key"] != key or meta["size"] != size:
            return None
        retrievers: dict[str, Retriever] = {}
        for name, indexed in meta["bm25"].items():
            if name not in BM25_FIELDS:
                return None
            saved = None
            if indexed:
                saved = Path(folder) / name
                saved.mkdir()
                for file in _BM25_FILES:
                    (saved / file).write_bytes(archive.read(f"{name}/{file}"))
            retrievers[name] = BM25Retriever.load(saved, size)
        if meta["tfidf"] is not None:
            tfidf = TfidfRetriever([[]] * size)
            if meta["tfidf"]:
                if fits is None:
                    return None
                tfidf = TfidfRetriever.stored(meta["tfidf"], size, fits)
                if tfidf is None:  # the fit is gone (or damaged): the whole index is built again
                    return None
            retrievers["tfidf"] = tfidf
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
    ):
        return None
    return CatalogIndex(retrievers, dense_texts, destructive, name_words, exact, contained, read_back=True)


def _positions(table: Mapping[str, Sequence[int]], size: int) -> dict[str, tuple[int, ...]]:
    positions = {str(form): tuple(found) for form, found in table.items()}
    if not all(isinstance(p, int) and 0 <= p < size for found in positions.values() for p in found):
        raise ValueError("a tool position out of the catalog")
    return positions


def _where(store: FitStore) -> str:
    return str(getattr(store, "location", "the store"))
