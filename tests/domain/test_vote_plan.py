"""The one plan of a vote's call (evaluation.judging.plan), as plain Python: its cache keys
are the keys runs made before the plan existed, byte for byte (the digests below were taken
from the code before it), so every cached verdict is still found; and what the plan puts in
the prompt is what the key names."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from evaluation.judging import plan, prompts


@dataclass(frozen=True)
class JudgeFields:
    base_url: str = "http://judge.example/v1/"
    model: str = "m"
    api_key_env: str = ""
    max_tokens: int = 512
    seed: int | None = 7
    timeout: float = 30.0
    token_parameter: str = "max_tokens"
    response_format: str = "auto"
    reasoning_effort: str = ""
    criteria_per_call: int = 1
    context_tokens: int = 1000


@dataclass(frozen=True)
class TuningFields:
    version: str = "verdict-v1"
    system: str = ""


def vote(judge=JudgeFields(), tuning=TuningFields(), **given) -> plan.PlannedVote:
    fields = {
        "judge": judge, "tuning": tuning, "temperature": 0.0, "sample": 0, "query": "Q?",
        "query_date": dt.date(2025, 3, 4), "criterion_id": 11, "criterion": "States X.",
        "turn": plan.GradedTurn(1, "A.", "", False),
    }  # fmt: skip
    return plan.plan_vote(**{**fields, **given})


def test_a_plain_answers_key_and_prompt_are_what_they_always_were():
    planned = vote()
    assert planned.cache_key == "45fd72ba64cc40f300f4cab2c9e775eabca1a536a6e2f0a31af54e67dce14301"
    assert planned.prompt_version == "verdict-v1"
    assert planned.call.messages == prompts.messages(
        query="Q?", query_date=dt.date(2025, 3, 4), answer="A.", criterion="States X."
    )
    assert (planned.call.criterion_id, planned.call.sample) == (11, 0)
    assert planned.call.endpoint.base_url == "http://judge.example/v1/"


def test_evidence_conversation_tuning_and_how_the_judge_calls_are_keyed_as_before():
    judge = JudgeFields(criteria_per_call=5, reasoning_effort="low")
    tuning = TuningFields("verdict-v1+tuned-0123456789ab", "Be exact.")
    [turn] = plan.graded_turns(
        "last_turn", "X is 3.", [{"role": "user", "content": "What is X?"},
                                 {"role": "assistant", "content": "X is 3."}],
        budget_tokens=judge.context_tokens,
    )  # fmt: skip
    evidence = plan.evidence_for(
        {"context"}, context=[{"id": "p1", "text": "X is 3."}], reference=lambda: "",
        budget_tokens=judge.context_tokens,
    )["context"]  # fmt: skip
    planned = vote(judge, tuning, sample=1, turn=turn, conversation=True, evidence=evidence)
    assert planned.cache_key == "10cc30501c1638aab68e3d9f4e2b3bfd472cc0bde762f0ba22a915a425e95240"
    assert planned.prompt_version == "verdict-v1+tuned-0123456789ab+conversation-v1+context-v1"
    system, user = (m["content"] for m in planned.call.messages)
    assert system.endswith("\n\nBe exact.") and "Retrieved context" in user
    assert "Conversation before the graded turn:\nuser: What is X?" in user
    assert planned.call.per_call == 5

    batched = vote(JudgeFields(criteria_per_call=0))
    assert batched.cache_key == "8d918f2e6f79acef502bc955b6749c4f3dd233c70e327ef8a7f508bed52a40e2"


def test_every_input_of_the_call_is_in_its_key():
    key = vote().cache_key
    changed = [
        vote(JudgeFields(model="other")), vote(JudgeFields(max_tokens=100)),
        vote(JudgeFields(seed=None)), vote(temperature=0.7), vote(sample=1),
        vote(query="Q2?"), vote(query_date=dt.date(2025, 3, 5)), vote(criterion="States Y."),
        vote(turn=plan.GradedTurn(1, "B.", "", False)),
        vote(tuning=TuningFields("verdict-v1+tuned-0123456789ab", "Be exact.")),
        vote(turn=plan.GradedTurn(2, "A.", "user: hi", False), conversation=True),
        vote(evidence=prompts.reference_evidence("R.", budget_tokens=10)),
    ]  # fmt: skip
    assert len({key, *(c.cache_key for c in changed)}) == len(changed) + 1
    # How the question is sent, not the question: not in the key.
    assert vote(JudgeFields(response_format="json_object")).cache_key == key
    assert vote(JudgeFields(base_url="http://judge.example/v1")).cache_key == key


def test_evidence_is_built_only_when_asked_and_a_missing_reference_is_absent():
    asked: list[str] = []

    def reference() -> str:
        asked.append("read")
        return ""

    assert plan.evidence_for(set(), context=[], reference=reference, budget_tokens=10) == {}
    assert asked == []
    found = plan.evidence_for({"reference", "context"}, context=[], reference=reference,
                              budget_tokens=10)  # fmt: skip
    assert asked == ["read"] and set(found) == {"context"}
    assert found["context"].text == "(The system retrieved no context.)"


def test_fresh_keys_a_canary_call_apart_and_leaves_every_other_key_as_it_was():
    """A judge canary re-grades its items with `fresh` set (the run's id): a new key, so the
    cache never answers it, and another per run; with fresh="" every key is byte for byte
    the one above."""
    assert vote(fresh="").cache_key == vote().cache_key
    assert vote(fresh="").cache_key == (
        "45fd72ba64cc40f300f4cab2c9e775eabca1a536a6e2f0a31af54e67dce14301"
    )
    canary = {vote(fresh="run-1").cache_key, vote(fresh="run-2").cache_key}
    assert len(canary) == 2 and vote().cache_key not in canary
    with_evidence = vote(evidence=prompts.reference_evidence("R.", budget_tokens=10))
    fresh_evidence = vote(evidence=prompts.reference_evidence("R.", budget_tokens=10), fresh="r")
    assert fresh_evidence.cache_key != with_evidence.cache_key
    # The prompt is the same: only the key moves.
    assert vote(fresh="run-1").call.messages == vote().call.messages
