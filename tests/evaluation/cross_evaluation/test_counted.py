"""The cross-evaluation figures counted in SQL (evaluation.cross_evaluation.counted) equal
the ones the Python path (selectors.dataset_overlap) computes from every verdict, for every
source, on a dataset built to hit every branch: several runs with different vote rules,
a newer run covering only some queries, invalid votes, ties, adjudications with and
without votes, human labels with ties, disabled and archived criteria, a checklist without
criteria, a checklist without a perfect answer, a draft checklist and an answer edited
after grading. The page reads the cached figures and pages its queries."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation import roles
from annotation import services as annotation_services
from annotation.models import Checklist, Criterion
from evaluation.answers.models import Answer
from evaluation.cross_evaluation import counted, selectors
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.judges.models import Judge
from evaluation.kept.models import KeptFigure
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics import overlap as om
from evaluation.review import services as review
from evaluation.runs.models import Run, Verdict
from tests.evaluation.cross_evaluation.two_queries import expert
from tests.factories import (
    AnswerFactory,
    DatasetFactory,
    PanelFactory,
    QueryFactory,
    UserFactory,
)
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

OUTCOMES = ["pass", "pass", "fail", "fail", "unparseable", "error"]


def _run(dataset, judges, method: str, threshold: float, created: dt.datetime) -> Run:
    panel = PanelFactory(method=method, judges=judges)
    run = Run.objects.create(
        dataset=dataset, panel=panel, kind=Run.Kind.CROSS_EVALUATION, status=Run.Status.DONE,
        snapshot={"method": method, "threshold": threshold}, finished_at=created,
    )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(created_at=created)
    run.refresh_from_db()
    return run


def _vote(run, answer, criterion, judges, rng) -> list[Verdict]:
    return [
        Verdict(run=run, answer=answer, criterion=criterion, judge=judge, sample=sample,
                outcome=rng.choice(OUTCOMES))
        for judge in judges[: rng.randint(1, len(judges))]
        for sample in range(rng.randint(1, 2))
    ]  # fmt: skip


@pytest.fixture
def mixed(db):
    rng = random.Random(7)
    dataset = DatasetFactory()
    owner = UserFactory(username="owner")
    annotation_services.dataset_set_role(dataset=dataset, user=owner, role=roles.DatasetRole.ADMIN)
    judges = [Judge.objects.create(name=f"judge {i}", model="m") for i in range(3)]
    now = timezone.now()
    old = _run(dataset, judges, "majority", 0.5, now - dt.timedelta(days=2))
    new = _run(dataset, judges[:2], "unanimity", 0.5, now - dt.timedelta(days=1))
    mean = _run(dataset, judges, "mean_threshold", 0.7, now - dt.timedelta(hours=1))
    answers: list[Answer] = []
    for q in range(6):
        query = QueryFactory(dataset=dataset)
        lists = []
        for e in range(rng.randint(2, 4)):
            author = expert(dataset, f"expert-{q}-{e}")
            n = 0 if (q, e) == (1, 0) else rng.randint(2, 6)
            checklist = checklisted_query(
                query=query, author=author, criteria=[f"C{q}.{e}.{i}" for i in range(n)]
            ).checklist
            lists.append(checklist)
            if (q, e) != (2, 1):  # one submitted checklist without a perfect answer
                answers.append(perfect_answer_save(checklist=checklist, text=f"P{q}{e}", by=author))
        draft = Checklist.objects.create(query=query, author=UserFactory())
        Criterion.objects.create(checklist=draft, position=1, text="draft")
        criteria = list(Criterion.objects.filter(checklist__in=lists))
        for criterion in criteria[::5]:
            criterion.scoring_enabled = False
            criterion.save()
        Criterion.objects.filter(pk__in=[c.pk for c in criteria[1::7]]).update(archived_at=now)
    verdicts = []
    labels = []
    adjudications = []
    for answer in answers:
        criteria = Criterion.objects.filter(checklist__query=answer.query_id)
        for criterion in criteria:
            # the old run grades everything; the newer runs only some queries
            verdicts += _vote(old, answer, criterion, judges, rng)
            if answer.query_id % 2 == 0:
                verdicts += _vote(new, answer, criterion, judges[:2], rng)
            if answer.query_id % 3 == 0:
                verdicts += _vote(mean, answer, criterion, judges, rng)
            for rater in ("r1", "r2", "r3")[: rng.randint(0, 3)]:
                labels.append(HumanLabel(answer=answer, criterion=criterion, rater=rater,
                                         label=rng.choice(["pass", "fail"])))  # fmt: skip
            if rng.random() < 0.15:
                adjudications.append(
                    Adjudication(
                        answer=answer, criterion=criterion, label=rng.choice(["pass", "fail"])
                    )
                )
    Verdict.objects.bulk_create(verdicts)
    HumanLabel.objects.bulk_create(labels)
    Adjudication.objects.bulk_create(adjudications)
    # An answer edited after it was graded.
    Answer.objects.filter(pk=answers[0].pk).update(updated_at=now + dt.timedelta(days=1))
    return dataset, owner, (old, new, mean)


def _old_figures(dataset, source) -> dict:
    overview = selectors.dataset_overlap(dataset, source)
    queries = []
    for q in overview.queries:
        mean = om.mean_overlap({q.query.pk: q.matrix.pairs()})
        queries.append(
            [q.query.pk, len(q.checklists), len(q.answers), mean.n_pairs, len(q.matrix.pairs()),
             mean.mean, q.run.pk if q.run else None, bool(q.stale)]
        )  # fmt: skip
    i = overview.interval
    return {
        "interval": [i.mean, i.low, i.high, i.n_pairs, i.n_queries, i.method],
        "histogram": [[b.low, b.high, b.count] for b in overview.histogram],
        "core": [counted._coverage_json(c) for c, _ in overview.core[: counted.SHOWN]],
        "core_count": len(overview.core),
        "tail": [counted._coverage_json(c) for c, _ in overview.tail[: counted.SHOWN]],
        "tail_count": len(overview.tail),
        "queries": queries,
    }


def test_counted_figures_equal_the_python_path_for_every_source(mixed):
    dataset, _, runs = mixed
    sources = [selectors.Source("latest"), selectors.Source("human")]
    sources += [selectors.Source("run", r.pk) for r in runs]
    for source in sources:
        old, new = _old_figures(dataset, source), counted.compute(dataset, source)
        assert new == old, source
        assert new["interval"][0] is not None and new["core_count"] + new["tail_count"] > 0
    # The branches the fixture is meant to hit are there.
    latest = counted.compute(dataset, selectors.Source("latest"))
    assert {row[6] for row in latest["queries"]} == {r.pk for r in runs}
    assert any(row[7] for row in latest["queries"])  # the edited answer


def test_unknown_run_source_is_refused(mixed):
    dataset, _, _ = mixed
    other = _run(DatasetFactory(), [Judge.objects.first()], "majority", 0.5, timezone.now())
    with pytest.raises(selectors.UnknownSource):
        counted.compute(dataset, selectors.Source("run", other.pk))


def test_cached_figures_follow_labels_answers_checklists_and_runs(mixed):
    dataset, _, (old, _, _) = mixed
    human = selectors.Source("human")
    first = counted.figures(dataset, human)
    assert KeptFigure.objects.filter(dataset=dataset, kind="cross-evaluation").count() == 1
    assert counted.figures(dataset, human) == first

    def fresh(source=human):
        assert counted.figures(dataset, source) == counted.compute(dataset, source)

    answer = Answer.objects.filter(query__dataset=dataset, checklist__isnull=False).first()
    criterion = Criterion.objects.filter(checklist__query=answer.query_id).first()
    reviewer = UserFactory(username="r9")
    review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")
    fresh()
    current = Adjudication.objects.filter(answer=answer, criterion=criterion).first()
    review.adjudicate(
        answer=answer, criterion=criterion, by=reviewer, label="pass",
        expected_version=current.version if current else None,
    )  # fmt: skip
    fresh()
    checklist = Checklist.objects.filter(query__dataset=dataset, status="submitted").last()
    checklist.status = Checklist.Status.REOPENED
    checklist.save()
    fresh()
    latest = selectors.Source("latest")
    fresh(latest)
    Verdict.objects.filter(run=old).delete()
    old.attempt += 1
    old.save()
    fresh(latest)
    old.status = Run.Status.RUNNING
    old.save()
    assert counted._state(dataset, latest) is None  # a running run is never cached
    fresh(latest)


def test_dataset_page_pages_its_queries(mixed, client, monkeypatch):
    dataset, owner, _ = mixed
    monkeypatch.setattr(counted, "PAGE", 4)
    client.force_login(owner)
    url = reverse("dataset-cross-evaluation", args=[dataset.pk])
    page = client.get(url).content.decode()
    figures = counted.figures(dataset, selectors.Source("latest"))
    ids = [row[0] for row in figures["queries"]]
    shown = [int(x) for x in re.findall(r'<tr><td class="num">(\d+)</td>', page)]
    assert shown == ids[:4]
    found = re.search(r'href="\?source=latest&amp;after=(\d+)"', page)
    assert found and int(found.group(1)) == ids[3]
    page = client.get(url, {"after": found.group(1)}).content.decode()
    shown = [int(x) for x in re.findall(r'<tr><td class="num">(\d+)</td>', page)]
    assert shown == ids[4:] and 'rel="next"' not in page
    mean = figures["interval"][0]
    assert f'data-dataset-mean="{mean:.4f}"' in page


def test_dataset_page_queries_do_not_grow_with_its_rows(mixed, client, monkeypatch):
    dataset, owner, _ = mixed
    client.force_login(owner)
    url = reverse("dataset-cross-evaluation", args=[dataset.pk])
    found = []
    for size in (1, 2, 6):
        monkeypatch.setattr(counted, "PAGE", size)
        monkeypatch.setattr(counted, "SHOWN", size)
        KeptFigure.objects.all().delete()
        client.get(url)  # computes and stores the figures
        with CaptureQueriesContext(connection) as cached:
            assert client.get(url).status_code == 200
        KeptFigure.objects.all().delete()
        with CaptureQueriesContext(connection) as computed:
            assert client.get(url).status_code == 200
        found.append((len(cached), len(computed)))
    assert found[0] == found[1] == found[2], found
    assert found[0][0] <= 20, found


def test_labelling_system_answers_keeps_the_figures_labelling_perfect_answers_moves_them(mixed):
    """The figures read perfect answers only: reviewers labelling system answers all day
    must not make the next reader of the cross-evaluation page recount them."""
    from evaluation.review import services as review

    dataset, owner, _ = mixed
    human = selectors.Source("human")
    perfect = Answer.objects.filter(query__dataset=dataset, checklist__isnull=False).first()
    system_answer = AnswerFactory(query=perfect.query)
    counted.figures(dataset, human)
    state = counted._state(dataset, human)
    criterion = Criterion.objects.filter(checklist__query=system_answer.query_id).first()
    review.label_set(answer=system_answer, criterion=criterion, reviewer=owner, label="fail")
    review.adjudicate(answer=system_answer, criterion=criterion, by=owner, label="pass",
                      expected_version=None)  # fmt: skip
    assert counted._state(dataset, human) == state  # still served from the cache

    criterion = Criterion.objects.filter(checklist__query=perfect.query_id).last()
    review.label_set(answer=perfect, criterion=criterion, reviewer=owner, label="fail")
    assert counted._state(dataset, human) != state
    assert counted.figures(dataset, human) == counted.compute(dataset, human)


def test_labelling_perfect_answers_keeps_the_figures_from_the_judges_grades(mixed):
    """Only the figures counted from reviewers' labels (source "human") read perfect
    answers' labels: those from the judges' grades (the page's default, and the analytics
    reference line) stay kept while reviewers label perfect answers from the labelling
    queue; an adjudication, which overrides the judges, still moves them."""
    from evaluation.review import services as review

    dataset, owner, _ = mixed
    latest, human = selectors.Source("latest"), selectors.Source("human")
    counted.figures(dataset, latest)
    counted.figures(dataset, human)
    kept_latest, kept_human = counted._state(dataset, latest), counted._state(dataset, human)
    perfect = Answer.objects.filter(query__dataset=dataset, checklist__isnull=False).first()
    criterion = Criterion.objects.filter(checklist__query=perfect.query_id).last()
    review.label_set(answer=perfect, criterion=criterion, reviewer=owner, label="fail")
    assert counted._state(dataset, latest) == kept_latest  # still served from the cache
    assert counted._state(dataset, human) != kept_human
    for source in (latest, human):
        assert counted.figures(dataset, source) == counted.compute(dataset, source)
    current = Adjudication.objects.filter(answer=perfect, criterion=criterion).first()
    review.adjudicate(
        answer=perfect, criterion=criterion, by=owner, label="pass",
        expected_version=current.version if current else None,
    )  # fmt: skip
    assert counted._state(dataset, latest) != kept_latest
    assert counted.figures(dataset, latest) == counted.compute(dataset, latest)
