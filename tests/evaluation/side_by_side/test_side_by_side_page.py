"""The side-by-side page: two systems' answers to each query next to each other, every
criterion's outcome on both sides with the ones A meets and B misses first, the scores the
runs keep (under the dataset's scoring strategy) with their undecided criteria, the
trajectory through the shared answer view; filters by score difference, category and
dimension; a bad side named and nothing compared; the same number of queries for a page of
four pairs as for a full page of five; only the dataset's reviewers and admins."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import QueryCategory
from annotation.services import dataset_create
from evaluation.kept.models import ReviewRevision
from evaluation.runs import scores
from evaluation.side_by_side.pairing import A_MEETS, B_MEETS, SAME, UNCOMPARED
from tests.factories import UserFactory
from tests.support.side_by_side import build_two_runs

pytestmark = pytest.mark.django_db


def url(data, **params) -> str:
    base = reverse("dataset-side-by-side", args=[data.dataset.pk])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def sides(data) -> dict:
    return {"a": data.run_a.pk, "system_a": data.old.pk, "b": data.run_b.pk,
            "system_b": data.new.pk}  # fmt: skip


def shown(response) -> list[int]:
    return [d.pair.query_id for d in response.context["comparison"].details]


def test_differing_criteria_first_with_the_kept_scores(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    with CaptureQueriesContext(connection) as read:
        response = client.get(url(data, **sides(data), sort="query"))
    assert response.status_code == 200
    # The dataset's counters (what both runs' kept scores are keyed by) read once.
    table = ReviewRevision._meta.db_table
    assert sum(f'FROM "{table}"' in q["sql"] for q in read.captured_queries) == 1
    details = response.context["comparison"].details
    assert [d.pair.query_id for d in details] == [q.pk for q in data.queries]
    first = details[0]
    c = data.criteria[0]
    # Query 0: B misses the margin and commits the penalty (A avoided it), B gains the table.
    assert [(r.criterion.pk, r.difference) for r in first.criteria] == [
        (c[1].pk, A_MEETS), (c[3].pk, A_MEETS), (c[2].pk, B_MEETS), (c[0].pk, SAME),
    ]  # fmt: skip
    assert first.counts[A_MEETS] == 2 and first.differing == 3
    penalty = first.criteria[1]
    assert penalty.shown_a == ("avoided", "pass") and penalty.shown_b == ("committed", "fail")
    # Query 2: the table is undecided on B (no valid vote): not compared, counted undecided.
    third = details[2]
    assert {r.criterion.pk: r.difference for r in third.criteria}[data.criteria[2][2].pk] == (
        UNCOMPARED
    )
    # The scores are the runs' own (kept), under the dataset's strategy.
    kept_a = {r.answer_id: r for r in scores.run_report(data.run_a).answers}
    kept_b = {r.answer_id: r for r in scores.run_report(data.run_b).answers}
    for d, old, new in zip(details, data.old_answers, data.new_answers, strict=True):
        assert d.pair.a.value == kept_a[old.pk].value and d.pair.b.value == kept_b[new.pk].value
        assert d.report_b.undecided == kept_b[new.pk].undecided
        assert d.checklists[0].a.value == kept_a[old.pk].checklists[0].value
    assert third.pair.b.undecided == 1
    html = response.content.decode()
    assert "A meets, B misses" in html and "A misses, B meets" in html
    assert "1 undecided" in html
    assert "<script>alert(1)</script>" not in html  # the answer is sanitised
    assert "revenue &lt;b&gt;and&lt;/b&gt; margin" in html  # the query text escaped
    assert "search_filings" in html and "data-answer-view" in html  # the trajectory, shared
    assert f'href="{reverse("run-answer", args=[data.run_b.pk, data.new_answers[0].pk])}"' in html


def test_a_checklist_scored_on_one_side_only_shows_a_dash_on_the_other(client, reviewer, two_runs):
    """An expert added a second checklist to a query after the older run: the newer run
    scored it, the older did not. Compared either way round, the page shows the checklist
    with its score on one side and a dash on the other (it answered 500 with the newer run
    as A: the template read the missing side's strategy)."""
    from tests.support.builders import checklisted_query, finished_run

    data = two_runs
    query, answer = data.queries[0], data.old_answers[0]
    second = checklisted_query(
        query=query, criteria=["Names the fiscal year."], author=UserFactory(username="second")
    )
    votes = {(answer, c): ["pass"] for c in [*data.criteria[0], *second.criteria]}
    newer = finished_run(data.dataset, data.run_a.panel, votes)
    client.force_login(reviewer)
    for a, b in ((newer, data.run_a), (data.run_a, newer)):
        params = {"a": a.pk, "system_a": data.old.pk, "b": b.pk, "system_b": data.old.pk}
        response = client.get(url(data, **params))
        assert response.status_code == 200
        (detail,) = [d for d in response.context["comparison"].details if d.query == query]
        pair = next(c for c in detail.checklists if c.checklist_id == second.checklist.pk)
        assert (pair.a is None) == (a == data.run_a) and (pair.b is None) == (b == data.run_a)
        html = response.content.decode()
        assert "Checklist by second" in html


def test_weights_and_penalties_show_beside_the_criteria(client, reviewer, two_runs):
    """As on every page that shows a penalty, a weight other than 1 is shown too."""
    data = two_runs
    weighted = data.criteria[0][0]
    weighted.weight = 3
    weighted.save(update_fields=["weight"])
    client.force_login(reviewer)
    html = client.get(url(data, **sides(data), sort="query")).content.decode()
    row = html[html.index(f'data-criterion="{weighted.pk}"') :]
    assert "data-weight>weight 3.00<" in row[: row.index("</tr>")]
    assert "data-penalty>penalty -1.00<" in html


def test_largest_difference_first_by_default(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    response = client.get(url(data, **sides(data)))
    differences = [abs(d.pair.difference) for d in response.context["comparison"].details]
    assert differences == sorted(differences, reverse=True)


def test_two_runs_of_one_system(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    response = client.get(url(data, a=data.run_a.pk, b=data.run_b.pk, system_a=data.old.pk,
                              system_b=data.old.pk, sort="query"))  # fmt: skip
    first = response.context["comparison"].details[0]
    assert first.answer_a.pk == first.answer_b.pk == data.old_answers[0].pk
    assert [r.criterion.pk for r in first.criteria if r.difference == A_MEETS] == [
        data.criteria[0][0].pk
    ]


def test_defaults_previous_run_against_the_latest_and_the_same_system(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    comparison = client.get(url(data)).context["comparison"]
    assert (comparison.side_a.run, comparison.side_b.run) == (data.run_a, data.run_b)
    assert comparison.side_a.system_id == comparison.side_b.system_id == data.old.pk
    # From the run page: B is that run, A the one before it.
    comparison = client.get(url(data, b=data.run_b.pk)).context["comparison"]
    assert comparison.side_a.run == data.run_a


def test_filters(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    q0, q1, q2 = (q.pk for q in data.queries)
    assert shown(client.get(url(data, **sides(data), min_difference="0.01", sort="query"))) == [
        q0, q2,
    ]  # fmt: skip
    assert shown(client.get(url(data, **sides(data), min_difference="0.9"))) == []
    digests = QueryCategory.objects.get(name="Event digests")
    assert shown(client.get(url(data, **sides(data), category=digests.pk))) == [q2]
    assert set(shown(client.get(url(data, **sides(data), dimension="answer_type=text")))) == {
        q1, q2,
    }  # fmt: skip
    response = client.get(
        url(data, **sides(data), dimension="answer_type=number", min_difference="0.01")
    )
    assert shown(response) == [q0]
    assert response.context["comparison"].page.paginator.count == 1


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"b": "999999"}, "b", "No run 999999 of system answers in this dataset."),
        ({"system_a": "999999"}, "system_a", "scored no answer of system 999999"),
        ({"min_difference": "2"}, "min_difference", "less than or equal to 1"),
        ({"dimension": "colour=red"}, "dimension", "Select a valid choice"),
        ({"sort": "sideways"}, "sort", "Select a valid choice"),
    ],
)
def test_bad_input_is_named_and_nothing_is_compared(client, reviewer, two_runs, params, field,
                                                    message):  # fmt: skip
    data = two_runs
    client.force_login(reviewer)
    response = client.get(url(data, **{**sides(data), **params}))
    assert response.status_code == 400
    assert response.context["comparison"] is None
    assert field in response.context["form"].errors
    assert message in response.content.decode()


def test_another_datasets_run_is_refused_without_its_content(client, owner, reviewer, two_runs):
    data = two_runs
    other = dataset_create(name="Other dataset", by=owner)
    theirs = build_two_runs(other, queries=1)
    client.force_login(reviewer)
    response = client.get(url(data, a=data.run_a.pk, b=theirs.run_b.pk))
    assert response.status_code == 400
    assert "Side query" not in response.content.decode()


def test_htmx_redraws_the_results_alone(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    response = client.get(url(data, **sides(data)), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="side-by-side"') and "<html" not in html
    assert "HX-Request" in response["Vary"]


def test_pages_of_five_pairs(client, reviewer, reviewed_dataset):
    data = build_two_runs(reviewed_dataset, queries=7)
    client.force_login(reviewer)
    first = client.get(url(data, **sides(data), sort="query"))
    second = client.get(url(data, **sides(data), sort="query", page=2))
    assert len(shown(first)) == 5 and len(shown(second)) == 2
    assert not set(shown(first)) & set(shown(second))
    assert "Page 1 of 2" in first.content.decode()


def count_queries(client, target) -> int:
    client.get(target)  # the runs' scores kept by the first view
    with CaptureQueriesContext(connection) as captured:
        assert client.get(target).status_code == 200
    return len(captured)


def test_queries_do_not_grow_with_the_page(client, reviewer, reviewed_dataset,
                                           django_assert_max_num_queries):  # fmt: skip
    data = build_two_runs(reviewed_dataset, queries=12)
    client.force_login(reviewer)
    # Four pairs differ by more than 0.5 (B gains 0.75 on every third query): four shown,
    # against a full page of five (of twelve).
    small = client.get(url(data, **sides(data), min_difference="0.5"))
    assert len(shown(small)) == 4
    assert len(shown(client.get(url(data, **sides(data))))) == 5
    assert count_queries(client, url(data, **sides(data), min_difference="0.5")) == count_queries(
        client, url(data, **sides(data))
    )
    with django_assert_max_num_queries(21):
        client.get(url(data, **sides(data)))


def test_verdicts_are_read_for_the_two_runs_and_the_shown_answers_only(client, reviewer,
                                                                      two_runs):  # fmt: skip
    data = two_runs
    client.force_login(reviewer)
    target = url(data, **sides(data))
    client.get(target)
    with CaptureQueriesContext(connection) as captured:
        client.get(target)
    verdict_reads = [q["sql"] for q in captured if "evaluation_verdict" in q["sql"]]
    assert len(verdict_reads) == 2
    for sql in verdict_reads:
        assert "run_id = " in sql and "answer_id IN" in sql


@pytest.mark.parametrize(("role", "status"), [("outsider", 404), ("expert", 403)])
def test_only_reviewers_and_admins(client, two_runs, role, status):
    from annotation import roles
    from annotation.services import dataset_set_role

    data = two_runs
    user = UserFactory(username=f"side-{role}")
    if role == "expert":
        dataset_set_role(dataset=data.dataset, user=user, role=roles.DatasetRole.EXPERT)
    client.force_login(user)
    response = client.get(url(data, **sides(data)))
    assert response.status_code == status
    assert "Side query" not in response.content.decode()


def test_no_run_yet_says_so(client, reviewer, reviewed_dataset):
    client.force_login(reviewer)
    response = client.get(reverse("dataset-side-by-side", args=[reviewed_dataset.pk]))
    assert response.status_code == 200
    assert "No run of system answers yet" in response.content.decode()


def test_linked_from_the_run_the_compare_and_the_answers_pages(client, reviewer, two_runs):
    data = two_runs
    client.force_login(reviewer)
    for target in (
        reverse("run-detail", args=[data.run_b.pk]),
        reverse("analytics-compare", args=[data.dataset.pk])
        + f"?a={data.run_a.pk}&b={data.run_b.pk}",
        reverse("dataset-answers", args=[data.dataset.pk]),
    ):
        html = client.get(target).content.decode()
        assert "data-side-by-side-link" in html, target
