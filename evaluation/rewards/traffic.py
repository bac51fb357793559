"""A dataset's reward traffic, as its Rewards page shows it: items per minute over the last
hour, and for the last hour and day the requests, items, failures, cache share, latency
percentiles and cost. Read from RewardBatch rows (one per request), never from verdicts."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluation.rewards.models import RewardBatch

CHART_MINUTES = 60
RECENT_BATCHES = 50


@dataclass(frozen=True)
class Window:
    """The traffic of one period."""

    label: str
    requests: int
    items: int
    failed_items: int
    calls: int
    cache_hits: int
    checks: int
    cost: Decimal | None  # None when some batch had no price
    unpriced: int  # batches without a cost
    p50_ms: int | None
    p95_ms: int | None
    minutes: int

    @property
    def items_per_minute(self) -> float:
        return self.items / self.minutes

    @property
    def cache_percent(self) -> float | None:
        """Votes answered without a call (cache or no-LLM check), in percent."""
        votes = self.calls + self.cache_hits + self.checks
        return 100 * (self.cache_hits + self.checks) / votes if votes else None


def percentile(ordered: Sequence[int], q: float) -> int | None:
    """The nearest-rank percentile of sorted values (q in (0, 1]); None for none."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def window(dataset_id: int, *, label: str, minutes: int, now: dt.datetime) -> Window:
    batches = RewardBatch.objects.filter(
        dataset_id=dataset_id, created_at__gte=now - dt.timedelta(minutes=minutes)
    )
    totals = batches.aggregate(
        requests=Count("pk"),
        items=Coalesce(Sum("items"), 0),
        failed_items=Coalesce(Sum("failed_items"), 0),
        calls=Coalesce(Sum("calls"), 0),
        cache_hits=Coalesce(Sum("cache_hits"), 0),
        checks=Coalesce(Sum("checks"), 0),
        priced=Sum("cost"),
        unpriced=Count("pk", filter=Q(cost__isnull=True, latency_ms__isnull=False)),
    )
    totals["cost"] = totals.pop("priced")
    # One integer per request of the period: a day of a busy trainer is some thousands.
    latencies = sorted(
        batches.filter(latency_ms__isnull=False).values_list("latency_ms", flat=True)
    )
    return Window(
        label=label, minutes=minutes, p50_ms=percentile(latencies, 0.5),
        p95_ms=percentile(latencies, 0.95), **totals,
    )  # fmt: skip


def items_per_minute(dataset_id: int, *, now: dt.datetime) -> list[tuple[dt.datetime, int]]:
    """Items asked for in each of the last CHART_MINUTES minutes, oldest first, zeros kept."""
    start = now.replace(second=0, microsecond=0) - dt.timedelta(minutes=CHART_MINUTES - 1)
    counts = [0] * CHART_MINUTES
    rows = RewardBatch.objects.filter(dataset_id=dataset_id, created_at__gte=start).values_list(
        "created_at", "items"
    )
    for created_at, items in rows:
        index = int((created_at - start).total_seconds() // 60)
        if 0 <= index < CHART_MINUTES:
            counts[index] += items
    return [(start + dt.timedelta(minutes=i), n) for i, n in enumerate(counts)]


def recent(dataset_id: int):
    return (
        RewardBatch.objects.filter(dataset_id=dataset_id)
        .select_related("user", "panel")
        .order_by("-created_at", "-pk")[:RECENT_BATCHES]
    )


def overview(dataset_id: int, now: dt.datetime | None = None) -> dict[str, object]:
    now = now or timezone.now()
    return {
        "windows": [
            window(dataset_id, label="Last hour", minutes=60, now=now),
            window(dataset_id, label="Last 24 hours", minutes=24 * 60, now=now),
        ],
        "per_minute": items_per_minute(dataset_id, now=now),
        "batches": recent(dataset_id),
    }
