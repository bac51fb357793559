"""The cost of a run before it starts (issue 25, item 6): calls per each judge's criteria per
call, samples and scope, no call for deterministic checks, tokens from the texts' sizes, the
prices; through the API (nothing is created), the start form's fragment and the run page."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from django.urls import reverse

from evaluation.checks.models import CriterionCheck
from evaluation.judges.models import Judge
from evaluation.judging import prompts
from evaluation.runs import services as runs
from evaluation.runs.estimate import MESSAGE_TOKENS, run_estimate
from evaluation.runs.estimate import panel_members as of_panel
from evaluation.runs.models import Run
from evaluation.runs.scope import Selection
from tests.factories import PanelFactory, offline_judge
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def workload(dataset):
    """Two answers of a five-criterion query; one criterion is decided by a keyword check."""
    made = checklisted_query(dataset, criteria=5, answers=2)
    CriterionCheck.objects.create(
        criterion=made.criteria[4], kind="keyword_share", params={"keywords": ["revenue"]}
    )
    return made


def judge(name: str, per_call: int, **fields) -> Judge:
    return Judge.objects.create(
        name=name, base_url="http://127.0.0.1:9/v1", model=name, criteria_per_call=per_call,
        prompt_price="2.5", completion_price="10", **fields,
    )  # fmt: skip


@pytest.mark.parametrize(("per_call", "calls"), [(1, 8), (2, 4), (3, 4), (0, 2)])
def test_calls_follow_each_judges_criteria_per_call(workload, per_call, calls):
    panel = PanelFactory(judges=[judge("J", per_call)])
    found = run_estimate(Selection(workload.query.dataset_id), of_panel(panel))
    # Four criteria call a judge (the fifth is checked), on each of two answers.
    assert found.calls == calls
    assert found.items == 10 and found.checked == 2 and found.answers == 2


def test_tokens_and_cost_from_the_texts_sizes(workload):
    j = judge("J", 1, max_tokens=300)
    panel = PanelFactory(judges=[(j, {"samples": 2}), offline_judge()])
    found = run_estimate(Selection(workload.query.dataset_id), of_panel(panel))
    query = workload.query
    chars = sum(
        len(m["content"])
        for answer in workload.answers
        for criterion in workload.criteria[:4]
        for m in prompts.messages(
            query=query.text, query_date=query.query_date, answer=answer.text,
            criterion=criterion.text,
        )
    ) * 2  # fmt: skip
    row = next(r for r in found.judges if r.judge == "J")
    assert row.calls == 16
    assert row.prompt_tokens == math.ceil(chars / prompts.CHARS_PER_TOKEN) + 16 * MESSAGE_TOKENS
    assert row.completion_tokens_max == 16 * 300
    assert row.completion_tokens == 16 * 60  # typical: 60 per verdict
    assert float(found.cost) == pytest.approx(
        (row.prompt_tokens * 2.5 + row.completion_tokens * 10) / 1_000_000
    )
    # The no-LLM judge makes no call and costs nothing.
    offline = next(r for r in found.judges if r.judge == "Offline")
    assert (offline.calls, offline.cost) == (0, 0)


def test_an_unpriced_judge_makes_the_cost_unknown(workload):
    panel = PanelFactory(judges=[Judge.objects.create(name="Free", base_url="http://x/v1")])
    found = run_estimate(Selection(workload.query.dataset_id), of_panel(panel))
    assert found.cost is None and found.unpriced == ("Free",)
    assert found.as_json()["cost"] is None


def test_the_api_estimates_the_same_body_as_a_start_and_creates_nothing(
    workload, owner_api, reviewer_api, outsider_api, dataset, reviewer
):
    from annotation import roles
    from annotation import services as annotation

    annotation.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    panel = PanelFactory(judges=[judge("J", 2)])
    body = {"dataset": dataset.pk, "panel": panel.pk}
    data = owner_api.post("/api/runs/estimate/", body, format="json").json()
    assert data["calls"] == 4 and data["cache_predicted"] is False
    assert data["judges"][0]["criteria_per_call"] == 2 and data["cost"] is not None
    assert not Run.objects.exists()
    labelled = owner_api.post(
        "/api/runs/estimate/", {**body, "scope": "labelled"}, format="json"
    ).json()
    assert labelled["calls"] == 0 and labelled["answers"] == 0  # nothing labelled yet
    assert reviewer_api.post("/api/runs/estimate/", body, format="json").status_code == 403
    assert outsider_api.post("/api/runs/estimate/", body, format="json").status_code == 404


def test_the_start_form_shows_the_estimate_as_it_changes(workload, client, owner, dataset):
    panel = PanelFactory(name="Batched", judges=[judge("J", 0)])
    client.force_login(owner)
    page = client.get(reverse("dataset-runs", args=[dataset.pk])).content.decode()
    assert 'id="run-estimate"' in page and 'value="labelled"' in page
    url = reverse("run-estimate", args=[dataset.pk])
    params = {"panel": panel.pk, "scope": "all", "concurrency": 16}
    fragment = client.get(url, params, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment
    assert "data-estimate-calls>2<" in fragment and "Cache hits are not predicted" in fragment
    whole = client.get(url, params).content.decode()  # without JavaScript: a page
    assert "<html" in whole and "data-estimate-calls>2<" in whole


def test_the_run_page_shows_actual_against_the_estimate(workload, client, owner, dataset):
    panel = PanelFactory(judges=[offline_judge()])
    run = runs.run_create_and_start(dataset=dataset, panel=panel, by=owner)
    assert run.estimate["calls"] == 0 and run.estimate["items"] == 10
    client.force_login(owner)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "data-estimate-vs-actual" in page and "0 / 0 calls" in page


def test_the_estimate_reads_sizes_in_a_few_queries(dataset, django_assert_max_num_queries):
    for _ in range(5):
        checklisted_query(dataset, criteria=4, answers=6, query_date=dt.date(2024, 5, 1))
    panel = PanelFactory(judges=[judge("J", 1)])
    with django_assert_max_num_queries(6):
        found = run_estimate(Selection(dataset.pk), of_panel(panel))
    assert found.calls == 5 * 6 * 4


def test_instructions_and_examples_are_counted_and_nothing_is_written(workload):
    from evaluation.judges import tuning
    from evaluation.judges.models import JudgeTuning, JudgeVersion

    plain = judge("Plain", 1)
    instructions = "A figure must match the filing to the cent. " * 20
    examples = [
        {"criterion": "States revenue.", "excerpt": "Revenue was $4.1B.", "decision": "pass",
         "reason": "It states it."},
    ]  # fmt: skip
    tuned_judge = judge("Tuned", 1)
    dataset_id = workload.query.dataset_id
    JudgeTuning.objects.create(
        judge=tuned_judge, dataset_id=dataset_id, instructions=instructions, examples=examples
    )
    selection = Selection(dataset_id)
    before = run_estimate(selection, of_panel(PanelFactory(judges=[plain]))).prompt_tokens
    after = run_estimate(selection, of_panel(PanelFactory(judges=[tuned_judge]))).prompt_tokens
    added = len("\n\n" + tuning.system_addition(instructions, examples)) * 8  # 8 calls
    assert after - before == pytest.approx(added / prompts.CHARS_PER_TOKEN, abs=1)
    assert not JudgeVersion.objects.exists()
    # Another dataset's estimate counts none of this dataset's tuning.
    from annotation.models import Dataset

    elsewhere = Dataset.objects.create(name="Elsewhere")
    JudgeTuning.objects.filter(judge=tuned_judge).update(dataset=elsewhere)
    untuned = run_estimate(selection, of_panel(PanelFactory(judges=[tuned_judge]))).prompt_tokens
    assert untuned == before
