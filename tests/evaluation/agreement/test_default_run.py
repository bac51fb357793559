"""The agreement page opens on the run the labels can be compared with (issue 28, item 5): the
finished run that graded the most labelled answers, not a later run of other answers; and it
says plainly when the labels and the run shown do not overlap, naming the run to pick."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.agreement.selectors import agreement_report, default_run, labelled_overlap
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.runs.models import Run, Verdict
from evaluation.runs.selectors import runs_of_system_answers
from tests.factories import AnswerFactory, PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run, human_label

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_runs(reviewed_dataset):
    """Run `labelled` graded the answers the reviewer labelled; run `other`, finished
    later, graded only a new system's answers, which nobody labelled."""
    panel = PanelFactory(judges=external_judges(3))
    first = checklisted_query(reviewed_dataset, criteria=3, answers=2)
    second = [AnswerFactory(query=first.query) for _ in range(2)]
    votes = ("pass", "pass", "fail")
    labelled = finished_run(
        reviewed_dataset, panel, {(a, c): votes for a in first.answers for c in first.criteria}
    )
    other = finished_run(
        reviewed_dataset, panel, {(a, c): votes for a in second for c in first.criteria}
    )
    # `other` finished last: the page used to open on it.
    Run.objects.filter(pk=labelled.pk).update(finished_at=timezone.now() - dt.timedelta(hours=1))
    for answer in first.answers:
        for criterion in first.criteria[:2]:
            human_label(answer, criterion, "reviewer", "pass")
    return {"labelled": labelled, "other": other, "criteria": first.criteria}


def test_the_page_opens_on_the_run_that_graded_the_labelled_answers(
    two_runs, reviewed_dataset, client, reviewer
):
    runs = runs_of_system_answers(reviewed_dataset)
    assert labelled_overlap(reviewed_dataset, runs) == {
        two_runs["labelled"].pk: 2, two_runs["other"].pk: 0
    }  # fmt: skip
    assert default_run(reviewed_dataset, runs).pk == two_runs["labelled"].pk
    report = agreement_report(reviewed_dataset)
    assert report.run.pk == two_runs["labelled"].pk
    assert report.counts.items == 4 and report.counts.without_votes == 0
    assert report.overall.agreement.n == 4
    client.force_login(reviewer)
    html = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk])).content.decode()
    assert f'<option value="{two_runs["labelled"].pk}" selected>' in html
    assert "data-no-overlap" not in html


def test_the_api_defaults_to_the_same_run(two_runs, reviewed_dataset, reviewer_api):
    body = reviewer_api.get("/api/agreement/", {"dataset": reviewed_dataset.pk}).json()
    assert body["run"]["id"] == two_runs["labelled"].pk


def test_a_run_that_graded_none_of_the_labels_says_so_and_names_the_run_to_pick(
    two_runs, reviewed_dataset, client, reviewer
):
    client.force_login(reviewer)
    url = reverse("dataset-agreement", args=[reviewed_dataset.pk])
    html = client.get(url, {"run": two_runs["other"].pk}).content.decode()
    assert "The 4 labelled items are all on answers this run did not grade" in html
    assert f'href="?run={two_runs["labelled"].pk}"' in html
    assert "graded 2 of the labelled answers" in html


def test_nightly_runs_of_the_same_answers_open_on_the_newest_without_counting_each_run(
    two_runs, reviewed_dataset, django_assert_num_queries
):
    """Runs that graded every labelled answer: the newest is shown, found in one query of
    the verdicts (how many of the labelled answers it graded) however many runs there are,
    and then kept: later requests read the choice (three queries: the labelled answers, the
    dataset's counters, the kept choice) and never the verdicts."""
    labelled = two_runs["labelled"]
    panel = labelled.panel
    graded = {(v.answer, v.criterion): ("pass",) for v in labelled.verdicts.all()}
    nights = [finished_run(reviewed_dataset, panel, graded) for _ in range(3)]
    runs = runs_of_system_answers(reviewed_dataset)
    with django_assert_num_queries(6) as chosen:  # and the choice kept: a slot's two writes
        assert default_run(reviewed_dataset, runs).pk == nights[-1].pk
    assert sum(Verdict._meta.db_table in q["sql"] for q in chosen.captured_queries) == 1
    with django_assert_num_queries(3) as read:
        assert default_run(reviewed_dataset, runs).pk == nights[-1].pk
    assert not any(Verdict._meta.db_table in q["sql"] for q in read.captured_queries)
    # The same run as counting every run's overlap would pick.
    overlap = labelled_overlap(reviewed_dataset, runs)
    best = max(overlap.values())
    assert overlap[nights[-1].pk] == best == 2


def test_the_kept_choice_moves_when_an_answer_is_first_labelled_or_a_run_ends(
    two_runs, reviewed_dataset, client, reviewer
):
    """The choice is kept, but never served past what decides it: labelling the answers
    only the later run graded makes the two runs equal (the later wins), and a run that
    ends afterwards and graded every labelled answer is the newest."""
    client.force_login(reviewer)
    url = reverse("dataset-agreement", args=[reviewed_dataset.pk])

    def opened_on() -> int:
        runs = runs_of_system_answers(reviewed_dataset)
        chosen = default_run(reviewed_dataset, runs).pk
        html = client.get(url).content.decode()
        assert f'<option value="{chosen}" selected>' in html
        return chosen

    labelled, other, criteria = two_runs["labelled"], two_runs["other"], two_runs["criteria"]
    assert opened_on() == labelled.pk
    assert opened_on() == labelled.pk  # read as kept
    # A label on an answer that had none (no review counter the choice reads moves).
    second = sorted({v.answer for v in other.verdicts.all()}, key=lambda a: a.pk)
    for answer in second:
        human_label(answer, criteria[0], "reviewer", "fail")
    assert opened_on() == other.pk  # 2 labelled answers each; `other` finished last
    # A further label on an answer already labelled changes nothing.
    human_label(second[0], criteria[1], "reviewer", "pass")
    assert opened_on() == other.pk
    # A run that graded every labelled answer ends: it is the newest.
    everything = {(v.answer, v.criterion): ("pass",) for v in labelled.verdicts.all()}
    everything |= {(v.answer, v.criterion): ("pass",) for v in other.verdicts.all()}
    night = finished_run(reviewed_dataset, labelled.panel, everything)
    assert opened_on() == night.pk
    # It is archived: the page goes back to the runs still here.
    Run.objects.filter(pk=night.pk).update(archived_at=timezone.now())
    assert opened_on() == other.pk


def test_without_labels_the_latest_finished_run_is_shown(reviewed_dataset):
    panel = PanelFactory(judges=external_judges(1))
    made = checklisted_query(reviewed_dataset, criteria=1, answers=1)
    older = finished_run(reviewed_dataset, panel, {(made.answers[0], made.criteria[0]): ("pass",)})
    Run.objects.filter(pk=older.pk).update(finished_at=timezone.now() - dt.timedelta(hours=1))
    newer = finished_run(reviewed_dataset, panel, {(made.answers[0], made.criteria[0]): ("fail",)})
    assert agreement_report(reviewed_dataset).run.pk == newer.pk


def test_labels_on_perfect_answers_point_to_the_cross_evaluation_page(
    reviewed_dataset, client, reviewer
):
    panel = PanelFactory(judges=external_judges(1))
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    finished_run(reviewed_dataset, panel, {(made.answers[0], c): ("pass",) for c in made.criteria})
    perfect = perfect_answer_save(checklist=made.checklist, text="All.", by=made.checklist.author)
    for criterion in made.criteria:
        human_label(perfect, criterion, "reviewer", "pass")
    client.force_login(reviewer)
    html = client.get(reverse("dataset-agreement", args=[reviewed_dataset.pk])).content.decode()
    assert "The 2 labelled items are all on answers this run did not grade" in html
    assert "1 of the labelled answers is a perfect answer of cross-evaluation" in html
    assert reverse("dataset-cross-evaluation", args=[reviewed_dataset.pk]) in html


def test_the_page_query_count_with_two_runs_stays_flat(
    two_runs, reviewed_dataset, client, reviewer, django_assert_max_num_queries
):
    client.force_login(reviewer)
    url = reverse("dataset-agreement", args=[reviewed_dataset.pk])
    client.get(url)  # counts and keeps the cells
    # 15: the run's latest finished stability pass is one query (its judge stability); the
    # default run three (the newest graded not every labelled answer here: its overlap, the
    # labelled count, then every run's overlap in one).
    with django_assert_max_num_queries(15) as small:
        client.get(url)
    first = len(small.captured_queries)  # now: the connection's log is a bounded deque
    for _ in range(6):  # more labelled answers, runs and labels: the same queries
        more = checklisted_query(reviewed_dataset, criteria=2, answers=3)
        finished_run(
            reviewed_dataset, PanelFactory(judges=external_judges(2)),
            {(a, c): ("pass", "fail") for a in more.answers for c in more.criteria},
        )  # fmt: skip
        for answer in more.answers:
            human_label(answer, more.criteria[0], "reviewer", "fail")
    client.get(url)
    with django_assert_max_num_queries(first):
        assert client.get(url).status_code == 200
