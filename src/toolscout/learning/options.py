"""What a gateway learns from and records (`--overlay`, `--examples`, `--no-learn`, `--expand`),
as one value the application (`toolscout.app.AppConfig`) carries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["LearningOptions"]


@dataclass(frozen=True)
class LearningOptions:
    """--overlay and --examples (overlays next to each registry are read as well); what `serve`
    learns while it runs (without --no-learn, with --expand)."""

    overlays: tuple[Path, ...] = ()
    examples: tuple[Path, ...] = ()
    # Usage will be recorded (the store is created); otherwise an existing store is only read.
    record: bool = False
    # The client's model writes phrases (the cache is created); otherwise an existing cache is only read.
    expand: bool = False
    # How often a serving gateway looks for what was learned since its last index build (here or by
    # another gateway sharing the state store), and re-indexes if anything was: seconds.
    follow_interval: float = 60.0
