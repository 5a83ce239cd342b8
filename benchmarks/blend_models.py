"""Weight-space blends of the base model and a tuned one (WiSE-FT), exported for compare_models.py.

    .venv/bin/python benchmarks/blend_models.py --tuned runs/tool-minilm-v3/model --alpha 0.5 0.7 0.85 --out runs

Each blend is `alpha x tuned + (1 - alpha) x base`, weight by weight: the same architecture, so the
same query latency. Fine-tuned models often lose some of the base model's generality; a blend can
keep part of both. Writes OUT/blend-<alpha x 100>/ (the runtime files the engine loads) and prints
the compare_models.py command for them. Needs the train extra (torch); progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from toolscout.index.model_files import BASE_MODEL_PACKAGE, resolve_model

log = logging.getLogger("blend_models")


def blend(base_dir: Path, tuned_dir: Path, alpha: float, target: Path) -> Path:
    from safetensors.torch import load_file, save_file

    from toolscout.training.package import package_model

    base = load_file(base_dir / "model.safetensors")
    tuned = load_file(tuned_dir / "model.safetensors")
    # The base file also holds a position-id buffer, which is not a weight; every weight must match.
    if not set(tuned) <= set(base):
        raise SystemExit(f"{tuned_dir} does not have the base model's weights ({BASE_MODEL_PACKAGE})")
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(scratch) / "model"
        shutil.copytree(tuned_dir, model_dir)
        mixed = {name: (alpha * tuned[name].float() + (1 - alpha) * base[name].float()).to(tuned[name].dtype)
                 for name in tuned}
        save_file(mixed, model_dir / "model.safetensors", metadata={"format": "pt"})
        package_model(Path(scratch), model_dir, target)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuned", required=True, type=Path, help="a trained sentence-transformers folder (a run's model/)")
    parser.add_argument("--alpha", required=True, type=float, nargs="+", help="weight of the tuned model, 0..1")
    parser.add_argument("--out", required=True, type=Path, help="folder for the blends")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    location = resolve_model(BASE_MODEL_PACKAGE)
    assert location is not None
    written = []
    for alpha in args.alpha:
        if not 0.0 <= alpha <= 1.0:
            raise SystemExit(f"--alpha {alpha}: give a weight between 0 and 1")
        target = args.out / f"blend-{round(alpha * 100)}"
        log.info("blending %s at alpha %.2f into %s", args.tuned, alpha, target)
        written.append(blend(location.folder, args.tuned, alpha, target))
    models = " ".join(f"--model {path.name}={path}" for path in written)
    print(f".venv/bin/python benchmarks/compare_models.py --model tuned=bundled {models}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
