"""Seed PostgreSQL with the scale workload of issue 14, reproducibly and fast (COPY).

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/wt14scale \\
        .venv/bin/python -m bench.seed_scale --preset full --seed 14

Presets (docs/benchmarks.md#pages-at-scale):

- ``full``: 3,000 queries × 3 experts' submitted checklists of 15–25 criteria (about
  180,000 criteria), 10 systems' answers to every query (30,000 answers), a panel of three
  LLM judges and one finished run over the first 556 queries' answers (556 × 10 × 60 × 3
  ≈ 1,000,000 verdicts; the run's snapshot is taken from the panel as a started run's is),
  200,000 human labels by four reviewers on 100,000 judged items, 20,000 adjudications,
  a perfect answer per checklist and a cross-evaluation run (one judge) grading each
  against the other experts' checklists (about 360,000 verdicts), a few hundred review
  assignments.
- ``agreement``: the agreement case of the issue's first paragraph: 20 queries × 100
  criteria (five checklists of 20), 100 systems (2,000 answers), an imported run of three
  external judges on all 200,000 items (600,000 verdicts), 220,000 human labels (every item
  labelled once, 10% twice) and 4,000 adjudications.
- ``analytics``: issue 12's analytics case: 2,000 queries × two checklists of 5–15 criteria,
  5 systems, one run of three LLM judges on all of about 200,000 items (600,000 verdicts),
  44,000 labels on 40,000 items, 2,000 adjudications.

Every figure comes from ``random.Random(seed)``: the same seed gives the same rows (ids
depend on what the database held before). Users ``bench-admin``, ``bench-reviewer`` and
``rev-1``…``rev-4`` get the password ``bench-password``; ``bench-admin`` administers the
dataset, the others review it. The dataset is named after the preset and the seed and is
replaced if it exists.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import random
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PASSWORD = "bench-password"


@dataclass(frozen=True)
class Preset:
    queries: int
    experts: int
    criteria: tuple[int, int]  # per checklist, inclusive range
    systems: int
    judges: int
    run_queries: int  # the run grades the answers to the first N queries
    run_kind: str  # "systems" or "imported"
    labelled_items: int
    labels: int
    adjudications: int
    cross_evaluation: bool
    assignments: int
    runs: int = 1  # nightly runs of the same panel on the same items, one a night


PRESETS = {
    "full": Preset(
        queries=3000, experts=3, criteria=(15, 25), systems=10, judges=3, run_queries=556,
        run_kind="systems", labelled_items=100_000, labels=200_000, adjudications=20_000,
        cross_evaluation=True, assignments=400,
    ),
    "agreement": Preset(
        queries=20, experts=5, criteria=(20, 20), systems=100, judges=3, run_queries=20,
        run_kind="imported", labelled_items=200_000, labels=220_000, adjudications=4_000,
        cross_evaluation=False, assignments=0,
    ),
    # Issue 12's analytics case: 5 systems × 2,000 queries × 20 criteria (two checklists of
    # 5–15, so the complexity buckets differ) = about 200,000 items, 600,000 verdicts from
    # three judges, 40,000 labelled items.
    "analytics": Preset(
        queries=2000, experts=2, criteria=(5, 15), systems=5, judges=3, run_queries=2000,
        run_kind="systems", labelled_items=40_000, labels=44_000, adjudications=2_000,
        cross_evaluation=False, assignments=0,
    ),
    # Issue 44's month of nightly runs at Criteria-Eval's size: 3,000 queries × 2 checklists
    # of 20 criteria, 2 systems, 3 judges, 30 runs: 3,000 × 2 × 40 × 3 = 720,000 verdicts a
    # night, 21.6 million in all. Not measured yet (docs/benchmarks.md).
    "month": Preset(
        queries=3000, experts=2, criteria=(20, 20), systems=2, judges=3, run_queries=3000,
        run_kind="systems", labelled_items=20_000, labels=24_000, adjudications=2_000,
        cross_evaluation=False, assignments=0, runs=30,
    ),
    # One night of the month preset (720,000 verdicts): a run's recount at Criteria-Eval's
    # size (20-37 s) beside readers and labellers, without seeding the other 29 nights.
    "month-night": Preset(
        queries=3000, experts=2, criteria=(20, 20), systems=2, judges=3, run_queries=3000,
        run_kind="systems", labelled_items=20_000, labels=24_000, adjudications=2_000,
        cross_evaluation=False, assignments=0, runs=1,
    ),
    # The month preset at a tenth of its queries and three nights (216,000 verdicts): what
    # the archive benchmark (bench.run_archive) and a first load were measured on here.
    "month-tenth": Preset(
        queries=300, experts=2, criteria=(20, 20), systems=2, judges=3, run_queries=300,
        run_kind="systems", labelled_items=4_000, labels=4_800, adjudications=400,
        cross_evaluation=False, assignments=0, runs=3,
    ),
    # month-tenth with the month's 30 nights (2,160,000 verdicts): the same items a run, ten
    # times the runs, to tell what grows with the number of runs (the export's peak RSS,
    # docs/benchmarks.md) from what grows with the items.
    "month-tenth-30": Preset(
        queries=300, experts=2, criteria=(20, 20), systems=2, judges=3, run_queries=300,
        run_kind="systems", labelled_items=4_000, labels=4_800, adjudications=400,
        cross_evaluation=False, assignments=0, runs=30,
    ),
    # The month preset's items (720,000 verdicts a night) with three nights: as many verdicts
    # as month-tenth-30 (2,160,000), ten times the items a run.
    "month-3": Preset(
        queries=3000, experts=2, criteria=(20, 20), systems=2, judges=3, run_queries=3000,
        run_kind="systems", labelled_items=20_000, labels=24_000, adjudications=2_000,
        cross_evaluation=False, assignments=0, runs=3,
    ),
    # The month preset's shape at a small size: for its test.
    "month-tiny": Preset(
        queries=6, experts=2, criteria=(3, 3), systems=2, judges=3, run_queries=6,
        run_kind="systems", labelled_items=20, labels=24, adjudications=4,
        cross_evaluation=False, assignments=0, runs=3,
    ),
    # A few seconds: for the runner's own test and for trying the pages.
    "tiny": Preset(
        queries=30, experts=3, criteria=(4, 6), systems=3, judges=3, run_queries=20,
        run_kind="systems", labelled_items=600, labels=1_000, adjudications=60,
        cross_evaluation=True, assignments=10,
    ),
}  # fmt: skip

RATERS = ("rev-1", "rev-2", "rev-3", "rev-4")
KINDS = ("fact",) * 7 + ("methodology",) * 2 + ("format",)
VERBS = ("States", "Provides", "Includes", "Presents", "Reports", "Compares")
TOPICS = (
    "quarterly revenue", "operating margin", "guidance for the next quarter", "free cash flow",
    "segment growth", "share buybacks", "net interest income", "capital expenditure",
    "gross margin", "the dividend", "headcount", "the effective tax rate",
)  # fmt: skip
ANSWER = (
    "## Summary\n\n{company} reported **{topic}** of ${x:.1f} billion for the quarter, "
    "{delta:+.1f}% against the prior year, and {topic2} of ${y:.1f} billion. Management "
    "reiterated its outlook and pointed to {topic3} as the main driver.\n\n"
    "| Metric | Value | Change |\n|---|---|---|\n| {topic} | ${x:.1f}B | {delta:+.1f}% |\n"
    "| {topic2} | ${y:.1f}B | {delta2:+.1f}% |\n\n"
    "- Guidance: ${z:.1f}–{z2:.1f} billion\n- Sources: earnings release, call transcript\n"
)
COMPANIES = ("Acme Corp", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries")


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()


class Ids:
    """Reserve id ranges on a table: ids are given in COPY, the sequence moved past them."""

    def __init__(self, cursor, table: str) -> None:
        self.table = table
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
        self.next = cursor.fetchone()[0] + 1

    def take(self, n: int = 1) -> int:
        first = self.next
        self.next += n
        return first

    def finish(self, cursor) -> None:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [self.table, self.next]
        )


def _copy(cursor, table: str, columns: tuple[str, ...], rows: Iterator[tuple]) -> int:
    n = 0
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


@contextmanager
def _foreign_keys_checked_once(cursor, table: str) -> Iterator[None]:
    """The table's foreign keys dropped while the block writes, then added back and each
    checked in one scan (NOT VALID, then VALIDATE), in the caller's transaction. Django's
    keys are DEFERRABLE INITIALLY DEFERRED: kept, each row's check waits in a queue and
    runs at COMMIT, a lookup per row and key (86 million at the month preset, most of its
    commit). The table is locked against every other session until the commit.

    A key is neither dropped nor added while the tables it joins have checks queued: the
    rows written before are checked first (SET CONSTRAINTS ALL IMMEDIATE), and every key
    is deferred again after (the database has no deferrable key checked immediately)."""
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = %s::regclass AND contype = 'f' ORDER BY conname",
        [table],
    )
    keys = cursor.fetchall()
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for name, _ in keys:
        cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    yield
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for name, definition in keys:  # as Django made them: DEFERRABLE INITIALLY DEFERRED
        cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition} NOT VALID')
        cursor.execute(f'ALTER TABLE {table} VALIDATE CONSTRAINT "{name}"')
    cursor.execute("SET CONSTRAINTS ALL DEFERRED")


# An answer's conversation, retrieved context and metadata (issue 24): empty, as for a
# plain answer. COPY applies no Django default.
# The columns every seeded answer gets as a plain answer has them: no trajectory, sample 0.
AGENT_COLUMNS = ("turns", "context", "metadata", "sample")
AGENT_VALUES = ("[]", "[]", "{}", 0)


def _truth(answer_id: int, criterion_id: int, salt: int) -> str:
    """The item's "true" label: fixed by the ids and seed, so votes and labels agree on it."""
    return "pass" if (answer_id * 7919 + criterion_id * 104729 + salt) % 100 < 62 else "fail"


def seed(preset_name: str, *, seed_value: int = 14, out=sys.stdout) -> dict:
    """Create the preset's dataset; returns a summary (ids and row counts)."""
    _setup_django()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection, transaction

    from annotation import roles
    from annotation.models import Checklist, Dataset, QueryCategory, SourceType
    from annotation.services import dataset_create, dataset_set_role
    from evaluation.answers.models import System
    from evaluation.cross_evaluation.services import reference_system
    from evaluation.judges.models import Judge, Panel, PanelMember

    if connection.vendor != "postgresql":
        raise SystemExit("bench.seed_scale needs PostgreSQL (DATABASE_URL=postgresql://...).")
    preset = PRESETS[preset_name]
    rng = random.Random(seed_value)
    started = time.perf_counter()
    now = dt.datetime(2026, 1, 15, 12, tzinfo=dt.UTC)

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=out, flush=True)

    User = get_user_model()

    def user(name: str, group: str):
        account, created = User.objects.get_or_create(username=name)
        if created:
            account.set_password(PASSWORD)
            account.save()
        account.groups.add(Group.objects.get(name=group))
        return account

    admin = user("bench-admin", roles.Group.ADMIN.value)
    reviewer = user("bench-reviewer", roles.Group.REVIEWER.value)
    raters = [user(name, roles.Group.REVIEWER.value) for name in RATERS]
    experts = [user(f"expert-{i + 1}", roles.Group.EXPERT.value) for i in range(preset.experts)]
    name = f"Scale {preset_name} (seed {seed_value})"
    old = Dataset.objects.filter(name=name).first()
    if old is not None:
        say(f"removing the previous {name!r}")
        with connection.cursor() as cursor:
            _delete_dataset(cursor, old.pk)
    dataset = dataset_create(
        name=name, by=admin, experts_per_query=preset.experts, pass_threshold=0.6
    )
    for account in (reviewer, *raters):
        dataset_set_role(dataset=dataset, user=account, role=roles.DatasetRole.REVIEWER)
    for account in experts:
        dataset_set_role(dataset=dataset, user=account, role=roles.DatasetRole.EXPERT)
    categories = list(QueryCategory.objects.values_list("pk", flat=True))
    sources = list(SourceType.objects.filter(is_banned=False).values_list("pk", flat=True))

    systems = [
        System.objects.get_or_create(name=f"bench-system-{i:03d}", version="1")[0]
        for i in range(preset.systems)
    ]
    judge_kind = Judge.Kind.LLM if preset.run_kind == "systems" else Judge.Kind.EXTERNAL
    judges = []
    for i in range(preset.judges):
        judge, _ = Judge.objects.update_or_create(
            name=f"bench-judge-{i + 1}-{judge_kind}",
            defaults={
                "kind": judge_kind, "model": f"model-{i + 1}",
                "base_url": "http://127.0.0.1:9/v1" if judge_kind == Judge.Kind.LLM else "",
                "prompt_price": 0.15, "completion_price": 0.6,
            },
        )  # fmt: skip
        judges.append(judge)
    panel, _ = Panel.objects.get_or_create(name=f"bench panel {judge_kind}")
    for judge in judges:
        PanelMember.objects.get_or_create(panel=panel, judge=judge)

    with transaction.atomic(), connection.cursor() as cursor:
        ids = {
            t: Ids(cursor, t)
            for t in (
                "annotation_query", "annotation_checklist", "annotation_criterion",
                "annotation_criterion_source_types", "evaluation_answer", "evaluation_verdict",
                "evaluation_humanlabel", "evaluation_adjudication", "evaluation_runtask",
                "evaluation_reviewassignment",
            )
        }  # fmt: skip

        # Queries, checklists, criteria.
        query_ids = []
        query_rows = []
        for q in range(preset.queries):
            pk = ids["annotation_query"].take()
            query_ids.append(pk)
            query_rows.append((
                pk, dataset.pk, f"Summarise the Q{q % 4 + 1} earnings call of "
                f"{COMPANIES[q % len(COMPANIES)]} ({q}) and compare it with guidance.",
                dt.date(2025, 1 + q % 12, 1 + q % 28), rng.choice(categories), "", "done", now,
                f"query-{pk}", "",  # the external id every query gets (annotation.query_ids)
            ))  # fmt: skip
        # COPY applies no Django default: every NOT NULL column is named.
        columns = ("id", "dataset_id", "text", "query_date", "category_id", "reference_answer",
                   "status", "created_at", "external_id", "complexity", "dimensions",
                   "external_id_fixed_by")  # fmt: skip
        _copy(cursor, "annotation_query", columns, ((*row, "{}", "") for row in query_rows))
        say(f"{len(query_rows):,} queries")

        checklists: dict[int, list[int]] = {}  # query id -> checklist ids
        checklist_rows = []
        for q in query_ids:
            checklists[q] = []
            for expert in experts:
                pk = ids["annotation_checklist"].take()
                checklists[q].append(pk)
                checklist_rows.append((pk, q, expert.pk, "submitted", now, now, now, now))
        # scoring and undecided "": the dataset's.
        _copy(cursor, "annotation_checklist", ("id", "query_id", "author_id", "status",
              "first_submitted_at", "submitted_at", "created_at", "updated_at", "scoring",
              "undecided"), ((*row, "", "") for row in checklist_rows))  # fmt: skip
        say(f"{len(checklist_rows):,} checklists")

        criteria: dict[int, list[int]] = {}  # checklist id -> criterion ids
        criterion_rows = []
        source_rows = []
        for q in query_ids:
            for checklist in checklists[q]:
                n = rng.randint(*preset.criteria)
                own = criteria[checklist] = []
                for position in range(n):
                    pk = ids["annotation_criterion"].take()
                    own.append(pk)
                    kind = rng.choice(KINDS)
                    text = (
                        f"{rng.choice(VERBS)} {rng.choice(TOPICS)} for the period, with the "
                        f"figure and its change (item {position + 1} of checklist {checklist})."
                    )
                    criterion_rows.append((
                        pk, checklist, position, text, kind, "", 1 + (position % 3 == 0),
                        position % 5 != 4, True, "",
                    ))  # fmt: skip
                    if kind == "fact":
                        for source in rng.sample(sources, rng.randint(1, 2)):
                            source_rows.append(
                                (ids["annotation_criterion_source_types"].take(), pk, source)
                            )
        _copy(cursor, "annotation_criterion", ("id", "checklist_id", "position", "text", "kind",
              "notes", "weight", "is_core", "scoring_enabled", "external_id"),
              iter(criterion_rows))  # fmt: skip
        _copy(cursor, "annotation_criterion_source_types", ("id", "criterion_id",
              "sourcetype_id"), iter(source_rows))  # fmt: skip
        say(f"{len(criterion_rows):,} criteria, {len(source_rows):,} source-type links")

        # Answers: every system answers every query.
        answers: dict[int, list[int]] = {q: [] for q in query_ids}
        answer_rows = []
        for q in query_ids:
            for system in systems:
                pk = ids["evaluation_answer"].take()
                answers[q].append(pk)
                x, y = rng.uniform(1, 90), rng.uniform(1, 30)
                text = ANSWER.format(
                    company=COMPANIES[q % len(COMPANIES)], topic=rng.choice(TOPICS),
                    topic2=rng.choice(TOPICS), topic3=rng.choice(TOPICS), x=x, y=y,
                    delta=rng.uniform(-20, 30), delta2=rng.uniform(-20, 30), z=x * 1.02,
                    z2=x * 1.06,
                )  # fmt: skip
                answer_rows.append((pk, system.pk, q, text, f"{system.name}-{q}", "", "", now, now))
        _copy(cursor, "evaluation_answer", ("id", "system_id", "query_id", "text", "external_id",
              "run_label", "draft_prompt_version", "created_at", "updated_at", *AGENT_COLUMNS),
              ((*row, *AGENT_VALUES) for row in answer_rows))  # fmt: skip
        say(f"{len(answer_rows):,} answers")

        # The runs: every answer to the first run_queries queries, by every judge; one run a
        # night for `runs` nights, the newest finished at `now` (labels read the newest).
        scope = query_ids[: preset.run_queries]
        items = [
            (a, c) for q in scope for a in answers[q] for cl in checklists[q] for c in criteria[cl]
        ]
        salt = seed_value
        skill = [0.93 - 0.04 * i for i in range(len(judges))]
        verdict_ids = ids["evaluation_verdict"]
        verdict_total = 0
        with _foreign_keys_checked_once(cursor, "evaluation_verdict"):
            for night in range(preset.runs - 1, -1, -1):
                run = _seed_run(
                    cursor, ids, rng, preset=preset, preset_name=preset_name, dataset=dataset,
                    panel=panel, admin=admin, judges=judges, answers=answers, scope=scope,
                    items=items, salt=salt, skill=skill, verdict_ids=verdict_ids,
                    finished=now - dt.timedelta(days=night),
                )  # fmt: skip
                verdict_total += run.expected
                say(f"run {run.pk}: {run.expected:,} verdicts on {len(items):,} items")
        say("the verdicts' foreign keys checked")

        # Human labels: labelled_items items once each, the rest as further raters.
        chosen = rng.sample(range(len(items)), preset.labelled_items)
        raters_of: dict[int, list[int]] = {i: [rng.randrange(len(raters))] for i in chosen}
        extra = preset.labels - preset.labelled_items
        while extra > 0:
            i = chosen[rng.randrange(len(chosen))]
            free = [r for r in range(len(raters)) if r not in raters_of[i]]
            if free:
                raters_of[i].append(rng.choice(free))
                extra -= 1
        label_rows = []
        for i, who in raters_of.items():
            a, c = items[i]
            truth = _truth(a, c, salt)
            for r in who:
                label = truth if rng.random() < 0.9 else ("fail" if truth == "pass" else "pass")
                at = now - dt.timedelta(days=rng.randrange(30), minutes=rng.randrange(600))
                label_rows.append((
                    ids["evaluation_humanlabel"].take(), a, c, raters[r].pk, raters[r].username,
                    label, "", "app", at, at,
                ))  # fmt: skip
        _copy(cursor, "evaluation_humanlabel", ("id", "answer_id", "criterion_id",
              "reviewer_id", "rater", "label", "note", "source", "created_at", "updated_at"),
              iter(label_rows))  # fmt: skip
        say(f"{len(label_rows):,} human labels on {len(raters_of):,} items")

        adjudicated = rng.sample(chosen, preset.adjudications)
        adjudication_rows = [
            (ids["evaluation_adjudication"].take(), items[i][0], items[i][1],
             _truth(*items[i], salt), "Checked against the filing.", reviewer.pk, now, 1)
            for i in adjudicated
        ]  # fmt: skip
        columns = ("id", "answer_id", "criterion_id", "label", "reason", "decided_by_id",
                   "decided_at", "version")  # fmt: skip
        _copy(cursor, "evaluation_adjudication", columns, iter(adjudication_rows))
        say(f"{len(adjudication_rows):,} adjudications")

        assignment_rows = []
        for n_assigned, q in enumerate(scope[: preset.assignments]):
            a = answers[q][n_assigned % len(answers[q])]
            assignment_rows.append((
                ids["evaluation_reviewassignment"].take(), "labelling", a, None,
                raters[n_assigned % len(raters)].pk, admin.pk, now,
            ))  # fmt: skip
        _copy(cursor, "evaluation_reviewassignment", ("id", "queue", "answer_id", "criterion_id",
              "assignee_id", "assigned_by_id", "created_at"), iter(assignment_rows))  # fmt: skip

        cross = {}
        if preset.cross_evaluation:
            cross = _cross_evaluation(
                cursor, ids, rng, dataset=dataset, query_ids=query_ids, checklists=checklists,
                criteria=criteria, judge=judges[0], admin=admin, now=now, salt=salt,
                reference=reference_system(),
            )  # fmt: skip
            say(f"cross-evaluation run {cross['run']}: {cross['verdicts']:,} verdicts")
        for table in ids.values():
            table.finish(cursor)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    say("analyzed")
    # The pages' kept figures are counted by a worker before the first reader, not by the
    # first reader (evaluation.analytics.warmup): a first load right after seeding then
    # measures the pages, not the figures' first count.
    from evaluation.analytics import warmup

    warm_up_queued = warmup.queue(dataset.pk, why=f"seeded {preset_name}")
    not_queued = "not queued (FIGURES_WARM_UP off, or no broker)"
    say(f"warm-up {'queued' if warm_up_queued else not_queued}")
    summary = {
        "preset": preset_name, "seed": seed_value, "dataset": dataset.pk, "run": run.pk,
        "queries": len(query_ids), "checklists": Checklist.objects.filter(
            query__dataset=dataset).count(), "criteria": len(criterion_rows),
        "answers": len(answer_rows), "verdicts": verdict_total, "items": len(items),
        "runs": preset.runs,
        "labels": len(label_rows), "labelled_items": len(raters_of),
        "adjudications": len(adjudication_rows), "cross_evaluation": cross,
        "seconds": round(time.perf_counter() - started, 1), "warm_up_queued": warm_up_queued,
    }  # fmt: skip
    say(f"done: {summary}")
    return summary


def _seed_run(
    cursor, ids, rng, *, preset: Preset, preset_name: str, dataset, panel, admin, judges,
    answers, scope, items, salt: int, skill: list[float], verdict_ids: Ids,
    finished: dt.datetime,
):  # fmt: skip
    """One finished run of the preset's judges on `items`, its verdicts and tasks by COPY."""
    from evaluation.runs import snapshot
    from evaluation.runs.models import Run

    name = f"Nightly {preset_name}" + (f" {finished.date().isoformat()}" if preset.runs > 1 else "")
    run = Run.objects.create(
        dataset=dataset, panel=panel, name=name,
        kind=Run.Kind.SYSTEMS if preset.run_kind == "systems" else Run.Kind.IMPORTED,
        status=Run.Status.DONE, snapshot=snapshot.take(panel), created_by=admin,
        started_at=finished - dt.timedelta(hours=3), finished_at=finished,
    )  # fmt: skip
    if preset.run_queries < preset.queries:
        run.queries.set(scope)
    now = finished

    def verdicts() -> Iterator[tuple]:
        for a, c in items:
            truth = _truth(a, c, salt)
            for judge, p in zip(judges, skill, strict=True):
                roll = rng.random()
                if roll < 0.01:
                    outcome, error_kind = ("error", "timeout") if roll < 0.005 else (
                        "unparseable", "")  # fmt: skip
                else:
                    error_kind = ""
                    outcome = truth if rng.random() < p else ("fail" if truth == "pass"
                                                               else "pass")  # fmt: skip
                key = hashlib.sha256(f"{run.pk}:{a}:{c}:{judge.pk}".encode()).hexdigest()
                yield (
                    verdict_ids.take(), run.pk, a, c, judge.pk, 0, outcome,
                    "missing" if outcome == "fail" else "",
                    f"The answer {'gives' if outcome == 'pass' else 'lacks'} the figure.",
                    f'{{"verdict": "{outcome}", "rationale": "..."}}', error_kind,
                    "Timed out after 60 s" if error_kind else "", 420, 24, 800, 1, False,
                    key, "{}", now, now,
                )  # fmt: skip

    n = _copy(cursor, "evaluation_verdict", ("id", "run_id", "answer_id", "criterion_id",
              "judge_id", "sample", "outcome", "failure_kind", "rationale", "raw_output",
              "error_kind", "error", "prompt_tokens", "completion_tokens", "latency_ms",
              "attempts", "cache_hit", "cache_key", "judge_params", "created_at",
              "updated_at"), verdicts())  # fmt: skip
    run.expected = n
    run.save(update_fields=["expected"])
    task_rows = [  # imported runs have no tasks
        (ids["evaluation_runtask"].take(), run.pk, a, judge.pk, now, 1, "", "", "", 0)
        for q in (scope if preset.run_kind == "systems" else ())
        for a in answers[q]
        for judge in judges
    ]
    _copy(cursor, "evaluation_runtask", ("id", "run_id", "answer_id", "judge_id", "done_at",
          "attempt", "lease", "worker", "error", "requeues"), iter(task_rows))  # fmt: skip
    return run


def _cross_evaluation(
    cursor, ids, rng, *, dataset, query_ids, checklists, criteria, judge, admin, now, salt,
    reference,
) -> dict:  # fmt: skip
    """A perfect answer per checklist, graded by one judge against the other checklists."""
    from evaluation.cross_evaluation.services import run_label
    from evaluation.judges.models import Panel, PanelMember
    from evaluation.runs import snapshot
    from evaluation.runs.models import Run

    perfect: dict[int, int] = {}
    rows = []
    for q in query_ids:
        for checklist in checklists[q]:
            pk = ids["evaluation_answer"].take()
            perfect[checklist] = pk
            rows.append((
                pk, reference.pk, q, "A perfect answer covering every criterion.", "",
                f"perfect:{checklist}", checklist, admin.pk, "", now, now,
            ))  # fmt: skip
    assert run_label  # the app's label format is "perfect:<checklist id>"
    _copy(cursor, "evaluation_answer", ("id", "system_id", "query_id", "text", "external_id",
          "run_label", "checklist_id", "author_id", "draft_prompt_version", "created_at",
          "updated_at", *AGENT_COLUMNS), ((*row, *AGENT_VALUES) for row in rows))  # fmt: skip
    panel, _ = Panel.objects.get_or_create(name="bench cross-evaluation panel")
    PanelMember.objects.get_or_create(panel=panel, judge=judge)
    run = Run.objects.create(
        dataset=dataset, panel=panel, kind=Run.Kind.CROSS_EVALUATION, name="Cross-evaluation",
        status=Run.Status.DONE, snapshot=snapshot.take(panel), created_by=admin,
        started_at=now, finished_at=now,
    )  # fmt: skip
    verdict_ids = ids["evaluation_verdict"]

    def verdicts() -> Iterator[tuple]:
        for q in query_ids:
            for a_checklist in checklists[q]:
                answer = perfect[a_checklist]
                for b_checklist in checklists[q]:
                    if b_checklist == a_checklist:
                        continue
                    for c in criteria[b_checklist]:
                        outcome = "pass" if rng.random() < 0.3 else "fail"
                        yield (
                            verdict_ids.take(), run.pk, answer, c, judge.pk, 0, outcome,
                            "", "", f'{{"verdict": "{outcome}"}}', "", "", 300, 20, 500, 1,
                            False, hashlib.sha256(f"x{run.pk}:{answer}:{c}".encode()).hexdigest(),
                            "{}", now, now,
                        )  # fmt: skip

    n = _copy(cursor, "evaluation_verdict", ("id", "run_id", "answer_id", "criterion_id",
              "judge_id", "sample", "outcome", "failure_kind", "rationale", "raw_output",
              "error_kind", "error", "prompt_tokens", "completion_tokens", "latency_ms",
              "attempts", "cache_hit", "cache_key", "judge_params", "created_at", "updated_at"),
              verdicts())  # fmt: skip
    run.expected = n
    run.save(update_fields=["expected"])
    return {"run": run.pk, "perfect_answers": len(rows), "verdicts": n}


def _delete_dataset(cursor, dataset_id: int) -> None:
    """Remove a seeded dataset with set-based deletes (Django's cascade collects rows in
    Python, which takes minutes at this size)."""
    answers = (
        "SELECT a.id FROM evaluation_answer a JOIN annotation_query q ON q.id = a.query_id "
        "WHERE q.dataset_id = %s"
    )
    criteria = (
        "SELECT c.id FROM annotation_criterion c JOIN annotation_checklist k "
        "ON k.id = c.checklist_id JOIN annotation_query q ON q.id = k.query_id "
        "WHERE q.dataset_id = %s"
    )
    for statement in (
        "DELETE FROM evaluation_verdict WHERE run_id IN "
        "(SELECT id FROM evaluation_run WHERE dataset_id = %s)",
        "DELETE FROM evaluation_gradedscore WHERE run_id IN "
        "(SELECT id FROM evaluation_run WHERE dataset_id = %s)",
        "DELETE FROM evaluation_runtask WHERE run_id IN "
        "(SELECT id FROM evaluation_run WHERE dataset_id = %s)",
        f"DELETE FROM evaluation_humanlabel WHERE answer_id IN ({answers})",
        f"DELETE FROM evaluation_adjudication WHERE answer_id IN ({answers})",
        f"DELETE FROM evaluation_reviewassignment WHERE answer_id IN ({answers})",
        "DELETE FROM evaluation_run_queries WHERE run_id IN "
        "(SELECT id FROM evaluation_run WHERE dataset_id = %s)",
        "DELETE FROM evaluation_run_systems WHERE run_id IN "
        "(SELECT id FROM evaluation_run WHERE dataset_id = %s)",
        "DELETE FROM evaluation_run WHERE dataset_id = %s",
        f"DELETE FROM annotation_criterion_source_types WHERE criterion_id IN ({criteria})",
        f"DELETE FROM evaluation_formalityadvice WHERE criterion_id IN ({criteria})",
        f"DELETE FROM annotation_citation WHERE criterion_id IN ({criteria})",
        f"DELETE FROM evaluation_answer WHERE id IN ({answers})",
        f"DELETE FROM annotation_criterion WHERE id IN ({criteria})",
        "DELETE FROM annotation_criteriongroup WHERE checklist_id IN (SELECT k.id FROM "
        "annotation_checklist k JOIN annotation_query q ON q.id = k.query_id "
        "WHERE q.dataset_id = %s)",
        "DELETE FROM annotation_checklistevent WHERE checklist_id IN (SELECT k.id FROM "
        "annotation_checklist k JOIN annotation_query q ON q.id = k.query_id "
        "WHERE q.dataset_id = %s)",
        "DELETE FROM annotation_checklist WHERE query_id IN "
        "(SELECT id FROM annotation_query WHERE dataset_id = %s)",
        "DELETE FROM annotation_query_tags WHERE query_id IN "
        "(SELECT id FROM annotation_query WHERE dataset_id = %s)",
        "DELETE FROM annotation_query_assigned_experts WHERE query_id IN "
        "(SELECT id FROM annotation_query WHERE dataset_id = %s)",
        "DELETE FROM annotation_query WHERE dataset_id = %s",
    ):
        cursor.execute(statement, [dataset_id])
    from annotation.models import Dataset

    Dataset.objects.filter(pk=dataset_id).delete()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.seed_scale", description=__doc__)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="full")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args(argv)
    seed(args.preset, seed_value=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
