"""Run scores at a million verdicts over grouped, weighted checklists (issue 23, item 6).

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/rubricsbench \\
    SECRET_KEY=bench-secret-key-not-for-production-0123456789 \\
        .venv/bin/python -m bench.rubric_scores --verdicts 1000000

Seeds with COPY, as bench.seed_scale does: Q queries, each with one submitted checklist of
`--criteria` criteria in five groups two levels deep (two top groups, three under them;
criteria at both levels), `--systems` systems' answers to every query, and one imported run
of one external judge on every item (Q × systems × criteria = `--verdicts`: 2,500 queries
× 20 systems × 20 criteria for a million). A third of the checklists are scored by `tree`
(positive weights only), a third by `points` and a third by the dataset's `blend`, the
last two with a penalty (a negative weight) in every ten criteria; 1% of the verdicts are
errors (undecided items) and 0.5% of the items are adjudicated.

Then it measures, each in this process against the same database:

- the counts' SQL (`scores._counted`: votes per criterion to counts per answer, checklist
  and group) and the reports built from them in Python (`scores._report`: the strategies);
- `GET /api/runs/{id}/scores/`, first read (nothing kept: the counts, every answer's
  report and the kept pieces, in the request) and kept (its first page read back);
- the run page `/runs/{id}/`, first view (its progress and call errors counted, the scores
  kept) and again, and one answer's page.

The dataset is named after the size and seed and replaced at each run (`--reuse` keeps
it when it exists, and only clears its kept figures). The database must be a benchmark's
own: its name must contain "bench".
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import time
from collections.abc import Iterator

from bench import seed_scale

PAGE_TARGET = 0.5  # seconds: the page and API target of the scale issue
# (docs/benchmarks.md#pages-at-scale); the uncached count is held to the figure measured
# there for flat checklists at a million votes, about 1 s on a quiet machine.
MISS_TARGET = 1.0

# Five groups per checklist: (index, parent index, weight); criteria go round them.
GROUPS = ((0, None, 3), (1, None, 1), (2, 0, 2), (3, 0, 1), (4, 1, 1))
STRATEGIES = ("tree", "points", "")  # "" : the dataset's (blend)


def _outcome(answer_id: int, criterion_id: int, salt: int) -> str:
    roll = (answer_id * 7919 + criterion_id * 104729 + salt * 31) % 1000
    if roll < 10:
        return "error"
    return "pass" if roll < 620 else "fail"


def seed(*, verdicts: int, systems: int, criteria: int, seed_value: int, reuse: bool) -> dict:
    """Create (or with `reuse`, find) the dataset and its run; returns ids and counts."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation.models import Dataset
    from evaluation.answers.models import System
    from evaluation.judges.models import Judge, Panel, PanelMember
    from evaluation.runs import snapshot
    from evaluation.runs.models import Run

    if connection.vendor != "postgresql":
        raise SystemExit("bench.rubric_scores needs PostgreSQL (DATABASE_URL=postgresql://...).")
    queries = max(1, verdicts // (systems * criteria))
    name = f"Rubric scores {queries * systems * criteria} (seed {seed_value})"
    old = Dataset.objects.filter(name=name).first()
    if old is not None and reuse:
        run = Run.objects.filter(dataset=old).first()
        if run is not None:
            return {"dataset": old.pk, "run": run.pk, "verdicts": run.verdicts.count(),
                    "seeded": 0.0, "reused": True}  # fmt: skip
    started = time.perf_counter()
    rng = random.Random(seed_value)
    now = dt.datetime(2026, 1, 15, 12, tzinfo=dt.UTC)
    admin, _ = get_user_model().objects.get_or_create(
        username="bench-admin", defaults={"is_superuser": True, "is_staff": True}
    )
    expert, _ = get_user_model().objects.get_or_create(username="expert-1")
    if not admin.is_superuser:
        admin.is_superuser = admin.is_staff = True
        admin.save(update_fields=["is_superuser", "is_staff"])
    if old is not None:
        with transaction.atomic(), connection.cursor() as cursor:
            seed_scale._delete_dataset(cursor, old.pk)
    dataset = Dataset.objects.create(name=name, created_by=admin, scoring="blend")
    system_rows = [
        System.objects.get_or_create(name=f"bench-system-{i:03d}", version="1")[0]
        for i in range(systems)
    ]
    judge, _ = Judge.objects.get_or_create(
        name="bench-rubric-judge", defaults={"kind": Judge.Kind.EXTERNAL}
    )
    panel, _ = Panel.objects.get_or_create(name="bench rubric panel")
    PanelMember.objects.get_or_create(panel=panel, judge=judge)
    tables = ("annotation_query", "annotation_checklist", "annotation_criteriongroup",
              "annotation_criterion", "evaluation_answer", "evaluation_verdict",
              "evaluation_adjudication")  # fmt: skip
    copy = seed_scale._copy
    with transaction.atomic(), connection.cursor() as cursor:
        ids = {t: seed_scale.Ids(cursor, t) for t in tables}
        query_ids = [ids["annotation_query"].take() for _ in range(queries)]
        copy(cursor, "annotation_query", ("id", "dataset_id", "text", "query_date", "status",
             "created_at", "reference_answer", "external_id", "complexity", "dimensions",
             "external_id_fixed_by"),
             ((pk, dataset.pk, f"Query {n}", dt.date(2025, 1 + n % 12, 1), "done", now, "",
               f"q{n}", "", "{}", "") for n, pk in enumerate(query_ids)))  # fmt: skip
        checklist_ids = [ids["annotation_checklist"].take() for _ in query_ids]
        copy(cursor, "annotation_checklist", ("id", "query_id", "author_id", "status",
             "first_submitted_at", "submitted_at", "created_at", "updated_at", "scoring",
             "undecided"),
             ((pk, q, expert.pk, "submitted", now, now, now, now, STRATEGIES[n % 3], "")
              for n, (pk, q) in enumerate(zip(checklist_ids, query_ids, strict=True))))  # fmt: skip
        group_ids: dict[int, list[int]] = {}
        group_rows = []
        for checklist in checklist_ids:
            first = ids["annotation_criteriongroup"].take(len(GROUPS))
            group_ids[checklist] = [first + i for i, _, _ in GROUPS]
            group_rows += [
                (first + i, checklist, f"g{i}", None if p is None else first + p, f"Aspect {i}",
                 "", w, i) for i, p, w in GROUPS
            ]  # fmt: skip
        copy(cursor, "annotation_criteriongroup", ("id", "checklist_id", "external_id",
             "parent_id", "title", "description", "weight", "position"),
             iter(group_rows))  # fmt: skip
        criterion_ids: dict[int, list[int]] = {}
        criterion_rows = []
        for n, checklist in enumerate(checklist_ids):
            penalties = STRATEGIES[n % 3] != "tree"
            own = criterion_ids[checklist] = []
            for position in range(criteria):
                pk = ids["annotation_criterion"].take()
                own.append(pk)
                weight = rng.choice((0.5, 1, 2))
                if penalties and position % 10 == 9:
                    weight = -rng.choice((1, 2))
                criterion_rows.append((
                    pk, checklist, position, f"States figure {position} of checklist {checklist}.",
                    "fact", "", weight, position % 4 != 3, True, f"c{position}",
                    group_ids[checklist][position % len(GROUPS)],
                ))  # fmt: skip
        copy(cursor, "annotation_criterion", ("id", "checklist_id", "position", "text", "kind",
             "notes", "weight", "is_core", "scoring_enabled", "external_id", "group_id"),
             iter(criterion_rows))  # fmt: skip
        answers: dict[int, list[int]] = {}
        answer_rows = []
        for q in query_ids:
            own = answers[q] = []
            for system in system_rows:
                pk = ids["evaluation_answer"].take()
                own.append(pk)
                answer_rows.append((pk, system.pk, q, f"Answer of {system.name} to {q}.",
                                    "", "", "", now, now, "[]", "[]", "{}", 0))  # fmt: skip
        copy(cursor, "evaluation_answer", ("id", "system_id", "query_id", "text", "external_id",
             "run_label", "draft_prompt_version", "created_at", "updated_at", "turns",
             "context", "metadata", "sample"), iter(answer_rows))  # fmt: skip
        run = Run.objects.create(
            dataset=dataset, panel=panel, name="Graded", kind=Run.Kind.IMPORTED,
            status=Run.Status.DONE, snapshot=snapshot.take(panel), created_by=admin,
            started_at=now - dt.timedelta(hours=1), finished_at=now,
        )  # fmt: skip
        verdict_ids = ids["evaluation_verdict"]

        def items() -> Iterator[tuple[int, int]]:
            for q, checklist in zip(query_ids, checklist_ids, strict=True):
                for a in answers[q]:
                    for c in criterion_ids[checklist]:
                        yield a, c

        def verdict_rows() -> Iterator[tuple]:
            for a, c in items():
                outcome = _outcome(a, c, seed_value)
                yield (
                    verdict_ids.take(), run.pk, a, c, judge.pk, 0, outcome, "", "", "",
                    "timeout" if outcome == "error" else "", "", 0, 0, 0, 1, False, "", "{}",
                    now, now,
                )  # fmt: skip

        n = copy(cursor, "evaluation_verdict", ("id", "run_id", "answer_id", "criterion_id",
                 "judge_id", "sample", "outcome", "failure_kind", "rationale", "raw_output",
                 "error_kind", "error", "prompt_tokens", "completion_tokens", "latency_ms",
                 "attempts", "cache_hit", "cache_key", "judge_params", "created_at",
                 "updated_at"), verdict_rows())  # fmt: skip
        adjudications = [
            (ids["evaluation_adjudication"].take(), a, c,
             "fail" if _outcome(a, c, seed_value) == "pass" else "pass", "Checked.", admin.pk,
             now, 1)
            for a, c in items() if (a * 31 + c) % 200 == 0
        ]  # fmt: skip
        copy(cursor, "evaluation_adjudication", ("id", "answer_id", "criterion_id", "label",
             "reason", "decided_by_id", "decided_at", "version"), iter(adjudications))  # fmt: skip
        run.expected = n
        run.save(update_fields=["expected"])
        for table in ids.values():
            table.finish(cursor)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"dataset": dataset.pk, "run": run.pk, "verdicts": n, "queries": queries,
            "answers": len(answer_rows), "criteria": len(criterion_rows),
            "groups": len(group_rows), "adjudications": len(adjudications),
            "seeded": time.perf_counter() - started, "reused": False}  # fmt: skip


def measure(summary: dict) -> dict[str, float]:
    """Seconds of each step (see the module's docstring)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from evaluation.kept.models import KeptFigure
    from evaluation.runs import scores
    from evaluation.runs.models import Run

    run = Run.objects.select_related("dataset").get(pk=summary["run"])
    KeptFigure.objects.filter(dataset_id=run.dataset_id).delete()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    counted = scores._counted(run)
    timings["counts (SQL, uncached)"] = time.perf_counter() - started
    started = time.perf_counter()
    report = scores._report(run, counted)
    timings["reports from counts (Python)"] = time.perf_counter() - started
    summary["rows"] = len(counted)
    summary["value"] = report.systems[0].value if report.systems else None
    admin = get_user_model().objects.get(username="bench-admin")
    client = Client()
    client.force_login(admin)
    answer = report.answers[0].answer_id
    # A first request imports and builds what any request needs (views, templates, DRF):
    # paid here, not by the first read measured.
    client.get(f"/api/runs/{run.pk}/", HTTP_HOST="localhost")
    client.get(f"/datasets/{run.dataset_id}/runs/", HTTP_HOST="localhost")
    for label, url in (
        ("API scores, first read", f"/api/runs/{run.pk}/scores/"),
        ("API scores, kept", f"/api/runs/{run.pk}/scores/"),
        # Its first view also counts the run's progress and call errors (kept after).
        ("run page, first view", f"/runs/{run.pk}/"),
        ("run page, again", f"/runs/{run.pk}/"),
        ("answer page", f"/runs/{run.pk}/answers/{answer}/"),
    ):
        started = time.perf_counter()
        response = client.get(url, HTTP_HOST="localhost")
        timings[label] = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code}")
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rubric_scores", description=__doc__)
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--criteria", type=int, default=20, help="per checklist")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--reuse", action="store_true", help="keep the dataset if it exists")
    args = parser.parse_args(argv)
    # DEBUG on (bench.seed_scale's default, as bench.rubrics runs): off, the pages need
    # collected static files and HTTPS. It keeps a few dozen queries' text, no more.
    seed_scale._setup_django()
    from django.core.management import call_command
    from django.db import connection

    if "bench" not in str(connection.settings_dict["NAME"]):
        raise SystemExit("Give a database of its own whose name contains 'bench'.")
    call_command("migrate", verbosity=0)
    summary = seed(verdicts=args.verdicts, systems=args.systems, criteria=args.criteria,
                   seed_value=args.seed, reuse=args.reuse)  # fmt: skip
    timings = measure(summary)
    load = os.getloadavg()[0]
    how = "reused" if summary["reused"] else f"seeded in {summary['seeded']:.1f} s"
    print(f"{summary['verdicts']:,} verdicts ({how}); {summary['rows']:,} count rows; "
          f"first system's mean value {summary['value']:.4f}; load {load:.2f}")  # fmt: skip
    for label, seconds in timings.items():
        target = MISS_TARGET if label.startswith(("counts", "reports")) else PAGE_TARGET
        print(f"{label:30} {seconds:7.3f} s  ({seconds / target:5.2f} × {target:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
