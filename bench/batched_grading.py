"""`python -m bench.batched_grading`: what batched grading saves per graded answer.

One query with a submitted checklist of M criteria (20), N answers, and a panel of K judges
(3) on the loopback server, graded three ways: one call per criterion (criteria_per_call 1),
the whole checklist per call (0) and five criteria per call (5). Each answer is graded by the
real task body (evaluation.runs.lifecycle.run_task: owed votes, the verdict cache, the
engine, the upsert into PostgreSQL), the K judges' tasks at once in K threads as K worker
threads would, one answer after another. Printed per graded answer (K judges × M
criteria): HTTP calls, prompt and completion tokens (as the server counts them and as the
verdicts record them: the two agree), the tokens a TPM limiter is charged (prompt characters
/ 4 plus the call's max tokens), and the wall time against its bound.

The loopback server answers after `--latency` seconds plus `--per-verdict` seconds for each
verdict the reply holds (a model writes a batched reply's verdicts one after the other), so
the bound per answer is, per judge, its waves of calls (Run.concurrency at a time) times the
latency of its largest call; the judges run in parallel. The verdicts are a pure function of
(criterion, answer), so every mode must store the same ones: the benchmark checks it.

The database must have "bench" as a word of its name: it is flushed
(bench/judge_throughput/app.py). Nothing is queued to Celery: run_start's queueing is
replaced by the benchmark's own threads.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.judge_throughput.app import seed_answers, setup_django
from bench.judge_throughput.workload import Workload
from loopback import LoopbackOpenAI, checklist_responder, listed_criteria

DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/bench_batched"
DEFAULT_BROKER = "redis://127.0.0.1:6379/15"
MODES = (1, 0, 5)  # criteria per call: per criterion, the whole checklist, five


def decide(criterion: str, answer: str) -> dict:
    digest = hashlib.sha256(f"{criterion}|{answer}".encode()).digest()
    verdict = "pass" if digest[0] % 2 == 0 else "fail"
    return {
        "verdict": verdict,
        "failure_kind": None if verdict == "pass" else "missing",
        "rationale": f"The answer {'states' if verdict == 'pass' else 'does not state'} it.",
    }


@dataclass(frozen=True)
class ModeResult:
    per_call: int
    answers: int
    calls: int
    prompt_tokens: int  # as the verdicts record them (shares of batched calls)
    completion_tokens: int
    server_prompt_tokens: int  # as the loopback server counted them
    charged_tokens: int  # what the judges' TPM limiters were charged
    reasked: int
    wall_s: list[float]  # per answer
    bound_s: float  # per answer
    verdicts: dict[tuple[int, int, int], tuple[str, str, str]]  # (answer, criterion, judge#)


def build(workload: Workload, server: LoopbackOpenAI):
    from evaluation.judges.models import Judge, Panel, PanelMember

    dataset, _, answers = seed_answers(workload, name="Batched grading benchmark")
    panels = {}
    for per_call in MODES:
        panel = Panel.objects.create(name=f"{workload.judges} judges, {per_call} per call")
        for j in range(workload.judges):
            judge = Judge.objects.create(
                name=f"Judge {j} ({per_call} per call)", base_url=server.base_url,
                model=workload.judge_model(j), timeout=60, criteria_per_call=per_call,
            )  # fmt: skip
            PanelMember.objects.create(panel=panel, judge=judge, samples=1)
        panels[per_call] = panel
    return dataset, panels, answers


def grade(dataset, panel, answers, server: LoopbackOpenAI, *, concurrency: int, args):
    from django.db import connection

    from evaluation.runs import lifecycle
    from evaluation.runs import services as runs
    from evaluation.runs.models import Verdict

    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, concurrency=concurrency))
    judges = list(panel.judges.order_by("name"))
    server.reset()
    walls = []
    for answer in answers:

        def task(judge_id: int, answer_id: int = answer.pk) -> None:
            try:
                lifecycle.run_task(
                    worker="bench", run_id=run.pk, answer_id=answer_id, judge_id=judge_id
                )
            finally:
                connection.close()

        threads = [threading.Thread(target=task, args=(j.pk,)) for j in judges]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        walls.append(time.perf_counter() - started)
    calls = [c for c in server.calls if c.request is not None and c.status == 200]
    verdicts = Verdict.objects.filter(run=run).select_related("judge")
    number = {j.pk: n for n, j in enumerate(judges)}
    per_call = judges[0].criteria_per_call
    size = per_call or args.criteria
    batches = math.ceil(args.criteria / size)
    largest = size if size > 1 else 1
    bound = math.ceil(batches / concurrency) * (args.latency + args.per_verdict * largest)
    return ModeResult(
        per_call=per_call,
        answers=len(answers),
        calls=len(calls),
        prompt_tokens=sum(v.prompt_tokens for v in verdicts),
        completion_tokens=sum(v.completion_tokens for v in verdicts),
        server_prompt_tokens=sum(
            math.ceil(len(c.request.prompt_text) / 4) + 4 * len(c.request.messages) for c in calls
        ),
        charged_tokens=sum(
            sum(len(m["content"]) for m in c.request.messages) // 4 + (c.request.max_tokens or 0)
            for c in calls
        ),
        reasked=sum(1 for v in verdicts if (v.judge_params.get("batch") or {}).get("reasked")),
        wall_s=walls,
        bound_s=bound,
        verdicts={
            (v.answer_id, v.criterion_id, number[v.judge_id]): (
                v.outcome,
                v.failure_kind,
                v.rationale,
            )
            for v in verdicts
        },
    )


def report(results: Sequence[ModeResult], args) -> str:
    lines = [
        f"{args.answers} answers × {args.criteria} criteria × {args.judges} judges; latency "
        f"{args.latency:g} s + {args.per_verdict:g} s per verdict; Run.concurrency "
        f"{args.concurrency}",
        "",
        "| criteria per call | calls / answer | prompt tokens / answer | completion tokens / "
        "answer | limiter tokens / answer | wall / answer (median) | bound / answer | "
        "re-asked |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        n = r.answers
        label = {1: "1 (per criterion)", 0: "0 (whole checklist)"}.get(r.per_call, str(r.per_call))
        lines.append(
            f"| {label} | {r.calls / n:g} | {r.prompt_tokens / n:,.0f} | "
            f"{r.completion_tokens / n:,.0f} | {r.charged_tokens / n:,.0f} | "
            f"{statistics.median(r.wall_s):.3f} s | {r.bound_s:.3f} s | {r.reasked} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batched_grading")
    parser.add_argument("--answers", type=int, default=10)
    parser.add_argument("--criteria", type=int, default=20)
    parser.add_argument("--judges", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds before each reply")
    parser.add_argument(
        "--per-verdict", type=float, default=0.02, help="seconds more per verdict in a reply"
    )
    parser.add_argument("--concurrency", type=int, default=20, help="Run.concurrency")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    args = parser.parse_args(argv)
    setup_django(database_url=args.database_url, broker_url=args.broker_url, queue="bench-batched")
    from evaluation.runs import queue

    queue.send_on_commit = lambda *a, **k: None  # the benchmark runs the tasks itself

    def latency(request) -> float:
        return args.latency + args.per_verdict * max(1, len(listed_criteria(request)))

    workload = Workload(answers=args.answers, criteria=args.criteria, judges=args.judges)
    with LoopbackOpenAI(responder=checklist_responder(decide), latency=latency) as server:
        dataset, panels, answers = build(workload, server)
        results = [
            grade(dataset, panels[k], answers, server, concurrency=args.concurrency, args=args)
            for k in MODES
        ]
    print(report(results, args))
    same = all(r.verdicts == results[0].verdicts for r in results[1:])
    print(f"\nSame verdicts (outcome, failure kind, rationale) in every mode: {same}")
    agree = all(r.prompt_tokens == r.server_prompt_tokens for r in results)
    print(f"Recorded prompt tokens equal the server's count in every mode: {agree}")
    return 0 if same and agree else 1


if __name__ == "__main__":
    sys.exit(main())
