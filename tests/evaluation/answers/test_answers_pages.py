"""The Answers page lists every answer of a dataset (search, filters, sort, pages) with its
latest score from the kept run scores and its label status, each row opening the answer's
page; the answer page shows the text, the trajectory and every run's scores; the run's
answer page shows the trajectory too, and a penalty avoided reads "avoided", never a red
"fail". Only the dataset's reviewers and admins see any of it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import roles
from annotation.services import dataset_set_role
from evaluation.answers.models import Answer, System
from evaluation.kept.events import Event, bump
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import scores
from tests.evaluation.agreement.labelled import build_labelled
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TURNS = [
    {"role": "user", "content": "What was Q3 revenue?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": "search_filings", "arguments": {"ticker": "SLVX"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "search_filings", "content": "Q3: $4.12B"},
    {"role": "assistant", "content": "Revenue was $4.12 billion."},
]  # fmt: skip
CONTEXT = [{"id": "doc-1", "title": "Q3 10-Q", "source": "SEC", "text": "Revenue: $4.12B."}]


@pytest.fixture
def judged(reviewed_dataset):
    """A finished run over 2 queries × 3 systems, and an agent's answer (not judged)."""
    data = build_labelled(reviewed_dataset, queries=2, criteria=4, systems=3, seed=3)
    query = data.run.verdicts.first().answer.query
    agent = Answer.objects.create(
        system=System.objects.create(name="Agent", version="2"), query=query,
        text="Revenue was **$4.12 billion**, zebracorn.", run_label="nightly",
        turns=TURNS, context=CONTEXT,
    )  # fmt: skip
    return data, agent


def listed(response) -> list[int]:
    return [a.pk for a, _ in response.context["rows"]]


def test_every_answer_is_listed_with_its_latest_score_and_labels(client, reviewer, judged):
    data, agent = judged
    client.force_login(reviewer)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    response = client.get(url)
    assert response.status_code == 200
    answers = Answer.objects.filter(query__dataset=data.run.dataset)
    assert sorted(listed(response)) == sorted(answers.values_list("pk", flat=True))
    assert listed(response)[0] == agent.pk  # newest first
    kept = {r.answer_id: r for r in scores.run_report(data.run).answers}
    for answer, latest in response.context["rows"]:
        if answer.pk == agent.pk:
            assert latest is None and answer.has_tool_calls and answer.has_context
            continue
        assert latest.run == data.run
        assert latest.report.value == kept[answer.pk].value
        labelled = HumanLabel.objects.filter(answer=answer).exists()
        assert answer.labelled == labelled
        assert not answer.has_tool_calls and not answer.has_context
    html = response.content.decode()
    assert f'href="{reverse("answer-detail", args=[agent.pk])}"' in html
    assert "not run" in html


def test_perfect_answers_are_not_listed(client, reviewer, judged):
    """Written for cross-evaluation, each with a run label of its own: their pages are the
    checklists' perfect-answer pages, and /api/answers/ leaves them out too."""
    data, _ = judged
    criterion = data.run.verdicts.select_related("criterion__checklist").first().criterion
    perfect = Answer.objects.create(
        system=System.objects.create(name="Perfect answers", is_reference=True),
        query=criterion.checklist.query, checklist=criterion.checklist,
        text="The perfect answer.", run_label=f"perfect:{criterion.checklist_id}",
    )  # fmt: skip
    client.force_login(reviewer)
    response = client.get(reverse("dataset-answers", args=[data.run.dataset_id]))
    assert perfect.pk not in listed(response)
    assert "perfect:" not in response.content.decode()


def test_search_filters_and_sort(client, reviewer, judged):
    data, agent = judged
    client.force_login(reviewer)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    assert listed(client.get(url, {"q": "ZEBRACORN"})) == [agent.pk]
    assert listed(client.get(url, {"q": "no such words anywhere"})) == []
    assert listed(client.get(url, {"tool_calls": "yes"})) == [agent.pk]
    assert listed(client.get(url, {"context": "yes"})) == [agent.pk]
    assert agent.pk not in listed(client.get(url, {"tool_calls": "no"}))
    assert listed(client.get(url, {"system": agent.system_id})) == [agent.pk]
    assert listed(client.get(url, {"run_label": "nightly"})) == [agent.pk]
    unlabelled = set(listed(client.get(url, {"run_label": "-"})))
    assert agent.pk not in unlabelled and len(unlabelled) == 6
    other_query = Answer.objects.exclude(query=agent.query_id).filter(
        query__dataset=data.run.dataset
    )
    assert set(listed(client.get(url, {"query": other_query[0].query_id}))) == set(
        other_query.values_list("pk", flat=True)
    )
    labelled = set(HumanLabel.objects.values_list("answer_id", flat=True)) | set(
        Adjudication.objects.values_list("answer_id", flat=True)
    )
    assert set(listed(client.get(url, {"labelled": "yes"}))) == labelled
    assert agent.pk in listed(client.get(url, {"labelled": "no"}))
    lengths = [a.length for a, _ in client.get(url, {"sort": "longest"}).context["rows"]]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] == len(agent.text)


def test_a_bad_filter_is_named_and_ignored(client, reviewer, judged):
    data, _ = judged
    client.force_login(reviewer)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    response = client.get(url, {"system": "999999", "sort": "sideways"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "These filters were not applied" in html and "system" in html and "sort" in html
    assert len(listed(response)) == 7


def test_pages_of_fifty(client, owner, reviewed_dataset):
    data = build_labelled(reviewed_dataset, queries=11, criteria=1, systems=5, seed=4)
    client.force_login(owner)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    first, second = client.get(url), client.get(url, {"page": 2})
    assert len(listed(first)) == 50 and len(listed(second)) == 5
    assert not set(listed(first)) & set(listed(second))
    assert "Page 1 of 2" in first.content.decode()


def test_the_latest_run_gives_the_score(client, reviewer, judged, reviewed_dataset):
    data, _ = judged
    later = build_labelled(reviewed_dataset, queries=1, criteria=2, systems=1, seed=9).run
    client.force_login(reviewer)
    rows = client.get(reverse("dataset-answers", args=[reviewed_dataset.pk])).context["rows"]
    runs = {a.pk: latest.run.pk for a, latest in rows if latest}
    later_answers = set(later.verdicts.values_list("answer_id", flat=True))
    assert {pk for pk, run in runs.items() if run == later.pk} == later_answers
    assert {run for pk, run in runs.items() if pk not in later_answers} == {data.run.pk}


def test_answer_page_shows_text_trajectory_and_each_runs_scores(client, reviewer, judged):
    data, agent = judged
    client.force_login(reviewer)
    html = client.get(reverse("answer-detail", args=[agent.pk])).content.decode()
    assert "<strong>$4.12 billion</strong>" in html
    assert "search_filings" in html and "&quot;ticker&quot;: &quot;SLVX&quot;" in html
    assert "Q3 10-Q" in html and "Retrieved context" in html
    assert "No run has judged this answer yet." in html
    judged_answer = data.run.verdicts.first().answer
    response = client.get(reverse("answer-detail", args=[judged_answer.pk]))
    ((run, report, _updating),) = response.context["per_run"]
    assert run == data.run
    assert (
        report.value
        == scores.run_scores(data.run).of_answers([judged_answer.pk])[judged_answer.pk].value
    )
    assert reverse("run-answer", args=[run.pk, judged_answer.pk]) in response.content.decode()


def test_run_answer_page_shows_the_trajectory_and_a_penalty_avoided(client, reviewer, judged):
    data, _ = judged
    verdict = data.run.verdicts.select_related("answer", "criterion").first()
    answer, criterion = verdict.answer, verdict.criterion
    answer.turns, answer.context = TURNS, CONTEXT
    answer.save()
    criterion.weight = -2
    criterion.save()
    data.run.verdicts.filter(answer=answer, criterion=criterion).update(outcome="fail")
    Adjudication.objects.filter(answer=answer, criterion=criterion).delete()
    bump(data.run.dataset_id, Event.LABELS_IMPORTED)
    client.force_login(reviewer)
    html = client.get(reverse("run-answer", args=[data.run.pk, answer.pk])).content.decode()
    assert "search_filings" in html and "Retrieved context" in html
    row = html[html.index(criterion.text) - 1500 : html.index(criterion.text)]
    assert 'class="badge verdict-pass" data-outcome="fail">avoided<' in row
    assert ">fail<" not in row
    # Committed: the same penalty met reads "committed", in a failure's colour.
    data.run.verdicts.filter(answer=answer, criterion=criterion).update(outcome="pass")
    bump(data.run.dataset_id, Event.LABELS_IMPORTED)
    html = client.get(reverse("run-answer", args=[data.run.pk, answer.pk])).content.decode()
    row = html[html.index(criterion.text) - 1500 : html.index(criterion.text)]
    assert 'class="badge verdict-fail" data-outcome="pass">committed<' in row


def test_review_page_reads_avoided_for_a_penalty(client, reviewer, judged):
    data, _ = judged
    verdict = data.run.verdicts.select_related("answer", "criterion").first()
    answer, criterion = verdict.answer, verdict.criterion
    criterion.weight = -1
    criterion.save()
    data.run.verdicts.filter(answer=answer, criterion=criterion).update(outcome="fail")
    Adjudication.objects.filter(answer=answer, criterion=criterion).delete()
    client.force_login(reviewer)
    url = reverse("answer-review", args=[answer.pk]) + f"?run={data.run.pk}"
    html = client.get(url).content.decode()
    row = html[html.index(f'id="row-{criterion.pk}"') :]
    row = row[: row.index("</li>")]
    assert "avoided" in row and ">fail<" not in row


@pytest.mark.parametrize("page", ["list", "answer"])
def test_only_reviewers_and_admins_see_answers(client, collaborator, outsider, judged, page):
    data, agent = judged
    url = (
        reverse("dataset-answers", args=[data.run.dataset_id])
        if page == "list"
        else reverse("answer-detail", args=[agent.pk])
    )
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.force_login(collaborator)  # an expert of the dataset, annotating blind
    assert client.get(url).status_code == 403
    expert = UserFactory(username="late-expert")
    dataset_set_role(dataset=data.run.dataset, user=expert, role=roles.DatasetRole.EXPERT)
    client.force_login(expert)
    assert client.get(url).status_code == 403
    assert client.get(reverse("answer-detail", args=[999999])).status_code == 404


def test_the_list_and_answer_page_count_their_queries(
    client, reviewer, judged, django_assert_max_num_queries
):
    data, _ = judged
    client.force_login(reviewer)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    client.get(url)  # the run's scores kept, the session warm
    with django_assert_max_num_queries(14):
        client.get(url, {"q": "answer", "labelled": "no", "sort": "system"})
    answer = data.run.verdicts.first().answer_id
    client.get(reverse("answer-detail", args=[answer]))
    with django_assert_max_num_queries(16):
        client.get(reverse("answer-detail", args=[answer]))
