"""A fixed sample of (answer, criterion) items: the same items for the same seed, whatever
order they come in, on every machine. Plain Python.

Each item gets a draw, the first 8 bytes of SHA-256("seed:answer:criterion"), and the
sample is the `size` items with the lowest draws: a simple random sample of the items
(every subset of that size is as likely), stable across calls. An item added later enters
only if its draw is below the sample's highest, and then displaces that one item, so two
samples of a slowly growing set (a judge canary's labelled items, night after night) share
all but a few items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

Item = tuple[int, int]  # (answer id, criterion id)


def draw(seed: str, item: Item) -> int:
    """The item's draw under `seed`: a number below 2^64 (unlike Python's salted hash(),
    the same in every process)."""
    answer_id, criterion_id = item
    digest = hashlib.sha256(f"{seed}:{answer_id}:{criterion_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def sample_items(items: Iterable[Item], size: int | None, *, seed: str) -> list[Item]:
    """The `size` items with the lowest draws (all of them when `size` is None or not
    below their number), in (answer, criterion) order."""
    found = sorted(set(items))
    if size is None or size >= len(found):
        return found
    return sorted(sorted(found, key=lambda item: (draw(seed, item), item))[: max(size, 0)])
