"""How ranks from several signals become one order: weighted RRF, or the learned ranker when it can run.

Weighted Reciprocal Rank Fusion (`toolscout.search.rrf`, the one formula) is the fallback of the learned ranker
(`toolscout.search.ranker`), which `Fusion` loads beside the embedding model and hands to the
engine only when it can run; `Fusion.ranker` also says, for `--explain`, what decided. Where it
cannot run, `Fusion.cosine_rule` gives the dense-only weak-match thresholds stored with it. Beside
the ranker file, `Fusion.calibration` finds the model of the calibrated confidence fitted with it
(`toolscout.search.calibrated`), and `Fusion.keyword_calibration` the one for keyword-only searches.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from pathlib import Path

from toolscout.errors import ConfigError
from toolscout.search.calibrated import KEYWORD_CONFIDENCE_FILE, Calibration, load_calibration
from toolscout.search.confidence import CosineRule
from toolscout.search.rrf import weighted_rrf
from toolscout.search.ranker import FEATURE_NAMES, RANKER_FILE, RERANKER_FEATURES, LearnedRanker, feature_parts, load_ranker
from toolscout.search.settings import SearchSettings

__all__ = ["Fusion", "weighted_rrf"]

class Fusion:
    """Which fusion a search uses, and why: the learned ranker beside the settings' model, else weighted RRF."""

    def __init__(self, settings: SearchSettings) -> None:
        self.settings = settings
        self._loaded: tuple[LearnedRanker | None, str] | None = None
        self._calibration: tuple[Calibration | None, str] | None = None
        self._keyword: tuple[Calibration | None, str] | None = None
        self._lock = threading.Lock()

    def ranker(self, ready: Collection[str], model_id: str | None) -> tuple[LearnedRanker | None, str]:
        """The learned ranker when every signal it reads is `ready` and it was fitted for the model
        `model_id` names (the encoder's id, with its file's sha256), else None; and what decides."""
        if "dense" not in ready:  # no model, or its vectors are not ready yet
            return None, "weighted RRF (the learned ranker needs the dense signal)"
        ranker, reason = self._load()
        if ranker is None:
            return None, f"weighted RRF ({reason})"
        if not _fitted_for(ranker, model_id):
            return None, "weighted RRF (the learned ranker was fitted for another embedding model)"
        off = [name for name in ranker.signals if name not in ready]
        if off:
            return None, f"weighted RRF (the learned ranker needs {', '.join(off)})"
        known = (*FEATURE_NAMES, *RERANKER_FEATURES)
        unknown = sorted({p for name in ranker.features for p in feature_parts(name) if p not in known})
        if unknown:
            return None, f"weighted RRF (the learned ranker reads {', '.join(unknown)}, which this search lacks)"
        return ranker, reason

    def cosine_rule(self, model_id: str | None) -> CosineRule | None:
        """The dense-only weak-match rule for the model `model_id` names: the settings' own, else
        the one stored in the ranker file fitted for that model, else None (no verdict)."""
        if self.settings.weak_match_rule is not None:
            return self.settings.weak_match_rule
        ranker, _ = self._load()
        return ranker.cosine_rule if ranker is not None and _fitted_for(ranker, model_id) else None

    def calibration(self) -> Calibration | None:
        """The calibrated confidence's model fitted with the ranker file in use, else None (the
        ranker decides whether it can run; the confidence reads its probabilities)."""
        with self._lock:
            if self._calibration is None:
                try:
                    path = _ranker_path(self.settings)
                except ConfigError as exc:
                    path, why = None, str(exc)
                else:
                    why = "no embedding model"
                self._calibration = (None, why) if path is None else load_calibration(path)
            return self._calibration[0]

    def keyword_calibration(self) -> Calibration | None:
        """The keyword-only confidence's model: the one beside the ranker file in use, else (no
        model, or none fitted beside it) the bundled model's; it reads no model, so any serves."""
        from toolscout.index.model_files import BUNDLED_MODEL_DIR

        with self._lock:
            if self._keyword is None:
                try:
                    path = _ranker_path(self.settings)
                except ConfigError:
                    path = None
                found = load_calibration(path, KEYWORD_CONFIDENCE_FILE) if path is not None else (None, "no model")
                if found[0] is None:
                    found = load_calibration(BUNDLED_MODEL_DIR / RANKER_FILE, KEYWORD_CONFIDENCE_FILE)
                self._keyword = found
            return self._keyword[0]

    def wants_reranker(self) -> bool:
        """Whether the ranker this fusion would load reads the reranker's score (so the reranker
        runs before it); loading the ranker file if need be."""
        ranker, _ = self._load()
        return self.settings.fusion == "learned" and ranker is not None and ranker.reads_reranker

    @staticmethod
    def without_reranker(ranker: LearnedRanker, why: str) -> tuple[LearnedRanker | None, str]:
        """What stands in for a ranker that reads the reranker's score when the reranker cannot run
        (`why`): the ranker fitted without that column, stored beside it, else weighted RRF."""
        if ranker.without_reranker is not None:
            return ranker.without_reranker, f"learned ranker without the reranker's score ({why})"
        return None, f"weighted RRF (the learned ranker reads the reranker's score, and {why})"

    def _load(self) -> tuple[LearnedRanker | None, str]:
        with self._lock:
            if self._loaded is None:
                self._loaded = _load(self.settings)
            return self._loaded


def _fitted_for(ranker: LearnedRanker, model_id: str | None) -> bool:
    """Whether `ranker` was fitted for the model `model_id` names (the encoder's id with its file's
    sha256), or for any model."""
    return not ranker.model_digest or f"sha256:{ranker.model_digest[:16]}" in (model_id or "")


def _load(settings: SearchSettings) -> tuple[LearnedRanker | None, str]:
    try:
        path = _ranker_path(settings)
    except ConfigError as exc:
        return None, str(exc)
    if path is None:
        return None, "no embedding model"
    return load_ranker(path.parent, path.name)


def _ranker_path(settings: SearchSettings) -> Path | None:
    """The ranker file the settings name, else the one beside their embedding model (None: no
    model); ConfigError when the model cannot be found."""
    if settings.ranker_file is not None:
        return Path(settings.ranker_file)
    from toolscout.index.model_files import resolve_model

    location = resolve_model(settings.model)
    return None if location is None else location.folder / RANKER_FILE
