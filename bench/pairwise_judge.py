"""`python -m bench.pairwise_judge`: a pairwise run of N pairs × 2 orders through the loopback
judge (issue 42 point 7), against its bound.

One dataset with N queries, each answered by two systems (each answer ~1,000 characters,
distinct, so the cache never answers), one pairwise session of the two, and a panel of one
LLM judge on the loopback server, which answers "1" to everything after `--latency` seconds
(a judge that prefers the first position: every pair flips). The judging is the app's
service (evaluation.pairwise.judging.judge_session: the pair plan, engine.ask_json with the
judge's rate limiter, retries and circuit, the upsert into PostgreSQL), `--wave` calls at a
time. Printed: calls, wall time, its bound (2N / wave waves × latency), calls per second,
the flip share the figures report, and a second judging of the same session (every reply
reused by its cache key: no call).

The database must have "bench" as a word of its name: it is flushed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time

from bench.judge_throughput.app import setup_django
from loopback import LoopbackOpenAI

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/bench_pairwise"
DEFAULT_BROKER = "redis://127.0.0.1:6379/15"
FILLER = (
    "Revenue for the quarter was reported at {n} million dollars, with a gross margin of "
    "{m} percent; management reiterated full-year guidance and noted data-centre demand. "
) * 4


def seed(pairs: int, server_url: str):
    from annotation.models import Dataset, Query
    from evaluation.answers.models import Answer, System
    from evaluation.judges.models import Judge, Panel, PanelMember
    from evaluation.pairwise.services import session_create

    dataset = Dataset.objects.create(name="Pairwise judge benchmark")
    alpha, beta = System.objects.create(name="Alpha"), System.objects.create(name="Beta")
    queries = Query.objects.bulk_create(
        Query(dataset=dataset, text=f"Q{i}: summarise the quarter.", external_id=f"q-{i}",
              query_date=dt.date(2026, 1, 1))
        for i in range(pairs)
    )  # fmt: skip
    Answer.objects.bulk_create(
        Answer(query=q, system=s, text=f"{s.name} {q.pk}. " + FILLER.format(n=q.pk, m=k))
        for q in queries
        for k, s in enumerate((alpha, beta))
    )
    judge = Judge.objects.create(
        name="Loopback judge", base_url=server_url, model="model-0", timeout=60
    )
    panel = Panel.objects.create(name="Pairwise panel")
    PanelMember.objects.create(panel=panel, judge=judge)
    session = session_create(
        dataset=dataset, name="Benchmark", system_a=alpha, system_b=beta, by=None
    )
    return session, panel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pairwise_judge")
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before each reply")
    parser.add_argument("--wave", type=int, default=64, help="calls in flight at once")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    args = parser.parse_args(argv)
    setup_django(database_url=args.database_url, broker_url=args.broker_url, queue="bench-pairwise")
    from evaluation.pairwise import judging
    from evaluation.pairwise.models import PairwiseJudgeVote

    responder = lambda request: {"better": "1", "rationale": "The first is better."}  # noqa: E731
    with LoopbackOpenAI(responder=responder, latency=args.latency) as server:
        started = time.perf_counter()
        session, panel = seed(args.pairs, server.base_url)
        seeded = time.perf_counter() - started
        started = time.perf_counter()
        made = judging.judge_session(session=session, panel=panel, wave=args.wave)
        wall = time.perf_counter() - started
        calls = server.call_count
        started = time.perf_counter()
        again = judging.judge_session(session=session, panel=panel, wave=args.wave)
        reused = time.perf_counter() - started
        (figures,) = judging.judge_figures(session)
    bound = math.ceil(2 * args.pairs / args.wave) * args.latency
    voted = PairwiseJudgeVote.objects.filter(outcome="voted").count()
    print(f"pairs {args.pairs} × 2 orders, wave {args.wave}, latency {args.latency}s")
    print(f"seeded in {seeded:.1f}s")
    print(f"judged: {made} calls ({calls} at the server), {voted} voted replies, "
          f"{wall:.1f}s (bound {bound:.1f}s, {wall / bound:.2f}× the bound), "
          f"{made / wall:.0f} calls/s")  # fmt: skip
    print(f"flip share {figures.bias.flips.rate:.3f} over {figures.bias.flips.n} pairs; "
          f"first position preferred {figures.bias.first_preferred.rate:.3f}")  # fmt: skip
    print(f"judged again: {again} calls, {reused:.1f}s (every reply reused by its cache key)")
    return 0 if made == calls == 2 * args.pairs and again == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
