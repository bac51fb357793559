"""/healthz: the database, the broker, a live worker and the scheduler, as JSON for probes
and as a page.

The worker check sends a real `ping` task and waits for its answer, so it proves a worker is
consuming the queue, not just that the broker accepts messages. The scheduler check reads
celery beat's heartbeat (evaluation/schedules/beat.py): a beat not seen fails the check only
while enabled schedules wait for it; with none it passes with a warning.

Who sees what: staff, or a probe sending `Authorization: Bearer <HEALTHZ_TOKEN>`, get every
check with its detail (broker address, database vendor, timings); anyone else gets the
overall status alone, computed from the database and the broker, never a worker ping, so an
anonymous visitor cannot queue tasks or learn the infrastructure. Results are cached for
HEALTHZ_CACHE_SECONDS, so a probe hammering the URL runs the checks a few times a minute.
"""

from __future__ import annotations

import hmac
import time
import uuid
from dataclasses import asdict, dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app as celery_app


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str
    ms: int
    warning: bool = False  # passes, but the detail names something to look at


class Warn(Exception):
    """Raised by a probe that passes with a warning; its message is the detail."""


def _timed(name: str, probe) -> CheckResult:
    started = time.monotonic()
    warning = False
    try:
        detail = probe()
        ok = True
    except Warn as warned:
        detail, ok, warning = str(warned), True, True
    except Exception as exc:  # a health check reports failures; it never raises
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return CheckResult(name, ok, detail, round((time.monotonic() - started) * 1000), warning)


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connection.vendor


def check_broker() -> str:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return conn.as_uri()  # as_uri() masks the password


def check_worker() -> str:
    from config.tasks import ping

    timeout = settings.HEALTHZ_WORKER_TIMEOUT
    token = uuid.uuid4().hex
    _forget_earlier_pings()
    # expires: if no worker takes it in time, a worker starting later drops it unanswered.
    result = ping.apply_async(args=[token], expires=timeout, queue=settings.HEALTHZ_PING_QUEUE)
    _remember_ping(result.id)
    try:
        answer = result.get(timeout=timeout, interval=0.1)
    finally:
        result.forget()
    if answer != token:
        raise RuntimeError(f"worker answered {answer!r}, expected the token sent")
    return "a worker answered the ping"


def check_scheduler() -> str:
    from evaluation.schedules import beat

    found = beat.state()
    seen = f"celery beat {found.describe()}"
    if found.seen:
        return seen
    waiting = beat.enabled_schedules()
    if not waiting:
        raise Warn(f"{seen}; no enabled schedule needs it")
    raise RuntimeError(
        f"{seen}: {waiting} enabled schedule{'' if waiting == 1 else 's'} will not fire;"
        " run one `celery -A config beat`"
    )


PINGS_KEY = "healthz:pings"


def _remember_ping(task_id: str) -> None:
    cache.set(PINGS_KEY, [*cache.get(PINGS_KEY, [])[-20:], task_id], 3600)


def _forget_earlier_pings() -> None:
    """A ping no worker took in time is marked REVOKED by the worker that finds it later,
    after we forgot it: forget those rows now, so a down worker leaves no lasting trace."""
    from celery.result import AsyncResult

    for task_id in cache.get(PINGS_KEY, []):
        AsyncResult(task_id, app=celery_app).forget()
    cache.set(PINGS_KEY, [], 3600)


def run_checks(*, worker: bool = True) -> list[CheckResult]:
    """The database and the broker; with `worker` (the detailed checks) also the worker and
    the scheduler."""
    results = [_timed("database", check_database), _timed("broker", check_broker)]
    if not worker:
        return results
    if results[1].ok:
        results.append(_timed("worker", check_worker))
    else:
        results.append(CheckResult("worker", False, "skipped: the broker is unreachable", 0))
    if results[0].ok:
        results.append(_timed("scheduler", check_scheduler))
    else:
        results.append(CheckResult("scheduler", False, "skipped: the database is unreachable", 0))
    return results


def cached_checks(*, worker: bool) -> list[CheckResult]:
    """The checks, run at most once per HEALTHZ_CACHE_SECONDS for each kind of caller."""
    key = f"healthz:results:{'full' if worker else 'basic'}"
    results = cache.get(key)
    if results is None:
        results = run_checks(worker=worker)
        if settings.HEALTHZ_CACHE_SECONDS > 0:
            cache.set(key, results, settings.HEALTHZ_CACHE_SECONDS)
    return results


def may_see_detail(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    token = settings.HEALTHZ_TOKEN
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return bool(token) and hmac.compare_digest(sent.encode(), token.encode())


@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    detail = may_see_detail(request)
    results = cached_checks(worker=detail)
    healthy = all(r.ok for r in results)
    status = 200 if healthy else 503
    if "text/html" in request.headers.get("Accept", ""):
        warned = healthy and detail and any(r.warning for r in results)
        context = {"results": results if detail else [], "healthy": healthy, "detail": detail,
                   "warned": warned}  # fmt: skip
        return render(request, "health.html", context, status=status)
    body: dict[str, object] = {"status": "ok" if healthy else "fail"}
    if detail:
        body["checks"] = {r.name: asdict(r) for r in results}
    return JsonResponse(body, status=status)


@never_cache
@require_GET
def livez(request: HttpRequest) -> HttpResponse:
    """The web process answers: for a liveness probe that must not restart web servers when
    the database, the broker or the workers are down (that is /healthz's business)."""
    return JsonResponse({"status": "ok"})
