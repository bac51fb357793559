"""Analytics on the strategy's value (issue 23): a dataset scored by `points` or `tree`, with
nested weighted groups, penalties (points) and query dimensions, gets system scores, scores
by top-level group and by dimension, the complexity curve by a numeric dimension, per-query
scores (run comparison) and PPI++ equal to an independent computation from the raw data
(tests/support/rubric_oracle.py over the known fixture's votes)."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

import numpy as np
import pytest
from django.urls import reverse

from annotation.models import CriterionGroup, Query
from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from evaluation.runs.scores import run_report
from tests.evaluation.analytics.known import build_known, decided, human, panel
from tests.support import rubric_oracle as oracle

SOURCES = ("1", "2", "3")


def _shape(known, strategy: str) -> dict[int, dict]:
    """Groups every checklist of the fixture: top groups "Accuracy" (weight 2, with a
    nested "Figures", 1.5) and "Style" (1), some criteria in none; criterion weights 1 to 3,
    one penalty per checklist under points. Declares a numeric dimension and a text one.
    Returns checklist -> {criterion: (group title path, weight)}."""
    dataset = known.run.dataset
    dataset.scoring = strategy
    dataset.dimensions = {"sources": list(SOURCES), "file_type": ["pdf", "html"]}
    dataset.save()
    shape: dict[int, dict] = {}
    for n, (query, checklist, criteria) in enumerate(known.plan):
        Query.objects.filter(pk=query.pk).update(
            dimensions={"sources": SOURCES[n % 3], **({"file_type": "pdf"} if n % 2 else {})}
        )
        accuracy = CriterionGroup.objects.create(
            checklist=checklist, title="Accuracy", weight=Decimal(2), position=0
        )
        figures = CriterionGroup.objects.create(
            checklist=checklist, title="Figures", weight=Decimal("1.5"), parent=accuracy
        )
        style = CriterionGroup.objects.create(
            checklist=checklist, title="Style", weight=Decimal(1), position=1
        )
        placed = {}
        for i, criterion in enumerate(criteria):
            group = (None, accuracy, figures, style)[i % 4]
            weight = Decimal(1 + i % 3)
            if strategy == "points" and i == 5:
                weight = Decimal(-2)  # a pitfall
            criterion.group, criterion.weight = group, weight
            criterion.save(update_fields=["group", "weight"])
            placed[criterion.pk] = (group, float(weight))
        shape[checklist.pk] = placed
    return shape


def _root(shape: dict, key_of, outcome_of) -> oracle.Node:
    """The checklist as the oracle's nested nodes, each criterion's outcome from outcome_of."""
    nodes: dict[int, oracle.Node] = {}
    root = oracle.Node("root", 1.0)

    def node_of(group) -> oracle.Node:
        if group is None:
            return root
        if group.pk not in nodes:
            nodes[group.pk] = oracle.Node(group.title, float(group.weight))
            node_of(group.parent).children.append(nodes[group.pk])
        return nodes[group.pk]

    for criterion, (group, weight) in shape.items():
        node_of(group).children.append(oracle.Leaf(str(criterion), weight, outcome_of(criterion)))
    return root


def _oracle(known, shape, strategy, outcome_of=None):
    """answer -> (value, {top group title: its score}) under `strategy`."""
    out = {}
    for answer, (query, _) in known.answers.items():
        checklist = next(c for c, (q, _) in known.checklists.items() if q == query)
        root = _root(
            shape[checklist],
            None,
            lambda c, a=answer: (outcome_of or (lambda k: decided(known, k)))((a, c)),
        )
        tops = {
            node.key: oracle.group_value(node, strategy)
            for node in root.children
            if isinstance(node, oracle.Node)
        }
        out[answer] = (oracle.value(root, strategy), tops)
    return out


@pytest.fixture(params=["points", "tree"])
def shaped(request, reviewed_dataset):
    known = build_known(reviewed_dataset)
    return known, _shape(known, request.param), request.param


def _means(known, values: dict[int, float | None], key=lambda answer: "") -> dict:
    by_cell = defaultdict(list)
    for answer, value in values.items():
        if value is not None:
            by_cell[known.answers[answer][1], key(answer)].append(value)
    return {k: np.mean(v) for k, v in by_cell.items()}


def test_system_group_and_dimension_scores_use_the_strategy(shaped):
    known, shape, strategy = shaped
    expected = _oracle(known, shape, strategy)
    data = sel.load_run(known.run)
    cells = summaries.system_scores(data, resamples=50)
    got = defaultdict(dict)
    for c in cells:
        got[c.group][c.system_id, c.value] = c.estimate.mean
    assert got["all"] == pytest.approx(_means(known, {a: v for a, (v, _) in expected.items()}))
    # The run page's value agrees.
    report = {s.system_id: s.value for s in run_report(known.run).systems}
    assert {s: m for (s, _), m in got["all"].items()} == pytest.approx(report)
    for title in ("Accuracy", "Style"):
        tops = {a: t[title] for a, (_, t) in expected.items()}
        want = {(s, title): m for (s, _), m in _means(known, tops).items()}
        assert {k: v for k, v in got["group"].items() if k[1] == title} == pytest.approx(want)
    queries = dict(Query.objects.filter(dataset=known.run.dataset).values_list("pk", "dimensions"))
    overall = {a: v for a, (v, _) in expected.items()}
    for name in ("sources", "file_type"):
        want = _means(
            known, overall, key=lambda a, n=name: queries[known.answers[a][0]].get(n, "(none)")
        )
        assert got[f"dimension:{name}"] == pytest.approx(want)
    assert summaries.numeric_dimensions(cells) == ["sources"]
    curve = summaries.dimension_curve(
        cells, "sources", summaries.Interval(None, None, None, 0, 0, "")
    )
    assert [b.key for b in curve.buckets] == list(SOURCES)
    for line in curve.lines:
        for point in line.points:
            assert point.estimate.mean == pytest.approx(
                got["dimension:sources"][line.system_id, point.bucket.key]
            )


def test_query_scores_and_ppi_use_the_strategy(shaped):
    known, shape, strategy = shaped
    expected = _oracle(known, shape, strategy)
    data = sel.load_run(known.run)
    for system in known.systems:
        scores = summaries.query_scores(data, system)
        want = {known.answers[a][0]: v for a, (v, _) in expected.items()
                if known.answers[a][1] == system and v is not None}  # fmt: skip
        assert {q: s for q, (s, _) in scores.items()} == pytest.approx(want)
    # PPI++ on the answers' scale: the judge's value is the strategy's under the panel
    # (no adjudication), the human one under the human reference, on answers whose every
    # scored criterion carries one.
    judged = _oracle(known, shape, strategy, lambda k: panel(known.votes[k]))
    labelled = _oracle(known, shape, strategy, lambda k: human(known, k) or "undecided")
    full = {a for a in known.answers
            if all(human(known, (a, c)) for (b, c) in known.votes if b == a)}  # fmt: skip
    calibrated = {c.system_id: c for c in sel.calibrated_scores(data, resamples=50)}
    for system in known.systems:
        mine = [a for a in known.answers if known.answers[a][1] == system]
        assert calibrated[system].judge.mean == pytest.approx(
            np.mean([judged[a][0] for a in mine if judged[a][0] is not None])
        )
        humans = [labelled[a][0] for a in mine if a in full and labelled[a][0] is not None]
        assert calibrated[system].human.n == len(humans)
        if humans:
            assert calibrated[system].human.mean == pytest.approx(np.mean(humans))
        assert calibrated[system].ppi.labelled == len([a for a in mine if a in full])


@pytest.mark.usefixtures("eager_refresh")
def test_page_and_api_show_groups_dimensions_and_the_curve_by_a_dimension(shaped, client, owner):
    known, _, _ = shaped
    dataset = known.run.dataset
    client.force_login(owner)
    url = reverse("dataset-analytics", args=[dataset.pk])
    client.get(url)  # queues (eagerly runs) the refresh
    page = client.get(url, {"complexity": "sources"}).content.decode()
    for table in ("scores-group", "scores-dimension-sources", "scores-dimension-file_type"):
        assert f'id="{table}"' in page
    assert 'id="ppi-scale"' in page and "On the answers" in page
    assert "Score by sources" in page
    api = reverse("api-evaluation:analytics", args=[dataset.pk])
    body = client.get(api, {"complexity": "sources"}).json()
    assert body["complexity"]["by"] == "dimension:sources"
    assert body["complexity_dimensions"] == ["sources"]
    assert body["calibrated_scale"] == "answers"
    groups = {s["group"] for s in body["scores"]}
    assert {"group", "dimension:sources", "dimension:file_type"} <= groups
    assert client.get(api, {"complexity": "file_type"}).status_code == 400
