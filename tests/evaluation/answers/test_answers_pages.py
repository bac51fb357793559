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
from evaluation.runs.models import Run, Verdict
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


def test_the_run_label_is_typed_with_the_latest_labels_offered(client, reviewer, judged):
    """A label a night: 25 nights of one system are too many for a select. The field is
    text with a datalist of the 20 latest labels (the newest answers' first, and "-" for the
    answers without one while they are among the latest); an older label typed still finds
    its answers, and one no answer carries lists nothing, without an error."""
    data, agent = judged
    nightly = System.objects.create(name="Nightly")
    nights = [f"nightly-2026-11-{day:02d}" for day in range(1, 26)]
    for label in nights:
        Answer.objects.create(system=nightly, query=agent.query, text="Night.", run_label=label)
    client.force_login(reviewer)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    response = client.get(url)
    html = response.content.decode()
    field = html[html.index('name="run_label"') - 200 : html.index('name="run_label"') + 200]
    assert 'type="text"' in field and 'list="run-labels"' in field and "<select" not in field
    offered = [value for value, _ in response.context["filter_form"].recent_labels]
    assert offered == nights[::-1][:20]  # the oldest five and "-", "nightly" not offered
    datalist = html[html.index('<datalist id="run-labels"') : html.index("</datalist>")]
    assert datalist.count("<option") == 20 and f'value="{nights[-1]}"' in datalist
    assert nights[0] not in datalist
    oldest = Answer.objects.get(run_label=nights[0])
    assert listed(client.get(url, {"run_label": nights[0]})) == [oldest.pk]
    assert listed(client.get(url, {"run_label": f"  {nights[0]} "})) == [oldest.pk]
    unknown = client.get(url, {"run_label": "nightly-1999-01-01"})
    assert unknown.status_code == 200 and listed(unknown) == []
    assert "These filters were not applied" not in unknown.content.decode()
    assert "No answer matches these filters" in unknown.content.decode()
    too_long = client.get(url, {"run_label": "x" * 101})
    assert "These filters were not applied: run_label" in too_long.content.decode()
    assert len(listed(too_long)) == 7 + len(nights)


def test_answers_without_a_run_label_are_offered_as_a_dash(client, reviewer, judged):
    data, _ = judged
    client.force_login(reviewer)
    response = client.get(reverse("dataset-answers", args=[data.run.dataset_id]))
    offered = dict(response.context["filter_form"].recent_labels)
    assert offered == {"nightly": "", "-": "answers without a run label"}
    assert 'value="-" label="answers without a run label"' in response.content.decode()


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


def _verdicts_section(html: str) -> str:
    """The shared verdicts view as a page draws it (templates/evaluation/answers/_verdicts.html),
    from its first checklist heading to the end of its last criterion."""
    start = html.index("<h2>Checklist by ")
    return html[start : html.rindex("</ol>") + len("</ol>")]


def test_answer_page_shows_the_latest_runs_verdicts_as_the_run_answer_page_does(
    client, reviewer, judged, reviewed_dataset
):
    data, _ = judged
    answer = data.run.verdicts.first().answer
    client.force_login(reviewer)
    page = client.get(reverse("answer-detail", args=[answer.pk]))
    html = page.content.decode()
    assert page.context["shown_run"] == data.run
    in_run = client.get(reverse("run-answer", args=[data.run.pk, answer.pk])).content.decode()
    assert _verdicts_section(html) == _verdicts_section(in_run)
    criterion = data.run.verdicts.filter(answer=answer).first().criterion
    assert criterion.text in _verdicts_section(html)
    assert f'data-verdicts-of="{data.run.pk}"' in html

    # A later run on the same answer: its verdicts are shown by default, the first run's
    # on asking; a run that did not judge the answer (or is not a number) is ignored.
    later = build_labelled(reviewed_dataset, queries=1, criteria=2, systems=1, seed=9).run
    other = later.verdicts.first().answer
    page = client.get(reverse("answer-detail", args=[other.pk]))
    assert page.context["shown_run"] == later
    assert len(page.context["per_run"]) == 1
    for wanted in (str(later.pk), str(data.run.pk + 10_000), "x' OR 1=1"):
        page = client.get(reverse("answer-detail", args=[answer.pk]), {"run": wanted})
        assert page.status_code == 200 and page.context["shown_run"] == data.run


def test_answer_page_choosing_among_several_runs(client, reviewer, judged):
    data, _ = judged
    answer = data.run.verdicts.first().answer
    again = build_labelled_again(data)
    client.force_login(reviewer)
    url = reverse("answer-detail", args=[answer.pk])
    page = client.get(url)
    assert [r for r, _, _ in page.context["per_run"]] == [again, data.run]
    assert page.context["shown_run"] == again
    html = page.content.decode()
    assert f'href="?run={data.run.pk}#verdicts"' in html
    page = client.get(url, {"run": data.run.pk})
    assert page.context["shown_run"] == data.run
    assert f'data-verdicts-of="{data.run.pk}"' in page.content.decode()


def test_a_month_of_runs_gives_cards_to_the_newest_and_links_the_rest(
    client, reviewer, judged, django_assert_max_num_queries
):
    """Nightly runs judge the same answer every night: the page gives the newest ten a
    card with the answer's score and lists the others as links, so its queries stay flat
    (it read four per run: 134 queries at 30 runs of the month preset)."""
    from evaluation.answer_pages.views import SCORE_CARDS

    data, _ = judged
    answer = data.run.verdicts.first().answer
    nights = [build_labelled_again(data) for _ in range(SCORE_CARDS + 2)]  # 13 runs in all
    client.force_login(reviewer)
    url = reverse("answer-detail", args=[answer.pk])
    client.get(url)  # every run's scores kept (the test settings count them)
    with django_assert_max_num_queries(24 + 4 * (SCORE_CARDS - 1)):
        page = client.get(url)
    newest = sorted(nights, key=lambda r: (r.created_at, r.pk), reverse=True)
    assert [r for r, _, _ in page.context["per_run"]] == newest[:SCORE_CARDS]
    older = page.context["older_runs"]
    assert older == [*newest[SCORE_CARDS:], data.run]
    html = page.content.decode()
    assert "3 older runs judged this answer" in html
    for run in older:
        assert f'href="?run={run.pk}#verdicts"' in html
    # An older run asked for gets its card and its verdicts; it leaves the links.
    page = client.get(url, {"run": data.run.pk})
    assert page.context["per_run"][-1][0] == data.run
    assert data.run not in page.context["older_runs"]
    assert f'data-verdicts-of="{data.run.pk}"' in page.content.decode()


def test_the_answers_list_reads_the_newest_of_many_runs_in_as_many_queries_as_of_one(
    client, reviewer, judged
):
    """Nightly runs judge the same answers: each listed answer's score is the newest run's
    kept one, in the same queries as with one run. (What each query reads, one index probe
    per answer rather than every run's verdicts, is measured in bench/, not here.)"""
    from django.db import connection

    def queries_of(url: str) -> tuple[int, object]:
        sent = []
        with connection.execute_wrapper(lambda execute, *args: sent.append(1) or execute(*args)):
            response = client.get(url)
        return len(sent), response

    data, _ = judged
    client.force_login(reviewer)
    url = reverse("dataset-answers", args=[data.run.dataset_id])
    client.get(url)  # the run's scores kept
    one_run, _ = queries_of(url)
    nights = [build_labelled_again(data) for _ in range(3)]
    client.get(url)  # the newest run's scores kept
    four_runs, response = queries_of(url)
    assert four_runs == one_run
    rows = response.context["rows"]
    newest = max(nights, key=lambda r: (r.created_at, r.pk))
    assert {latest.run for _, latest in rows if latest} == {newest}
    kept = scores.run_scores(newest).of_answers([a.pk for a, _ in rows])
    assert {a.pk: latest.report for a, latest in rows if latest} == kept


def test_answers_whose_newest_runs_differ_each_show_their_own_runs_score(reviewer, judged):
    """One answer left out of the newest run: its score is the first run's, the others' the
    newest run's, each as that run keeps it; the dataset's counters read once for both."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluation.answer_pages.selectors import latest_scores
    from evaluation.kept.models import ReviewRevision

    data, _ = judged
    newest = build_labelled_again(data)
    left_out = newest.verdicts.values_list("answer_id", flat=True).first()
    newest.verdicts.filter(answer_id=left_out).delete()
    bump(data.run.dataset_id, Event.LABELS_IMPORTED)
    answer_ids = list(data.run.verdicts.values_list("answer_id", flat=True).distinct())
    for run in (data.run, newest):  # as their run pages keep them
        scores.keep_scores(Run.objects.select_related("dataset").get(pk=run.pk))

    with CaptureQueriesContext(connection) as read:
        found = latest_scores(data.run.dataset, answer_ids)
    table = ReviewRevision._meta.db_table
    assert sum(f'FROM "{table}"' in q["sql"] for q in read.captured_queries) == 1
    assert {pk: latest.run.pk for pk, latest in found.items()} == {
        pk: data.run.pk if pk == left_out else newest.pk for pk in answer_ids
    }
    for run in (data.run, newest):
        mine = [pk for pk, latest in found.items() if latest.run.pk == run.pk]
        kept = scores.run_scores(Run.objects.select_related("dataset").get(pk=run.pk))
        assert {pk: found[pk].report for pk in mine} == kept.of_answers(mine)


def build_labelled_again(data):
    """A second finished run of the same dataset, panel and answers: a copy of the first's
    verdicts, every vote a failure (so the two runs' verdicts differ)."""
    first = data.run
    again = Run.objects.create(
        dataset=first.dataset, panel=first.panel, status=first.status, kind=first.kind,
        started_at=first.started_at, finished_at=first.finished_at, snapshot=first.snapshot,
    )  # fmt: skip
    Verdict.objects.bulk_create(
        [
            Verdict(
                run=again,
                answer_id=v.answer_id,
                criterion_id=v.criterion_id,
                judge_id=v.judge_id,
                sample=v.sample,
                outcome="fail",
            )
            for v in first.verdicts.all()
        ]
    )
    return again


def test_every_score_shows_its_undecided_count(client, reviewer, judged, eager_refresh):
    """An answer with one criterion undecided in a run (every vote failed): the answer page's
    run card, its checklist line, the Answers list's latest score and the compare page's
    side all say so."""
    data, _ = judged
    verdict = data.run.verdicts.select_related("answer", "criterion").first()
    answer, criterion = verdict.answer, verdict.criterion
    data.run.verdicts.filter(answer=answer, criterion=criterion).update(
        outcome="error", error_kind="timeout"
    )
    Adjudication.objects.filter(answer=answer, criterion=criterion).delete()
    bump(data.run.dataset_id, Event.LABELS_IMPORTED)
    client.force_login(reviewer)
    page = client.get(reverse("answer-detail", args=[answer.pk]))
    ((_run, report, _updating),) = page.context["per_run"]
    assert report.undecided == 1
    html = page.content.decode()
    card = html[html.index(f'data-run-score="{data.run.pk}"') :]
    card = card[: card.index("</article>")]
    assert "<span data-undecided> · 1 undecided</span>" in card
    assert "1 undecided (left out)" in card
    listing = client.get(reverse("dataset-answers", args=[data.run.dataset_id]))
    row = dict(listing.context["rows"])[answer]
    assert row.report.undecided == 1
    assert 'data-undecided title="Criteria with no valid vote in that run">1 undecided' in (
        listing.content.decode()
    )
    # The compare page, this run against itself: each side counts the system's undecided.
    again = build_labelled_again(data)
    url = reverse("analytics-compare", args=[data.run.dataset_id])
    params = {"a": data.run.pk, "b": again.pk, "system_a": answer.system_id}
    page = client.get(url, params)
    assert page.context["undecided_a"] == 1
    assert "<td data-undecided-a>1</td>" in page.content.decode()
    # The second run's scores are not counted yet: its side says so rather than 0.
    assert page.context["undecided_b"] is None
    assert "counted once the run's scores are" in page.content.decode()
    scores.keep_scores(again)  # counted and kept, as at the run's end
    page = client.get(url, params)
    assert page.context["undecided_b"] == 0  # every criterion decided: a vote of fail
    # The compare API says the same of each side; without a system, a side counts every
    # system's undecided criteria.
    api = f"/api/datasets/{data.run.dataset_id}/analytics/compare/"
    body = client.get(api, params).json()
    assert (body["a"]["undecided"], body["b"]["undecided"]) == (1, 0)
    body = client.get(api, {"a": data.run.pk, "b": again.pk}).json()
    assert body["a"]["undecided"] == sum(scores.kept_undecided(data.run).values()) == 1


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
    with django_assert_max_num_queries(24):
        client.get(reverse("answer-detail", args=[answer]))
