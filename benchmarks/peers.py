"""The systems a user could pick instead of toolscout, each driven on a benchmark catalog.

Every peer becomes a *ranker* `(query, k) -> ranked dataset ids` (or, for a peer living in another
virtualenv, a ranker that also reports its own in-process search time), so all of them are scored
by the same toolscout.eval code. Peers get the catalog exactly as toolscout does: the dataset's
name, server, description and input schema, with the dataset ids as tool ids.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord

BRIDGE = Path(__file__).with_name("stackone_bridge.py")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class PlainBM25:
    """The shared benchmark README's reference: bm25s over name + description, lowercase, split on
    non-alphanumerics and camelCase, English stopwords (bm25s' list), tokens of two or more
    characters, default BM25 parameters, ties broken by bm25s' own retrieve."""

    label = "bm25s (reference)"

    def __init__(self, tools: Sequence[ToolRecord]) -> None:
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN

        self._stopwords = frozenset(STOPWORDS_EN)
        self._ids = [tool.id for tool in tools]
        self._model = bm25s.BM25()
        self._model.index([self.tokens(f"{t.name} {t.description}") for t in tools], show_progress=False)

    def tokens(self, text: str) -> list[str]:
        words = re.findall(r"[a-z0-9]+", _CAMEL.sub(" ", text).lower())
        return [w for w in words if len(w) > 1 and w not in self._stopwords]

    def __call__(self, query: str, k: int) -> list[str]:
        # bm25s raises on tokens it has never seen, and when asked for more than the corpus.
        known = [w for w in self.tokens(query) if w in self._model.vocab_dict]
        if not known:
            return []
        found, scores = self._model.retrieve([known], k=min(k, len(self._ids)), show_progress=False)
        return [self._ids[i] for i, score in zip(found[0], scores[0]) if score > 0]


class ToolPickerPeer:
    """ToolPicker's default router (its BM25 + semantic retriever, uniform-weight RRF) with the
    embedding model toolscout uses, through toolscout's own encoder, so only retrieval differs."""

    def __init__(self, tools: Sequence[ToolRecord], encoder: object) -> None:
        import toolpicker

        self.label = f"ToolPicker {toolpicker.__version__} (BM25 + MiniLM, RRF)"
        picked = [
            toolpicker.Tool(id=t.id, name=t.name, description=t.description,
                            parameters_schema=dict(t.input_schema))
            for t in tools
        ]
        source = type("Catalog", (), {"tools": lambda self: list(picked)})()
        self._picker = toolpicker.ToolPicker(source, embedder=_Embeddings(encoder))

    def __call__(self, query: str, k: int) -> list[str]:
        return [tool.id for tool in self._picker.select(query, k=k)]


class _Embeddings:
    """ToolPicker's EmbeddingProvider protocol over a toolscout Encoder."""

    def __init__(self, encoder: object) -> None:
        self._encoder = encoder
        self.dimensions = int(encoder.encode(["probe"]).shape[1])  # type: ignore[attr-defined]

    def embed(self, texts: list[str]) -> list[list[float]]:
        rows = []
        for start in range(0, len(texts), 256):
            rows.extend(np.asarray(self._encoder.encode(texts[start : start + 256])).tolist())  # type: ignore[attr-defined]
        return rows


class StackOnePeer:
    """StackOne's local BM25 + TF-IDF ToolIndex (stackone-ai), run by stackone_bridge.py in its
    own virtualenv; `search` returns the ids and the search time measured inside that process."""

    def __init__(self, python: str, tools_file: Path) -> None:
        self.label = f"StackOne local hybrid ({_version(python, 'stackone-ai')}, alpha 0.2)"
        self._process = subprocess.Popen(
            [python, str(BRIDGE), str(tools_file)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        ready = json.loads(self._read())
        self.index_seconds = float(ready["index_seconds"])

    def search(self, query: str, k: int) -> tuple[list[str], float]:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps({"query": query, "k": k}) + "\n")
        answer = json.loads(self._read())
        return answer["ids"], float(answer["ms"])

    def _read(self) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the StackOne bridge exited with code {self._process.wait()}")
        return line

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


def load_toolscout_encoder(model: str | None = None) -> object:
    """The encoder toolscout's dense signal uses (same model, backend and cache)."""
    from toolscout.index.dense import load_encoder
    from toolscout.index.model_files import resolve_model
    from toolscout.search.settings import SearchSettings

    settings = SearchSettings() if model is None else SearchSettings(model=model)
    location = resolve_model(settings.model)
    if location is None:
        raise SystemExit("ToolPicker needs an embedding model; --model none leaves it nothing to use")
    return load_encoder(location, backend=settings.backend, work_dir=settings.resolved_cache_dir)


def timed(build: type, *args: object) -> tuple[object, float]:
    start = time.perf_counter()
    peer = build(*args)
    return peer, time.perf_counter() - start


def _version(python: str, package: str) -> str:
    probe = f"import importlib.metadata as m; print(m.version({package!r}))"
    try:
        out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return f"{package} ?"
    return f"{package} {out.stdout.strip()}"
