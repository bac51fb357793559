"""Issue 12, item 10: each analytics page in 500 ms at 200,000 labelled items.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/analyticsbench \\
        .venv/bin/python -m bench.analytics_pages --dataset 1 --repeat 5

On the dataset's latest finished run (``bench.seed_scale --preset analytics``), prints:

1. **computed**: seconds per step of computing the figures from the items with the
   selectors, as every request did before the figures were kept and as a miss does now
   (`load_run`: the items counted in SQL; scores, PPI++, curve, panels, health);
2. **miss**: the kept figures deleted, then each part computed and kept (`figures.page`,
   `figures.queries`, `figures.health`: what the first request after a label change
   pays), and `figures.warm` (what the task run when a run ends does);
3. **same numbers**: the kept figures (read back from the database) compared with the
   computed ones (must be 0 differences);
4. **warm pages**: every analytics page and API answer through Django's test client
   (whole request: middleware, session, permissions, the cache read, the template), the
   median and worst of ``--repeat`` requests, and its ratio to the 500 ms bound;
5. **after a label** (``--after-label``): ``--repeat`` times, a human label written
   through the review service (the review revision moves), then the next analytics page
   and API answer (the kept figures of the earlier state, marked updating: no recompute in
   the request), then the refresh task run in this process until the fresh figures are
   kept; and the miss's cost with the resampling counts drawn afresh (as before they were
   kept per process) and with them kept.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.pg_cpu import backend_cpu_seconds

BOUND = 0.5


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def _server_cpu() -> float:
    """The PostgreSQL backend's CPU seconds so far, 0.0 when unknown (bench.pg_cpu)."""
    return backend_cpu_seconds() or 0.0


def _timed_cpu(fn):
    """Wall, this process's CPU and the PostgreSQL backend's CPU seconds."""
    start, cpu, server = time.perf_counter(), time.process_time(), _server_cpu()
    value = fn()
    return (
        value,
        time.perf_counter() - start,
        time.process_time() - cpu,
        _server_cpu() - server,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.analytics_pages")
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--run", type=int)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--user", default="bench-admin")
    parser.add_argument("--skip-old", action="store_true", help="skip the computed steps")
    parser.add_argument("--skip-miss", action="store_true", help="only the warm pages")
    parser.add_argument("--after-label", action="store_true", help="part 5 only")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Dataset
    from evaluation.analytics import figures, summaries
    from evaluation.analytics import selectors as sel
    from evaluation.kept.models import KeptFigure
    from evaluation.runs.selectors import choose_run, runs_of_system_answers

    dataset = Dataset.objects.get(pk=args.dataset)
    run = choose_run(dataset, args.run, runs_of_system_answers(dataset), or_newest=True)
    print(f"dataset {dataset.pk} ({dataset.name}), run {run.pk} ({run})")
    if args.after_label:
        return after_label(dataset, run, args)

    if not args.skip_old:
        print("\n1. computed from the items (the selectors: every request before, a miss now), s")
        data, t = _timed(lambda: sel.load_run(run))
        print(f"  load_run: {data.item_count:,} items, {data.labelled:,} labelled   {t:6.2f}")
        cells, t1 = _timed(lambda: summaries.system_scores(data))
        print(f"  system scores: {len(cells)} intervals                      {t1:6.2f}")
        calibrated, t2 = _timed(lambda: sel.calibrated_scores(data))
        print(f"  judge-only, human-only, PPI++                        {t2:6.2f}")
        human = sel.dataset_mean_overlap(dataset)
        curve, t3 = _timed(lambda: sel.complexity_curve(data, cells, human=human))
        print(f"  complexity curve                                     {t3:6.2f}")
        panels, t4 = _timed(lambda: sel.panel_calibration(data))
        print(f"  judge calibration ({len(panels)} panel options)              {t4:6.2f}")
        health, t5 = _timed(lambda: summaries.criterion_health(data))
        print(f"  criterion health ({len(health):,} criteria)               {t5:6.2f}")
        saturated, t6 = _timed(lambda: summaries.saturated(data))
        print(f"  saturation                                           {t6:6.2f}")
        total = t + t1 + t2 + t3 + t4 + t5 + t6
        print(f"  total                                                {total:6.2f}")

    kept = KeptFigure.objects.filter(dataset=dataset, kind="analytics", run_id=run.pk)
    if not args.skip_miss:
        print(
            "\n2. miss (kept figures deleted, then computed and kept): wall / Python CPU /"
            " PostgreSQL CPU seconds"
        )
        figures.warm(run)  # the run's token sums kept, as after the run ended
        for part in ("page", "queries", "health"):
            kept.delete()
            _, t, cpu, db = _timed_cpu(lambda part=part: getattr(figures, part)(run))
            print(f"  figures.{part}(run)   {t:6.2f} / {cpu:6.2f} / {db:6.2f}")
        kept.delete()
        _, t, cpu, db = _timed_cpu(lambda: figures.warm(run))
        print(
            f"  figures.warm(run) (every part, one load: the run_ended task)"
            f" {t:.2f} / {cpu:.2f} / {db:.2f}"
        )
    else:
        figures.warm(run)

    if not args.skip_old:
        page, queries = figures.page(run), figures.queries(run)
        diffs = sum(
            [
                page.cells != cells,
                page.calibrated != calibrated,
                [o.as_dict() for o in page.panels] != [o.as_dict() for o in panels],
                page.curve != curve,
                page.saturated != saturated,
                figures.health(run) != health,
                queries.of(None) != summaries.query_scores(data, None),
            ]
        )
        print(f"\n3. same numbers: {diffs} differences between kept and computed figures")

    client = Client(SERVER_NAME="localhost")
    client.force_login(get_user_model().objects.get(username=args.user))
    bucket = figures.page(run).curve.buckets[2].key
    pages = {
        "analytics page": reverse("dataset-analytics", args=[dataset.pk]),
        "analytics, a bucket drilled": reverse("dataset-analytics", args=[dataset.pk])
        + f"?bucket={bucket}",
        "complexity.csv": reverse("analytics-complexity-csv", args=[dataset.pk]),
        "complexity.svg": reverse("analytics-complexity-svg", args=[dataset.pk]),
        "compare page": reverse("analytics-compare", args=[dataset.pk]) + f"?a={run.pk}&b={run.pk}",
        "criterion health page": reverse("analytics-criteria", args=[dataset.pk]),
        "API analytics": reverse("api-evaluation:analytics", args=[dataset.pk]),
        "API compare": reverse("api-evaluation:analytics-compare", args=[dataset.pk])
        + f"?a={run.pk}&b={run.pk}",
        "API criterion health, first page": reverse(
            "api-evaluation:analytics-criteria", args=[dataset.pk]
        ),
        "API criterion health, page 400": reverse(
            "api-evaluation:analytics-criteria", args=[dataset.pk]
        )
        + "?page=400",
        "API criterion health, split, page 2": reverse(
            "api-evaluation:analytics-criteria", args=[dataset.pk]
        )
        + "?flag=split&page=2",
    }
    print(f"\n4. warm pages, {args.repeat} requests each: median / worst seconds, median/bound")
    for name, url in pages.items():
        times = []
        for _ in range(args.repeat):
            response, t = _timed(lambda url=url: client.get(url))
            assert response.status_code == 200, (name, response.status_code)
            times.append(t)
        median = statistics.median(times)
        print(f"  {name:40s} {median:6.3f} / {max(times):6.3f}   {median / BOUND:5.2f}")
    print(f"\nload average: {os.getloadavg()}")
    return 0


def after_label(dataset, run, args) -> int:
    """Part 5: what a reader pays after a label, and what the refresh costs."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from evaluation.analytics import figures
    from evaluation.analytics.tasks import refresh_analytics
    from evaluation.metrics import analytics as am
    from evaluation.review.services import label_set
    from evaluation.runs.models import Verdict

    user = get_user_model().objects.get(username=args.user)
    client = Client(SERVER_NAME="localhost")
    client.force_login(user)
    page = reverse("dataset-analytics", args=[dataset.pk])
    api = reverse("api-evaluation:analytics", args=[dataset.pk])
    figures.warm(run)  # fresh, as after the run ended
    items = Verdict.objects.filter(run=run).select_related("answer", "criterion")
    print("\n5. after a label: next page / next API answer (s, updating?), refresh task (s)")
    for n, verdict in enumerate(items.order_by("pk")[: args.repeat]):
        label_set(answer=verdict.answer, criterion=verdict.criterion, reviewer=user,
                  label="fail" if n % 2 else "pass")  # fmt: skip
        response, t_page = _timed(lambda: client.get(page))
        updating = b"figures-updating" in response.content
        answer, t_api = _timed(lambda: client.get(api))
        _, t_task = _timed(lambda: refresh_analytics(run.pk))
        fresh = figures.kept(run, "page") is not None
        print(
            f"  label {n + 1}: page {t_page:6.3f} ({response.status_code},"
            f" {'updating' if updating else 'FRESH?'}), API {t_api:6.3f}"
            f" ({answer.status_code}, updating={answer.json()['updating']},"
            f" {len(answer.content):,} bytes),"
            f" refresh {t_task:6.2f}, fresh kept: {fresh}"
        )
    print("\n   the miss (figures.warm, every part) with the resampling counts: wall / CPU s")
    for name, clear in (("drawn afresh (before)", True), ("kept (after)", False)):
        if clear:
            am._counts_cache.clear()
        _, t, cpu, db = _timed_cpu(lambda: figures.warm(run))
        print(f"  {name:24s} {t:6.2f} / {cpu:6.2f} / {db:6.2f}")
    print(f"\nload average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
