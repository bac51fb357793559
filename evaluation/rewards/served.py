"""The reward routes as the rewards service serves them: Django async views under an ASGI
server (docs/operations.md#the-rewards-service), built for trainers' fan-in (a thousand
one-sample requests at once).

A request holds no thread and no database connection while its judges think. Its database
work runs at the edges, on one bounded thread pool (REWARDS_DB_THREADS threads, so at most
that many connections per process): first DRF's own steps of the route's view (the token,
the permission, the body read into a job: evaluation.rewards.api), then the wave's prepare
and finish (evaluation.rewards.waves). In between, the request awaits its shared wave on the
event loop. A process holding REWARDS_MAX_PENDING samples answers the next request 503
with Retry-After, which the trainers' retry loops honour (evaluation.rewards.trainers); so
does a request whose database is unreachable (a restart, a failover): nothing of it was
recorded, and asking again is safe.

The answer is the web processes' answer, byte for byte: the same view class writes it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from config import shared_lookups
from evaluation.rewards import api, waves

logger = logging.getLogger(__name__)

_edge: ThreadPoolExecutor | None = None
# Seconds a trainer waits before asking again when the database cannot be reached: about
# what a PostgreSQL restart or a PgBouncer reconnect takes.
DATABASE_RETRY_AFTER = 2
_waves: dict[asyncio.AbstractEventLoop, waves.Waves] = {}


def edge_threads() -> ThreadPoolExecutor:
    global _edge
    if _edge is None:
        _edge = ThreadPoolExecutor(
            max_workers=settings.REWARDS_DB_THREADS, thread_name_prefix="rewards-db"
        )
    return _edge


async def at_edge(work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`work` on the edge pool: the only place the rewards service touches the database."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        edge_threads(), functools.partial(_with_connection, work, args, kwargs)
    )


def _with_connection(work: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    # What Django does around a request: drop a connection that broke or outlived
    # DATABASE_CONN_MAX_AGE, before and after (these threads never see request signals).
    close_old_connections()
    try:
        return work(*args, **kwargs)
    finally:
        close_old_connections()


def current_waves() -> waves.Waves:
    """This event loop's waves (one per ASGI worker process)."""
    loop = asyncio.get_running_loop()
    found = _waves.get(loop)
    if found is None:
        for old in [other for other in _waves if other.is_closed()]:
            del _waves[old]
        found = _waves[loop] = waves.Waves(
            at_edge=at_edge,
            window=settings.REWARDS_WAVE_MS / 1000,
            max_items=settings.REWARDS_MAX_BATCH,
            max_pending=settings.REWARDS_MAX_PENDING,
        )
    return found


def _admitted(view_class: type[api._RewardView], request: HttpRequest):
    """DRF's steps of the route's view (authentication, permissions, content negotiation,
    the body read into a job), at the edge: (view, DRF request, job or refusal Response)."""
    view = view_class()
    view.args, view.kwargs = (), {}
    view.headers = view.default_response_headers
    view.format_kwarg = None
    drf_request = view.initialize_request(request)
    view.request = drf_request
    try:
        view.initial(drf_request)
        if request.method != "POST":  # as DRF's dispatch: after the caller is known
            raise exceptions.MethodNotAllowed(request.method)
        return view, drf_request, view.job(drf_request)
    except Exception as refused:
        answer = api.refused_response(refused)
        return view, drf_request, answer if answer is not None else view.handle_exception(refused)


# Requests admitted in one step at most: the first wave starts once they are in, so a few
# dozen keep the judges busy early while sharing the step's lookups.
ADMIT_AT_ONCE = 32


def _admitted_together(batch: list[tuple[type[api._RewardView], HttpRequest]]) -> list[Any]:
    """`_admitted` for each request of `batch`, in one step at the edge: the requests share
    their lookups (config/shared_lookups.py) and one connection check. Each entry is the
    request's (view, DRF request, job or refusal) or the exception its admission raised
    (a lost connection), which is that request's alone to answer."""
    admitted: list[Any] = []
    with shared_lookups.shared():
        for view_class, request in batch:
            try:
                admitted.append(_admitted(view_class, request))
            except Exception as failed:
                admitted.append(failed)
    return admitted


class Admissions:
    """The requests of one event loop waiting to be admitted: one edge step admits up to
    ADMIT_AT_ONCE of them, and the next step takes those that arrived meanwhile. A trainer's
    256 requests arriving together are so admitted in a few steps rather than 256, and the
    jobs of one step join one wave (evaluation.rewards.waves)."""

    def __init__(self) -> None:
        self._waiting: list[tuple[type[api._RewardView], HttpRequest, asyncio.Future]] = []
        self._draining: asyncio.Task | None = None

    async def admit(self, view_class: type[api._RewardView], request: HttpRequest):
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((view_class, request, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._waiting:
            batch = self._waiting[:ADMIT_AT_ONCE]
            del self._waiting[:ADMIT_AT_ONCE]
            try:
                results = await at_edge(
                    _admitted_together, [(view_class, request) for view_class, request, _ in batch]
                )
            except BaseException as failed:  # the edge itself failed: every request hears it
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(failed)
                if not isinstance(failed, Exception):  # cancelled: the loop is closing
                    raise
                continue
            for (_, _, future), result in zip(batch, results, strict=True):
                if future.done():  # its client went away
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


_admissions: dict[asyncio.AbstractEventLoop, Admissions] = {}


def current_admissions() -> Admissions:
    """This event loop's admissions (one per ASGI worker process)."""
    loop = asyncio.get_running_loop()
    found = _admissions.get(loop)
    if found is None:
        for old in [other for other in _admissions if other.is_closed()]:
            del _admissions[old]
        found = _admissions[loop] = Admissions()
    return found


def _rendered(view: api._RewardView, request: Request, response: Response) -> HttpResponse:
    """DRF's response rendered here, as a plain HttpResponse: Django would otherwise render
    it through its one thread for sync code, a queue at a thousand requests."""
    response = view.finalize_response(request, response)
    response.render()
    plain = HttpResponse(response.content, status=response.status_code)
    for name, value in response.items():
        plain[name] = value
    return plain


def served(view_class: type[api._RewardView]) -> Callable[..., Any]:
    """The async view of a reward route whose view class is `view_class`."""

    async def view(request: HttpRequest) -> HttpResponse:
        try:
            return await _answer(view_class, request)
        except (OperationalError, InterfaceError) as unreachable:
            # A lost connection, not a refused request: a 503 the trainers retry, rather
            # than a 500 their loops give up on. A write cut short rolled back whole.
            logger.warning("Rewards service: the database is unreachable: %s", unreachable)
            return _unavailable(
                "The reward service cannot reach its database: nothing was recorded; "
                "retry after the time in the Retry-After header.",
                DATABASE_RETRY_AFTER,
            )

    view.__name__ = f"served_{view_class.__name__}"
    return csrf_exempt(view)


async def _answer(view_class: type[api._RewardView], request: HttpRequest) -> HttpResponse:
    drf_view, drf_request, job = await current_admissions().admit(view_class, request)
    if isinstance(job, Response):
        return _rendered(drf_view, drf_request, job)
    try:
        result = await current_waves().grade(job)
    except waves.Overloaded as overloaded:
        return _unavailable(str(overloaded), overloaded.retry_after)
    except Exception as refused:  # a lost database connection is not one: view() answers
        response = api.refused_response(refused)
        if response is None:
            raise
    else:
        response = Response(drf_view.body(drf_request, result))
    return _rendered(drf_view, drf_request, response)


def _unavailable(detail: str, retry_after: int) -> HttpResponse:
    return JsonResponse(
        {"detail": detail, "retry_after": retry_after},
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(retry_after)},
    )
