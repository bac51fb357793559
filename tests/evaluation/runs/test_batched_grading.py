"""Batched grading and endpoints as they are, in runs (issue 25): a judge grading several
criteria per call stores exactly what one call per criterion stores, re-asks alone what a
batched reply leaves out or garbles, is answered by its own cache on a rerun, and records
reasoning and cached tokens; through the task body against the loopback server."""

from __future__ import annotations

import hashlib
from decimal import Decimal

import pytest

from evaluation.checks.models import CriterionCheck
from evaluation.judging import batched
from evaluation.runs import costs, lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict
from loopback import LoopbackOpenAI, approx_tokens, checklist_responder, listed_criteria
from tests.factories import PanelFactory, loopback_judges, tune
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

CRITERIA = 12


def decide(criterion: str, answer: str) -> dict:
    """The judge's verdict: a pure function of criterion and answer, however it is asked."""
    digest = hashlib.sha256(f"{criterion}|{answer}".encode()).digest()
    verdict = "pass" if digest[0] % 2 == 0 else "fail"
    kinds = ("missing", "incorrect", "ambiguous", "incomplete")
    return {
        "verdict": verdict,
        "failure_kind": None if verdict == "pass" else kinds[digest[1] % 4],
        "rationale": f"Scripted {verdict} of “{criterion}” ({digest[2]}).",
    }


@pytest.fixture
def checklisted(dataset):
    return checklisted_query(dataset, criteria=CRITERIA, answers=3)


def judges(server, *per_call: int, **fields):
    found = loopback_judges(server, len(per_call))
    for judge, k in zip(found, per_call, strict=True):
        judge.criteria_per_call = k
        for name, value in fields.items():
            setattr(judge, name, value)
        judge.save()
    return found


def run_all(dataset, owner, panel, answers):
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    for answer in answers:
        for judge in panel.judges.all():
            lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    return run


def stored(run, judge) -> dict:
    return {
        (v.answer_id, v.criterion_id, v.sample): (v.outcome, v.failure_kind, v.rationale)
        for v in Verdict.objects.filter(run=run, judge=judge)
    }


def calls_of(server, model):
    return [c for c in server.calls if c.request is not None and c.request.model == model]


def test_batched_judges_store_exactly_the_verdicts_of_one_call_per_criterion(
    dataset, owner, checklisted
):
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        single, whole, fives = judges(server, 1, 0, 5)
        panel = PanelFactory(judges=[single, whole, fives], judges__samples=2)
        run = run_all(dataset, owner, panel, checklisted.answers)
    assert run.status == "done"
    expected = stored(run, single)
    assert len(expected) == 3 * CRITERIA * 2
    assert stored(run, whole) == expected
    assert stored(run, fives) == expected
    # One call per criterion, one per answer and sample, and ceil(12 / 5) = 3 per answer
    # and sample; no criterion was asked again.
    assert len(calls_of(server, single.model)) == 3 * CRITERIA * 2
    assert len(calls_of(server, whole.model)) == 3 * 2
    assert len(calls_of(server, fives.model)) == 3 * 2 * 3
    assert [len(listed_criteria(c.request)) for c in calls_of(server, whole.model)] == [12] * 6
    # Tokens and attempts of the batched calls are shared over their verdicts: the sums are
    # what the server counted (its prompt tokens: characters / 4 + 4 per message).
    for judge in (whole, fives):
        verdicts = Verdict.objects.filter(run=run, judge=judge)
        sent = calls_of(server, judge.model)
        assert sum(v.prompt_tokens for v in verdicts) == sum(
            approx_tokens(c.request.prompt_text) + 4 * len(c.request.messages) for c in sent
        )
        assert sum(v.attempts for v in verdicts) == len(sent)
    # Provenance: the batch mode, and each verdict's place in its batch.
    verdict = Verdict.objects.filter(run=run, judge=whole).order_by("criterion__position")[0]
    assert verdict.judge_params["criteria_per_call"] == 0
    assert verdict.judge_params["batch"] == {"criteria_per_call": 0, "size": 12, "item": 1}
    assert verdict.raw_output.startswith('{"criterion": 1, "verdict": ')
    assert "criteria_per_call" not in Verdict.objects.filter(judge=single).first().judge_params
    # A batched verdict's cache key is its own: never one of a single call, nor another size.
    keys = {
        j.pk: set(Verdict.objects.filter(run=run, judge=j).values_list("cache_key", flat=True))
        for j in (single, whole, fives)
    }
    assert not keys[single.pk] & keys[whole.pk] and not keys[whole.pk] & keys[fives.pk]


def test_a_criterion_missing_from_a_batched_reply_is_asked_alone(dataset, owner, checklisted):
    left_out = checklisted.criteria[3]
    answer = checklisted.answers[0]
    responder = checklist_responder(decide, omit=lambda text: text == left_out.text)
    with LoopbackOpenAI(responder=responder) as server:
        (judge,) = judges(server, 0)
        run = run_all(dataset, owner, PanelFactory(judges=[judge]), [answer])
    verdict = Verdict.objects.get(run=run, criterion=left_out)
    assert (verdict.outcome, verdict.failure_kind, verdict.rationale) == tuple(
        (decide(left_out.text, answer.text)[k] or "") for k in ("verdict", "failure_kind",
                                                                 "rationale")
    )  # fmt: skip
    assert verdict.judge_params["batch"]["reasked"] == "missing"
    # Asked alone with today's single-criterion prompt, once; every call is counted.
    alone = [c for c in server.calls if not listed_criteria(c.request)]
    assert [c.request.last_user_text.rsplit("Criterion: ", 1)[1] for c in alone] == [left_out.text]
    assert server.call_count == 2
    assert sum(Verdict.objects.filter(run=run).values_list("attempts", flat=True)) == 2
    assert verdict.attempts >= 1 and verdict.prompt_tokens > 0


def test_a_malformed_item_is_asked_again_alone(dataset, owner, checklisted):
    garbled = checklisted.criteria[0]
    responder = checklist_responder(decide, malform=lambda text: text == garbled.text)
    with LoopbackOpenAI(responder=responder) as server:
        (judge,) = judges(server, 5)
        run = run_all(dataset, owner, PanelFactory(judges=[judge]), checklisted.answers[:1])
    verdict = Verdict.objects.get(run=run, criterion=garbled)
    assert verdict.outcome in ("pass", "fail")  # never "maybe", never a guess
    assert verdict.judge_params["batch"]["reasked"] == "malformed"
    assert server.call_count == 3 + 1  # 5 + 5 + 2 criteria, then the garbled one alone
    assert Verdict.objects.filter(run=run, outcome__in=("pass", "fail")).count() == CRITERIA


def test_an_unparseable_batched_reply_is_asked_again_then_each_criterion_alone(
    dataset, owner, checklisted
):
    def responder(request):
        return "not json" if listed_criteria(request) else checklist_responder(decide)(request)

    with LoopbackOpenAI(responder=responder) as server:
        (judge,) = judges(server, 0)
        run = run_all(dataset, owner, PanelFactory(judges=[judge]), checklisted.answers[:1])
    verdicts = Verdict.objects.filter(run=run)
    assert {v.outcome for v in verdicts} <= {"pass", "fail"} and verdicts.count() == CRITERIA
    assert {v.judge_params["batch"]["reasked"] for v in verdicts} == {"unparseable"}
    # The batched question three times (two parse retries), then 12 single ones.
    assert server.call_count == 3 + CRITERIA
    assert sum(v.attempts for v in verdicts) == 3 + CRITERIA


def test_a_rerun_of_a_batched_run_is_answered_by_its_cache(dataset, owner, checklisted):
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        (judge,) = judges(server, 5)
        panel = PanelFactory(judges=[judge])
        first = run_all(dataset, owner, panel, checklisted.answers)
        made = server.call_count
        again = run_all(dataset, owner, panel, checklisted.answers)
        assert server.call_count == made  # no call
        assert Verdict.objects.filter(run=again, cache_hit=True).count() == 3 * CRITERIA
        assert stored(again, judge) == stored(first, judge)
        # The same judge grading one criterion per call asks again: not the same question.
        judge.criteria_per_call = 1
        judge.save()
        run_all(dataset, owner, panel, checklisted.answers[:1])
        assert server.call_count == made + CRITERIA


def test_checked_criteria_are_never_sent_in_a_batch(dataset, owner, checklisted):
    checked = checklisted.criteria[2]
    CriterionCheck.objects.create(criterion=checked, kind="tool_set", params={"tools": []})
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        (judge,) = judges(server, 0)
        run = run_all(dataset, owner, PanelFactory(judges=[judge]), checklisted.answers[:1])
    (sent,) = server.calls
    assert checked.text not in [text for _, text in listed_criteria(sent.request)]
    assert len(listed_criteria(sent.request)) == CRITERIA - 1
    assert Verdict.objects.get(run=run, criterion=checked).attempts == 0


def test_a_reasoning_model_in_json_mode_records_its_reasoning_tokens(dataset, owner, checklisted):
    server = LoopbackOpenAI(
        responder=checklist_responder(decide), reasoning_models=("model-0",),
        reasoning_tokens=30, supports_structured_outputs=False,
    )  # fmt: skip
    with server:
        (judge,) = judges(
            server, 0, token_parameter="max_completion_tokens", reasoning_effort="medium",
            response_format="json_object",
        )  # fmt: skip
        run = run_all(dataset, owner, PanelFactory(judges=[judge]), checklisted.answers[:1])
    (sent,) = server.calls
    assert sent.request.response_format == {"type": "json_object"}
    assert (
        "temperature" not in sent.request.raw and sent.request.raw["reasoning_effort"] == "medium"
    )
    assert sent.request.raw["max_completion_tokens"] == CRITERIA * judge.max_tokens
    verdicts = Verdict.objects.filter(run=run)
    assert {v.outcome for v in verdicts} <= {"pass", "fail"}
    assert sum(v.reasoning_tokens for v in verdicts) == 30
    params = verdicts.first().judge_params
    assert params["reasoning_effort"] == "medium" and params["response_format"] == "json_object"
    assert params["token_parameter"] == "max_completion_tokens"


def test_cached_prompt_tokens_are_recorded_and_priced(dataset, owner, checklisted):
    server = LoopbackOpenAI(
        responder=checklist_responder(decide), prompt_cache=True, prompt_cache_block=8
    )
    with server:
        (judge,) = judges(server, 1)
        judge.prompt_price, judge.completion_price = Decimal("2"), Decimal("8")
        judge.cached_prompt_price = Decimal("0.5")
        judge.save()
        run = run_all(dataset, owner, PanelFactory(judges=[judge]), checklisted.answers[:1])
    verdicts = list(Verdict.objects.filter(run=run))
    cached = sum(v.cached_tokens for v in verdicts)
    prompt = sum(v.prompt_tokens for v in verdicts)
    completion = sum(v.completion_tokens for v in verdicts)
    # Criteria come last: every call after the first finds the shared head in the cache.
    assert sum(1 for v in verdicts if v.cached_tokens > 0) >= CRITERIA - 1
    assert 0 < cached < prompt
    estimate = costs.run_cost_estimate(run, done=CRITERIA, expected=CRITERIA)
    expected = ((prompt - cached) * 2 + cached * Decimal("0.5") + completion * 8) / 10**6
    assert estimate.so_far == expected.quantize(Decimal("0.000001"))


def test_the_batched_schema_is_what_structured_outputs_ask(dataset, owner, checklisted):
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        (judge,) = judges(server, 0)
        run_all(dataset, owner, PanelFactory(judges=[judge]), checklisted.answers[:1])
    assert server.calls[0].request.json_schema == batched.SCHEMA


TURNS = [
    {"role": "user", "content": "Revenue?"},
    {"role": "assistant", "content": "Let me check the guidance first."},
    {"role": "user", "content": "And the final figure?"},
]


def test_conversations_are_batched_turn_by_turn(dataset, owner, checklisted):
    answer = checklisted.answers[0]
    answer.turns = TURNS
    answer.save()
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        single, whole = judges(server, 1, 0)
        panel = PanelFactory(judges=[single, whole], conversation="cumulative")
        run = run_all(dataset, owner, panel, [answer])
    # Two assistant turns (the one above and the answer's text): the whole checklist is
    # asked once per turn, and each verdict aggregates its criterion's two turns alike.
    assert len(calls_of(server, whole.model)) == 2
    assert len(calls_of(server, single.model)) == 2 * CRITERIA
    assert stored(run, whole) == stored(run, single)
    assert len(stored(run, whole)) == CRITERIA


def test_a_tuned_judge_sends_its_instructions_in_batched_calls_too(dataset, owner, checklisted):
    instructions = "A figure passes when it matches the filing to the stated precision."
    with LoopbackOpenAI(responder=checklist_responder(decide)) as server:
        single, whole = judges(server, 1, 0)
        for judge in (single, whole):
            tune(judge, dataset, instructions=instructions)
        panel = PanelFactory(judges=[single, whole])
        run_all(dataset, owner, panel, checklisted.answers[:1])
    alone = calls_of(server, single.model)[0].request
    (batch,) = (c.request for c in calls_of(server, whole.model))
    assert instructions in alone.system_text
    # Byte for byte the single prompt up to its criterion, plus the batch's own paragraph.
    assert batch.system_text == f"{alone.system_text} {batched.BATCH_INSTRUCTIONS}"
    head = alone.last_user_text.rsplit("\n\nCriterion: ", 1)[0]
    assert batch.last_user_text.rsplit("\n\nCriteria:\n", 1)[0] == head
