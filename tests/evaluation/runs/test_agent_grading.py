"""Grading agents' answers in runs: criteria with a deterministic trajectory check are decided
by it (no call), conversations are graded turn by turn when the panel says so, and LLM
criteria judged with evidence send the context or the reference answer, cut to the judge's
budget by the stated rule and recorded on the verdict."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from annotation import services
from evaluation.checks.models import CriterionCheck
from evaluation.judges.models import Panel
from evaluation.judging import prompts
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict
from loopback import LoopbackOpenAI
from loopback.scripts import verdict_responder
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    loopback_judges,
    offline_judge,
    valid_criteria,
)

pytestmark = pytest.mark.django_db

TURNS = [
    {"role": "user", "content": "Revenue?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": "search", "arguments": {"ticker": "SLVX"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "Revenue $4.12B"},
    {"role": "assistant", "content": "Let me check the guidance first."},
    {"role": "user", "content": "And the final figure?"},
]  # fmt: skip


def _checklist(query, collaborator):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    return list(checklist.criteria.order_by("position"))


def _run(dataset, panel, owner, answer):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    for judge in panel.judges.all():
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    return run


def _checked_run(dataset, query, collaborator, owner, loopback_openai):
    """A run of an LLM panel over an agent's answer whose first two criteria have checks."""
    first, second = _checklist(query, collaborator)[:2]
    CriterionCheck.objects.create(criterion=first, kind="tool_set", params={"tools": ["search"]})
    CriterionCheck.objects.create(
        criterion=second, kind="tool_sequence", threshold=0.5,
        params={"calls": [{"name": "search"}, {"name": "calculator"}], "mode": "in_order"},
    )  # fmt: skip
    answer = AnswerFactory(query=query, text="Revenue was $4.12 billion.", turns=TURNS)
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    run = _run(dataset, panel, owner, answer)
    assert run.status == "done"
    return run, first, second


def test_trajectory_checks_decide_their_criteria_without_a_call(
    dataset, query, collaborator, owner, loopback_openai
):
    run, first, second = _checked_run(dataset, query, collaborator, owner, loopback_openai)
    tool_set = Verdict.objects.get(run=run, criterion=first)
    assert tool_set.outcome == "pass" and tool_set.attempts == 0
    assert tool_set.rationale.startswith("No-LLM check (tool_set): score 1.00, 1.00 needed;")
    assert tool_set.judge_params["check"] == {
        "kind": "tool_set", "params": {"tools": ["search"]}, "threshold": None,
    }  # fmt: skip
    sequence = Verdict.objects.get(run=run, criterion=second)
    assert sequence.outcome == "pass" and "not matched: calculator" in sequence.rationale
    # Only the other criteria were sent to the judge.
    asked = {c.request.last_user_text.rsplit("Criterion: ", 1)[1] for c in loopback_openai.calls}
    assert first.text not in asked and second.text not in asked and len(asked) > 0


def test_the_verdicts_api_gives_each_checks_score_and_threshold(
    dataset, query, collaborator, owner, owner_api, loopback_openai
):
    """The score a check gave and the threshold it was held against, as numbers (the
    rationale rounds them to two decimals), with the scoring a sequence check applied; a
    check saved without `scoring` and a threshold below 1 kept its partial credit."""
    run, first, second = _checked_run(dataset, query, collaborator, owner, loopback_openai)
    listed = owner_api.get("/api/verdicts/", {"run": run.pk}).json()["results"]
    by_criterion = {v["criterion"]: v for v in listed}
    assert by_criterion[first.pk]["check"] == {
        "kind": "tool_set", "params": {"tools": ["search"]}, "score": 1.0,
        "threshold": 1.0, "scoring": None,  # no threshold stored: the kind's default
    }  # fmt: skip
    sequence = owner_api.get(f"/api/verdicts/{by_criterion[second.pk]['id']}/").json()["check"]
    assert sequence == {
        "kind": "tool_sequence",
        "params": {"calls": [{"name": "search"}, {"name": "calculator"}], "mode": "in_order"},
        "score": 0.5, "threshold": 0.5, "scoring": "partial",
    }  # fmt: skip
    judged = [v for v in listed if v["criterion"] not in (first.pk, second.pk)]
    assert judged and all(v["check"] is None for v in judged)


def test_a_conversation_graded_on_every_turn_cumulative_and_average(
    dataset, query, collaborator, owner
):
    criteria = _checklist(query, collaborator)
    answer = AnswerFactory(query=query, text="Revenue was $4.12 billion.", turns=TURNS)
    for mode in ("cumulative", "average", "last_turn"):
        panel = Panel.objects.create(name=f"Offline {mode}", conversation=mode)
        panel.members.create(judge=offline_judge(f"Offline {mode}"))
        run = _run(dataset, panel, owner, answer)
        verdicts = {v.criterion_id: v for v in Verdict.objects.filter(run=run)}
        figure = next(c for c in criteria if "4.12" in c.text)
        v = verdicts[figure.pk]
        if mode == "cumulative":
            # Turn 1 ("Let me check…") misses the figure, turn 2 (the final text) states it.
            assert v.outcome == "pass" and v.rationale.startswith("Met at turn 2 of 2:")
            assert v.judge_params["conversation"] == "cumulative"
        elif mode == "average":
            assert v.outcome == "pass" and v.rationale.startswith(
                "Met in 1 of 2 turns (50%; half needed): turn 1 fail, turn 2 pass."
            )
        else:
            assert v.outcome == "pass" and v.judge_params == {"kind": "no_llm"}


def test_evidence_prompts_with_context_cut_to_the_budget_and_recorded(
    dataset, query, collaborator, owner
):
    seen: list[str] = []

    def decide(request):
        seen.append(request.system_text + "\n" + request.last_user_text)
        return "pass"

    criterion = _checklist(query, collaborator)[0]
    CriterionCheck.objects.create(criterion=criterion, evidence="context")
    context = [
        {"id": "doc-1", "title": "10-Q", "source": "SEC", "text": "Revenue $4.12 billion. " * 20},
        {"id": "doc-2", "title": "", "source": "", "text": "x" * 20_000},
        {"id": "doc-3", "title": "", "source": "", "text": "never shown"},
    ]
    answer = AnswerFactory(query=query, text="Revenue was $4.12 billion.", context=context)
    with LoopbackOpenAI(responder=verdict_responder(decide)) as server:
        (judge,) = loopback_judges(server, 1)
        judge.context_tokens = 1000  # 4,000 characters
        judge.save()
        run = _run(dataset, PanelFactory(judges=[judge]), owner, answer)
    verdict = Verdict.objects.get(run=run, criterion=criterion)
    assert verdict.outcome == "pass"
    params = verdict.judge_params
    assert params["prompt_version"] == "verdict-v1+context-v1"
    assert params["evidence"] == "context" and params["evidence_truncated"] is True
    assert params["evidence_omitted"] == ["doc-3"]
    assert params["evidence_chars"][0] <= 4000
    prompt = next(p for p in seen if criterion.text in p)
    assert prompts.EVIDENCE_INSTRUCTIONS["context"] in prompt
    assert "[doc-1] 10-Q · SEC" in prompt and "[… truncated:" in prompt
    assert "1 more passage(s) left out: doc-3" in prompt and "never shown" not in prompt
    # Other criteria keep the plain prompt: their verdicts record the judge's own version.
    other = Verdict.objects.filter(run=run).exclude(criterion=criterion).first()
    assert "evidence" not in other.judge_params
    assert other.judge_params["prompt_version"] == "verdict-v1"


def test_reference_evidence_without_a_reference_is_an_error_not_a_fail(
    dataset, query, collaborator, owner, loopback_openai
):
    criterion = _checklist(query, collaborator)[0]
    CriterionCheck.objects.create(criterion=criterion, evidence="reference")
    answer = AnswerFactory(query=query, text="Revenue was $4.12 billion.")
    run = _run(dataset, PanelFactory(judges=loopback_judges(loopback_openai, 1)), owner, answer)
    verdict = Verdict.objects.get(run=run, criterion=criterion)
    assert (verdict.outcome, verdict.error_kind) == ("error", "no_reference")


def test_plain_answers_keep_the_plain_prompt_and_cache_key():
    date = dt.date(2025, 1, 2)
    plain = prompts.messages(query="Q", query_date=date, answer="A", criterion="C")
    assert plain[1]["content"] == "Query (as of 2025-01-02):\nQ\n\nAnswer:\nA\n\nCriterion: C"
    args = dict(base_url="u", model="m", prompt_version="verdict-v1", temperature=0.0,
                max_tokens=5, seed=None, sample=0, query="Q", query_date=date, criterion="C",
                answer="A")  # fmt: skip
    assert prompts.cache_key(**args) == prompts.cache_key(**args, extra=None)
    assert prompts.cache_key(**args) != prompts.cache_key(**args, extra={"evidence": "x"})
    json.dumps(prompts.context_evidence([], budget_tokens=10).provenance())


def test_analytics_report_tool_use_and_grounding_apart(dataset, query, collaborator, owner):
    from evaluation.analytics import selectors as analytics

    first, second = _checklist(query, collaborator)[:2]
    CriterionCheck.objects.create(criterion=first, kind="tool_set", params={"tools": ["search"]})
    CriterionCheck.objects.create(criterion=second, evidence="context")
    answer = AnswerFactory(query=query, text="Revenue was $4.12 billion.", turns=TURNS)
    panel = Panel.objects.create(name="Offline")
    panel.members.create(judge=offline_judge())
    run = _run(dataset, panel, owner, answer)
    data = analytics.load_run(run, parts=())
    kinds = {kind for _, _, kind, *_ in data.groups}
    # The methodology criterion is decided by its check: it counts as tool use now.
    assert kinds == {"tool use", "grounding", "fact", "format"}
