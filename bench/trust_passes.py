"""Issue 43, point 5: a nightly run with a judge canary and a stability pass adds only their
own judge calls, and the pages that show them read kept figures, at scale.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/bench_stability \\
        .venv/bin/python -m bench.seed_scale --preset full --seed 14
    DATABASE_URL=... .venv/bin/python -m bench.trust_passes --dataset 1

On the seeded dataset (its finished run R of three judges, about 1,000,000 verdicts with the
`full` preset, and its labelled items), with the panel's judges pointed at an in-process
loopback server (docs/loopback.md; every verdict "pass"):

1. a **night**: a run of the answers to the first `--night-queries` queries (none of them
   cached: the judges' address changed), beside it the **judge canary** of a fixed sample of
   `--canary-items` labelled items (schedules.services._start_canary, as a schedule with
   "Canary items" starts it), and a **stability pass** of R: `--pass-items` of its items
   graded `--k` times by its first judge (runs.stability_pass). Each run's tasks are done in
   this process, one after another, by the task body the worker runs
   (runs.lifecycle.run_task), and the loopback server counts the requests each one made.
   Printed per run: the calls planned (its estimate, made before it started), the calls the
   server received, their ratio (bound: 1.0, every call its own and none twice), and the
   calls the night's run would make alone (its estimate, which neither other run changes).
2. the **pages** at that size, as an admin sees them, once the kept figures they read are
   counted (what the warm-up's refresh tasks do, here in this process), each requested
   three times after a first request: R's run page (judge stability from the pass, the
   pass's section), `GET /api/runs/R/stability/`, the night run's page (its canary) and the
   Schedules page (a paused schedule with that canary: its items and calls a night):
   queries, median milliseconds, and whether a request counted the repeated calls (it must
   not: the figure is kept).

Prints one JSON object (docs/benchmarks.md, "Canary and stability pass at scale").
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("JUDGE_ALLOW_PRIVATE_NETWORK", "1")  # the loopback judge
    # Tasks are done here, never by a worker: their messages go to a folder nobody reads.
    os.environ["CELERY_BROKER_URL"] = "filesystem://"
    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="trust-passes-"))
    import django

    django.setup()


def _work(run, server) -> dict:
    """Do the run's tasks here; what it planned and what the server received."""
    from evaluation.runs import lifecycle
    from evaluation.runs.estimate import requests_made

    before = server.call_count
    started = time.perf_counter()
    for answer_id, judge_id in run.tasks.values_list("answer_id", "judge_id"):
        lifecycle.run_task(worker="bench", run_id=run.pk, answer_id=answer_id, judge_id=judge_id)
    run.refresh_from_db()
    received = server.call_count - before
    planned = run.estimate["calls"]
    return {
        "run": run.pk, "status": run.status, "verdicts": run.verdicts.count(),
        "planned_calls": planned, "calls_received": received,
        "requests_recorded": requests_made(run),
        "ratio_to_bound": round(received / planned, 4) if planned else None,
        "seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip


def _page(client, url: str, *, repeats: int = 3) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # the first request: whatever it reads is kept from here on
    times, queries, counted = [], 0, False
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as read:
            started = time.perf_counter()
            answer = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (url, answer.status_code)
        queries = len(read.captured_queries)
        counted |= any("HAVING count(*) >= 2" in q["sql"] for q in read.captured_queries)
    return {"url": url, "queries": queries, "median_ms": round(statistics.median(times), 1),
            "counted_repeats_in_request": counted}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trust_passes", description=__doc__)
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--night-queries", type=int, default=2)
    parser.add_argument("--canary-items", type=int, default=300)
    parser.add_argument("--pass-items", type=int, default=500)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args(argv)
    _setup()
    from django.conf import settings
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Dataset
    from evaluation.analytics import warmup
    from evaluation.analytics.tasks import refresh_analytics
    from evaluation.judges.models import Judge
    from evaluation.runs import services as runs
    from evaluation.runs import snapshot, stability_pass
    from evaluation.runs.models import Run
    from evaluation.runs.stability import run_stability
    from evaluation.schedules import services as schedules
    from evaluation.schedules.models import RunSchedule
    from loopback import LoopbackOpenAI

    settings.FIGURES_COLD_IN_REQUEST = False  # production's rule: pages never count cold
    settings.ALLOWED_HOSTS = ["*"]
    dataset = Dataset.objects.get(pk=args.dataset)
    measured = (
        Run.objects.filter(dataset=dataset, kind=Run.Kind.SYSTEMS, status__in=Run.FINISHED)
        .not_checks()
        .order_by("-expected")
        .first()
    )
    if measured is None:
        raise SystemExit(f"Dataset {dataset.pk} has no finished run of system answers.")
    members = snapshot.of(measured).members
    result: dict = {"dataset": dataset.pk, "run": measured.pk,
                    "run_verdicts": measured.expected, "judges": len(members)}  # fmt: skip
    with LoopbackOpenAI() as server:
        Judge.objects.filter(pk__in=[m.judge_id for m in members]).update(
            base_url=server.base_url, api_key_env="", rpm_limit=None, tpm_limit=None
        )
        queries = list(dataset.queries.order_by("pk").values_list("pk", flat=True))
        night = runs.run_create_and_start(
            dataset=dataset, panel=measured.panel, name="Bench night",
            queries=list(dataset.queries.filter(pk__in=queries[: args.night_queries])),
        )  # fmt: skip
        started = time.perf_counter()
        canary = schedules._start_canary(night, args.canary_items)
        result["canary_start_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        found = stability_pass.stability_pass_start(
            run=measured,
            asked=stability_pass.PassRequest(members[0].judge_id, args.k, args.pass_items),
        )
        result["pass_start_s"] = round(time.perf_counter() - started, 2)
        result["night"] = _work(night, server)
        result["canary"] = _work(canary, server)
        result["stability_pass"] = _work(found, server)
        result["calls_received"] = server.call_count
        result["calls_planned"] = sum(
            result[k]["planned_calls"] for k in ("night", "canary", "stability_pass")
        )
    started = time.perf_counter()
    for run in (measured, night, canary):  # what the warm-up's refresh tasks do
        for group in warmup.cold_groups(Run.objects.get(pk=run.pk)):
            refresh_analytics(run.pk, group)
    result["kept_figures_counted_s"] = round(time.perf_counter() - started, 1)
    figures = run_stability(measured)  # kept: from the pass
    result["stability"] = {"items": figures["items"], "flip_rate": figures["flips"]["rate"],
                           "kappa": figures["kappa"]}  # fmt: skip
    schedules.schedule_save(
        dataset=dataset, name="Bench night", system=night.verdicts.first().answer.system,
        panel=measured.panel, at=dt.time(2, 30), days="*", enabled=False, by=None,
        canary=True, canary_items=args.canary_items,
        schedule=RunSchedule.objects.filter(dataset=dataset, name="Bench night").first(),
    )  # fmt: skip
    client = Client()
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="bench-admin"))
    result["pages"] = [
        _page(client, reverse("run-detail", args=[measured.pk])),
        _page(client, f"/api/runs/{measured.pk}/stability/"),
        _page(client, reverse("run-detail", args=[night.pk])),
        _page(client, reverse("dataset-schedules", args=[dataset.pk])),
    ]
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
