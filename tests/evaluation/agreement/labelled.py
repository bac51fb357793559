"""A labelled dataset for agreement tests: answers graded by a panel of three judges (one
sampled three times), labelled by three raters with gaps, some items adjudicated. Returns
the raw data as plain dicts so that tests compute their oracles from it, not from the app."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from django.utils import timezone

from annotation.models import QueryCategory, SourceType
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from evaluation.kept.events import Event, bump
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.factories import PanelFactory, UserFactory
from tests.support.builders import checklisted_query

RATERS = ("ana", "bo", "cy")
KINDS = ("fact", "fact", "methodology", "format")


@dataclass
class Labelled:
    run: Run
    judges: dict[str, int]  # name -> samples
    # (answer_id, criterion_id) -> ...
    votes: dict[tuple[int, int], list[tuple[str, int, str]]] = field(default_factory=dict)
    labels: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict)
    adjudications: dict[tuple[int, int], str] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    sources: dict[int, list[str]] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)  # criterion -> category name


def build_labelled(dataset, *, queries: int = 4, criteria: int = 6, systems: int = 3, seed=7):
    rng = random.Random(seed)
    author = UserFactory(username="agreement-author")
    source_types = list(SourceType.objects.order_by("pk")[:3])
    categories = [
        QueryCategory.objects.get_or_create(name=name)[0]
        for name in ("Point-fact retrieval", "Event digests")
    ]
    judges = {"judge-a": 1, "judge-b": 1, "judge-c": 3}
    judge_rows = {
        name: Judge.objects.get_or_create(name=name, kind=Judge.Kind.EXTERNAL)[0] for name in judges
    }
    panel = PanelFactory(
        name=f"Agreement panel {seed}",
        judges=[(judge_rows[name], {"samples": samples}) for name, samples in judges.items()],
    )
    now = timezone.now()
    run = Run.objects.create(
        dataset=dataset, panel=panel, status=Run.Status.DONE, started_at=now, finished_at=now,
        snapshot=snapshot.take(panel),
    )  # fmt: skip
    data = Labelled(run=run, judges=judges)
    system_rows = [
        System.objects.get_or_create(name=f"Agreement system {i}")[0] for i in range(systems)
    ]
    verdicts, labels, adjudications = [], [], []
    for q in range(queries):
        category = categories[q % 2]
        made = checklisted_query(
            dataset,
            text=f"Agreement query {seed}-{q}",
            category=category,
            author=author,
            criteria=[(f"States fact {i} of {q}.", KINDS[i % 4]) for i in range(criteria)],
            first_position=0,
            timestamps=False,
        )
        query, crits = made.query, made.criteria
        for n, criterion in enumerate(crits):
            data.kinds[criterion.pk] = criterion.kind
            data.categories[criterion.pk] = category.name
            chosen = source_types[: n % 3] if criterion.kind == "fact" else []
            criterion.source_types.set(chosen)
            data.sources[criterion.pk] = [s.name for s in chosen]
        for system in system_rows:
            answer = Answer.objects.create(system=system, query=query, text="An answer.")
            for criterion in crits:
                key = (answer.pk, criterion.pk)
                truth = rng.choice(["pass", "fail"])
                item_votes = []
                for name, samples in judges.items():
                    for sample in range(samples):
                        roll = rng.random()
                        if roll < 0.06:
                            outcome = rng.choice(["unparseable", "error"])
                        elif roll < 0.8:
                            outcome = truth
                        else:
                            outcome = rng.choice(["pass", "fail"])
                        item_votes.append((name, sample, outcome))
                        verdicts.append(
                            Verdict(
                                run=run,
                                answer=answer,
                                criterion=criterion,
                                judge=judge_rows[name],
                                sample=sample,
                                outcome=outcome,
                                cache_key="",
                            )
                        )
                data.votes[key] = item_votes
                item_labels = {}
                for rater in RATERS:
                    if rng.random() < 0.25:
                        continue  # not every rater labels every item
                    label = truth if rng.random() < 0.85 else rng.choice(["pass", "fail"])
                    item_labels[rater] = label
                    labels.append(
                        HumanLabel(answer=answer, criterion=criterion, rater=rater, label=label)
                    )
                if item_labels:
                    data.labels[key] = item_labels
                if rng.random() < 0.1:
                    data.adjudications[key] = truth
                    adjudications.append(
                        Adjudication(answer=answer, criterion=criterion, label=truth)
                    )
    Verdict.objects.bulk_create(verdicts)
    HumanLabel.objects.bulk_create(labels)
    Adjudication.objects.bulk_create(adjudications)
    bump(dataset.pk, Event.LABELS_IMPORTED)  # bulk writes say so, as the app's writers do
    return data
