"""A synthetic dataset of any size with every kind of row an export holds: queries,
two experts' submitted checklists with source types and citations, perfect answers, system
answers, a finished run of external judges with verdicts (several samples), human labels
and adjudications. Used by the data I/O benchmark (1,000,000 verdicts) and by the tests
(a few hundred). Deterministic for a given seed; written in batches, so memory stays flat.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation import roles, services
from annotation.models import Checklist, Citation, Criterion, Dataset, Query, SourceType
from evaluation.answers.models import Answer, System
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.judges.models import Judge, Panel, PanelMember
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict

BATCH = 5_000
RATIONALES = (
    "The answer states the figure exactly as the criterion asks.",
    "The answer gives a figure, but not the one for the quarter the criterion names.",
    "The answer does not mention this at all.",
    "=The answer hedges; a reader cannot tell which figure it means.",  # a formula-like cell
)


def _user(username: str):
    user, made = get_user_model().objects.get_or_create(username=username)
    if made:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


@transaction.atomic
def generate(
    name: str,
    *,
    queries: int = 3,
    systems: int = 2,
    experts: int = 2,
    criteria: int = 4,
    judges: int = 3,
    samples: int = 1,
    label_share: float = 0.5,
    seed: int = 7,
    admin=None,
) -> Dataset:
    rng = random.Random(seed)
    admin = admin or _user(f"{name[:20]}-admin".replace(" ", "-").lower())
    dataset = services.dataset_create(
        name=name, by=admin, description=f"Generated: {queries} queries × {systems} systems.",
        licence="CC BY 4.0",
    )  # fmt: skip
    authors = [_user(f"expert-{e}") for e in range(experts)]
    for author in authors:
        services.dataset_set_role(dataset=dataset, user=author, role=roles.DatasetRole.EXPERT)
    reviewer = _user("reviewer-gen")
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    release = SourceType.objects.get(slug="earnings-release")
    now = timezone.now()
    made_queries = Query.objects.bulk_create(
        Query(
            dataset=dataset, external_id=f"Q{q:05d}", query_date=dt.date(2026, 10, 1),
            text=f"What did company {q} report for Q3 revenue, and how does it compare with "
            f"guidance?\nAnswer with a table.",
            reference_answer=f"Company {q} reported $4.{q % 10} billion.",
        )
        for q in range(queries)
    )  # fmt: skip
    checklists = Checklist.objects.bulk_create(
        Checklist(query=q, author=a, status=Checklist.Status.SUBMITTED, first_submitted_at=now,
                  submitted_at=now)
        for q in made_queries
        for a in authors
    )  # fmt: skip
    made_criteria = Criterion.objects.bulk_create(
        (
            Criterion(
                checklist=c, position=i + 1, external_id=f"C{i + 1}",
                kind="methodology" if i == 0 else "fact",
                text=f"States figure {i} of company {c.query_id}, \"quoted\", with a comma."
                if i % 3 else f"-Uses the Q3 call of company {c.query_id} as its source.",
            )
            for c in checklists
            for i in range(criteria)
        ),
        batch_size=BATCH,
    )  # fmt: skip
    Criterion.source_types.through.objects.bulk_create(
        Criterion.source_types.through(criterion_id=c.pk, sourcetype_id=release.pk)
        for c in made_criteria
        if c.kind == "fact"
    )
    Citation.objects.bulk_create(
        Citation(criterion=c, title=f"Q3 release of company {c.checklist.query_id}",
                 url="0001-26-000123", source_type=release, published_on=dt.date(2026, 9, 30))
        for c in made_criteria
        if c.position == 2
    )  # fmt: skip
    for checklist in checklists[:2]:
        perfect_answer_save(checklist=checklist, text="A perfect answer.", by=checklist.author)
    made_systems = [
        System.objects.get_or_create(name=f"System {s}", version="2026.11")[0]
        for s in range(systems)
    ]
    answers = Answer.objects.bulk_create(
        (
            Answer(system=s, query=q, run_label="nightly", external_id=f"A-{q.pk}-{s.pk}",
                   text=f"Company revenue was **$4.{s.pk % 10} billion**,\nup 12%.")
            for q in made_queries
            for s in made_systems
        ),
        batch_size=BATCH,
    )  # fmt: skip
    panel = Panel.objects.create(name=f"{name} panel", method=Panel.Method.MAJORITY)
    made_judges = []
    for j in range(judges):
        judge, _ = Judge.objects.get_or_create(
            name=f"{name} judge {j}",
            defaults={"kind": Judge.Kind.EXTERNAL, "model": f"model-{j}"},
        )
        PanelMember.objects.create(panel=panel, judge=judge, samples=samples)
        made_judges.append(judge)
    run = Run.objects.create(
        dataset=dataset, panel=panel, kind=Run.Kind.IMPORTED, name=f"{name} nightly",
        status=Run.Status.DONE, started_at=now, finished_at=now, snapshot=snapshot.take(panel),
    )  # fmt: skip
    by_query: dict[int, list[Criterion]] = {}
    for c in made_criteria:
        by_query.setdefault(c.checklist.query_id, []).append(c)

    def verdicts() -> Iterator[Verdict]:
        for answer in answers:
            for criterion in by_query[answer.query_id]:
                for judge in made_judges:
                    for sample in range(samples):
                        outcome = rng.choice(("pass", "pass", "fail", "error"))
                        yield Verdict(
                            run=run, answer=answer, criterion=criterion, judge=judge,
                            sample=sample, outcome=outcome,
                            failure_kind="missing" if outcome == "fail" else "",
                            rationale=rng.choice(RATIONALES),
                            raw_output=f'{{"verdict": "{outcome}", "rationale": "…"}}',
                            error_kind="timeout" if outcome == "error" else "",
                            prompt_tokens=rng.randint(300, 900), completion_tokens=40,
                            latency_ms=rng.randint(200, 3000),
                            cache_key=f"{rng.getrandbits(64):016x}",
                            judge_params={"model": judge.model, "temperature": 0.0, "seed": None},
                        )  # fmt: skip

    _in_batches(Verdict, verdicts())

    def labels() -> Iterator[HumanLabel]:
        for answer in answers:
            for criterion in by_query[answer.query_id]:
                if rng.random() < label_share:
                    for rater in ("rater-a", "rater-b"):
                        yield HumanLabel(
                            answer=answer, criterion=criterion, rater=rater,
                            reviewer=reviewer if rater == "rater-a" else None,
                            label=rng.choice(("pass", "fail")), note="checked, twice",
                            source=HumanLabel.Source.IMPORT,
                        )  # fmt: skip

    _in_batches(HumanLabel, labels())

    def adjudications() -> Iterator[Adjudication]:
        for answer in answers:
            for criterion in by_query[answer.query_id][:1]:
                yield Adjudication(
                    answer=answer, criterion=criterion, label="pass", reason="Per the filing.",
                    decided_by=reviewer,
                )  # fmt: skip

    _in_batches(Adjudication, adjudications())
    return dataset


def _in_batches(model, rows: Iterator) -> int:
    batch, total = [], 0
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            model.objects.bulk_create(batch)
            total += len(batch)
            batch = []
    if batch:
        model.objects.bulk_create(batch)
        total += len(batch)
    return total
