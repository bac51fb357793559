"""`python -m bench.faults`: issue 27's infrastructure faults at the issue's size, measured.
See bench/README.md and docs/benchmarks.md."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict

from bench.faults.scenarios import AT, Outcome, Setup

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/bench_faults"
# A Redis database of its own: circuits and rate-limit buckets are keyed by judge id, and
# the flushed bench database reuses ids that a development database may also use.
DEFAULT_BROKER = "redis://127.0.0.1:6379/14"
SCENARIOS = ("baseline", "database", "judge", "broker")
# The settings the run rides out the faults with: production defaults unless the
# environment sets them (both this process and the worker would see it then).
SETTINGS = (
    "JUDGE_RETRY_ATTEMPTS", "JUDGE_RETRY_BASE_DELAY", "JUDGE_CIRCUIT_FAILURES",
    "JUDGE_CIRCUIT_WINDOW", "JUDGE_CIRCUIT_PROBE_MIN", "JUDGE_CIRCUIT_PROBE_MAX",
    "JUDGE_CIRCUIT_MAX_WAIT", "RUNS_DB_RETRY_FOR", "RUNS_HEARTBEAT", "RUNS_SWEEP",
    "RUNS_LEASE_TIMEOUT", "RUNS_MAX_REQUEUES",
)  # fmt: skip
# Issue 27's figures, before the fixes (2,000 calls at 0.6 s, PostgreSQL and Redis).
BEFORE = {
    "database": "PostgreSQL restarted (2 s down): 140 of 2,000 verdicts task_failed errors; "
    "81 s instead of ~20 s",
    "judge": "endpoint down 120 s from 30%: done_with_errors, 469 connection-error verdicts",
    "broker": "Redis restarted without persistence: done, but 92 s for a ~20 s run",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__)
    p.add_argument("--scenario", nargs="+", choices=(*SCENARIOS, "all"), default=["all"],
                   help="one or more; the undisturbed baseline always runs first "
                   "(default all)")  # fmt: skip
    p.add_argument("--answers", type=int, default=100, help="N answers (default 100)")
    p.add_argument("--criteria", type=int, default=20, help="M criteria (default 20)")
    p.add_argument("--judges", type=int, default=1, help="K judges (default 1)")
    p.add_argument("--latency", type=float, default=0.6, help="seconds per call (0.6)")
    p.add_argument("--concurrency", type=int, default=64, help="C calls in flight (64)")
    p.add_argument("--judge-outage", type=float, default=120, help="seconds down (120)")
    p.add_argument("--database-down", type=float, default=2,
                   help="seconds the bench database refuses connections (2)")  # fmt: skip
    p.add_argument("--broker-down", type=float, default=1, help="seconds Redis is down (1)")
    p.add_argument("--real-restart", action="store_true",
                   help="database scenario: restart the whole PostgreSQL server with "
                   "pg_ctlcluster, dropping every connection of every database on it "
                   "(other users' too)")  # fmt: skip
    p.add_argument("--database-url", default=DEFAULT_DATABASE,
                   help="PostgreSQL, the bench's own: emptied at every scenario (its name "
                   "must have 'bench' as a word)")  # fmt: skip
    p.add_argument("--broker-url", default=DEFAULT_BROKER, help="Redis (default DB 14)")
    p.add_argument("--timeout", type=float, default=900, help="seconds a run may take (900)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.database_url.startswith("postgres") or not args.broker_url.startswith("redis"):
        print("bench.faults needs PostgreSQL and Redis (--database-url, --broker-url).")
        return 2
    wanted = set(SCENARIOS[1:]) if "all" in args.scenario else set(args.scenario)
    chosen = [name for name in SCENARIOS[1:] if name in wanted]
    if "broker" in chosen and shutil.which("redis-server") is None:
        print("The broker scenario needs redis-server on the PATH.")
        return 2
    from bench.faults.outages import RedisServer
    from bench.faults.scenarios import run_scenario
    from bench.judge_throughput import app
    from bench.judge_throughput.cli import map_concurrency
    from bench.judge_throughput.workload import Workload

    queue = f"bench-faults-{os.getpid()}"
    env = app.setup_django(database_url=args.database_url, broker_url=args.broker_url, queue=queue)
    from django.conf import settings

    workload = Workload(args.answers, args.criteria, args.judges)
    mapping = map_concurrency(args.concurrency, args.criteria, threads=None, per_task=None,
                              gate=True)  # fmt: skip
    used = {name: getattr(settings, name) for name in SETTINGS}
    from_env = [name for name in SETTINGS if name in os.environ]
    setup = Setup(
        workload=workload, mapping=mapping, latency=args.latency, env=env,
        database_url=args.database_url, timeout=args.timeout,
        judge_outage=args.judge_outage, database_down=args.database_down,
        broker_down=args.broker_down, real_restart=args.real_restart,
    )  # fmt: skip

    def out(line: str = "") -> None:
        print(line, flush=True)

    out(f"workload: {args.answers} answers × {args.criteria} criteria × {args.judges} judges "
        f"= {workload.judgments} judge calls at {args.latency:g} s")  # fmt: skip
    out(f"worker: {mapping.threads} threads × Run.concurrency {mapping.per_task}, "
        f"JUDGE_MAX_IN_FLIGHT {mapping.gate}")  # fmt: skip
    out(f"database: {app.database_name(args.database_url)}; broker: {args.broker_url} "
        f"(the broker scenario: a redis-server of its own)")  # fmt: skip
    out("settings: " + ", ".join(f"{k}={v}" for k, v in used.items())
        + (f" (from the environment: {', '.join(from_env)})" if from_env
           else " (production defaults)"))  # fmt: skip
    load = os.getloadavg()[0]
    out(f"machine: {os.cpu_count()} cores, load average {load:.2f} at the start")

    outcomes: list[Outcome] = []
    private = None
    try:
        if "broker" in chosen:
            private = setup.private_redis = RedisServer()
            private.start()
        out("")
        baseline = run_scenario("baseline", setup)
        outcomes.append(baseline)
        _report(out, baseline, None, args)
        for name in chosen:
            out("")
            outcome = run_scenario(name, setup)
            outcomes.append(outcome)
            _report(out, outcome, baseline, args)
    finally:
        if private is not None:
            private.stop()
    if args.json:
        figures = {
            "options": vars(args), "settings": used, "settings_from_environment": from_env,
            "machine": {"cores": os.cpu_count(), "load_average_at_start": load},
            "worker": asdict(mapping),
            "scenarios": [{**asdict(o), "extra_calls": o.extra_calls, "holds": _met(o),
                           "bound_s": _bound(o, baseline, args)} for o in outcomes],
        }  # fmt: skip
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2, default=str)
    return 0 if all(_met(o) for o in outcomes) else 1


def _met(o: Outcome) -> bool:
    """The run is whole and clean, and the fault did happen to it."""
    return o.holds and (o.scenario == "baseline" or o.fault_at is not None)


def _outage(name: str, args) -> float:
    """The fault's planned length, the time a run cannot avoid losing to it."""
    return {"database": args.database_down, "judge": args.judge_outage,
            "broker": args.broker_down}.get(name, 0.0)  # fmt: skip


def _bound(o: Outcome, baseline: Outcome, args) -> float | None:
    """The baseline's wall time plus the fault's length (as measured when it was)."""
    if baseline.wall_s is None:
        return None
    return baseline.wall_s + (o.outage_s if o.outage_s is not None else _outage(o.scenario, args))


def _describe(name: str, args) -> str:
    at = f"at {AT:.0%} of the verdicts"
    if name == "database" and args.real_restart:
        return f"PostgreSQL restarted (pg_ctlcluster restart, every connection dropped) {at}"
    return {
        "baseline": "no fault",
        "database": f"the bench database's connections terminated and refused for "
        f"{args.database_down:g} s {at}",
        "judge": f"the judge's server process stopped for {args.judge_outage:g} s {at}, "
        "then started again on the same port",
        "broker": f"Redis (no persistence) killed and started again after "
        f"{args.broker_down:g} s {at}",
    }[name]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _report(out, o: Outcome, baseline: Outcome | None, args) -> None:
    n = o.scenario
    out(f"== {n}: {_describe(n, args)}")
    kinds = f" ({', '.join(f'{k} {v}' for k, v in o.error_kinds.items())})" if o.errors else ""
    out(f"{n}: status {o.status}; verdicts {o.verdicts} of {o.expected}; error verdicts "
        f"{o.errors}{kinds}; duplicate votes {o.duplicates}")  # fmt: skip
    out(f"{n}: judge calls answered {o.answered} for {o.votes} votes: extra paid calls "
        f"{o.extra_calls} (requests received {o.received})")  # fmt: skip
    out(f"{n}: wall time {_seconds(o.wall_s)} (run.started_at → run.finished_at; last verdict "
        f"{_seconds(o.last_verdict_s)})")  # fmt: skip
    if baseline is None:
        out(f"{n}: verdict: {'clean' if o.holds else 'NOT CLEAN'}: the undisturbed run"
            + ("" if o.holds else f"; worker log {o.worker_log}"))  # fmt: skip
        return
    if o.refused:
        out(f"{n}: FAULT NOT MADE: real restart refused: {o.refused}")
    elif o.fault_at is None:
        out(f"{n}: FAULT MISSED: the run ended before {AT:.0%} of its verdicts existed")
    else:
        seen = ", ".join(f"{k} {v}" for k, v in o.signs.items() if v)
        out(f"{n}: fault at {o.fault_at} verdicts, lasted {_seconds(o.outage_s)}; the worker "
            f"logged: {seen or 'nothing of it'}")  # fmt: skip
    if n == "judge":
        out(f"{n}: progress API 'waiting' during the outage: {o.waiting or 'empty'}; the "
            f"circuit closed {_seconds(o.closed_after_s)} after the judge came back "
            f"(probes from JUDGE_CIRCUIT_PROBE_MIN, doubling to _MAX)")  # fmt: skip
    bound = _bound(o, baseline, args)
    ratio = f"{o.wall_s / bound:.2f}" if o.wall_s and bound else "-"
    out(
        f"{n}: baseline {_seconds(baseline.wall_s)}; bound baseline + outage "
        f"{_seconds(bound)}; wall / bound {ratio}; bound errors 0, duplicates 0, extra calls 0"
    )
    out(f"{n}: before (issue 27): {BEFORE[n]}")
    if _met(o):
        out(f"{n}: verdict: holds: done, no error verdict, no duplicate, no extra paid call; "
            f"{ratio} × (baseline + outage)")  # fmt: skip
    else:
        out(f"{n}: verdict: DOES NOT HOLD; worker log {o.worker_log}")


if __name__ == "__main__":
    sys.exit(main())
