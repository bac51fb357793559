"""`python -m bench.judge_throughput`: see bench/README.md and docs/benchmarks.md."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from bench.judge_throughput.workload import Workload

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/bench_judge"
# A Redis database of its own: rate-limit buckets are keyed by judge id, and the flushed
# benchmark database reuses ids that a development database may also use.
DEFAULT_BROKER = "redis://127.0.0.1:6379/15"
MAX_TOKENS = 512  # the judges' default max_tokens, counted by the limiter


@dataclass(frozen=True)
class Mapping:
    """How C calls in flight are spread over the worker (see map_concurrency)."""

    threads: int  # worker --concurrency (thread pool)
    per_task: int  # Run.concurrency
    gate: int  # JUDGE_MAX_IN_FLIGHT, calls in flight across the worker; 0: no cap
    calls_per_task: int

    @property
    def in_flight(self) -> int:
        most = self.threads * min(self.per_task, self.calls_per_task)
        return min(most, self.gate) if self.gate else most


def map_concurrency(
    c: int, calls_per_task: int, *, threads: int | None, per_task: int | None, gate: bool
) -> Mapping:
    """A task is one answer × one judge: M calls, gated by the slowest. A task that makes its
    calls in two waves (Run.concurrency < M) takes two latencies, so each task gets all its
    calls at once (Run.concurrency = min(M, C)). C is the worker-wide cap
    (JUDGE_MAX_IN_FLIGHT), and there are twice as many threads as C / M tasks so that while
    a thread reads or writes the database the others keep the C slots busy. Without the gate, the
    cap is threads × Run.concurrency with threads = C // M, which idles a task's slots
    during its database work."""
    per_task = per_task or min(calls_per_task, c)
    if gate:
        threads = threads or 2 * math.ceil(c / per_task)
        return Mapping(threads, per_task, c, calls_per_task)
    threads = threads or max(1, c // per_task)
    return Mapping(threads, per_task, 0, calls_per_task)


def tokens_per_call(workload: Workload) -> float:
    """What the limiter charges a call (engine.token_estimate), averaged over the workload."""
    from evaluation.judging import client, engine

    endpoint = client.Endpoint(base_url="http://x", model="m", max_tokens=MAX_TOKENS)
    sizes = [
        engine.token_estimate(engine.Call(c, 0, "", workload.messages(a, c), endpoint))
        for a in range(workload.answers)
        for c in range(workload.criteria)
    ]
    return sum(sizes) / len(sizes)


def bound(*, c: int, latency: float, judges: int, rpm: int | None, tpm: int | None,
          tokens: float) -> float:  # fmt: skip
    """min(C/L, RPM/60, TPM/(60·tokens per call)); limits are per judge, so × K judges."""
    limits = [c / latency if latency > 0 else math.inf]
    if rpm:
        limits.append(judges * rpm / 60)
    if tpm:
        limits.append(judges * tpm / (60 * tokens))
    return min(limits)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.judge_throughput", description=__doc__)
    p.add_argument("--answers", type=int, default=200, help="N answers (default 200)")
    p.add_argument("--criteria", type=int, default=20, help="M criteria (default 20)")
    p.add_argument("--judges", type=int, default=3, help="K judges (default 3)")
    p.add_argument(
        "--context-kb", type=int, default=0, help="KB of context per answer, judged against (0)"
    )
    p.add_argument("--latency", type=float, default=0.2, help="L seconds per call (0.2)")
    p.add_argument("--concurrency", type=int, default=64, help="C calls in flight (64)")
    p.add_argument("--rpm", type=int, default=None, help="requests per minute, per judge")
    p.add_argument("--tpm", type=int, default=None, help="tokens per minute, per judge")
    p.add_argument("--threads", type=int, default=None, help="override: worker threads")
    p.add_argument("--per-task", type=int, default=None, help="override: Run.concurrency")
    p.add_argument(
        "--no-gate", action="store_true", help="no worker-wide cap: C = threads × Run.concurrency"
    )
    p.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE),
                   help="the benchmark's own database; emptied at every run (name must "
                   "contain 'bench')")  # fmt: skip
    p.add_argument("--broker-url", default=os.environ.get("BENCH_BROKER_URL", DEFAULT_BROKER))
    p.add_argument("--no-inspect", action="store_true", help="skip the Inspect AI side")
    p.add_argument("--timeout", type=float, default=None, help="give up after (seconds)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from bench.judge_throughput import app, processes

    workload = Workload(args.answers, args.criteria, args.judges, args.context_kb)
    c, latency = args.concurrency, args.latency
    mapping = map_concurrency(
        c, args.criteria, threads=args.threads, per_task=args.per_task, gate=not args.no_gate
    )
    queue = f"bench-judge-{os.getpid()}"
    env = app.setup_django(database_url=args.database_url, broker_url=args.broker_url, queue=queue)
    tokens = tokens_per_call(workload)
    limit = bound(c=c, latency=latency, judges=args.judges, rpm=args.rpm, tpm=args.tpm,
                  tokens=tokens)  # fmt: skip
    timeout = args.timeout or 120 + 10 * workload.judgments / limit

    def out(line: str = "") -> None:
        print(line, flush=True)

    out(f"workload: {args.answers} answers × {args.criteria} criteria × {args.judges} judges "
        f"= {workload.judgments} judgments; context {args.context_kb} KB per answer")  # fmt: skip
    out(f"latency: {latency * 1000:g} ms; concurrency C: {c}; "
        f"rpm per judge: {args.rpm or '-'}; tpm per judge: {args.tpm or '-'}; "
        f"tokens per call: {tokens:.0f}")  # fmt: skip
    out(
        f"mapping: {mapping.threads} worker threads × Run.concurrency {mapping.per_task} "
        f"(a task = {mapping.calls_per_task} calls), JUDGE_MAX_IN_FLIGHT {mapping.gate or '-'}: "
        f"at most {mapping.in_flight} calls in flight"
    )
    out(f"database: {app.database_name(args.database_url)}; broker: {args.broker_url}")
    out(f"bound: {limit:.1f} judgments/s")

    server = processes.LoopbackProcess(latency=latency).start()
    try:
        dataset, panel = app.build(workload, base_url=server.base_url, rpm=args.rpm, tpm=args.tpm)
        worker_env = {**env, "JUDGE_MAX_IN_FLIGHT": str(mapping.gate)}
        worker = processes.WorkerProcess(queue=queue, threads=mapping.threads, env=worker_env)
        worker.start()
        try:
            result = app.run(dataset, panel, per_task=mapping.per_task, timeout=timeout,
                             worker=worker)  # fmt: skip
        finally:
            worker.stop()
    finally:
        stats = server.stop()
    rate = result.judgments / result.wall_s if result.wall_s > 0 else 0.0
    out(f"app: status {result.status}; verdicts {result.judgments} of {result.expected}; "
        f"outcomes {result.outcomes}")  # fmt: skip
    out(f"app: server calls {stats.get('calls')}, peak calls in flight "
        f"{stats.get('max_concurrency')}")  # fmt: skip
    finished = f"{result.finished_s:.2f} s" if result.finished_s is not None else "-"
    out(f"app: wall time {result.wall_s:.2f} s (run.started_at → last verdict.created_at; "
        f"→ run.finished_at {finished})")  # fmt: skip
    if result.worker_cpu_s is not None:
        cores = result.worker_cpu_s / result.wall_s
        out(f"app: worker CPU {result.worker_cpu_s:.1f} s ({cores:.2f} "
            f"cores); loopback server CPU {stats.get('cpu_s', '-')} s; machine busy "
            f"{100 * (result.machine_busy or 0):.0f}% of {os.cpu_count()} cores")  # fmt: skip
    out(f"app: judgments/s {rate:.1f}")
    out(f"app: ratio to bound {rate / limit:.2f}")
    ok = result.judgments == workload.judgments and result.status == "done"
    if not ok:
        out(f"app: INCOMPLETE; worker log {worker.log_path}")

    if args.no_inspect:
        return 0 if ok else 1
    if args.rpm or args.tpm:
        out("inspect: note: Inspect AI has no shared RPM/TPM limiter; it runs unlimited")
    from bench.judge_throughput.inspect_peer import run_inspect

    server = processes.LoopbackProcess(latency=latency).start()
    try:
        peer = run_inspect(workload, base_url=server.base_url, concurrency=c, max_tokens=MAX_TOKENS)
    except Exception as exc:
        # Not installed, or its openai-api provider refuses the installed openai (it wants
        # 3.4 or later; the app also runs on 2.x): bench/README.md says which.
        if type(exc).__name__ not in ("PrerequisiteError", "ModuleNotFoundError"):
            raise
        out(f"inspect: unavailable: {str(exc).strip().splitlines()[0]}")
        return 2
    finally:
        stats = server.stop()
    peer_rate = peer.judgments / peer.wall_s if peer.wall_s > 0 else 0.0
    out(f"inspect: samples {peer.samples}; outcomes {peer.outcomes}; server calls "
        f"{stats.get('calls')}, peak calls in flight {stats.get('max_concurrency')}")  # fmt: skip
    out(f"inspect: wall time {peer.wall_s:.2f} s (eval stats started_at → completed_at)")
    out(f"inspect: judgments/s {peer_rate:.1f}")
    out(f"inspect: ratio to bound {peer_rate / limit:.2f}")
    out(f"app/inspect: {rate / peer_rate:.2f}" if peer_rate else "app/inspect: -")
    return 0 if ok and peer.judgments == workload.judgments else 1


if __name__ == "__main__":
    sys.exit(main())
