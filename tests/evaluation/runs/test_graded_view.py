"""The graded view (G-Eval style 1–5 grades against a reference) through the real engine: the
loopback server plays the judges with scripted grades, so every mean is known in advance."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from evaluation.judging import engine, graded
from evaluation.runs import lifecycle, scope, scores
from evaluation.runs import services as runs
from evaluation.runs.models import GradedScore, Run, Verdict
from tests.evaluation.runs.workload import scripted_judge
from tests.factories import PanelFactory, UserFactory, offline_judge
from tests.support.builders import checklisted_query

REFERENCE = "REF-ONE: revenue was $4.12 billion."
PERFECT = "PERFECT-TWO: margin was 61.5%."


def is_graded_request(request) -> bool:
    return request.system_text.startswith(graded.SYSTEM[:60])


def scripted_grade(request) -> dict:
    """model-a: a good answer gets 5 at temperature 0 and 3 otherwise, a bad one 2;
    model-b: good 4, bad 1. So a good answer's mean is (4 + 4) / 2 = 4.0, a bad one's 1.5."""
    answer = request.last_user_text.rsplit("Answer to evaluate:\n", 1)[1]
    good = "good" in answer
    if request.model == "model-a":
        score = (5 if request.temperature == 0 else 3) if good else 2
    else:
        score = 4 if good else 1
    return {"reasoning": f"Scripted grade {score}.", "score": score}


def responder(request):
    return scripted_grade(request) if is_graded_request(request) else scripted_judge(request)


def build(dataset, server, *, graded_panel: bool = True):
    """Three queries with a two-criterion checklist each, answered by a good and a bad system.
    Query 1 has a reference answer, query 2 a perfect answer, query 3 neither."""
    author = UserFactory(username="graded-author")
    good, bad = System.objects.create(name="Good"), System.objects.create(name="Bad")
    reference_system = System.objects.create(name="Perfect answers", is_reference=True)
    for q in range(3):
        made = checklisted_query(
            dataset,
            text=f"Query {q}",
            reference_answer=REFERENCE if q == 0 else "",
            author=author,
            criteria=[f"States fact {i} of query {q}." for i in (1, 2)],
            timestamps=False,
        )
        query, checklist = made.query, made.checklist
        if q == 1:
            Answer.objects.create(
                system=reference_system, query=query, checklist=checklist, text=PERFECT
            )
        Answer.objects.create(system=good, query=query, text=f"A good answer to query {q}.")
        Answer.objects.create(system=bad, query=query, text=f"A bad answer to query {q}.")
    a = Judge.objects.create(name="A", base_url=server.base_url, model="model-a", timeout=5)
    b = Judge.objects.create(name="B", base_url=server.base_url, model="model-b", timeout=5)
    return PanelFactory(
        name="Graded panel",
        graded=graded_panel,
        judges=[(a, {"samples": 2, "temperatures": [0, 0.7]}), b, offline_judge()],
    )


def graded_calls(server) -> list:
    return [c for c in server.calls if c.request is not None and is_graded_request(c.request)]


def judge_everything(run: Run) -> None:
    """What the worker does, in this process: every (answer × judge) task once."""
    for answer in scope.run_answers(run):
        for member in run.panel.members.all():
            lifecycle.run_task(
                worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=member.judge_id
            )


def test_graded_run_end_to_end_then_from_the_cache(
    celery_worker, dataset, owner, loopback_openai, client
):
    loopback_openai.responder = responder
    panel = build(dataset, loopback_openai)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    run = runs.wait_for(run, timeout=120)

    assert run.status == Run.Status.DONE
    assert Verdict.objects.filter(run=run).count() == run.expected == 6 * 2 * 4
    grades = GradedScore.objects.filter(run=run)
    # 6 answers × 3 LLM samples (A twice, B once); the no-LLM judge does not grade.
    assert grades.count() == 18
    assert not grades.filter(judge__kind=Judge.Kind.NO_LLM).exists()
    assert grades.filter(outcome="no_reference").count() == 6  # query 3: no reference
    assert set(
        grades.filter(outcome="no_reference").values_list("answer__query__text", flat=True)
    ) == {"Query 2"}
    assert grades.filter(outcome="scored").count() == 12
    # Only the 4 answers with a reference were sent, 3 calls each, each with its reference.
    calls = graded_calls(loopback_openai)
    assert len(calls) == 12
    texts = [c.request.last_user_text for c in calls]
    assert sum("Reference answer 1:\n" + REFERENCE in t for t in texts) == 6
    assert sum("Reference answer 1:\n" + PERFECT in t for t in texts) == 6
    assert not any("Query 2" in t for t in texts)
    traced = grades.get(judge__name="A", sample=1, answer__text="A good answer to query 0.")
    assert (traced.score, traced.reasoning) == (3, "Scripted grade 3.")
    assert traced.judge_params["temperature"] == 0.7 and traced.prompt_tokens > 0

    # Shown on the run page (per answer and per system) and in the scores API.
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "12 scored" in page and "18</strong> / 18 graded scores" in page
    scores = client.get(f"/api/runs/{run.pk}/scores/").json()
    by_answer = {a["answer"]: a["graded"] for a in scores["answers"]}
    for answer in Answer.objects.filter(system__is_reference=False).select_related("query"):
        expected = (
            None if answer.query.text == "Query 2" else (4.0 if "good" in answer.text else 1.5)
        )
        assert by_answer[answer.pk] == expected, answer.text
    assert {s["system_name"]: s["graded"] for s in scores["systems"]} == {"Good": 4.0, "Bad": 1.5}

    # The same run again: no call at all, every grade from the cache.
    loopback_openai.reset()
    again = runs.wait_for(
        runs.run_start(run=runs.run_create(dataset=dataset, panel=panel)), timeout=120
    )
    assert again.status == Run.Status.DONE
    assert loopback_openai.call_count == 0
    assert GradedScore.objects.filter(run=again, outcome="scored", cache_hit=True).count() == 12
    assert list(
        GradedScore.objects.filter(run=again, outcome="scored")
        .order_by("answer", "judge", "sample")
        .values_list("score", flat=True)
    ) == list(
        grades.filter(outcome="scored")
        .order_by("answer", "judge", "sample")
        .values_list("score", flat=True)
    )


@pytest.mark.django_db
def test_resume_fills_only_the_missing_grades(dataset, loopback_openai):
    loopback_openai.responder = responder
    panel = build(dataset, loopback_openai)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    judge_everything(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.graded_scores.count() == 18

    # Take three grades away: every verdict is still there, but the run is not complete.
    run.graded_scores.filter(judge__name="A", outcome="scored").first().delete()
    lost = run.graded_scores.filter(judge__name="B", outcome="scored").order_by("pk")[:2]
    GradedScore.objects.filter(pk__in=[g.pk for g in lost]).delete()
    # As if the run had been cancelled before those tasks ran: resume queues every
    # unfinished task again, and each fills only the missing grades (3 calls).
    Run.objects.filter(pk=run.pk).update(status=Run.Status.CANCELLED)
    run.tasks.update(done_at=None)
    loopback_openai.reset()
    run = runs.run_resume(run=run)
    assert run.status == Run.Status.RUNNING
    judge_everything(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.graded_scores.count() == 18
    assert run.graded_scores.filter(outcome="scored", cache_hit=False).count() == 12
    # Deleted grades are gone from the cache too (no other run holds them): asked again.
    assert len(graded_calls(loopback_openai)) == 3
    assert Verdict.objects.filter(run=run).count() == run.expected


@pytest.mark.django_db
def test_an_out_of_range_grade_is_unparseable_never_averaged(dataset, loopback_openai):
    def seven(request):
        if is_graded_request(request):
            return {"reasoning": "Off the scale.", "score": 7}
        return scripted_judge(request)

    loopback_openai.responder = seven
    panel = build(dataset, loopback_openai)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    judge_everything(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.graded_scores.filter(outcome="unparseable").count() == 12
    assert run.graded_scores.filter(score__isnull=False).count() == 0
    unparseable = run.graded_scores.filter(outcome="unparseable").first()
    assert '"score": 7' in unparseable.raw_output and unparseable.attempts == 3
    # Asked 1 + PARSE_RETRIES times each.
    assert len(graded_calls(loopback_openai)) == 12 * (1 + engine.PARSE_RETRIES)
    assert all(a.graded is None for a in scores.run_report(run).answers)


@pytest.mark.django_db
def test_a_panel_that_does_not_grade_makes_no_graded_call(dataset, loopback_openai):
    loopback_openai.responder = responder
    panel = build(dataset, loopback_openai, graded_panel=False)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    judge_everything(run)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert run.graded_scores.count() == 0 and graded_calls(loopback_openai) == []


@pytest.mark.django_db
def test_answer_page_shows_each_judges_grade_and_reasoning(dataset, owner, loopback_openai, client):
    loopback_openai.responder = responder
    panel = build(dataset, loopback_openai)
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    judge_everything(run)
    answer = Answer.objects.get(text="A good answer to query 0.")
    client.force_login(owner)
    page = client.get(reverse("run-answer", args=[run.pk, answer.pk])).content.decode()
    assert "Graded view (1–5)" in page
    assert page.count("data-grade") == 3
    for text in ("5 / 5", "3 / 5", "4 / 5", "Scripted grade 5.", "Scripted grade 3."):
        assert text in page
