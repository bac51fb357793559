"""A reward and a run plan their judge calls with one plan (evaluation.judging.plan, issue 39
point 1): the reward for an answer's text equals that answer's value in a run of the same
panel and tuning, and every vote of the reward is answered by the run's verdicts (the same
calls, by cache key), for a plain answer and for an agent's answer (turns, retrieved context
and a criterion judged against it)."""

from __future__ import annotations

import pytest

from evaluation.checks.models import CriterionCheck
from evaluation.judges import tuning
from evaluation.judges.models import JudgeVersion
from evaluation.rewards.models import RewardAudit, RewardBatch
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.scores import run_report
from loopback import LoopbackOpenAI
from tests.evaluation.rewards.conftest import CRITERIA, grade, native
from tests.factories import AnswerFactory, PanelFactory, loopback_judges, tune

URL = "/api/rewards/"
pytestmark = pytest.mark.django_db

EXAMPLE = {"criterion": "States figure 9.", "excerpt": "Figure 9 is 4.", "decision": "pass",
           "reason": "Stated."}  # fmt: skip
ANSWER = "Figure 0 is 3.1 and figure 2 is 7."
TURNS = [
    {"role": "user", "content": "What are the figures?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": "search", "arguments": {"q": "figures"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "Figure 0: 3.1."},
    {"role": "assistant", "content": ANSWER},
]  # fmt: skip
CONTEXT = [
    {"id": "p1", "title": "Filing", "source": "10-Q", "text": "Figure 0 is 3.1."},
    {"id": "p2", "title": "", "source": "", "text": "Figure 2 is 7."},
]


def by_text(request) -> dict:
    """Each judge says something of its own (by model), and what the prompt holds decides
    it: a different question would get a different answer."""
    if request.model == "model-1" and "Retrieved context" in request.last_user_text:
        return {"verdict": "fail", "failure_kind": "incorrect", "rationale": "Unsupported."}
    return grade(request)


@pytest.fixture
def two_judges():
    with LoopbackOpenAI(responder=by_text) as server:
        first, second = loopback_judges(server, 2)
        panel = PanelFactory(judges=[(first, {"samples": 2}), second])
        yield server, panel


def _run_value(dataset, panel, owner, answer) -> float:
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    for judge in panel.judges.all():
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == "done"
    [report] = [a for a in run_report(run).answers if a.answer_id == answer.pk]
    return report.value


def _tuned(panel, dataset) -> None:
    for judge in panel.judges.all():
        tune(judge, dataset, instructions=f"Be exact, {judge.name}.", examples=[EXAMPLE])


def test_a_rewards_equals_the_runs_value_of_a_plain_answer(
    owner, owner_api, dataset, checklisted, two_judges
):
    server, panel = two_judges
    _tuned(panel, dataset)
    answer = AnswerFactory(query=checklisted.query, text=ANSWER)
    value = _run_value(dataset, panel, owner, answer)
    made = server.call_count
    assert made == 3 * 3  # three criteria, three votes each

    response = owner_api.post(URL, native(dataset, panel, ANSWER), format="json")
    assert response.status_code == 200, response.content
    [item] = response.json()["items"]
    assert item["score"] == pytest.approx(value) == pytest.approx(2 / 3)
    assert item["reward"] == pytest.approx(value)  # no shaping by default
    # The same calls: every vote is answered by the run's verdicts, none is made again.
    assert server.call_count == made
    assert RewardBatch.objects.get().cache_hits == 9


def test_a_rewards_equals_the_runs_value_of_an_agent_answer(
    owner, owner_api, dataset, checklisted, two_judges
):
    server, panel = two_judges
    _tuned(panel, dataset)
    on_context = checklisted.criteria[0]
    CriterionCheck.objects.create(criterion=on_context, evidence="context")
    assert on_context.text == CRITERIA[0]
    answer = AnswerFactory(query=checklisted.query, text=ANSWER, turns=TURNS, context=CONTEXT)
    value = _run_value(dataset, panel, owner, answer)
    made = server.call_count
    # Judge 1 fails the criterion judged against the context; the panel's majority passes
    # it (Judge 0's two samples), and figure 1 fails: 2/3 again, through the evidence.
    sent = [c.request.last_user_text for c in server.calls]
    assert sum("Retrieved context" in text for text in sent) == 3
    assert all("Conversation before the graded turn:" in text for text in sent)

    body = native(dataset, panel, TURNS)
    body["items"][0]["context"] = CONTEXT
    response = owner_api.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    [item] = response.json()["items"]
    assert item["score"] == pytest.approx(value)
    assert server.call_count == made  # the same calls, answered by the run's verdicts

    # Without its context the reward asks another question (the prompt says none was
    # retrieved): new calls for that criterion only.
    owner_api.post(URL, native(dataset, panel, TURNS), format="json")
    assert server.call_count == made + 3


def test_a_criterion_on_the_reference_without_one_is_refused_by_vote(
    owner_api, dataset, checklisted, two_judges
):
    """As a run records `no_reference`, a reward's vote on a criterion judged against a
    reference the query lacks is an error naming why, and no call is made for it."""
    server, panel = two_judges
    CriterionCheck.objects.create(criterion=checklisted.criteria[1], evidence="reference")
    response = owner_api.post(URL, native(dataset, panel, ANSWER), format="json")
    [item] = response.json()["items"]
    assert item["failed"] and item["reward"] is None
    rationale = {c["criterion"]: c["rationale"] for c in item["criteria"]}
    assert "no reference answer" in rationale[checklisted.criteria[1].pk]
    assert server.call_count == 2 * 3  # the two other criteria's votes


def test_the_audit_records_the_pinned_version_each_vote_was_asked_with(
    owner_api, dataset, checklisted, two_judges, settings
):
    """A reward grades with the dataset's tuning as it is now, pinned as a version (kept
    as a JudgeVersion row, as a run started now would keep it); the audit says which."""
    settings.REWARDS_AUDIT_SAMPLE = 1.0
    _, panel = two_judges
    first = panel.judges.get(name="Judge 0")
    tune(first, dataset, instructions="Be exact.")
    JudgeVersion.objects.filter(judge=first).delete()  # pinned again by the request
    owner_api.post(URL, native(dataset, panel, ANSWER), format="json")
    pinned = tuning.current(first, dataset.pk).version
    assert JudgeVersion.objects.filter(judge=first, dataset=dataset, version=pinned).exists()
    votes = [v for c in RewardAudit.objects.get().verdicts for v in c["votes"]]
    assert {v["prompt_version"] for v in votes if v["judge"] == first.pk} == {pinned}
    assert {v.get("prompt_version") for v in votes if v["judge"] != first.pk} == {"verdict-v1"}
