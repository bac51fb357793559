"""How long to wait before trying again: the one back-off rule of the project, used by the
judge client's retries, the Celery tasks that retry an unreachable judge or database, the
runs' sweep, the alert webhooks and the analytics refresh. Plain Python, no import from
the apps: every layer may use it.

The wait doubles with each attempt from `base`, up to `cap`; `doublings` stops the
doubling itself (a sweep that waits at most 2^6 lease timeouts; an exponent that would
overflow). Jitter spreads the retries of work that failed together (every worker, every
tick of the night) so they do not all come back at once: "equal" waits between half and
all of the delay, "full" anywhere up to it (the judge client's, as AWS names them).
"""

from __future__ import annotations

import random
from typing import Literal, TypeVar

T = TypeVar("T")  # seconds (int or float), or a datetime.timedelta

Jitter = Literal["equal", "full"]


def backoff(
    attempt: int,
    *,
    base: T,
    cap: T | None = None,
    doublings: int | None = None,
    jitter: Jitter | None = None,
) -> T:
    """The wait before retry number `attempt` (0: the first retry waits `base`): `base`
    doubled `attempt` times (at most `doublings` times), at most `cap`, spread by `jitter`
    (seconds only)."""
    delay = base * 2 ** (attempt if doublings is None else min(attempt, doublings))
    if cap is not None:
        delay = min(cap, delay)
    if jitter is None:
        return delay
    low = delay / 2 if jitter == "equal" else 0
    return random.uniform(low, delay)  # noqa: S311 - spreading retries, not a secret
