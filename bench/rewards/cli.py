"""`python -m bench.rewards`: reward batches through the whole reward path (token
authentication, the request's parsing, checklists, caches, the judge calls, votes, scores
and the batch's record) against the bound C / L and a bare openai client. docs/benchmarks.md
"Rewards" holds the figures. With --served, OpenRLHF's load instead: N one-sample requests
at once over HTTP to the rewards service in its own process (bench/rewards/served.py)."""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence

from bench.judge_throughput.workload import QUERY, QUERY_DATE, Workload

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/bench_rewards"
DEFAULT_BROKER = "redis://127.0.0.1:6379/14"
QUERY_ID = "bench-q"


def bound_seconds(*, calls: int, concurrency: int, latency: float) -> float:
    """A batch's least time: its calls in waves of C, each wave one latency."""
    return math.ceil(calls / concurrency) * latency


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.rewards", description=__doc__)
    p.add_argument("--completions", type=int, default=256, help="completions per batch (256)")
    p.add_argument("--criteria", type=int, default=20, help="criteria in the checklist (20)")
    p.add_argument("--latency", type=float, default=0.2, help="L seconds per judge call (0.2)")
    p.add_argument("--concurrency", type=int, default=256, help="C calls in flight (256)")
    p.add_argument("--batches", type=int, default=5, help="batches measured, after a warm-up")
    p.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE),
                   help="the benchmark's own database; emptied at every run")  # fmt: skip
    p.add_argument("--broker-url", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER))
    p.add_argument("--no-bare", action="store_true", help="skip the bare openai client")
    p.add_argument(
        "--served",
        action="store_true",
        help="OpenRLHF's load: --completions one-sample requests at once over HTTP "
        "to the rewards service in its own process (bench/rewards/served.py)",
    )
    p.add_argument(
        "--server",
        choices=["uvicorn", "granian"],
        default="uvicorn",
        help="the rewards service's ASGI server (--served)",
    )
    p.add_argument("--workers", type=int, default=1, help="its worker processes (--served)")
    return p


def _configure(args) -> None:
    """Settings the reward path reads at start: C calls in flight, no quota in the way."""
    os.environ.update(
        REWARDS_CONCURRENCY=str(args.concurrency),
        JUDGE_MAX_IN_FLIGHT=str(max(args.concurrency, 64)),
        REWARDS_MAX_BATCH=str(max(args.completions, 256)),
        REWARDS_ITEMS_PER_MINUTE="0",
        REWARDS_ITEMS_PER_DAY="0",
        ALLOWED_HOSTS="testserver",
    )


def _seed(workload: Workload, base_url: str):
    """One query with a submitted checklist of M criteria, a panel of one loopback judge, and
    a dataset admin's rewards-only token. Returns (dataset, panel, key)."""
    from accounts import services as accounts
    from annotation import roles
    from annotation import services as annotation
    from bench.judge_throughput import app
    from evaluation.judges.models import Judge

    dataset, panel = app.build(workload, base_url=base_url, rpm=None, tpm=None)
    dataset.queries.update(external_id=QUERY_ID)
    Judge.objects.filter(memberships__panel=panel).update(timeout=60)
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create(username="bench-trainer")
    annotation.dataset_set_role(dataset=dataset, user=admin, role=roles.DatasetRole.ADMIN)
    _, key = accounts.api_token_create(
        user=admin, name="bench", scope="rewards", datasets=[dataset]
    )
    return dataset, panel, key


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure(args)
    from bench.judge_throughput import app, processes

    workload = Workload(answers=0, criteria=args.criteria, judges=1)
    app.setup_django(database_url=args.database_url, broker_url=args.broker_url,
                     queue=f"bench-rewards-{os.getpid()}")  # fmt: skip
    from django.test import Client

    from evaluation.judging import prompts

    n, m, c, latency = args.completions, args.criteria, args.concurrency, args.latency
    calls = n * m
    bound = bound_seconds(calls=calls, concurrency=c, latency=latency)

    def out(line: str = "") -> None:
        print(line, flush=True)

    out(f"workload: {n} completions × {m} criteria × 1 judge = {calls} calls per batch; "
        f"{args.batches} batches after a warm-up")  # fmt: skip
    out(f"latency: {latency * 1000:g} ms; concurrency C: {c}")
    out(f"bound: {bound:.2f} s per batch ({n / bound:.1f} rewards/s)")

    def completions(batch: int) -> list[str]:
        # Every completion distinct across batches: a repeat would be answered by the cache.
        return [workload.answer_text(batch * n + i) for i in range(n)]

    if args.served:
        return _served(args, workload, bound, completions, out)

    server = processes.LoopbackProcess(latency=latency).start()
    try:
        dataset, panel, key = _seed(workload, server.base_url)
        http = Client(HTTP_AUTHORIZATION=f"Token {key}")

        def post(texts: list[str]) -> tuple[float, dict]:
            body = {"dataset": dataset.pk, "panel": panel.pk,
                    "items": [{"query": QUERY_ID, "completion": t} for t in texts]}  # fmt: skip
            started = time.perf_counter()
            response = http.post(
                "/api/rewards/", body, content_type="application/json", secure=True
            )
            seconds = time.perf_counter() - started
            if response.status_code != 200:
                raise SystemExit(f"app: HTTP {response.status_code}: {response.content[:500]!r}")
            return seconds, response.json()

        post(completions(args.batches + 1)[:8])  # warm-up: the judge's connection pool
        seconds, failed, rewarded = [], 0, 0
        for b in range(args.batches):
            took, body = post(completions(b))
            seconds.append(took)
            failed += sum(item["failed"] for item in body["items"])
            rewarded += sum(item["reward"] is not None for item in body["items"])
    finally:
        stats = server.stop()
    mean = statistics.mean(seconds)
    out(f"app: {rewarded} rewards, {failed} failed; server calls {stats.get('calls')}, "
        f"peak calls in flight {stats.get('max_concurrency')}")  # fmt: skip
    out(f"app: batch latency p50 {percentile(seconds, 0.5):.2f} s, "
        f"p95 {percentile(seconds, 0.95):.2f} s, mean {mean:.2f} s")  # fmt: skip
    out(f"app: rewards/s {n / mean:.1f}")
    out(f"app: time over bound {mean / bound:.3f} (+{100 * (mean / bound - 1):.1f}%)")
    ok = failed == 0 and rewarded == n * args.batches
    if args.no_bare:
        return 0 if ok else 1

    from bench.rewards.bare import run_batches

    batches = [
        [prompts.messages(query=QUERY, query_date=QUERY_DATE, answer=text,
                          criterion=workload.criterion_text(k)) for text in completions(b)
         for k in range(m)]
        for b in range(args.batches)
    ]  # fmt: skip
    server = processes.LoopbackProcess(latency=latency).start()
    try:
        run_batches(
            base_url=server.base_url,
            model=workload.judge_model(0),
            batches=[batches[0][:8]],
            concurrency=c,
        )  # fmt: skip  (warm-up)
        bare = run_batches(base_url=server.base_url, model=workload.judge_model(0),
                           batches=batches, concurrency=c)  # fmt: skip
    finally:
        stats = server.stop()
    bare_mean = statistics.mean(bare)
    out(f"bare: server calls {stats.get('calls')}, peak calls in flight "
        f"{stats.get('max_concurrency')}")  # fmt: skip
    out(f"bare: batch latency p50 {percentile(bare, 0.5):.2f} s, "
        f"p95 {percentile(bare, 0.95):.2f} s, mean {bare_mean:.2f} s")  # fmt: skip
    out(f"bare: rewards/s {n / bare_mean:.1f}")
    out(f"bare: time over bound {bare_mean / bound:.3f}")
    out(f"app/bare time: {mean / bare_mean:.3f}")
    return 0 if ok else 1


def _served(args, workload: Workload, bound: float, completions, out) -> int:
    """N one-sample requests at once to the served endpoint, --batches times after a
    warm-up; every completion distinct (no cache answers)."""
    from bench.judge_throughput import processes
    from bench.rewards import served

    n = args.completions
    prompt = "<|im_start|>user\nAnswer the query.<|im_end|>\n<|im_start|>assistant\n"
    judge = processes.LoopbackProcess(latency=args.latency).start()
    service = None
    try:
        dataset, panel, key = _seed(workload, judge.base_url)
        service = served.ServiceProcess(
            server=args.server, workers=args.workers,
            env={
                "DATABASE_URL": args.database_url, "CELERY_BROKER_URL": args.broker_url,
                "JUDGE_ALLOW_PRIVATE_NETWORK": "1", "ALLOWED_HOSTS": "127.0.0.1",
                # Plain HTTP on loopback: no TLS redirect (production settings otherwise).
                "SECURE_SSL_REDIRECT": "0",
                # C calls in flight in the whole process, whatever the waves.
                "JUDGE_MAX_IN_FLIGHT": str(args.concurrency),
            },
        ).start()  # fmt: skip
        out(f"served: {n} one-sample requests at once, {args.server} × {args.workers} "
            f"worker(s) at {service.url}")  # fmt: skip
        url = (f"{service.url}/api/rewards/openrlhf/?dataset={dataset.pk}&panel={panel.pk}"
               "&strip=<|im_end|>")  # fmt: skip

        def bodies(texts: list[str]) -> list[dict]:
            return [
                {"query": [f"{prompt}{t}<|im_end|>"], "prompts": [prompt], "labels": [QUERY_ID]}
                for t in texts
            ]

        import asyncio

        asyncio.run(served.one_rollout(url, key, bodies(completions(args.batches + 1)[:8])))
        rounds, singles, cpu, single_cpu = [], [], [], []
        with served.ConnectionWatch(args.database_url) as watch:
            for b in range(args.batches):
                # The rollout, then the same number of fresh samples in one request, on the
                # same service in the same minute: what "costs what one request costs" is
                # measured against, in wall time and in the service's CPU seconds.
                before = service.cpu_seconds()
                rounds.append(asyncio.run(served.one_rollout(url, key, bodies(completions(b)))))
                cpu.append(service.cpu_seconds() - before)
                one = bodies(completions(args.batches + 2 + b))
                together = {k: [v for body in one for v in body[k]] for k in one[0]}
                before = service.cpu_seconds()
                singles.append(asyncio.run(served.one_request(url, key, together)))
                single_cpu.append(service.cpu_seconds() - before)
    finally:
        if service is not None:
            service.stop()
        stats = judge.stop()
    seconds = [r.seconds for r in rounds]
    latencies = [x for r in rounds for x in r.latencies]
    errors = [e for r in rounds for e in r.errors]
    mean = statistics.mean(seconds)
    statuses: dict[int, int] = {}
    for r in rounds:
        for code, count in r.statuses.items():
            statuses[code] = statuses.get(code, 0) + count
    out(f"served: {sum(r.rewarded for r in rounds)} rewards, {sum(r.failed for r in rounds)} "
        f"failed samples, {len(errors)} errors, {sum(r.retried for r in rounds)} retried; "
        f"statuses {dict(sorted(statuses.items()))}")  # fmt: skip
    for error in sorted(set(errors))[:5]:
        out(f"served: error: {error}")
    out(f"served: server calls {stats.get('calls')}, peak calls in flight "
        f"{stats.get('max_concurrency')}")  # fmt: skip
    out(f"served: rollout wall time p50 {percentile(seconds, 0.5):.2f} s, mean {mean:.2f} s")
    if latencies:
        out(f"served: per request p50 {percentile(latencies, 0.5):.2f} s, "
            f"p95 {percentile(latencies, 0.95):.2f} s")  # fmt: skip
    out(f"served: rewards/s {n / mean:.1f}")
    out(f"served: time over bound {mean / bound:.3f} (+{100 * (mean / bound - 1):.1f}%)")
    out(f"served: database connections at most {watch.peak} (1 of them this benchmark's own)")
    single = statistics.mean(r.seconds for r in singles)
    errors += [e for r in singles for e in r.errors]
    out(f"served: one {n}-sample request: {sum(r.rewarded for r in singles)} rewards, wall "
        f"{single:.2f} s ({single / bound:.3f} × bound); service CPU {statistics.mean(cpu):.2f} s "
        f"for the rollout, {statistics.mean(single_cpu):.2f} s for the one request")  # fmt: skip
    out(
        f"served: one-sample requests / one request: wall {mean / single:.3f}, "
        f"service CPU {statistics.mean(cpu) / max(statistics.mean(single_cpu), 1e-9):.3f}"
    )
    failed = sum(r.failed for r in rounds) + sum(r.failed for r in singles)
    return 0 if not errors and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
