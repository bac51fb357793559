"""The rate limit and daily quota of reward traffic, per API token (per user without one),
apart from evaluation runs. See docs/rewards.md#quotas.

The counts are the recorded batches themselves (RewardBatch.items), so what the quota
refuses is exactly what the history shows, on every web process and machine, with no other
store. A request first records its batch, then counts the items of the principal's batches
in the last minute and day up to and including its own (by id); over a limit, it takes its
row back and answers 429 with the seconds until enough of the oldest items leave the window.
Counting up to its own id makes two concurrent requests agree on who came first.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from evaluation.rewards.models import RewardBatch

MINUTE = dt.timedelta(minutes=1)
DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Principal:
    """Whose traffic: an API token's, else the user's own (sessions, older tokens)."""

    user_id: int
    token_id: int | None

    def batches(self) -> Q:
        if self.token_id is not None:
            return Q(token_id=self.token_id)
        return Q(user_id=self.user_id, token_id__isnull=True)


class QuotaExceeded(Exception):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def limits() -> list[tuple[str, dt.timedelta, int]]:
    return [
        ("REWARDS_ITEMS_PER_MINUTE", MINUTE, settings.REWARDS_ITEMS_PER_MINUTE),
        ("REWARDS_ITEMS_PER_DAY", DAY, settings.REWARDS_ITEMS_PER_DAY),
    ]


def admit(batch: RewardBatch, principal: Principal) -> None:
    """Raise QuotaExceeded (after deleting `batch`) when its items break a limit."""
    now = timezone.now()
    for name, window, limit in limits():
        if limit <= 0:
            continue
        if batch.items > limit:
            batch.delete()
            raise QuotaExceeded(
                f"{batch.items} items in one request, more than {name} ({limit}) allows "
                "in any window: send smaller batches.",
                retry_after=math.ceil(window.total_seconds()),
            )
        rows = list(
            RewardBatch.objects.filter(principal.batches(), created_at__gt=now - window)
            .filter(pk__lte=batch.pk)
            .order_by("created_at", "pk")
            .values_list("created_at", "items", "pk")
        )
        used = sum(items for _, items, _ in rows)
        if used <= limit:
            continue
        batch.delete()
        raise QuotaExceeded(
            f"Reward quota reached: {used - batch.items} of {limit} items used in the last "
            f"{_window(window)} ({name}), and this request asks for {batch.items} more. "
            "Retry after the time in the Retry-After header.",
            retry_after=_retry_after(rows, used - limit, window, now, own=batch.pk),
        )


def _retry_after(
    rows: list[tuple[dt.datetime, int, int]],
    excess: int,
    window: dt.timedelta,
    now: dt.datetime,
    *,
    own: int,
) -> int:
    """Seconds until the oldest batches holding `excess` items have left the window."""
    freed = 0
    for created_at, items, pk in rows:
        if pk == own:
            continue
        freed += items
        if freed >= excess:
            return max(1, math.ceil((created_at + window - now).total_seconds()))
    return math.ceil(window.total_seconds())


def _window(window: dt.timedelta) -> str:
    return "minute" if window == MINUTE else "24 hours"
