"""Shared waves: the reward requests of one trainer that arrive within a few milliseconds for
the same dataset and panel are graded as one batch (docs/rewards.md#shared-waves).

Trainers send one sample per request (OpenRLHF's remote reward client, NeMo-Gym's /verify),
hundreds at once. Graded one by one, each request would make its own cache lookup, quota
check and batch row, and its judge calls would go out in waves of one. Here the first
request of a key opens a wave, waits REWARDS_WAVE_MS for the others, and the wave is
prepared once (one cache lookup, one quota check: evaluation.rewards.services.prepare), its
judge calls made in one wave under REWARDS_CONCURRENCY (evaluation.rewards.calls.judged),
and finished once; each request then gets its own items back. A wave holds at most
REWARDS_MAX_BATCH items: a full wave starts at once and the next request opens another.

If the joined wave is refused (one request's item names an unknown query) or over a quota,
its requests are graded each on its own, so that a request's answer is the one it would get
alone: its own 400 naming its own item, or its own place in the quota.

Database work runs at the edges, on the rewards service's bounded thread pool (`at_edge`);
the judge calls are awaited on the event loop, holding no thread and no connection. No
Django request here: the views (evaluation.rewards.served) hand in jobs.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.judging import engine
from evaluation.rewards import calls, quota, services
from evaluation.rewards.request_shapes import Item, RefusedInput


@dataclass(frozen=True)
class Job:
    """One request's batch: what services.prepare takes, less the items' neighbours."""

    dataset: Any
    panel: Any
    items: Sequence[Item]
    by: Any
    token_id: int | None
    shape: str
    shaping: Any
    query_field: str

    def key(self) -> Hashable:
        """Requests that may share a wave: one principal's (one quota), one dataset, panel,
        shape and shaping."""
        return (
            self.dataset.pk, self.panel.pk, self.by.pk, self.token_id, self.shape,
            self.shaping, self.query_field,
        )  # fmt: skip


class Overloaded(Exception):
    """More items waiting in this process than REWARDS_MAX_PENDING: a 503 with Retry-After."""

    def __init__(self, pending: int, limit: int, retry_after: int) -> None:
        super().__init__(
            f"The reward service holds {pending} samples waiting for their judges, its limit "
            f"(REWARDS_MAX_PENDING = {limit}): retry after the time in the Retry-After header."
        )
        self.retry_after = retry_after


# The database half of a wave, run at the edge: a sync callable and its arguments.
Edge = Callable[..., Awaitable[Any]]


@dataclass
class _Wave:
    jobs: list[tuple[Job, asyncio.Future]] = field(default_factory=list)
    items: int = 0
    started: asyncio.TimerHandle | None = None


class Waves:
    """The open waves of one process (one event loop). `grade(job)` returns the job's
    services.BatchResult, or raises what grading it alone would raise."""

    def __init__(self, *, at_edge: Edge, window: float, max_items: int, max_pending: int) -> None:
        self.at_edge = at_edge
        self.window = window
        self.max_items = max_items
        self.max_pending = max_pending
        self.pending = 0  # items admitted and not answered yet
        self.waves_run = 0  # waves graded (the tests and the benchmark read it)
        self._open: dict[Hashable, _Wave] = {}
        self._running: set[asyncio.Task] = set()

    async def grade(self, job: Job) -> services.BatchResult:
        size = len(job.items)
        if self.max_pending and self.pending + size > self.max_pending:
            raise Overloaded(self.pending, self.max_pending, retry_after=1)
        self.pending += size
        try:
            return await self._joined(job)
        finally:
            self.pending -= size

    def _joined(self, job: Job) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        key = job.key()
        wave = self._open.get(key)
        if wave is not None and wave.items + len(job.items) > self.max_items:
            self._start(key)
            wave = None
        if wave is None:
            wave = self._open[key] = _Wave()
            wave.started = loop.call_later(self.window, self._start, key)
        wave.jobs.append((job, future))
        wave.items += len(job.items)
        if wave.items >= self.max_items:
            self._start(key)
        return future

    def _start(self, key: Hashable) -> None:
        wave = self._open.pop(key, None)
        if wave is None:
            return
        if wave.started is not None:
            wave.started.cancel()
        task = asyncio.get_running_loop().create_task(self._settle(wave.jobs))
        self._running.add(task)  # a task nobody holds may be collected mid-flight
        task.add_done_callback(self._running.discard)

    async def _settle(self, jobs: list[tuple[Job, asyncio.Future]]) -> None:
        self.waves_run += 1
        try:
            results = await self._graded([job for job, _ in jobs])
        except (RefusedInput, quota.QuotaExceeded) as refused:
            if len(jobs) == 1:
                _set(jobs[0][1], error=refused)
                return
            # Someone's item or the quota refused the joined wave: each request alone.
            await asyncio.gather(*(self._settle([one]) for one in jobs))
            return
        except BaseException as failed:
            for _, future in jobs:
                _set(future, error=failed)
            if not isinstance(failed, Exception):
                raise
            return
        for (_, future), result in zip(jobs, results, strict=True):
            _set(future, result=result)

    async def _graded(self, jobs: list[Job]) -> list[services.BatchResult]:
        first = jobs[0]
        items = [item for job in jobs for item in job.items]
        prepared = await self.at_edge(
            services.prepare, **prepare_arguments(dataclasses.replace(first, items=items))
        )
        made: list[engine.CallResult] = (
            await calls.judged(prepared.misses) if prepared.misses else []
        )
        result = await self.at_edge(services.finish, prepared, made)
        return split(result, [len(job.items) for job in jobs])


def prepare_arguments(job: Job) -> dict[str, Any]:
    """The job as services.prepare's (and reward_batch's) keyword arguments."""
    return {f.name: getattr(job, f.name) for f in dataclasses.fields(job)}


def split(result: services.BatchResult, sizes: Sequence[int]) -> list[services.BatchResult]:
    """The wave's result cut back into its requests' results, in order."""
    parts = []
    start = 0
    for size in sizes:
        parts.append(services.BatchResult(result.batch, result.items[start : start + size]))
        start += size
    return parts


def _set(future: asyncio.Future, *, result: Any = None, error: BaseException | None = None):
    if future.done():  # its request was cancelled (the client went away)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
