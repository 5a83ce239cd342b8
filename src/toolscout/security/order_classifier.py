"""A learned second reader for the poisoning scan: sentences that give the model orders.

The phrase rules (`toolscout.security.rules`) read known wordings; an order to call another tool,
to move files or secrets, or to hide something from the user can be worded in ways no rule
anticipated. This reader embeds each sentence of a tool's prose with toolscout's own bundled
embedding model (ONNX, no torch) and scores it with a small multinomial logistic regression
(`intent_screen.json` in the package: 4 x 384 weights, trained by
`scripts/train_intent_screen.py`). A sentence scored above `flag_at` is a finding that flags the
tool alone; above `support_at` a lighter one that flags it only together with a rule's finding.

    reader = OrderClassifier.bundled()          # None when the weights or the model are missing
    extra = reader.findings(records)            # {fingerprint: (Finding, ...)}, encoded in batches

Only sentences that could carry an order are read (`order_units`): a cheap lexical gate leaves out
plain statements of what a tool does, which are most of every catalog, so a 4,000-tool catalog
costs seconds, not minutes. The bundled model reads English only (BERT's English word pieces):
a sentence in another language gets a vector that says more about its language than its meaning,
and a reader trained on it learned "foreign means hostile", so only English sentences are read and
other languages are left to the phrase rules, which read nine. Vectors are remembered per sentence (in memory, and in the embedding
cache on disk when one is given), so a catalog change re-reads only new sentences.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.security.hidden import printable_excerpt
from toolscout.security.poisoning import Finding, text_sentences, tool_texts

if TYPE_CHECKING:
    from toolscout.index.base import Encoder
    from toolscout.state.vectors import StoredEmbeddings

__all__ = ["CATEGORIES", "WEIGHTS_FILE", "ClassifierWeights", "OrderClassifier", "open_vector_cache", "order_units"]

log = logging.getLogger(__name__)

WEIGHTS_FILE = Path(__file__).resolve().parent.parent / "data" / "intent_screen.json"
# The classes the weights score, in their row order; "benign" is the rest.
CATEGORIES = ("benign", "call-tool", "data", "conceal")
_REASONS = {
    "call-tool": "reads like an order to call another tool",
    "data": "reads like an order to read or send files, secrets or the conversation",
    "conceal": "reads like an order to hide something from the user",
}
# The gate: words an order uses (addressing the model or the user, sequencing, obligation,
# calling, moving, hiding, what is moved), a `server__tool` id or a home path. Sentences without
# any are plain statements of what a tool does and are not read.
_GATE = re.compile(
    r"\b(?:you|your|yours|assistant|model|agent|ai|llm|user|users|person|human|customer|please|kindly|always"
    r"|never|must|should|shall|need|needs|required?|expected|make sure|be sure|remember|then|afterwards?|after"
    r"|next|also|too|as well|before|first|once|whenever|every|each|all|any|don'?t|do not|not|no|keep|leave"
    r"|hide|omit|tell|say|mention|report|pretend|act|quiet|quietly|silently|secret|secretly|discreet|call"
    r"|invoke|trigger|run|execute|use|hand|pass|send|forward|post|upload|share|copy|paste|include|attach|put"
    r"|add|append|read|collect|bcc|cc|tool|tools|server|file|files|key|keys|token|tokens|password|passwords"
    r"|credentials?|cookies?|history|conversation|env|ssh|contents?)\b"
    r"|__|~/",
    re.I,
)
# English: plain ASCII with at least one English function word ("Gebruik de tool" has none).
_ENGLISH = re.compile(
    r"\b(?:the|to|and|of|you|your|is|it|this|that|with|for|on|be|are|any|all|after|then|before|when|if|or|from"
    r"|as|its|their|them|into|by)\b",
    re.I,
)
_MIN_CHARS = 12
_MAX_UNITS = 400  # sentences read per tool; an honest definition has far fewer
_MEMORY_LIMIT = 200_000


def order_units(record: ToolRecord) -> list[tuple[str, str]]:
    """(where, sentence) for every sentence of `record`'s prose the classifier reads."""
    units: list[tuple[str, str]] = []
    for where, text in tool_texts(record):
        if where == "name" or where.endswith("(name)"):
            continue  # identifiers, not prose
        for sentence in text_sentences(text):
            sentence = " ".join(sentence.split())
            if len(sentence) >= _MIN_CHARS and _english(sentence) and _GATE.search(sentence):
                units.append((where, sentence))
                if len(units) >= _MAX_UNITS:
                    return units
    return units


def _english(sentence: str) -> bool:
    ascii_share = sum(char.isascii() for char in sentence) / len(sentence)
    return ascii_share >= 0.97 and _ENGLISH.search(sentence) is not None


@dataclass(frozen=True)
class ClassifierWeights:
    """What `intent_screen.json` holds: the regression, its thresholds and the model it reads."""

    model: str  # identity of the embedding model the weights were trained on (`ModelLocation.identity`)
    coef: np.ndarray  # (classes, dimensions)
    intercept: np.ndarray  # (classes,)
    flag_at: float  # an order's probability at which one sentence flags the tool alone
    support_at: float  # ... at which it adds weight to a rule's finding

    @classmethod
    def load(cls, path: Path = WEIGHTS_FILE) -> ClassifierWeights:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != 1 or tuple(data.get("categories", ())) != CATEGORIES:
            raise ValueError(f"{path}: not a version 1 intent screen for {CATEGORIES}")
        return cls(
            model=data["model"],
            coef=np.asarray(data["coef"], dtype=np.float32),
            intercept=np.asarray(data["intercept"], dtype=np.float32),
            flag_at=float(data["flag_at"]),
            support_at=float(data["support_at"]),
        )

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """Class probabilities, one row per vector (columns in CATEGORIES order)."""
        logits = vectors @ self.coef.T + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        odds = np.exp(logits)
        return odds / odds.sum(axis=1, keepdims=True)


class OrderClassifier:
    """Scores tools' sentences with the weights and an encoder of the same model."""

    def __init__(self, weights: ClassifierWeights, encoder: Encoder, cache: StoredEmbeddings | None = None) -> None:
        self.weights = weights
        self.encoder = encoder
        self.cache = cache
        self._memory: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @classmethod
    def bundled(cls, cache_dir: Path | None = None, weights_file: Path = WEIGHTS_FILE) -> OrderClassifier | None:
        """The classifier over the bundled model, or None (logged) when either cannot be used.

        `cache_dir`: the embedding cache folder, where sentence vectors are kept across restarts."""
        from toolscout.index.dense import load_encoder
        from toolscout.index.model_files import resolve_model

        try:
            weights = ClassifierWeights.load(weights_file)
            location = resolve_model("bundled")
            assert location is not None
            if location.identity != weights.model:
                raise ValueError(f"its weights were trained on {weights.model}, the bundled model is {location.identity}")
            encoder = load_encoder(location, backend="onnx", work_dir=cache_dir or Path("."))
        except Exception as exc:  # noqa: BLE001 - the rules still screen; say why the reader is off
            log.warning("intent screen: learned reader off, phrase rules only (%s)", exc)
            return None
        return cls(weights, encoder, open_vector_cache(cache_dir))

    def vectors(self, sentences: Sequence[str]) -> np.ndarray:
        """One normalised vector per sentence, encoding only those not seen before."""
        from toolscout.state.vectors import text_hash

        with self._lock:
            missing = [s for s in dict.fromkeys(sentences) if s not in self._memory]
            if missing and self.cache is not None:
                found = self.cache.get(self.encoder.model_id, [text_hash(s) for s in missing])
                for sentence in missing:
                    vector = found.get(text_hash(sentence))
                    if vector is not None:
                        self._memory[sentence] = vector
                missing = [s for s in missing if s not in self._memory]
            if missing:
                encoded = self.encoder.encode(missing)
                fresh = dict(zip(missing, encoded))
                if self.cache is not None:
                    try:
                        self.cache.put(self.encoder.model_id, {text_hash(s): v for s, v in fresh.items()})
                    except Exception as exc:  # noqa: BLE001 - the next restart encodes them again
                        log.warning("intent screen: cannot keep sentence vectors (%s)", exc)
                if len(self._memory) + len(fresh) > _MEMORY_LIMIT:
                    self._memory.clear()
                self._memory.update(fresh)
            dims = self.weights.coef.shape[1]
            return np.stack([self._memory[s] for s in sentences]) if sentences else np.zeros((0, dims), np.float32)

    def findings(self, records: Sequence[ToolRecord]) -> dict[str, tuple[Finding, ...]]:
        """{fingerprint: findings} for `records`, every sentence of every tool encoded in one batch."""
        units = {record.fingerprint: order_units(record) for record in records}
        sentences = [sentence for found in units.values() for _, sentence in found]
        probabilities = self.weights.probabilities(self.vectors(sentences)) if sentences else None
        result: dict[str, tuple[Finding, ...]] = {}
        row = 0
        for fingerprint, found in units.items():
            chunk = probabilities[row : row + len(found)] if probabilities is not None else np.zeros((0, 4))
            row += len(found)
            result[fingerprint] = tuple(self._tool_findings(found, chunk))
        return result

    def _tool_findings(self, units: list[tuple[str, str]], probabilities: np.ndarray) -> Iterator[Finding]:
        """The strongest order sentence of a tool, if it reaches a threshold."""
        if not len(units):
            return
        order = 1.0 - probabilities[:, 0]
        best = int(order.argmax())
        score = float(order[best])
        if score < self.weights.support_at:
            return
        category = CATEGORIES[1 + int(probabilities[best, 1:].argmax())]
        where, sentence = units[best]
        alone = score >= self.weights.flag_at
        yield Finding(
            "learned-order" if alone else "learned-order-weak",
            f"{_REASONS[category]} (learned reader, p={score:.2f})",
            where,
            printable_excerpt(sentence, 0, min(len(sentence), 120), context=0),
            1.0 if alone else 0.5,
        )


def open_vector_cache(cache_dir: Path | None) -> StoredEmbeddings | None:
    """The embeddings kept in `cache_dir` (the search's own store), or None (logged) if unusable."""
    if cache_dir is None:
        return None
    from toolscout.state.content import open_content_store
    from toolscout.state.vectors import StoredEmbeddings

    try:
        return StoredEmbeddings(open_content_store(None, cache_dir))
    except Exception as exc:  # noqa: BLE001 - vectors are then kept in memory only
        log.warning("intent screen: embedding cache unavailable (%s)", exc)
        return None
