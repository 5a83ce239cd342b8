"""Training batches drawn from one family of sources, with no tool twice.

With in-batch negatives every other tool of a batch is taught as wrong for a request. Two
everyday sources often have their own tool for one need (a weather tool in each), so a batch
mixing them would teach a right answer as wrong: each batch is drawn from one family
(`toolscout.training.data.family_of`). Within a batch no request, and no tool (by the function it
is, so reworded versions count as one), appears twice. A family with fewer tools than the batch
size gets smaller batches rather than repeats.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["FamilyBatches", "family_batches"]


class FamilyBatches:
    """Index batches for a dataset whose rows have a family and a set of keys that must not repeat.

    The plan of an epoch is a pure function of (seed, epoch), so a resumed run sees the same batches.
    """

    def __init__(self, families: Sequence[str], keys: Sequence[Sequence[str]], batch_size: int, seed: int) -> None:
        if len(families) != len(keys):
            raise ValueError("one family and one key set per row")
        self.families = list(families)
        self.keys = [tuple(k) for k in keys]
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = 0
        self._plans: dict[int, list[list[int]]] = {}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def plan(self, epoch: int) -> list[list[int]]:
        if epoch not in self._plans:
            self._plans = {epoch: self._make(epoch)}
        return self._plans[epoch]

    def _make(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        by_family: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for index, family in enumerate(self.families):
            # The first key after the request is the right tool's function (toolscout.training.fit).
            by_family[family][self.keys[index][1] if len(self.keys[index]) > 1 else self.keys[index][0]].append(index)
        batches: list[list[int]] = []
        for family in sorted(by_family):
            queues = list(by_family[family].values())
            for queue in queues:
                rng.shuffle(queue)
            rng.shuffle(queues)
            # Each batch takes one row from each of the tools with the most rows left, so batches
            # stay full (as many distinct tools as the family has) instead of thinning out.
            while True:
                queues.sort(key=len, reverse=True)
                batch: list[int] = []
                seen: set[str] = set()
                for queue in queues:
                    if len(batch) == self.batch_size or not queue:
                        break
                    keys = self.keys[queue[-1]]
                    if seen.isdisjoint(keys):
                        batch.append(queue.pop())
                        seen.update(keys)
                if len(batch) < 2:  # a lone row has no in-batch negatives to learn from
                    break
                batches.append(batch)
        rng.shuffle(batches)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.plan(self.epoch))

    def __len__(self) -> int:
        return len(self.plan(self.epoch))


class family_batches:  # noqa: N801 -- used like a function: family_batches(train_rows, validation_rows)
    """A batch-sampler factory for sentence-transformers' trainer (its `batch_sampler` argument).

    Each row set is (families, keys) of one dataset the trainer batches (training, validation);
    the trainer hands over the dataset only, so its length says which set it is. A class rather
    than a closure: the trainer pickles its arguments into every checkpoint.
    """

    def __init__(self, *row_sets: tuple[Sequence[str], Sequence[Sequence[str]]]) -> None:
        self.by_length = {len(families): (list(families), [tuple(k) for k in keys]) for families, keys in row_sets}
        if len(self.by_length) != len(row_sets):
            raise ValueError("datasets of equal length cannot be told apart")

    def __call__(self, dataset: Any, batch_size: int, drop_last: bool, valid_label_columns: Any = None,
                 generator: Any = None, seed: int = 0) -> FamilyBatches:
        if len(dataset) not in self.by_length:
            raise ValueError(f"no batch plan for a dataset of {len(dataset)} rows")
        families, keys = self.by_length[len(dataset)]
        return FamilyBatches(families, keys, batch_size, seed)
