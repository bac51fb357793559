"""A trial run (scope "labelled") grades only the items with a human label or an
adjudication: its expected count, tasks and verdicts, on the loopback judge through the real
client; deterministic checks decide their criteria as usual; its estimate, stored at start,
counts exactly the calls the server then receives (nothing cached)."""

from __future__ import annotations

import pytest

from evaluation.checks.models import CriterionCheck
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask, Verdict
from evaluation.runs.overview import run_overview
from tests.evaluation.trials.conftest import adjudicate
from tests.factories import PanelFactory, loopback_judges
from tests.support.builders import checklisted_query, finished_run, human_label

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(dataset):
    """Three answers of a four-criterion query: two labelled items on the first answer (one
    decided by a keyword check), an adjudicated one on the second, nothing on the third."""
    made = checklisted_query(
        dataset,
        criteria=[
            ("States revenue of $4.1 billion.", "fact"),
            ("Puts the revenue figure in bold.", "format"),
            ("States the quarter of the figures.", "fact"),
            ("Compares revenue with guidance.", "fact"),
        ],
        answers=3,
    )
    a, c = made.answers, made.criteria
    CriterionCheck.objects.create(criterion=c[1], kind="keyword_share", params={"keywords": ["$4"]})
    human_label(a[0], c[0], "ann", "pass")
    human_label(a[0], c[1], "ann", "pass")
    human_label(a[0], c[1], "bob", "pass")  # two raters, one item
    adjudicate(a[1], c[2], "fail")
    return made


def run_all_tasks(run: Run) -> Run:
    for answer_id, judge_id in run.tasks.values_list("answer_id", "judge_id"):
        lifecycle.run_task(run_id=run.pk, answer_id=answer_id, judge_id=judge_id, worker="test")
    run.refresh_from_db()
    return run


def test_a_trial_grades_only_the_labelled_items(labelled, loopback_openai, owner_api):
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1), judges__samples=2)
    started = owner_api.post(
        "/api/runs/",
        {"dataset": labelled.query.dataset_id, "panel": panel.pk, "scope": "labelled"},
        format="json",
    )
    assert started.status_code == 201, started.json()
    assert started.json()["scope"] == "labelled"
    run = Run.objects.get(pk=started.json()["id"])
    a, c = labelled.answers, labelled.criteria
    items = {(a[0].pk, c[0].pk), (a[0].pk, c[1].pk), (a[1].pk, c[2].pk)}
    assert run.expected == len(items) * 2  # two samples
    # The third answer has no labelled item: no task at all.
    assert set(RunTask.objects.filter(run=run).values_list("answer_id", flat=True)) == {
        a[0].pk,
        a[1].pk,
    }
    run = run_all_tasks(run)
    assert run.status == Run.Status.DONE, run.reason
    verdicts = Verdict.objects.filter(run=run)
    assert {(v.answer_id, v.criterion_id) for v in verdicts} == items
    assert verdicts.count() == run.expected == 6
    # The keyword check decided its item without a call: 2 LLM items × 2 samples.
    checked = verdicts.get(criterion=c[1], sample=0)
    assert checked.attempts == 0 and "check" in checked.judge_params
    assert loopback_openai.call_count == 4
    # The estimate stored at start counted those calls exactly, and the prompt tokens the
    # loopback server counts (ceil(chars / 4) + 4 per message) within a token per call.
    assert run.estimate["calls"] == 4 == run_overview(run).requests
    assert run.estimate["items"] == 3 and run.estimate["checked"] == 2
    sent = sum(verdicts.values_list("prompt_tokens", flat=True))
    assert abs(run.estimate["prompt_tokens"] - sent) <= 4
    assert run.estimate["completion_tokens_max"] == 4 * panel.judges.get().max_tokens


def test_resume_and_retry_keep_to_the_labelled_items(labelled, loopback_openai, owner):
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    run = runs.run_create_and_start(
        dataset=labelled.query.dataset, panel=panel, by=owner, scope=Run.Scope.LABELLED
    )
    runs.run_cancel(run=run)
    run = runs.run_resume(run=run)
    assert run.expected == 3 and run.tasks.count() == 2
    run = run_all_tasks(run)
    assert run.status == Run.Status.DONE and Verdict.objects.filter(run=run).count() == 3


def test_a_trial_names_its_baseline_by_default_the_latest_finished_run(
    labelled, offline_panel, owner, owner_api
):
    dataset = labelled.query.dataset
    older = finished_run(dataset, offline_panel, {})
    latest = finished_run(dataset, offline_panel, {})
    Run.objects.filter(pk__in=[older.pk, latest.pk]).update(kind=Run.Kind.SYSTEMS)
    trial = runs.run_create(
        dataset=dataset, panel=offline_panel, by=owner, scope=Run.Scope.LABELLED
    )
    assert trial.baseline == latest
    chosen = owner_api.post(
        "/api/runs/",
        {"dataset": dataset.pk, "panel": offline_panel.pk, "scope": "labelled",
         "baseline": older.pk},
        format="json",
    )  # fmt: skip
    assert chosen.status_code == 201 and chosen.json()["baseline"] == older.pk
    # A run still running cannot be a baseline; a run of another dataset is not found.
    running = Run.objects.create(dataset=dataset, panel=offline_panel, status="running")
    refused = owner_api.post(
        "/api/runs/",
        {"dataset": dataset.pk, "panel": offline_panel.pk, "scope": "labelled",
         "baseline": running.pk},
        format="json",
    )  # fmt: skip
    assert refused.status_code == 400 and "not finished" in refused.json()["baseline"][0]


def test_a_trial_without_labelled_items_is_refused(dataset, offline_panel, owner_api):
    checklisted_query(dataset, criteria=2, answers=2)
    refused = owner_api.post(
        "/api/runs/",
        {"dataset": dataset.pk, "panel": offline_panel.pk, "scope": "labelled"},
        format="json",
    )
    assert refused.status_code == 400
    assert "with a human label or an adjudication" in str(refused.json())
    assert not Run.objects.exists()
