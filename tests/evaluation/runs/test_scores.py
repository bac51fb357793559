"""A run's scores, worked by hand: per checklist and averaged, weighted and core, pass/fail
against the dataset's threshold, adjudications deciding their criterion, graded means, per
system means and pass rates, the estimated cost; on the run page and in the API."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Checklist, Criterion
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from evaluation.labels.models import Adjudication
from evaluation.review import services as review
from evaluation.runs import scope, scores, snapshot
from evaluation.runs import services as runs
from evaluation.runs.models import GradedScore, Run, Verdict
from tests.factories import PanelFactory, QueryFactory, UserFactory, offline_judge
from tests.support.builders import checklisted_query, written

pytestmark = pytest.mark.django_db

# Votes of judges J1, J2, J3 per (answer, criterion); the panel takes the majority.
VOTES = {
    ("A1", "c1"): ("pass", "pass", "fail"),  # pass
    ("A1", "c2"): ("fail", "fail", "pass"),  # fail
    ("A1", "c3"): ("pass", "pass", "pass"),  # pass
    ("A2", "c1"): ("fail", "fail", "fail"),  # fail
    ("A2", "c2"): ("pass", "pass", "unparseable"),  # pass
    ("A2", "c3"): ("fail", "error", "fail"),  # fail (adjudicated pass later)
}


@pytest.fixture
def scored_run(reviewed_dataset, owner):
    """Query with two checklists: C1 = c1 (weight 1, core) + c2 (weight 3, not core); C2 = c3.

    A1: C1 share 1/2, weighted 1/4, core 1; C2 1, 1, 1 → mean 0.75, 0.625, 1.0.
    A2: C1 share 1/2, weighted 3/4, core 0; C2 0, 0, 0 → mean 0.25, 0.375, 0.0.
    """
    dataset = reviewed_dataset
    dataset.pass_threshold = 0.6
    dataset.save()
    query = QueryFactory(dataset=dataset)
    c1_list = Checklist.objects.create(
        query=query, author=UserFactory(username="anna"), status="submitted"
    )
    c2_list = Checklist.objects.create(
        query=query, author=UserFactory(username="ben"), status="submitted"
    )
    criteria = {
        "c1": Criterion.objects.create(checklist=c1_list, position=1, text="c1", weight=1),
        "c2": Criterion.objects.create(
            checklist=c1_list, position=2, text="c2", weight=3, is_core=False
        ),
        "c3": Criterion.objects.create(checklist=c2_list, position=1, text="c3"),
    }
    answers = {
        "A1": Answer.objects.create(system=System.objects.create(name="S1"), query=query, text="1"),
        "A2": Answer.objects.create(system=System.objects.create(name="S2"), query=query, text="2"),
    }
    judges = [
        Judge.objects.create(
            name=f"J{i}",
            base_url="http://x/v1",
            model="m",
            prompt_price=Decimal("1"),
            completion_price=Decimal("2"),
        )
        for i in (1, 2, 3)
    ]
    panel = PanelFactory(name="Majority of three", graded=True, judges=judges)
    run = Run.objects.create(
        dataset=dataset, panel=panel, status=Run.Status.DONE, expected=36, created_by=owner,
        snapshot=snapshot.take(panel),
    )  # fmt: skip
    Verdict.objects.bulk_create(
        Verdict(
            run=run,
            answer=answers[a],
            criterion=criteria[c],
            judge=judge,
            outcome=outcome,
            prompt_tokens=1000,
            completion_tokens=100,
            cache_key=f"{a}{c}{judge.pk}",
        )
        for (a, c), outcomes in VOTES.items()
        for judge, outcome in zip(judges, outcomes, strict=True)
    )
    # Graded: A1 4 (J1) and 5 (J2) → 4.5; A2 J1's two samples 2 and 3 → 2.5; J3 unparseable.
    for answer, judge, sample, score in (
        ("A1", 0, 0, 4), ("A1", 1, 0, 5), ("A2", 0, 0, 2), ("A2", 0, 1, 3), ("A2", 2, 0, None),
    ):  # fmt: skip
        GradedScore.objects.create(
            run=run, answer=answers[answer], judge=judges[judge], sample=sample, score=score,
            outcome="scored" if score else "unparseable", reasoning=f"Because {score}.",
            prompt_tokens=500, completion_tokens=50, cache_key=f"g{answer}{judge}{sample}",
        )  # fmt: skip
    return run, answers, criteria, judges


def by_name(report: scores.ScoreReport, answers: dict) -> dict:
    ids = {a.pk: name for name, a in answers.items()}
    return {ids[r.answer_id]: r for r in report.answers}


def test_scores_by_hand_then_an_adjudication_decides(scored_run, owner):
    run, answers, criteria, _ = scored_run
    rows = by_name(scores.run_report(run), answers)
    a1, a2 = rows["A1"], rows["A2"]
    assert (a1.score, a1.weighted, a1.core) == (0.75, 0.625, 1.0)
    assert (a2.score, a2.weighted, a2.core) == (0.25, 0.375, 0.0)
    assert [(c.author, c.score.share, c.score.weighted_share) for c in a1.checklists] == [
        ("anna", 0.5, 0.25),
        ("ben", 1.0, 1.0),
    ]
    assert (a1.passed, a2.passed) == (True, False)
    assert (a1.split, a2.split, a2.adjudicated) == (2, 0, 0)
    assert (a1.graded, a2.graded) == (4.5, 2.5)

    # A reviewer decides (A2, c3) is a pass: it replaces the panel's fail in every score.
    review.adjudicate(
        answer=answers["A2"], criterion=criteria["c3"], by=owner, label="pass",
        expected_version=None,
    )  # fmt: skip
    a2 = by_name(scores.run_report(run), answers)["A2"]
    assert (a2.score, a2.weighted, a2.core) == (0.75, 0.875, 0.5)
    assert (a2.passed, a2.adjudicated) == (True, 1)
    assert Verdict.objects.filter(answer=answers["A2"], criterion=criteria["c3"]).count() == 3
    answers_scored = [r for r in scores.run_report(run).answers if r.checklists]
    assert {r.system_name: r.score for r in answers_scored} == {"S1": 0.75, "S2": 0.75}


def test_scores_api_by_role_and_values(
    scored_run, owner_api, reviewer_api, collaborator_api, outsider_api
):
    run, answers, criteria, _ = scored_run
    url = f"/api/runs/{run.pk}/scores/"
    assert collaborator_api.get(url).status_code == 403
    assert outsider_api.get(url).status_code == 404
    assert owner_api.get("/api/runs/999999/scores/").status_code == 404
    data = reviewer_api.get(url).json()
    assert data["run"] == run.pk and data["pass_threshold"] == 0.6
    a1 = next(a for a in data["answers"] if a["answer"] == answers["A1"].pk)
    assert a1 == {
        "answer": answers["A1"].pk, "query": answers["A1"].query_id,
        "system": answers["A1"].system_id, "system_name": "S1",
        "checklists": [
            {"checklist": criteria["c1"].checklist_id, "author": "anna", "score": {
                "passed": 1, "failed": 1, "undecided": 0, "total": 2, "share": 0.5,
                "weighted_share": 0.25, "core_share": 1.0},
             "scoring": "share", "value": 0.5, "undecided_as": "excluded", "groups": []},
            {"checklist": criteria["c3"].checklist_id, "author": "ben", "score": {
                "passed": 1, "failed": 0, "undecided": 0, "total": 1, "share": 1.0,
                "weighted_share": 1.0, "core_share": 1.0},
             "scoring": "share", "value": 1.0, "undecided_as": "excluded", "groups": []},
        ],
        "value": 0.75, "share": 0.75, "weighted": 0.625, "core": 1.0, "undecided": 0, "split": 2,
        "adjudicated": 0, "passed": True, "graded": 4.5, "sample": 0,
    }  # fmt: skip
    systems = {s["system_name"]: s for s in data["systems"]}
    assert systems["S1"]["pass_rate"] == 1.0 and systems["S2"]["pass_rate"] == 0.0
    assert systems["S2"]["passed"] == 0 and systems["S2"]["graded"] == 2.5
    assert owner_api.get(url).json() == data


def test_scores_api_pages_the_answers_not_the_systems(scored_run, reviewer_api, settings):
    run, *_ = scored_run
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "PAGE_SIZE": 1}
    url = f"/api/runs/{run.pk}/scores/"
    everyone = [a.answer_id for a in scores.run_report(run).answers]
    assert len(everyone) > 1
    seen, page, pages = [], reviewer_api.get(url).json(), 0
    assert page["previous"] is None
    while True:
        pages += 1
        assert page["count"] == len(everyone) and len(page["answers"]) == 1
        assert {s["system_name"] for s in page["systems"]} == {"S1", "S2"}  # on every page
        seen += [a["answer"] for a in page["answers"]]
        if page["next"] is None:
            break
        page = reviewer_api.get(page["next"]).json()
        assert page["previous"] is not None
    assert seen == everyone and pages == len(everyone)
    for bad in (len(everyone) + 1, 0, "x", 10**13):
        assert reviewer_api.get(url, {"page": bad}).status_code == 404, bad


def test_run_page_shows_pass_fail_pass_rate_graded_kind_and_cost(scored_run, client, owner):
    run, answers, *_ = scored_run
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "System answers" in page and "pass threshold 60%" in page
    row = page.split(f'data-answer="{answers["A2"].pk}"', 1)[1].split("</tr>", 1)[0]
    assert "verdict-fail" in row and "2.50" in row
    s1 = page.split('data-system="S1"', 1)[1].split("</tr>", 1)[0]
    assert "100% (1)" in s1 and "4.50" in s1
    # Cost: 18 verdicts × (1000 × 1 + 100 × 2) / 10⁶ + 5 grades × (500 × 1 + 50 × 2) / 10⁶
    # = 0.0216 + 0.003 = 0.0246; projected over (18 + 5) done of (36 + 2 answers × 3) expected.
    assert "Estimated cost: 0.0246 USD so far · 0.0449 USD at completion" in page


def test_cost_in_the_progress_api_and_unknown_without_a_price(scored_run, reviewer_api):
    run, _, _, judges = scored_run
    data = reviewer_api.get(f"/api/runs/{run.pk}/progress/").json()
    assert data["done"] == 18 and data["graded"]["done"] == 5
    assert data["graded"]["expected"] == 6 and data["graded"]["scored"] == 4
    assert data["cost"] == {
        "known": True, "so_far": "0.024600",
        "projected": str((Decimal("0.0246") / 23 * 42).quantize(Decimal("0.000001"))),
        "unpriced": [],
        "currency": "USD",
    }  # fmt: skip
    assert reviewer_api.get(f"/api/runs/{run.pk}/").json()["kind"] == "systems"
    Judge.objects.filter(pk=judges[2].pk).update(completion_price=None)
    cost = reviewer_api.get(f"/api/runs/{run.pk}/progress/").json()["cost"]
    assert cost == {
        "known": False, "so_far": None, "projected": None, "unpriced": ["J3"], "currency": "USD"
    }  # fmt: skip


def test_pass_threshold_from_the_dataset_settings(scored_run, client, owner):
    run, answers, *_ = scored_run
    dataset = run.dataset
    client.force_login(owner)
    form = client.get(reverse("dataset-edit", args=[dataset.pk])).context["form"]
    data = {k: v for k, v in form.initial.items() if v is not None and k != "guideline"}
    response = client.post(
        reverse("dataset-edit", args=[dataset.pk]), {**data, "pass_threshold": "0.2"}
    )
    assert response.status_code == 302
    rows = by_name(scores.run_report(Run.objects.select_related("dataset").get(pk=run.pk)), answers)
    assert (rows["A1"].passed, rows["A2"].passed) == (True, True)
    response = client.post(
        reverse("dataset-edit", args=[dataset.pk]), {**data, "pass_threshold": "1.5"}
    )
    assert response.status_code == 200 and "pass_threshold" in response.context["form"].errors
    data.pop("pass_threshold", None)
    client.post(reverse("dataset-edit", args=[dataset.pk]), data)
    run = Run.objects.select_related("dataset").get(pk=run.pk)
    assert all(r.passed is None for r in scores.run_report(run).answers)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Pass rate" not in page


def test_run_page_query_count_is_flat(
    reviewed_dataset, owner, client, django_assert_max_num_queries, eager_refresh
):
    """The run page (scores, graded means, cost) costs the same with 2 or 40 answers."""
    judge = Judge.objects.create(name="J", base_url="http://x/v1", model="m")
    panel = PanelFactory(name="P", graded=True, judges=[judge], judges__samples=2)
    run = Run.objects.create(
        dataset=reviewed_dataset, panel=panel, status="done", snapshot=snapshot.take(panel)
    )
    author = UserFactory(username="author")

    def add(n: int) -> None:
        for _ in range(n):
            made = checklisted_query(
                reviewed_dataset, author=author, criteria=["c"], timestamps=False, save_each=True
            )
            query, (criterion,) = made.query, made.criteria
            system = System.objects.create(name=f"S{Answer.objects.count()}")
            answer = Answer.objects.create(system=system, query=query, text="a")
            Verdict.objects.create(
                run=run, answer=answer, criterion=criterion, judge=judge, outcome="pass"
            )
            Adjudication.objects.create(answer=answer, criterion=criterion, label="fail")
            written(answer.pk, adjudication=True)  # the run page counts its scores again
            for sample in (0, 1):
                GradedScore.objects.create(
                    run=run, answer=answer, judge=judge, sample=sample, score=3, outcome="scored"
                )

    client.force_login(owner)
    url = reverse("run-detail", args=[run.pk])
    add(2)
    client.get(url)  # counts and keeps the scores
    with django_assert_max_num_queries(40) as few:
        client.get(url)
    kept_read = len(few)  # now: the captured list is read from the connection's log
    add(38)
    client.get(url)  # counts them again (the refresh task, eager here)
    with django_assert_max_num_queries(kept_read):
        page = client.get(url).content.decode()
    assert page.count("data-answer=") == 40


def test_a_systems_run_never_includes_perfect_answers(reviewed_dataset, owner, client):
    made = checklisted_query(
        reviewed_dataset,
        author=UserFactory(username="x"),
        criteria=["States X."],
        timestamps=False,
        save_each=True,
    )
    query, checklist = made.query, made.checklist
    perfect = System.objects.create(name="Perfect answers", is_reference=True)
    Answer.objects.create(system=perfect, query=query, checklist=checklist, text="X.")
    graded = Answer.objects.create(system=System.objects.create(name="S"), query=query, text="X")
    panel = PanelFactory(name="Offline", judges=[offline_judge()])
    run = runs.run_start(run=runs.run_create(dataset=reviewed_dataset, panel=panel))
    assert run.kind == Run.Kind.SYSTEMS and run.expected == 1
    assert list(scope.run_answers(run)) == [graded]
