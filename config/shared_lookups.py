"""Lookups shared by requests admitted together, as the items of one batch request share them.

The rewards service admits the one-sample requests that arrive together in one step on one
thread (evaluation.rewards.served): a trainer's 256 requests carry one token for one
dataset and panel, and reading that token, its datasets, the caller's permission on the
dataset and the panel 256 times costs more than grading planning does. Inside `shared()`,
`once(key, read)` reads each key once for the whole step; outside it (every web request,
every task), `once` simply reads. A step lasts milliseconds, the time one batch request's
checks are valid for; nothing is kept after it.

Only successful reads are shared: a read that raises (an unknown token, a refused
permission) raises again for the next request, which then answers for itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_local = threading.local()


@contextmanager
def shared() -> Iterator[None]:
    """Within this block, on this thread, `once` reads each key once."""
    _local.values = {}
    try:
        yield
    finally:
        del _local.values


def once(key: Hashable, read: Callable[[], T]) -> T:
    values: dict | None = getattr(_local, "values", None)
    if values is None:
        return read()
    if key not in values:
        values[key] = read()
    return values[key]
