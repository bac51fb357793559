"""Whether a judge's endpoint is reachable, as its circuit breaker says
(evaluation.judging.circuit): for the judge pages and the page of a run waiting for one.

The circuits live in Redis when the workers share one; in the embedded development mode
(no Redis) only the worker process knows them, and these reads say nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from evaluation.judges.models import Judge
from evaluation.judging import circuit


@dataclass(frozen=True)
class JudgeOutage:
    judge_id: int
    judge: str
    since: dt.datetime
    next_probe: dt.datetime
    last_error: str


def _when(epoch: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC)


def outages(judges: Iterable[Judge]) -> dict[int, JudgeOutage]:
    """The open circuits of these judges (LLM judges only), by judge id."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return {}
    keys = {
        circuit.circuit_key(judge.pk, judge.base_url): judge
        for judge in judges
        if judge.kind == Judge.Kind.LLM
    }
    found = {}
    for key, outage in circuit.read_redis(url, list(keys)).items():
        judge = keys[key]
        found[judge.pk] = JudgeOutage(
            judge.pk, judge.name, _when(outage.since), _when(outage.next_probe),
            outage.last_error,
        )  # fmt: skip
    return found
