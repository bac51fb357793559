"""Must show: with the loopback judge scripted so every pass and fail is known, a
cross-evaluation run through a real worker gives the matrix values and the dataset mean
computed by hand, in the page and in the API; an unparseable verdict is undecided, never a
fail; the overlap export has the same values."""

from __future__ import annotations

import io
import re
from fractions import Fraction

import pytest
from django.urls import reverse

from evaluation.cross_evaluation import selectors, services
from evaluation.cross_evaluation.export import overlap_rows, write_csv
from evaluation.runs import services as runs
from evaluation.runs.models import Run, Verdict
from loopback import LoopbackOpenAI
from tests.evaluation.cross_evaluation.two_queries import (
    EXPECTED,
    EXPECTED_MEAN,
    code_judge,
    two_queries,
)
from tests.factories import PanelFactory, loopback_judges


def overlap_of(passed: int, failed: int) -> float | None:
    return passed / (passed + failed) if passed + failed else None


@pytest.fixture
def graded(celery_worker, dataset, owner):
    lists = two_queries(dataset, owner)
    with LoopbackOpenAI(responder=code_judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        run = services.cross_evaluation_start(dataset=dataset, panel=panel, by=owner)
        run = runs.wait_for(run, timeout=120)
    assert run.status == Run.Status.DONE
    assert run.kind == Run.Kind.CROSS_EVALUATION
    # 3 perfect answers × 10 criteria of query 1, 2 × 6 of query 2: the whole N × N.
    assert run.expected == Verdict.objects.filter(run=run).count() == 42
    assert Verdict.objects.filter(run=run, outcome="unparseable").count() == 3  # K9, 3 answers
    return run, lists


def test_matrix_and_mean_match_the_hand_computed_values_in_page_and_api(
    graded, client, owner, owner_api, dataset
):
    run, lists = graded
    name = {c.pk: key for key, c in lists.items()}

    # The selector.
    q1 = selectors.query_overlap(lists["A"].query, selectors.Source("latest"))
    assert q1.run == run
    for (a, b), pair in q1.matrix.cells.items():
        assert (pair.passed, pair.failed, pair.undecided) == EXPECTED[name[a], name[b]]

    # The page: every cell's numbers, and the undecided count shown apart.
    client.force_login(owner)
    page = client.get(reverse("query-overlaps", args=[lists["A"].query_id])).content.decode()
    cells = re.findall(
        r'data-cell="(\d+)-(\d+)" data-overlap="([\d.]*)" data-passed="(\d+)" '
        r'data-decided="(\d+)" data-undecided="(\d+)"',
        page,
    )
    assert len(cells) == 9
    for a, b, value, passed, decided, undecided in cells:
        p, f, u = EXPECTED[name[int(a)], name[int(b)]]
        assert (int(passed), int(decided), int(undecided)) == (p, p + f, u)
        assert value == f"{overlap_of(p, f):.4f}"
    assert "1 undecided" in page
    # Query 1's mean over its 6 ordered pairs A ≠ B (self-checks left out).
    q1_mean = (Fraction(1, 2) * 3 + Fraction(2, 3) + Fraction(1, 3) + 0) / 6
    assert f'data-query-mean="{float(q1_mean):.4f}"' in page

    dataset_page = client.get(reverse("dataset-cross-evaluation", args=[dataset.pk]))
    assert f'data-dataset-mean="{EXPECTED_MEAN:.4f}"' in dataset_page.content.decode()
    assert "8</strong> ordered pairs" in dataset_page.content.decode()

    # The API: the query's matrix, then the dataset's.
    body = owner_api.get("/api/overlaps/", {"query": lists["A"].query_id}).json()
    assert body["runs"] == [run.pk] and len(body["cells"]) == 9
    for cell in body["cells"]:
        p, f, u = EXPECTED[name[cell["a"]], name[cell["b"]]]
        assert (cell["passed"], cell["failed"], cell["undecided"]) == (p, f, u)
        assert cell["total"] == p + f + u
        assert cell["overlap"] == pytest.approx(overlap_of(p, f), abs=1e-12)
        assert cell["is_self"] == (cell["a"] == cell["b"])
    assert body["mean"] == pytest.approx(float(q1_mean), abs=1e-12)
    assert body["n_pairs"] == 6 and body["ci_low"] is None  # one query: no interval

    body = owner_api.get("/api/overlaps/", {"dataset": dataset.pk}).json()
    assert len(body["cells"]) == len(EXPECTED)
    assert body["mean"] == pytest.approx(EXPECTED_MEAN, abs=1e-12)
    assert (body["n_pairs"], body["n_queries"]) == (8, 2)
    assert body["ci_low"] <= body["mean"] <= body["ci_high"]
    assert sum(b["count"] for b in body["histogram"]) == 8
    # Pair overlaps 0, 1/3, 0.5 ×4, 2/3, 1 in bins of 10 points.
    assert [b["count"] for b in body["histogram"]] == [1, 0, 0, 1, 0, 4, 1, 0, 0, 1]
    assert selectors.dataset_mean_overlap(dataset).mean == pytest.approx(EXPECTED_MEAN)

    # The export rows carry the same numbers.
    rows = list(overlap_rows(dataset))
    assert len(rows) == len(EXPECTED)
    for row in rows:
        p, f, u = EXPECTED[name[row["a_checklist"]], name[row["b_checklist"]]]
        assert (row["passed"], row["failed"], row["undecided"]) == (p, f, u)
    out = io.StringIO()
    write_csv(rows, out)
    assert out.getvalue().splitlines()[0].startswith("dataset,query,a_checklist")
    # And so does the download on the dataset's page.
    download = client.get(reverse("dataset-overlaps-csv", args=[dataset.pk]))
    assert download["Content-Type"].startswith("text/csv")
    assert download.content.decode() == out.getvalue()


def test_drill_down_lists_each_criterion_of_b_with_its_verdict(graded, client, owner):
    run, lists = graded
    a, c = lists["A"], lists["C"]
    client.force_login(owner)
    url = reverse("query-overlaps", args=[a.query_id])
    response = client.get(
        url, {"a": a.pk, "b": c.pk}, headers={"HX-Request": "true", "HX-Target": "cell-detail"}
    )
    html = response.content.decode()
    assert "<html" not in html  # the partial alone, for htmx
    outcomes = re.findall(r'data-criterion="(\d+)" data-outcome="(\w+)"', html)
    assert [o for _, o in outcomes] == ["pass", "fail", "undecided"]
    assert "1 of 2 decided criteria covered" in html
    assert "K2 found." in html and "unparseable" in html
    assert reverse("run-answer", args=[run.pk, a.perfect_answer.pk]) in html
