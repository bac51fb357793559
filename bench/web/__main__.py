"""The pages at scale: the real server (gunicorn, several workers) on the seeded PostgreSQL
and Redis, loaded by locust (headless, a bounded number of requests, 127.0.0.1 only).

    export DATABASE_URL=postgresql://postgres@127.0.0.1:5432/wt14scale
    export CELERY_BROKER_URL=redis://127.0.0.1:6379/8
    .venv/bin/python -m bench.web --dataset 4 --agreement-dataset 3 \\
        --workers 4 --users 20 --requests 3000
    .venv/bin/python -m bench.web --dataset 4 --probe 3     # one user, N requests per page

Prints, per page: requests, failures, p50 / p95 / p99 in ms, requests/s, the target and
p95 / target; and the largest resident memory of a web worker. Needs the bench extra
(gunicorn, locust) and a database seeded by ``python -m bench.seed_scale``.
"""

from __future__ import annotations

import argparse
import csv
import json
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
from http.cookiejar import CookieJar
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EDITOR_TARGET_MS, LIST_TARGET_MS = 200, 500
MEMORY_TARGET_MB = 300


def pages(dataset: int, agreement_dataset: int | None) -> list[tuple[str, str, int, int]]:
    """(name, URL, weight, target ms) of the pages people use most, with ids from the data."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from annotation.models import Checklist, Query
    from evaluation.models import HumanLabel, Run

    run = (
        Run.objects.filter(dataset=dataset, status=Run.Status.DONE)
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
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
    def __init__(self, port: int, workers: int, env: dict[str, str]) -> None:
        self.port, self.workers, self.env = port, workers, env
        self.process: subprocess.Popen | None = None
        self.peak_rss_mb = 0.0
        self._stop = threading.Event()

    def __enter__(self) -> Server:
        self.process = subprocess.Popen(
            [str(BIN / "gunicorn"), "config.wsgi:application", "--bind",
             f"127.0.0.1:{self.port}", "--workers", str(self.workers), "--timeout", "300",
             "--graceful-timeout", "10", "--log-level", "warning"],
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


def load(port: int, page_list, users: int, requests: int, run_time: int, out: Path) -> list:
    env = {
        **os.environ,
        "BENCH_WEB_PAGES": json.dumps([[n, u, w] for n, u, w, _t in page_list]),
        "BENCH_WEB_REQUESTS": str(requests),
    }
    subprocess.run(
        [str(BIN / "locust"), "-f", str(Path(__file__).with_name("locustfile.py")),
         "--headless", "-u", str(users), "-r", str(users), "--run-time", f"{run_time}s",
         "--host", f"http://127.0.0.1:{port}", "--csv", str(out), "--only-summary",
         "--loglevel", "WARNING", "--stop-timeout", "60"],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    targets = {n: t for n, _u, _w, t in page_list}
    with open(f"{out}_stats.csv") as handle:
        stats = [row for row in csv.DictReader(handle) if row["Name"] in targets]
    return [
        {
            "page": row["Name"], "requests": int(row["Request Count"]),
            "failures": int(row["Failure Count"]), "p50": float(row["50%"]),
            "p95": float(row["95%"]), "p99": float(row["99%"]),
            "rps": float(row["Requests/s"]), "target": targets[row["Name"]],
        }
        for row in stats
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.web", description=__doc__)
    parser.add_argument("--dataset", type=int, required=True, help="the full preset's dataset")
    parser.add_argument("--agreement-dataset", type=int, help="the 200,000-item preset's")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--run-time", type=int, default=600, help="seconds, at most")
    parser.add_argument("--port", type=int, default=8614)
    parser.add_argument("--probe", type=int, default=0, help="one user, N requests per page")
    parser.add_argument("--timeout", type=float, default=120.0, help="probe: per request, s")
    parser.add_argument("--only", default="", help="comma-separated page names")
    parser.add_argument("--skip", default="", help="comma-separated page names to leave out")
    args = parser.parse_args(argv)
    # A SIGTERM ends the run like Ctrl-C: the server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    page_list = pages(args.dataset, args.agreement_dataset)
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        page_list = [p for p in page_list if p[0] in wanted]
    if args.skip:
        unwanted = {n.strip() for n in args.skip.split(",")}
        page_list = [p for p in page_list if p[0] not in unwanted]
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        env = server_env(str(Path(tmp) / "static"))
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        print(f"load average before: {os.getloadavg()}", flush=True)
        with Server(args.port, args.workers, env) as server:
            if args.probe:
                probe(args.port, page_list, args.probe, args.timeout)
            else:
                rows = load(args.port, page_list, args.users, args.requests, args.run_time,
                            Path(tmp) / "locust")  # fmt: skip
                print(f"\n{'page':28} {'n':>5} {'fail':>4} {'p50':>7} {'p95':>7} {'p99':>7} "
                      f"{'req/s':>6} {'target':>6} {'p95/target':>10}")  # fmt: skip
                for row in rows:
                    print(f"{row['page']:28} {row['requests']:5} {row['failures']:4} "
                          f"{row['p50']:7.0f} {row['p95']:7.0f} {row['p99']:7.0f} "
                          f"{row['rps']:6.2f} {row['target']:6} "
                          f"{row['p95'] / row['target']:10.2f}")  # fmt: skip
            print(f"\nlargest web worker: {server.peak_rss_mb:.0f} MB (target "
                  f"{MEMORY_TARGET_MB} MB); load average after: {os.getloadavg()}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
