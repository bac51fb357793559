"""A dataset with known verdicts and labels for analytics tests: queries whose checklists
have chosen numbers of criteria (so each lands in a known complexity bucket), two systems
graded by a panel of three external judges (majority), human labels on some items and
adjudications on a few. Returns the raw data as plain dicts, so that tests compute their
oracles from it and not from the app."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from django.utils import timezone

from annotation.models import QueryCategory
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.factories import PanelFactory, UserFactory
from tests.support.builders import checklisted_query

JUDGES = ("j1", "j2", "j3")


@dataclass
class Known:
    run: Run
    systems: dict[int, str]  # id -> name
    answers: dict[int, tuple[int, int]]  # answer -> (query, system)
    checklists: dict[int, tuple[int, int]]  # checklist -> (query, criteria)
    criteria: dict[int, tuple[int, str]]  # criterion -> (checklist, kind)
    votes: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    labels: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    adjudications: dict[tuple[int, int], str] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)  # query -> category
    plan: list = field(default_factory=list)  # (query, checklist, criteria)


def _judges() -> list[Judge]:
    return [Judge.objects.get_or_create(name=n, kind=Judge.Kind.EXTERNAL)[0] for n in JUDGES]


def build_known(
    dataset,
    *,
    sizes=(8, 12, 12, 17, 22, 36),
    systems=("Alpha", "Beta"),
    seed: int = 5,
    run_name: str = "",
    skill: dict[str, float] | None = None,
    queries=None,
    label_share: float = 0.3,
    hard_first: bool = True,
) -> Known:
    """One checklist per query with sizes[q] criteria (or reuse `queries`: a previous
    Known's checklists, to grade the same queries in another run)."""
    rng = random.Random(seed)
    skill = skill or {"Alpha": 0.7, "Beta": 0.45}
    judges = _judges()
    # One panel for every run of the dataset: a second call grades the same queries again.
    panel = Panel.objects.filter(name="Analytics panel").first() or PanelFactory(
        name="Analytics panel", judges=judges
    )
    now = timezone.now()
    run = Run.objects.create(
        dataset=dataset, panel=panel, name=run_name or f"Run {seed}", status=Run.Status.DONE,
        started_at=now, finished_at=now, snapshot=snapshot.take(panel),
        answer_run_label=f"run-{seed}",
    )  # fmt: skip
    system_rows = [System.objects.get_or_create(name=name)[0] for name in systems]
    known = Known(run, {s.pk: s.name for s in system_rows}, {}, {}, {})
    categories = [
        QueryCategory.objects.get_or_create(name=n)[0] for n in ("Point-fact retrieval", "Other")
    ]
    if queries is None:
        author = UserFactory()
        plan = []
        for q, size in enumerate(sizes):
            made = checklisted_query(
                dataset,
                text=f"Analytics query {q}",
                category=categories[q % 2],
                author=author,
                criteria=[
                    (f"States fact {i} of query {q}.", ("fact", "methodology", "format")[i % 3])
                    for i in range(size)
                ],
                first_position=0,
                timestamps=False,
            )
            plan.append((made.query, made.checklist, made.criteria))
    else:
        plan = queries
    known.plan = plan
    verdicts, labels, adjudications = [], [], []
    for query, checklist, crits in plan:
        known.categories[query.pk] = query.category.name if query.category else "(none)"
        known.checklists[checklist.pk] = (query.pk, len(crits))
        for c in crits:
            known.criteria[c.pk] = (checklist.pk, c.kind)
        for system in system_rows:
            answer = Answer.objects.create(
                system=system,
                query=query,
                text=f"{system.name} on {query.pk}, run {seed}.",
                run_label=f"run-{seed}",
            )
            known.answers[answer.pk] = (query.pk, system.pk)
            for i, c in enumerate(crits):
                key = (answer.pk, c.pk)
                if i == 0 and hard_first:
                    truth = "fail"  # the first criterion of every checklist: nobody passes
                else:
                    truth = "pass" if rng.random() < skill.get(system.name, 0.5) else "fail"
                outcomes = []
                for judge in judges:
                    roll = rng.random()
                    if i == 0 and hard_first:
                        outcome = "fail"
                    elif roll < 0.04:
                        outcome = "error"
                    elif roll < 0.8:
                        outcome = truth
                    else:
                        outcome = "pass"  # the judges lean towards pass
                    outcomes.append(outcome)
                    verdicts.append(
                        Verdict(
                            run=run, answer=answer, criterion=c, judge=judge, outcome=outcome,
                            cache_key="",
                        )
                    )  # fmt: skip
                known.votes[key] = outcomes
                if rng.random() < label_share:
                    item_labels = [truth, truth if rng.random() < 0.9 else "pass"]
                    known.labels[key] = item_labels
                    labels += [
                        HumanLabel(answer=answer, criterion=c, rater=f"rater{n}", label=label)
                        for n, label in enumerate(item_labels)
                    ]
                if rng.random() < 0.05:
                    known.adjudications[key] = truth
                    adjudications.append(Adjudication(answer=answer, criterion=c, label=truth))
    Verdict.objects.bulk_create(verdicts)
    HumanLabel.objects.bulk_create(labels)
    Adjudication.objects.bulk_create(adjudications)
    return known


# -- oracles, from the raw data only -----------------------------------------------------------


def panel(votes: list[str]) -> str:
    p, f = votes.count("pass"), votes.count("fail")
    return "pass" if p > f else "fail" if f > p else "undecided"


def human(known: Known, key) -> str | None:
    if key in known.adjudications:
        return known.adjudications[key]
    labels = known.labels.get(key)
    if not labels:
        return None
    p, f = labels.count("pass"), labels.count("fail")
    return "pass" if p > f else "fail" if f > p else None


def decided(known: Known, key) -> str:
    return known.adjudications.get(key) or panel(known.votes[key])


def answer_shares(known: Known, keep=lambda criterion: True) -> dict[int, float]:
    """answer -> share of its (only) checklist's decided criteria passed, among `keep`."""
    tally: dict[int, list[int]] = {}
    for (answer, criterion), _ in known.votes.items():
        if not keep(criterion):
            continue
        outcome = decided(known, (answer, criterion))
        if outcome == "undecided":
            continue
        t = tally.setdefault(answer, [0, 0])
        t[0] += outcome == "pass"
        t[1] += 1
    return {a: p / n for a, (p, n) in tally.items()}
