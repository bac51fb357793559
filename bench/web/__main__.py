"""The pages at scale: the real server (gunicorn, several workers) on the seeded PostgreSQL
and Redis, loaded by locust (headless, a bounded number of requests, 127.0.0.1 only).

    export DATABASE_URL=postgresql://postgres@127.0.0.1:5432/wt14scale
    export CELERY_BROKER_URL=redis://127.0.0.1:6379/8
    .venv/bin/python -m bench.web --dataset 4 --agreement-dataset 3 \\
        --workers 4 --users 20 --requests 3000
    .venv/bin/python -m bench.web --dataset 4 --probe 3     # one user, N requests per page
    .venv/bin/python -m bench.web --dataset 4 --users 20 --labellers 5 --run-time 120 \\
        --run-verdicts 12000 --check --json mixed.json      # readers, reviewers and a run

Prints, per page: requests, failures, p50 / p95 / p99 in ms, requests/s, the target and
p95 / target; and the largest resident memory of a web worker. With --labellers K, K of the
users are reviewers who label a criterion every 3 s, each at its own phase, and now and
then adjudicate (per write: the same figures, target 200 ms for a label, 500 ms for an
adjudication), and measure how long a label takes to show in the agreement API and in the
labelling queue. With
--run-verdicts N a real judge run (Celery worker, loopback judges) writes about N verdicts
during the load (bench/web/judge_run.py). The figures are counted from the moment every
user has signed in (twenty sign-ins at once are a burst of password hashing no working team
makes; their own p50 is printed apart), for --run-time seconds. --check compares, after
the load, the figures served with a recount (bench/web/check.py); --lock-waits samples
which statements wait for which in PostgreSQL during it (bench/web/lock_waits.py). The
server runs with the project's settings (config/gunicorn.py). Needs the bench extra
(locust) and a database seeded by ``python -m bench.seed_scale``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path

from bench.web.judge_run import NAME as RUN_NAME
from bench.web.judge_run import JudgeRun, lower_priority, priority
from bench.web.lock_waits import LockWaits, django_conninfo, print_lock_waits

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EDITOR_TARGET_MS, LIST_TARGET_MS = 200, 500
MEMORY_TARGET_MB = 300
LABEL_TARGET_MS, ADJUDICATE_TARGET_MS = 200, 500
LABEL_POLL_TIMEOUT_S = 60  # a label not visible by then is counted as not visible
SIGN_IN_ALLOWANCE_S = 120  # at most, for every user to sign in before the measured window


def pages(dataset: int, agreement_dataset: int | None) -> list[tuple[str, str, int, int]]:
    """(name, URL, weight, target ms) of the pages people use most, with ids from the data."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from annotation.models import Checklist, Query
    from evaluation.labels.models import HumanLabel
    from evaluation.runs.models import Run

    run = (
        Run.objects.filter(dataset=dataset, status=Run.Status.DONE)
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
        .exclude(name=RUN_NAME)  # --run-verdicts --keep-run: a small run, not the seeded one
        .order_by("-finished_at", "-pk")
        .first()
    )
    label = HumanLabel.objects.filter(answer__query__dataset=dataset).order_by("pk").first()
    query = Query.objects.filter(dataset=dataset).order_by("pk").first()
    checklist = Checklist.objects.filter(query=query).order_by("pk").first()
    answer = label.answer_id
    d, r = dataset, run.pk
    result = [
        ("dataset list", "/", 3, LIST_TARGET_MS),
        ("query list", f"/datasets/{d}/", 3, LIST_TARGET_MS),
        ("query list, page 40", f"/datasets/{d}/?page=40", 1, LIST_TARGET_MS),
        ("query page", f"/queries/{query.pk}/", 2, LIST_TARGET_MS),
        ("checklist editor", f"/checklists/{checklist.pk}/", 3, EDITOR_TARGET_MS),
        ("review page", f"/answers/{answer}/review/", 4, EDITOR_TARGET_MS),
        ("labelling queue", f"/datasets/{d}/review/?queue=labelling", 2, LIST_TARGET_MS),
        ("disagreement queue", f"/datasets/{d}/review/?queue=disagreement", 2, LIST_TARGET_MS),
        ("runs list", f"/datasets/{d}/runs/", 1, LIST_TARGET_MS),
        ("run page", f"/runs/{r}/", 2, LIST_TARGET_MS),
        ("run answer", f"/runs/{r}/answers/{answer}/", 1, LIST_TARGET_MS),
        # Issue 40: every answer listed, and searched (the seeded texts share their words, so
        # a search matches many and the trigram index has work to do), and one answer.
        ("answers list", f"/datasets/{d}/answers/", 1, LIST_TARGET_MS),
        (
            "answers list, searched",
            f"/datasets/{d}/answers/?q=revenue&labelled=yes",
            1,
            LIST_TARGET_MS,
        ),
        ("answer page", f"/answers/{answer}/", 1, LIST_TARGET_MS),
        # Issue 42: two systems of the seeded run side by side, a page of five queries with
        # both answers and every criterion's outcome, and filtered by score difference (the
        # seeded systems differ by 0.14 at most: 0.05 keeps about a fifth of the 556 queries).
        ("side by side", f"/datasets/{d}/side-by-side/?a={r}&b={r}", 1, LIST_TARGET_MS),
        (
            "side by side filtered",
            f"/datasets/{d}/side-by-side/?a={r}&b={r}&min_difference=0.05&sort=regressions",
            1,
            LIST_TARGET_MS,
        ),
        # Issue 44: the analytics page with its score trend across the panel's runs (30 at
        # the month preset), and the trend alone through the API.
        ("analytics", f"/datasets/{d}/analytics/?run={r}", 1, LIST_TARGET_MS),
        ("API score trend", f"/api/datasets/{d}/analytics/trend/?run={r}", 1, LIST_TARGET_MS),
        ("agreement", f"/datasets/{d}/agreement/", 2, LIST_TARGET_MS),
        ("agreement items", f"/datasets/{d}/agreement/items/?figure=panel", 1, LIST_TARGET_MS),
        ("cross-evaluation", f"/datasets/{d}/cross-evaluation/", 1, LIST_TARGET_MS),
        ("query overlaps", f"/queries/{query.pk}/overlaps/", 1, LIST_TARGET_MS),
        ("API agreement", f"/api/agreement/?dataset={d}", 1, LIST_TARGET_MS),
        ("API queries", f"/api/queries/?dataset={d}", 1, LIST_TARGET_MS),
        ("API answers", f"/api/answers/?query__dataset={d}", 1, LIST_TARGET_MS),
        ("API verdicts", f"/api/verdicts/?run={r}", 1, LIST_TARGET_MS),
        ("API labels", f"/api/labels/?dataset={d}", 1, LIST_TARGET_MS),
        ("API run scores", f"/api/runs/{r}/scores/", 1, LIST_TARGET_MS),
        ("API review queue", f"/api/review-queue/?dataset={d}", 1, LIST_TARGET_MS),
        ("API side by side", f"/api/datasets/{d}/side-by-side/?a={r}&b={r}", 1, LIST_TARGET_MS),
    ]
    if agreement_dataset:
        result.append(
            ("API agreement, 200k items", f"/api/agreement/?dataset={agreement_dataset}", 1,
             LIST_TARGET_MS)
        )  # fmt: skip
    return result


def server_env(static_root: str) -> dict[str, str]:
    return {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-web-not-secret"),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "STATIC_ROOT": static_root,
        "DATABASE_CONN_MAX_AGE": "600",
    }


class Server:
    def __init__(self, port: int, workers: int, env: dict[str, str], threads: int = 0) -> None:
        self.port, self.workers, self.env, self.threads = port, workers, env, threads
        self.process: subprocess.Popen | None = None
        self.peak_rss_mb = 0.0
        self._stop = threading.Event()

    def __enter__(self) -> Server:
        self.process = subprocess.Popen(
            [str(BIN / "gunicorn"), "config.wsgi:application", "-c", "python:config.gunicorn",
             "--bind",
             f"127.0.0.1:{self.port}", "--workers", str(self.workers), "--timeout", "300",
             "--graceful-timeout", "10", "--log-level", "warning",
             # More than one: gunicorn's gthread workers (a request waiting on PostgreSQL
             # leaves its process to another); none given: the project's settings.
             *(["--threads", str(self.threads)] if self.threads else [])],
            cwd=ROOT, env=self.env, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/livez", timeout=2)
                break
            except OSError:  # refused, reset or timed out while the workers start
                time.sleep(0.3)
        else:
            os.killpg(self.process.pid, signal.SIGTERM)
            raise SystemExit("gunicorn did not answer /livez within 120 s")
        threading.Thread(target=self._watch, daemon=True).start()
        return self

    def _children(self) -> list[int]:
        found = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False
        )
        return [int(p) for p in found.stdout.split()]

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            for pid in self._children():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                rss = re.search(r"VmRSS:\s+(\d+) kB", status)
                if rss:
                    self.peak_rss_mb = max(self.peak_rss_mb, int(rss.group(1)) / 1024)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:  # a worker still busy on a slow request
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)


def probe(port: int, page_list, times: int, timeout: float) -> list[dict]:
    """One user, pages one after the other: `times` requests each."""
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = f"http://127.0.0.1:{port}"
    form = opener.open(f"{base}/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    body = urllib.parse.urlencode(
        {"username": "bench-admin", "password": "bench-password",
         "csrfmiddlewaretoken": token}
    ).encode()  # fmt: skip
    request = urllib.request.Request(
        f"{base}/accounts/login/", data=body, headers={"Referer": f"{base}/accounts/login/"}
    )
    opener.open(request).read()
    rows = []
    for name, url, _weight, target in page_list:
        samples, status = [], 0
        for _ in range(times):
            started = time.perf_counter()
            try:
                with opener.open(f"{base}{url}", timeout=timeout) as response:
                    response.read()
                    status = response.status
            except urllib.error.HTTPError as error:
                status = error.code
            except TimeoutError:
                status = "timeout"
            samples.append((time.perf_counter() - started) * 1000)
            if status == "timeout":
                break
        samples.sort()
        rows.append({"page": name, "status": status, "best": samples[0],
                     "median": samples[len(samples) // 2], "target": target})  # fmt: skip
        print(f"{name:28} {status!s:>7} best {samples[0]:9.0f} ms  median "
              f"{samples[len(samples) // 2]:9.0f} ms  target {target} ms", flush=True)  # fmt: skip
    return rows


# Requests of the labellers (--labellers), by the request name the locustfile gives them.
LABELLER_PAGES = {
    "(labeller) labelling queue": LIST_TARGET_MS,
    "(labeller) review page": EDITOR_TARGET_MS,
    "(labeller) disagreement queue": LIST_TARGET_MS,
}  # a labeller reads the agreement API once, before the window opens: not reported
WRITES = {"POST label": LABEL_TARGET_MS, "POST adjudicate": ADJUDICATE_TARGET_MS}
POLLS = ("(poll) API agreement", "(poll) labelling queue")


def labeller_accounts(dataset_id: int) -> list[str]:
    """The seeded reviewers (bench.seed_scale) who may review the dataset, in order."""
    from django.contrib.auth import get_user_model

    from annotation import roles
    from annotation.access import dataset_permissions
    from annotation.models import Dataset
    from bench.seed_scale import RATERS

    dataset = Dataset.objects.get(pk=dataset_id)
    users = get_user_model().objects.filter(username__in=[*RATERS, "bench-reviewer"])
    found = {u.get_username(): u for u in users}
    return [
        name
        for name in (*RATERS, "bench-reviewer")
        if name in found and roles.REVIEW in dataset_permissions(found[name], dataset)
    ]


def load(port: int, page_list, args, out: Path, accounts: list[str]) -> dict:
    """Run locust; returns the figures of every request name by group, and what the
    labellers collected (adjudication outcomes, label-to-visible latencies)."""
    collected = out.with_name("locust.json")
    env = {
        **os.environ,
        "BENCH_WEB_PAGES": json.dumps([[n, u, w] for n, u, w, _t in page_list]),
        "BENCH_WEB_REQUESTS": str(args.requests),
        "BENCH_WEB_DATASET": str(args.dataset),
        "BENCH_WEB_LABELLERS": str(args.labellers),
        "BENCH_WEB_ACCOUNTS": json.dumps(accounts),
        "BENCH_WEB_RESULTS": str(collected),
        "BENCH_WEB_POLL_TIMEOUT": str(LABEL_POLL_TIMEOUT_S),
        "BENCH_WEB_USERS": str(args.users),
        "BENCH_WEB_RUN_TIME": str(args.run_time),
        # The locustfile imports bench.web.resend: locust puts only its own folder on the path.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    # The locustfile ends the measured window --run-time seconds after the last sign-in;
    # locust's own limit only stops a load whose users never all signed in.
    subprocess.run(
        [str(BIN / "locust"), "-f", str(Path(__file__).with_name("locustfile.py")),
         "--headless", "-u", str(args.users), "-r", str(args.users),
         "--run-time", f"{args.run_time + SIGN_IN_ALLOWANCE_S}s",
         "--host", f"http://127.0.0.1:{port}",
         "--only-summary", "--loglevel", "WARNING", "--stop-timeout", "60"],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    if not collected.exists():
        raise SystemExit("locust wrote no results: see its output above")
    labellers = json.loads(collected.read_text())
    stats = labellers.pop("statistics")

    def rows(names: dict[str, int | None]) -> list[dict]:
        return [
            {"page": name, **{k: v for k, v in found.items() if k != "method"},
             "target": target}
            for name, target in names.items()
            if (found := stats.get(name)) is not None
        ]  # fmt: skip

    started, stopped = labellers.get("started"), labellers.get("stopped")
    return {
        "pages": rows({n: t for n, _u, _w, t in page_list}),
        "labeller_pages": rows(LABELLER_PAGES),
        "writes": rows(WRITES),
        "polls": rows(dict.fromkeys(POLLS)),
        "failures": labellers.pop("failures"),
        "labellers": labellers,
        "duration_s": stopped - started if started and stopped else None,
        "sign_in": labellers.pop("sign_in", None),
        "client_lag_ms": lag_figures(labellers.pop("client_lag_ms", [])),
        "sent_again": labellers.pop("sent_again", 0),
    }


def lock_sampler(args: argparse.Namespace) -> LockWaits | None:
    """`--lock-waits`: the sampler, on PostgreSQL; None without the option."""
    if not args.lock_waits:
        return None
    conninfo = django_conninfo()
    if conninfo is None:
        raise SystemExit("--lock-waits: the database is not PostgreSQL.")
    return LockWaits(conninfo)


def vacuum_if_nobody_does() -> bool:
    """VACUUM (ANALYZE) the database when autovacuum is off (this machine's PostgreSQL has it
    off for CI), as autovacuum would have between two loads: each load with a run deletes
    its ~45,000 verdicts, and labels rewrite kept queue rows, so dead rows piled up from one
    load to the next (350,000 in each table after eight loads) and slowed the later ones'
    pages (p50 110-120 ms where a vacuumed database gave 80-85). True when it vacuumed."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        if cursor.fetchone()[0] == "on":
            return False
        cursor.execute("VACUUM (ANALYZE)")
    return True


def lag_figures(lags: list[float]) -> dict:
    return {"samples": len(lags), **{f"p{round(share * 100)}": percentile(lags, share)
                                     for share in (0.5, 0.95, 0.99)},
            "max": max(lags, default=None)}  # fmt: skip


def percentile(values: list[float], share: float) -> float | None:
    """Nearest rank."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def visible_figures(labellers: dict) -> dict:
    result = {}
    for kind in ("agreement", "queue"):
        values = labellers.get("visible", {}).get(kind, [])
        result[kind] = {
            "measured": len(values), "p50": percentile(values, 0.5),
            "p95": percentile(values, 0.95), "max": max(values, default=None),
            "not_visible": labellers.get("not_visible", {}).get(kind, 0),
            "skipped": labellers.get("skipped", {}).get(kind, 0),
        }  # fmt: skip
    return result


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def print_rows(title: str, rows: list[dict]) -> None:
    if not rows:
        return
    print(f"\n{title:30} {'n':>5} {'fail':>4} {'p50':>7} {'p95':>7} {'p99':>7} "
          f"{'req/s':>6} {'target':>6} {'p95/target':>10}")  # fmt: skip
    for row in rows:
        target = row["target"]
        ratio = f"{row['p95'] / target:10.2f}" if target else f"{'-':>10}"
        print(f"{row['page']:30} {row['requests']:5} {row['failures']:4} "
              f"{row['p50']:7.0f} {row['p95']:7.0f} {row['p99']:7.0f} "
              f"{row['rps']:6.2f} {target or '-':>6} {ratio}")  # fmt: skip


def print_load(result: dict, args) -> None:
    print_rows("page", result["pages"])
    print_rows("labeller page", result["labeller_pages"])
    print_rows("write", result["writes"])
    print_rows("latency poll (no target)", result["polls"])
    labellers = result["labellers"]
    if args.labellers:
        labels = labellers.get("labels", {})
        decided = labellers.get("adjudications", {})
        print(f"\nlabels: {labels.get('saved', 0)} saved, {labels.get('failed', 0)} failed; "
              f"adjudications: {decided.get('saved', 0)} saved, {decided.get('conflicts', 0)} "
              f"conflicts (someone decided first: not failures), {decided.get('failed', 0)} "
              f"failed, {decided.get('skipped', 0)} not attempted (no item)")  # fmt: skip
        print("label to visible (ms from the label POST's answer to the first read that shows "
              "it; every 5th label):")  # fmt: skip
        where = {
            "agreement": f"GET /api/agreement/?dataset={args.dataset}: the rater's labels",
            "queue": "labelling queue page filtered to the answer: its label count",
        }
        for kind, v in result["visible"].items():
            print(f"  {kind:9} {v['measured']:4} measured  p50 {_ms(v['p50']):>6}  p95 "
                  f"{_ms(v['p95']):>6}  max {_ms(v['max']):>6}  not visible within "
                  f"{LABEL_POLL_TIMEOUT_S} s: {v['not_visible']}  skipped: {v['skipped']}  "
                  f"({where[kind]})")  # fmt: skip
    for failure in result["failures"][:8]:
        print(f"failure: {failure['request']}: {failure['error'][:120]} × {failure['count']}")
    duration = result.get("duration_s")
    lasted = "-" if duration is None else f"{duration:.0f}"
    print(f"\nrequests counted for --requests: {labellers.get('requests_counted', '-')} "
          f"(limit {args.requests}); measured for about {lasted} s from the last sign-in "
          f"(--run-time {args.run_time})")  # fmt: skip
    print(f"sent again once, the server having closed the kept-alive connection as they "
          f"left (as a browser does; not failures): {result['sent_again']}")  # fmt: skip
    if (lag := result["client_lag_ms"])["samples"]:
        print(f"load generator's own lag (a 10 ms sleep woken late by): p50 {lag['p50']} ms, "
              f"p95 {lag['p95']} ms, p99 {lag['p99']} ms, max {lag['max']} ms")  # fmt: skip
    if sign_in := result.get("sign_in"):
        print(f"sign-ins before it (not in the figures above): {sign_in['requests']}, p50 "
              f"{_ms(sign_in['p50'])} ms, max {_ms(sign_in['max'])} ms")  # fmt: skip


def print_run(run: dict) -> None:
    state = "finished" if run["finished"] else f"not finished ({run['status']})"
    took = f" in {run['finished_s']:.1f} s" if run["finished_s"] is not None else ""
    print(f"\njudge run {run['run']}: {run['queries']} queries, {run['expected']} verdicts "
          f"expected, latency {run['latency_s'] * 1000:.0f} ms, C {run['concurrency']} "
          f"({run['threads']} worker threads)")  # fmt: skip
    print(f"judge run: {run['verdicts_during_load']} verdicts during the load, "
          f"{run['verdicts_per_s_during_load']:.1f} verdicts/s; {run['verdicts']} in all; "
          f"{state}{took}; loopback calls {run['loopback'].get('calls', '-')}"
          f"{'; run deleted' if run['deleted'] else ''}")  # fmt: skip


def print_check(result: dict) -> None:
    print("\ncheck (figures served now vs recounted with nothing kept; 0 differences expected):")
    for name, found in result.items():
        if "now" in found:
            extra = f" (now {found['now']}, recounted {found['recounted']})"
        elif "items_now" in found:
            extra = f" items ({found['items_now']} now, {found['items_recounted']} recounted)"
        else:
            extra = " figures"
        print(f"  {name:26} {found['differences']} differences of {found['compared']}{extra}")
        for example in found["examples"]:
            print(f"    {example}")


@contextmanager
def app_worker(env: dict[str, str], args):
    """A Celery worker on the web server's queue, for the app's own tasks (a refresh of the
    run scores or analytics queued by a reader who found them updating), one process as a
    small production has: without it those refreshes would never run during the load."""
    if args.no_app_worker:
        yield None
        return
    # Refresh markers left by an earlier bench (its worker and queue are gone) would keep
    # this run's readers from queueing any refresh for their 3-minute timeout.
    from evaluation.kept.models import KeptRefresh

    KeptRefresh.objects.filter(error="").delete()
    from bench.judge_throughput import processes

    worker = processes.WorkerProcess(queue=env["CELERY_QUEUE"], threads=1, env=env).start()
    # Below the web, as operations.md has workers that share the web's machine run: a
    # refresh (seconds of numpy and SQL) otherwise takes a whole core from the pages.
    lower_priority(worker.pid, args.worker_nice)
    try:
        yield AppWorker(worker)
    finally:
        worker.stop()


class AppWorker:
    def __init__(self, worker) -> None:
        self.worker = worker

    def summary(self) -> dict:
        """Tasks the worker finished, by name, and the refreshes by group with the seconds
        they took in all (warm-up included), from its log."""
        done: dict[str, int] = {}
        groups: dict[str, list] = {}
        for line in self.worker.log().splitlines():
            found = re.search(r"Task ([\w.]+)\[[^]]+\] succeeded", line)
            if found:
                done[found.group(1)] = done.get(found.group(1), 0) + 1
            refreshed = re.search(r"Refreshed run \d+ \(([^)]+)\) in ([\d.]+) s", line)
            if refreshed:
                count, seconds = groups.get(refreshed.group(1), (0, 0.0))
                groups[refreshed.group(1)] = [count + 1, round(seconds + float(refreshed[2]), 2)]
        return {"tasks succeeded": done, "refreshes (count, seconds) by group": groups}


def page_names(values: list[str], known: set[str]) -> set[str]:
    """The page names --only or --skip gave: each value a page's whole name (some hold a
    comma: "answers list, searched") or names separated by commas. A name no page has
    stops the benchmark, naming it, rather than measuring something else than asked."""
    names: set[str] = set()
    for value in values:
        parts = [value.strip()] if value.strip() in known else value.split(",")
        names |= {n.strip() for n in parts if n.strip()}
    unknown = sorted(names - known)
    if unknown:
        raise SystemExit(f"No such page: {', '.join(unknown)}. Pages: {', '.join(sorted(known))}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.web", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--dataset", type=int, required=True, help="the full preset's dataset")
    parser.add_argument("--agreement-dataset", type=int, help="the 200,000-item preset's")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0,
                        help="per worker; default: config/gunicorn.py's (2)")  # fmt: skip
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--labellers", type=int, default=0,
                        help="of the users, how many label and adjudicate")  # fmt: skip
    parser.add_argument("--requests", type=int, default=3000,
                        help="end the load after N requests (polls not counted)")  # fmt: skip
    parser.add_argument("--run-time", type=int, default=600, help="seconds, at most")
    parser.add_argument("--run-verdicts", type=int, default=0,
                        help="a judge run writing about N verdicts during the load")  # fmt: skip
    parser.add_argument("--run-nice", type=priority, default=10,
                        help="the judge run's worker and server at this nice value, or "
                             "'idle' (SCHED_IDLE)")  # fmt: skip
    parser.add_argument("--keep-run", action="store_true",
                        help="keep the judge run afterwards (default: delete it)")  # fmt: skip
    parser.add_argument("--worker-nice", type=int, default=10,
                        help="the app's worker (figure refreshes) at this nice value")  # fmt: skip
    parser.add_argument("--no-app-worker", action="store_true",
                        help="no Celery worker for the app tasks (refreshes)")  # fmt: skip
    parser.add_argument("--no-vacuum", action="store_true",
                        help="skip the VACUUM (ANALYZE) done where autovacuum is off")  # fmt: skip
    parser.add_argument(
        "--lock-waits",
        action="store_true",
        help="sample PostgreSQL's lock waits during the load (lock_waits.py)",
    )
    parser.add_argument("--check", action="store_true",
                        help="after the load: served figures and queues vs a recount")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write every result to this file")
    parser.add_argument("--port", type=int, default=8614)
    parser.add_argument("--probe", type=int, default=0, help="one user, N requests per page")
    parser.add_argument("--timeout", type=float, default=120.0, help="probe: per request, s")
    parser.add_argument("--only", action="append", default=[],
                        help="page names, comma-separated or the option repeated (a "
                             "name with a comma, 'answers list, searched', whole)")  # fmt: skip
    parser.add_argument("--skip", action="append", default=[],
                        help="page names to leave out, as --only takes them")  # fmt: skip
    args = parser.parse_args(argv)
    if not 0 <= args.labellers <= args.users:
        parser.error("--labellers is between 0 and --users")
    # A SIGTERM ends the run like Ctrl-C: the server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    queue = f"bench-web-{os.getpid()}"
    if args.run_verdicts:
        # The run's tasks go to the default queue: this worker's, named before Django reads
        # its settings (in pages()); the web server keeps its own.
        os.environ["CELERY_QUEUE"] = queue
    page_list = pages(args.dataset, args.agreement_dataset)
    known = {p[0] for p in page_list}
    if args.only:
        wanted = page_names(args.only, known)
        page_list = [p for p in page_list if p[0] in wanted]
    if args.skip:
        unwanted = page_names(args.skip, known)
        page_list = [p for p in page_list if p[0] not in unwanted]
    accounts = labeller_accounts(args.dataset) if args.labellers else []
    if args.labellers and not accounts:
        raise SystemExit("--labellers: none of the seeded reviewers may review the dataset.")
    report: dict = {"command": " ".join(sys.argv), "options": {
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}  # fmt: skip
    judge = None
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        env = server_env(str(Path(tmp) / "static"))
        # The web server's tasks (the refreshes of figures served while updating) go to a
        # queue of this run's own, which a worker consumes as in production.
        env["CELERY_QUEUE"] = f"bench-web-app-{os.getpid()}"
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        if not args.no_vacuum and vacuum_if_nobody_does():
            print("autovacuum is off on this server: VACUUM (ANALYZE) done before the load",
                  flush=True)  # fmt: skip
        before = os.getloadavg()
        print(f"load average before: {before}", flush=True)
        if accounts:
            print(f"labellers log in as: {', '.join(accounts)} (in turn)", flush=True)
        server = Server(args.port, args.workers, env, args.threads)
        with server, app_worker(env, args) as worker:
            if args.probe:
                report["probe"] = probe(args.port, page_list, args.probe, args.timeout)
            else:
                if args.run_verdicts:
                    judge = JudgeRun(dataset_id=args.dataset, verdicts=args.run_verdicts,
                                     seconds=args.run_time, queue=queue,
                                     nice=args.run_nice)  # fmt: skip
                    started = judge.start()
                    print(f"judge run {started.run} started: {started.expected} verdicts on "
                          f"{started.queries} queries, latency "
                          f"{started.latency_s * 1000:.0f} ms", flush=True)  # fmt: skip
                waits = lock_sampler(args)
                try:
                    if judge:
                        judge.load_started()
                    if waits:
                        waits.start()
                    result = load(args.port, page_list, args, Path(tmp) / "locust", accounts)
                    if judge:
                        judge.load_ended()
                finally:
                    if waits:
                        report["lock_waits"] = waits.stop()
                    if judge:
                        judge.stop()
                result["visible"] = visible_figures(result["labellers"])
                report.update(result)
                print_load(result, args)
                if waits:
                    print_lock_waits(report["lock_waits"])
                if judge:
                    report["run"] = judge.summary.as_dict()
            report["memory_mb"] = round(server.peak_rss_mb, 1)
            report["app_worker"] = worker.summary() if worker else None
    after = os.getloadavg()
    report["load_average"] = {"before": before, "after": after}
    if args.check and not args.probe:
        from bench.web.check import check

        report["check"] = check(args.dataset, accounts[0] if accounts else "bench-admin")
    if judge and not args.keep_run:
        judge.delete()
    if judge:
        report["run"] = judge.summary.as_dict()
        print_run(report["run"])
    if report.get("app_worker"):
        print(f"\napp worker (figure refreshes): {report['app_worker']}")
    print(f"\nlargest web worker: {report['memory_mb']:.0f} MB (target "
          f"{MEMORY_TARGET_MB} MB); load average after: {after}")  # fmt: skip
    if "check" in report:
        print_check(report["check"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
        print(f"\nresults: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
