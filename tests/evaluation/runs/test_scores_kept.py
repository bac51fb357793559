"""The run page and the API read an ended run's scores a page at a time from the figure
cache (scores.run_scores): every slice equals the report built whole (run_report, itself
equal to the oracle), the report is built once per change, and it moves with what it is
computed from."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Criterion
from evaluation.kept.events import Event, bump
from evaluation.kept.models import KeptFigure
from evaluation.runs import scores
from evaluation.runs.models import Run
from tests.evaluation.agreement.labelled import build_labelled
from tests.support.compare import same


@pytest.fixture
def small_pieces(monkeypatch):
    # Pieces of 3 answers, so that a handful of answers spans several of them.
    monkeypatch.setattr(scores, "CHUNK", 3)


def fresh(run: Run) -> Run:
    return Run.objects.select_related("dataset").get(pk=run.pk)


def equal_to_the_whole_report(run: Run) -> None:
    whole = scores.run_report(fresh(run))
    kept = scores.run_scores(fresh(run))
    assert kept.threshold == whole.threshold and kept.count == len(whole.answers) > 6
    same([asdict(s) for s in whole.systems], [asdict(s) for s in kept.systems])
    n = kept.count
    for start, stop in [(0, n), (0, 1), (2, 7), (3, 6), (n - 1, n), (n - 2, n + 5), (n, n + 1)]:
        same([asdict(a) for a in whole.answers[start:stop]],
             [asdict(a) for a in kept[start:stop]], f"[{start}:{stop}]")  # fmt: skip
    # Read by answer id (the Answers page's score column): the same rows, less the
    # checklists' authors, which it does not read.
    wanted = [a.answer_id for a in whole.answers[1::2]] + [10**9]
    by_id = kept.of_answers(wanted)
    assert sorted(by_id) == sorted(wanted[:-1])
    for answer in whole.answers[1::2]:
        expected = asdict(answer)
        for c in expected["checklists"]:
            c["author"] = ""
        same(expected, asdict(by_id[answer.answer_id]), f"answer {answer.answer_id}")
    # No answer asked for: nothing read (not even the run's index of answers).
    with CaptureQueriesContext(connection) as read:
        assert kept.of_answers([]) == {}
    assert read.captured_queries == []


@pytest.mark.parametrize(
    ("method", "threshold"), [("majority", 0.5), ("unanimity", 0.5), ("mean_threshold", 0.7)]
)
def test_every_slice_equals_the_whole_report_built_and_kept(
    reviewed_dataset, small_pieces, method, threshold
):
    reviewed_dataset.pass_threshold = 0.5
    reviewed_dataset.save()
    run = build_labelled(reviewed_dataset, queries=4, criteria=5, systems=3, seed=31).run
    run.snapshot = {**run.snapshot, "method": method, "threshold": threshold}
    run.save(update_fields=["snapshot"])
    equal_to_the_whole_report(run)  # built now
    # 12 answers in 4 pieces of 3, the index of answers by id, their briefs, their totals
    # (what a refresh after adjudications sums again), and the summary.
    assert KeptFigure.objects.filter(kind="run-scores", run_id=run.pk).count() == 8
    equal_to_the_whole_report(run)  # read back
    # Every answer's brief, in the rows' order, as the whole report has it (one read).
    whole = scores.run_report(fresh(run)).answers
    assert scores.run_scores(fresh(run)).briefs() == [scores.brief_of(a) for a in whole]


def test_a_kept_report_is_read_not_built_again(reviewed_dataset, small_pieces, monkeypatch):
    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=37).run
    before = scores.run_scores(fresh(run))
    expected = [asdict(a) for a in before[0 : before.count]]

    def not_again(*args):
        raise AssertionError("the report was built again")

    monkeypatch.setattr(scores, "_report", not_again)
    again = scores.run_scores(fresh(run))
    assert [asdict(a) for a in again[0 : again.count]] == expected


def test_the_kept_report_follows_adjudications_criteria_threshold_and_authors(
    reviewed_dataset, small_pieces, reviewer, eager_refresh
):
    from evaluation.answers.models import Answer
    from evaluation.labels.models import Adjudication
    from evaluation.review import services as review

    data = build_labelled(reviewed_dataset, queries=3, criteria=5, systems=3, seed=41)
    run = data.run
    equal_to_the_whole_report(run)
    answer_id, criterion_id = next(iter(data.votes))
    current = Adjudication.objects.filter(answer_id=answer_id, criterion_id=criterion_id).first()
    review.adjudicate(
        answer=Answer.objects.get(pk=answer_id), criterion=Criterion.objects.get(pk=criterion_id),
        by=reviewer, label="fail" if current and current.label == "pass" else "pass",
        expected_version=current.version if current else None,
    )  # fmt: skip
    equal_to_the_whole_report(run)
    criterion = Criterion.objects.get(pk=criterion_id)
    criterion.weight, criterion.scoring_enabled = 4, False
    criterion.save()
    equal_to_the_whole_report(run)
    # The pass threshold moves no revision; the kept report has it in its state.
    reviewed_dataset.pass_threshold = 0.9
    reviewed_dataset.save()
    equal_to_the_whole_report(run)
    assert {a.passed for a in scores.run_scores(fresh(run))[0:100]} <= {True, False}
    # The checklists' authors are read for the page shown.
    get_user_model().objects.filter(username="agreement-author").update(username="renamed")
    shown = scores.run_scores(fresh(run))[0:1][0]
    assert {c.author for c in shown.checklists} == {"renamed"}


def test_a_running_run_is_counted_once_per_window_and_a_resumed_one_is_built_again(
    reviewed_dataset, small_pieces, monkeypatch, eager_refresh
):
    """While a run runs its verdicts arrive without its state moving: its partial scores
    are kept for one window of readers.LIVE_SECONDS at most, so its readers do not count its
    votes at each request, and a later window counts them again."""
    from evaluation.kept import readers

    now = [1000.0]
    monkeypatch.setattr(readers.time, "time", lambda: now[0])
    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=43).run
    equal_to_the_whole_report(run)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, finished_at=None)
    KeptFigure.objects.all().delete()
    equal_to_the_whole_report(run)
    assert KeptFigure.objects.filter(kind="run-scores", run_id=run.pk).exists()
    run.verdicts.filter(outcome="fail").update(outcome="pass")
    partial = scores.run_scores(fresh(run))  # the same window: as counted before
    assert not partial.updating
    assert [a.score for a in partial[0 : partial.count]] != [
        a.score for a in scores.run_report(fresh(run)).answers
    ]
    now[0] += readers.LIVE_SECONDS
    equal_to_the_whole_report(run)  # the next window counts again
    # Ended again (a new finish time): the votes changed while it ran; the kept report too.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.DONE, finished_at=run.finished_at)
    equal_to_the_whole_report(run)


def test_run_page_and_api_page_the_kept_answers(reviewed_dataset, small_pieces, client, owner,
                                               monkeypatch, settings):  # fmt: skip
    from evaluation.runs import views as views

    run = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=47).run
    everyone = [a.answer_id for a in scores.run_report(fresh(run)).answers]
    monkeypatch.setattr(views, "ANSWERS_PER_PAGE", 4)
    client.force_login(owner)
    url = reverse("run-detail", args=[run.pk])
    shown = []
    for number in range(1, 4):
        page = client.get(url, {"page": number})
        assert page.status_code == 200
        shown += [r.answer_id for r, _text in page.context["answers"]]
    assert shown == everyone and f"{len(everyone)} answers, 1 on this page" in page.content.decode()
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "PAGE_SIZE": 5}
    api = client.get(f"/api/runs/{run.pk}/scores/", {"page": 2}).json()
    assert [a["answer"] for a in api["answers"]] == everyone[5:9]
    assert api["count"] == 9 and api["next"] is None


def test_a_human_label_leaves_the_kept_report_an_adjudication_moves_it(
    reviewed_dataset, small_pieces, reviewer, monkeypatch, eager_refresh
):
    """No score reads a human label: reviewers labelling all day must not make the next
    reader of the run page count the run's votes again; an adjudication, which overrides
    the judges, must."""
    from evaluation.answers.models import Answer
    from evaluation.labels.models import HumanLabel
    from evaluation.review import services as review

    data = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=43)
    run = data.run
    scores.run_scores(fresh(run))
    answer_id, criterion_id = next(iter(data.votes))
    answer, criterion = Answer.objects.get(pk=answer_id), Criterion.objects.get(pk=criterion_id)
    review.label_set(answer=answer, criterion=criterion, reviewer=reviewer, label="fail")
    mine = HumanLabel.objects.get(answer=answer, criterion=criterion, rater="reviewer")
    review.label_delete(label=mine, by=reviewer)
    # A label written elsewhere (a writer that says so, as the review services do).
    HumanLabel.objects.create(answer=answer, criterion=criterion, rater="elsewhere", label="pass")
    bump(reviewed_dataset.pk, Event.LABEL)
    built = []
    original = scores._report
    monkeypatch.setattr(scores, "_report", lambda *a: built.append(1) or original(*a))
    scores.run_scores(fresh(run))
    assert built == []  # read back, not built again
    review.adjudicate(answer=answer, criterion=criterion, by=reviewer, label="fail",
                      expected_version=None)  # fmt: skip
    scores.run_scores(fresh(run))
    assert built == [1]  # built again once, for the new state
    equal_to_the_whole_report(run)


def test_after_an_adjudication_readers_get_the_scores_before_it_until_one_refresh_keeps_the_new(
    reviewed_dataset, small_pieces, reviewer, client, owner
):
    """Stale while revalidating: the reader after an adjudication is served the scores kept
    before it, marked updating, instead of counting the run's votes again in the request;
    one refresh is queued however many read; it keeps the fresh scores, which the next
    reader gets. (The broker here is not consumed: the task is run as a worker would.)"""
    from evaluation.analytics.tasks import refresh_analytics
    from evaluation.kept.models import KeptRefresh
    from evaluation.labels.models import Adjudication

    data = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=53)
    run = data.run
    before = scores.run_scores(fresh(run))
    expected = [asdict(a) for a in before[0 : before.count]]
    assert not before.updating
    answer_id, criterion_id = next(iter(data.votes))
    current = Adjudication.objects.filter(answer_id=answer_id, criterion_id=criterion_id).first()
    review_adjudicate(reviewer, answer_id, criterion_id, current)
    built = []
    original = scores._report
    scores_report = scores._report
    try:
        scores._report = lambda *a: built.append(1) or original(*a)
        stale = [scores.run_scores(fresh(run)) for _ in range(3)]
    finally:
        scores._report = scores_report
    assert built == []  # nothing counted in the requests
    assert all(s.updating and s.computed_at is not None for s in stale)
    assert [asdict(a) for a in stale[0][0 : stale[0].count]] == expected
    assert KeptRefresh.objects.filter(run=run, group=scores.REFRESH_GROUP).count() == 1
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Updating." in page
    api = client.get(f"/api/runs/{run.pk}/scores/").json()
    assert api["updating"] is True and api["computed_at"]
    assert refresh_analytics(run.pk, scores.REFRESH_GROUP) is True
    assert not KeptRefresh.objects.filter(run=run).exists()
    after = scores.run_scores(fresh(run))
    assert not after.updating
    equal_to_the_whole_report(run)
    assert client.get(f"/api/runs/{run.pk}/scores/").json()["updating"] is False


def test_the_refresh_after_adjudications_waits_longer_when_the_count_took_long(
    reviewed_dataset, reviewer, settings, monkeypatch
):
    """A run's scores keep how long their count took; after an adjudication the refresh
    waits FIGURES_REFRESH_PAUSE times that when longer than the spacing
    (evaluation.kept.refresh.spacing), so that reviewers adjudicating all day on a large
    run cannot keep a core counting its scores."""
    from celery.canvas import Signature

    from evaluation.kept import refresh
    from evaluation.labels.models import Adjudication

    sent = []
    monkeypatch.setattr(Signature, "apply_async", lambda self, *a, **kw: sent.append(kw))
    data = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=54)
    run = data.run
    scores.run_scores(fresh(run))  # counted and kept (the tests count in the request)
    (summary,) = KeptFigure.objects.filter(run_id=run.pk, part=scores.SUMMARY)
    assert summary.cells["took"] > 0
    summary.cells = {**summary.cells, "took": 45.0}  # as if the run were a large one
    summary.save(update_fields=["cells"])
    answer_id, criterion_id = next(iter(data.votes))
    current = Adjudication.objects.filter(answer_id=answer_id, criterion_id=criterion_id).first()
    review_adjudicate(reviewer, answer_id, criterion_id, current)
    settings.FIGURES_REFRESH_SPACING, settings.FIGURES_REFRESH_PAUSE = 30, 4
    assert scores.run_scores(fresh(run)).updating
    (options,) = sent
    assert 170 < options["countdown"] <= 180 and refresh.spacing(45.0) == 180


def test_answers_read_after_a_refresh_replaced_the_pieces_come_from_the_new_scores(
    reviewed_dataset, reviewer
):
    """A page reads the run's summary, then its answers' rows: a refresh that commits in
    between (an adjudication's) replaces the pieces, and the rows come from the scores it
    kept, not an empty answer (side by side showed a side as not scored)."""
    from evaluation.analytics.tasks import refresh_analytics
    from evaluation.labels.models import Adjudication

    data = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=55)
    run = data.run
    shown = scores.run_scores(fresh(run))  # the summary read by a request
    answer_ids = sorted({answer_id for answer_id, _ in data.votes})
    answer_id, criterion_id = next(iter(data.votes))
    current = Adjudication.objects.filter(answer_id=answer_id, criterion_id=criterion_id).first()
    review_adjudicate(reviewer, answer_id, criterion_id, current)
    assert refresh_analytics(run.pk, scores.REFRESH_GROUP) is True  # the pieces replaced
    found = shown.of_answers(answer_ids)
    assert sorted(found) == answer_ids
    whole = {a.answer_id: a for a in scores.run_report(fresh(run)).answers}
    for pk, row in found.items():
        expected = asdict(whole[pk])
        for c in expected["checklists"]:
            c["author"] = ""
        same(expected, asdict(row), f"answer {pk}")


def review_adjudicate(reviewer, answer_id, criterion_id, current) -> None:
    from evaluation.answers.models import Answer
    from evaluation.review import services as review

    review.adjudicate(
        answer=Answer.objects.get(pk=answer_id), criterion=Criterion.objects.get(pk=criterion_id),
        by=reviewer, label="fail" if current and current.label == "pass" else "pass",
        expected_version=current.version if current else None,
    )  # fmt: skip


def test_a_running_runs_token_sums_are_counted_once_per_window(
    reviewed_dataset, monkeypatch, django_assert_max_num_queries
):
    """The run page and every viewer's progress poll estimate the cost from the run's token
    sums, count the requests it sent and group its errors: while it runs, these are counted
    once per window of readers.LIVE_SECONDS, as its progress is, not by every request while
    the worker writes."""
    from evaluation.kept import readers
    from evaluation.runs import costs, estimate, selectors

    now = [1000.0]
    monkeypatch.setattr(readers.time, "time", lambda: now[0])
    run = build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=44).run
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, finished_at=None)
    run = fresh(run)
    counted = []
    real = costs.sums_of
    monkeypatch.setattr(costs, "sums_of", lambda r: counted.append(r.pk) or real(r))

    costs.run_cost_estimate(run, done=1, expected=2)
    made = estimate.requests_made(run)  # the requests sent, against the run's estimate
    errors = selectors.run_errors(run, tasks=False, grades=False)
    run.verdicts.update(prompt_tokens=7, attempts=2, cache_hit=False)  # the worker writes on
    failing = run.verdicts.order_by("pk")[:3].values_list("pk", flat=True)
    run.verdicts.filter(pk__in=list(failing)).update(
        outcome="error", error_kind="timeout", error="The judge did not answer."
    )
    with django_assert_max_num_queries(6):  # no scan of the verdicts
        costs.run_cost_estimate(run, done=1, expected=2)
        assert estimate.requests_made(run) == made
        assert selectors.run_errors(run, tasks=False, grades=False) == errors
    assert counted == [run.pk]
    now[0] += readers.LIVE_SECONDS
    costs.run_cost_estimate(run, done=1, expected=2)
    assert counted == [run.pk, run.pk]
    assert sum(p for _, p, _, _ in real(run)) == 7 * run.verdicts.count()
    assert estimate.requests_made(run) == 2 * run.verdicts.count()
    now_errors = selectors.run_errors(run, tasks=False, grades=False)
    assert ("timeout", 3) in [(e.kind, e.count) for e in now_errors]


def test_scores_kept_by_an_earlier_release_are_never_served_even_while_updating(
    reviewed_dataset, small_pieces, client, owner
):
    """After an upgrade that changes the kept rows' fields, the rows an earlier release kept
    are still in the run's slot. Served as stale-while-revalidating they failed to read
    (a 500 on the run page and its scores API, seen in bench.web with the code before and
    after issue 41 on one database): they are counted afresh instead, and nothing fails."""
    data = build_labelled(reviewed_dataset, queries=3, criteria=4, systems=3, seed=61)
    run = data.run
    scores.run_scores(fresh(run))
    # Make every kept row look like an earlier release's: its summary without `shape`, its
    # rows without the fields added since (undecided_as), under another state's key.
    for kept in KeptFigure.objects.filter(run_id=run.pk, kind=scores.readers.RUN_SCORES.kind):
        cells = kept.cells
        if isinstance(cells, dict) and "systems" in cells:
            cells.pop("shape", None)
            for system in cells["systems"]:
                system.pop("undecided")
        elif isinstance(cells, list):
            for row in cells:
                for checklist in row["checklists"]:
                    checklist.pop("undecided_as")
        kept.cells = cells
        kept.key = "an-earlier-state-" + kept.key[:40]
        kept.save()
    assert scores.kept_undecided(fresh(run)) is None  # the analytics page shows "—"

    client.force_login(owner)
    assert client.get(reverse("run-detail", args=[run.pk])).status_code == 200
    api = client.get(f"/api/runs/{run.pk}/scores/")
    assert api.status_code == 200 and api.json()["updating"] is False
    equal_to_the_whole_report(run)
    assert scores.kept_undecided(fresh(run)) == {
        s.system: s.undecided for s in scores.run_report(fresh(run)).systems
    }
