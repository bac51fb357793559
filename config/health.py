"""/healthz: the database, the broker and a live worker, as JSON for probes and as a page.

The worker check sends a real `ping` task and waits for its answer, so it proves a worker is
consuming the queue, not just that the broker accepts messages.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass

from django.conf import settings
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


def _timed(name: str, probe) -> CheckResult:
    started = time.monotonic()
    try:
        detail = probe()
        ok = True
    except Exception as exc:  # a health check reports failures; it never raises
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return CheckResult(name, ok, detail, round((time.monotonic() - started) * 1000))


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
    from evaluation.tasks import ping

    timeout = settings.HEALTHZ_WORKER_TIMEOUT
    token = uuid.uuid4().hex
    # expires: if no worker takes it in time, a worker starting later drops it unanswered.
    result = ping.apply_async(args=[token], expires=timeout, queue=settings.HEALTHZ_PING_QUEUE)
    try:
        answer = result.get(timeout=timeout, interval=0.1)
    finally:
        result.forget()
    if answer != token:
        raise RuntimeError(f"worker answered {answer!r}, expected the token sent")
    return "a worker answered the ping"


def run_checks() -> list[CheckResult]:
    results = [_timed("database", check_database), _timed("broker", check_broker)]
    if results[1].ok:
        results.append(_timed("worker", check_worker))
    else:
        results.append(CheckResult("worker", False, "skipped: the broker is unreachable", 0))
    return results


@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    results = run_checks()
    healthy = all(r.ok for r in results)
    status = 200 if healthy else 503
    if "text/html" in request.headers.get("Accept", ""):
        context = {"results": results, "healthy": healthy}
        return render(request, "health.html", context, status=status)
    body = {"status": "ok" if healthy else "fail", "checks": {r.name: asdict(r) for r in results}}
    return JsonResponse(body, status=status)


@never_cache
@require_GET
def livez(request: HttpRequest) -> HttpResponse:
    """The web process answers: for a liveness probe that must not restart web servers when
    the database, the broker or the workers are down (that is /healthz's business)."""
    return JsonResponse({"status": "ok"})
