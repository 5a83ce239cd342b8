"""A learned linear map on top of the embedding model, folded into its ONNX file: a new version of
the model that a CPU can train in minutes.

Fine-tuning the transformer again costs hours of CPU per pass over the training pairs. A square map
`W` applied to every token's last hidden state (so, after mean pooling, to the sentence vector:
pooling is linear) is trained instead, on vectors the shipped model computes once: the requests and
the tool documents of a prepared run (`toolscout.training.fit.prepare`). The loss is the one the
model was trained with (MultipleNegativesRankingLoss over cosines: in-batch negatives of one family
plus the mined hard negative, scale 20), and `W` starts as the identity and is held near it by a
penalty, so the map bends the space where the new data asks and leaves the rest as it was.

The same map is applied to requests and tools (one ONNX graph serves both), and it is folded into
the graph as one MatMul on the hidden-state output: the runtime, the pooling and the vectors' cache
key (the file's digest) see just another model file.

Needs `toolscout[train]` (torch, onnx).
"""

from __future__ import annotations

import json
import logging
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from toolscout.training.data import family_of

__all__ = ["AdapterPlan", "embed_run", "fit_adapter", "fold_into_onnx", "load_vectors", "main", "package_adapted"]

log = logging.getLogger(__name__)

VECTORS_FILE = "vectors.npy"
TEXTS_FILE = "vector_texts.json"
ADAPTER_FILE = "adapter.npy"


@dataclass(frozen=True)
class AdapterPlan:
    epochs: int = 4
    batch_size: int = 128
    learning_rate: float = 1e-3
    # Pull of W towards the identity: the larger, the less the space moves.
    penalty: float = 1.0
    scale: float = 20.0
    seed: int = 13

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def embed_run(run_dir: Path, encode: Callable[[Sequence[str]], np.ndarray],
              progress: Callable[[int, int], None] | None = None, chunk: int = 2048) -> tuple[list[str], np.ndarray]:
    """Every request and tool text of the prepared run, embedded once and kept in the run folder
    (a cut-off pass resumes from the chunks already written)."""
    kept = load_vectors(run_dir)
    if kept is not None:
        return kept
    texts: dict[str, None] = {}
    for name in ("pairs.jsonl", "validation.jsonl"):
        for line in (run_dir / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts.update(dict.fromkeys((row["query"], row["positive"], row["negative"])))
    ordered = list(texts)
    parts_dir = run_dir / "vector_parts"
    parts_dir.mkdir(exist_ok=True)
    parts = []
    for number, start in enumerate(range(0, len(ordered), chunk)):
        part = parts_dir / f"{number:05d}.npy"
        if not part.is_file():
            np.save(part, encode(ordered[start : start + chunk]).astype(np.float32))
        parts.append(np.load(part))
        if progress is not None:
            progress(min(start + chunk, len(ordered)), len(ordered))
    vectors = np.concatenate(parts)
    np.save(run_dir / VECTORS_FILE, vectors)
    (run_dir / TEXTS_FILE).write_text(json.dumps(ordered, ensure_ascii=False), encoding="utf-8")
    return ordered, vectors


def load_vectors(run_dir: Path) -> tuple[list[str], np.ndarray] | None:
    texts_path, vectors_path = run_dir / TEXTS_FILE, run_dir / VECTORS_FILE
    if texts_path.is_file() and vectors_path.is_file():
        return json.loads(texts_path.read_text(encoding="utf-8")), np.load(vectors_path)
    return None


def _rows(run_dir: Path, name: str, index: dict[str, int]) -> tuple[np.ndarray, list[str], list[tuple[str, ...]]]:
    triples, families, keys = [], [], []
    for line in (run_dir / name).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            triples.append((index[row["query"]], index[row["positive"]], index[row["negative"]]))
            families.append(family_of(row["source"]))
            keys.append((row["positive_need"], row["negative_need"]))
    return np.array(triples, dtype=np.int64), families, keys


def fit_adapter(run_dir: Path, plan: AdapterPlan, progress: Callable[[str], None] | None = None) -> np.ndarray:
    """W (dim x dim) fitted on the run's training triples; the validation loss is logged per epoch."""
    import torch

    kept = load_vectors(run_dir)
    if kept is None:
        raise ValueError(f"{run_dir} has no embedded texts yet: embed_run first")
    texts, vectors = kept
    index = {text: number for number, text in enumerate(texts)}
    train, families, keys = _rows(run_dir, "pairs.jsonl", index)
    validation, val_families, val_keys = _rows(run_dir, "validation.jsonl", index)
    torch.manual_seed(plan.seed)
    rng = random.Random(plan.seed)
    table = torch.from_numpy(vectors)
    dim = table.shape[1]
    weight = torch.nn.Parameter(torch.eye(dim))
    optimiser = torch.optim.Adam([weight], lr=plan.learning_rate)
    identity = torch.eye(dim)

    def loss_of(batch: np.ndarray, batch_keys: Sequence[tuple[str, ...]]) -> torch.Tensor:
        rows = torch.from_numpy(batch)
        mapped = torch.nn.functional.normalize(table[rows.reshape(-1)] @ weight.T, dim=-1).reshape(len(batch), 3, dim)
        queries, documents = mapped[:, 0], torch.cat([mapped[:, 1], mapped[:, 2]])
        logits = plan.scale * queries @ documents.T
        # A document of the same function as a request's own tool is no negative for it.
        needs = [k[0] for k in batch_keys] + [k[1] for k in batch_keys]
        same = torch.tensor([[needs[j] == batch_keys[i][0] and j != i for j in range(len(needs))]
                             for i in range(len(batch))])
        logits = logits.masked_fill(same, -1e4)
        return torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))

    def validation_loss() -> float:
        with torch.no_grad():
            parts = [float(loss_of(validation[b], [val_keys[i] for i in b])) * len(b)
                     for b in _family_batches(val_families, plan.batch_size, rng, shuffle=False)]
        return sum(parts) / max(len(validation), 1)

    log.info("adapter: %d training triples, %d validation; validation loss before: %.4f",
             len(train), len(validation), validation_loss())
    for epoch in range(plan.epochs):
        plan_batches = _family_batches(families, plan.batch_size, rng, shuffle=True)
        for step, batch in enumerate(plan_batches, start=1):
            optimiser.zero_grad()
            loss = loss_of(train[batch], [keys[i] for i in batch]) + plan.penalty * ((weight - identity) ** 2).sum() / dim
            loss.backward()
            optimiser.step()
            if progress is not None and step % 100 == 0:
                progress(f"epoch {epoch + 1}/{plan.epochs}: step {step}/{len(plan_batches)}, loss {float(loss):.4f}")
        log.info("adapter: epoch %d, validation loss %.4f", epoch + 1, validation_loss())
    result = weight.detach().numpy().astype(np.float32)
    np.save(run_dir / ADAPTER_FILE, result)
    return result


def _family_batches(
    row_families: list[str], batch_size: int, rng: random.Random, shuffle: bool
) -> list[list[int]]:
    """Row numbers in batches of one family each (shuffled by `rng` when `shuffle`); a batch of
    one row has no negative and is left out."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for number, family in enumerate(row_families):
        by_family[family].append(number)
    out = []
    for members in by_family.values():
        if shuffle:
            rng.shuffle(members)
        out += [members[i : i + batch_size] for i in range(0, len(members), batch_size)]
    if shuffle:
        rng.shuffle(out)
    return [b for b in out if len(b) > 1]


def fold_into_onnx(source: Path, target: Path, weight: np.ndarray) -> Path:
    """`source`'s graph with every output hidden state multiplied by W^T (so pooled vectors are W u)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    output = graph.output[0]
    inner = output.name + "_before_adapter"
    for node in graph.node:
        node.output[:] = [inner if name == output.name else name for name in node.output]
        node.input[:] = [inner if name == output.name else name for name in node.input]
    graph.initializer.append(numpy_helper.from_array(weight.T.astype(np.float32).copy(), "toolscout_adapter"))
    graph.node.append(helper.make_node("MatMul", [inner, "toolscout_adapter"], [output.name], name="toolscout_adapter"))
    onnx.checker.check_model(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target))
    return target


def package_adapted(source: Path, target: Path, weight: np.ndarray) -> Path:
    """`source`'s model folder with W folded into its ONNX file, written to `target`, with reference
    vectors: the new file's, and the source's float32 ones mapped by W (what the float model with
    the map gives, since the map is applied after pooling)."""
    import shutil

    from toolscout.index.dense import load_encoder
    from toolscout.index.model_files import resolve_model
    from toolscout.training.package import REFERENCE_FILE

    location = resolve_model(str(source))
    assert location is not None and location.onnx_file is not None, f"{source} has no ONNX file"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(location.folder, target, ignore=shutil.ignore_patterns("*.onnx", "ranker.json", REFERENCE_FILE))
    fold_into_onnx(location.onnx_file, target / location.onnx_file.name, weight)
    reference = json.loads((location.folder / REFERENCE_FILE).read_text())
    mapped = np.array(reference["float32"]) @ weight.T
    mapped /= np.linalg.norm(mapped, axis=1, keepdims=True)
    packaged = load_encoder(resolve_model(str(target)), backend="onnx", work_dir=target)
    document = {
        "texts": reference["texts"],
        "onnx_int8": [[round(float(v), 6) for v in packaged.encode([text])[0]] for text in reference["texts"]],
        "float32": [[round(float(v), 6) for v in row] for row in mapped],
    }
    (target / REFERENCE_FILE).write_text(json.dumps(document) + "\n")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """python -m toolscout.training.adapter --run DIR --out DIR [--model bundled]: embed the run's
    texts (resumable), fit the map, and write the adapted model folder."""
    import argparse
    import sys

    from toolscout.index.dense import load_encoder
    from toolscout.index.model_files import resolve_model

    parser = argparse.ArgumentParser(description="Fit a linear map on top of the embedding model and fold it in.")
    parser.add_argument("--run", type=Path, required=True, help="a prepared run folder (pairs.jsonl, validation.jsonl)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the adapted model folder")
    parser.add_argument("--model", default="bundled", help="the model to adapt (its ONNX file)")
    defaults = AdapterPlan()
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--penalty", type=float, default=defaults.penalty)
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    location = resolve_model(args.model)
    assert location is not None
    encoder = load_encoder(location, backend="onnx", work_dir=args.run / "cache")
    embed_run(args.run, encoder.encode, progress=lambda done, total: log.info("embedded %d/%d", done, total))
    plan = AdapterPlan(epochs=args.epochs, penalty=args.penalty, learning_rate=args.learning_rate)
    weight = fit_adapter(args.run, plan, progress=log.info)
    package_adapted(location.folder, args.out, weight)
    (args.out / "adapter_plan.json").write_text(plan.to_json() + "\n")
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
