"""The reward's plain-Python parts: shaping, votes to a reward, the trainer shapes."""

from __future__ import annotations

import pytest

from evaluation.metrics.aggregation import Vote
from evaluation.rewards import request_shapes, reward
from evaluation.rewards.length_shaping import Shaping, shaped, words

SHARE = reward.strategy_named("share")


def criterion(pk: int, checklist: int, *outcomes: str) -> reward.CriterionVotes:
    votes = tuple(reward.CastVote(Vote("j", s, o), f"said {o}") for s, o in enumerate(outcomes))
    return reward.CriterionVotes(pk, checklist, f"Criterion {pk}.", votes)


def test_shaping_is_off_by_default_and_never_invents_a_reward():
    assert shaped(0.8, 10_000, Shaping()) == 0.8
    assert shaped(None, 10, Shaping(max_words=5)) is None


def test_length_normalisation_scales_only_past_the_reference():
    shaping = Shaping(length_reference=100, length_exponent=0.5)
    assert shaped(0.8, 100, shaping) == 0.8
    assert shaped(0.8, 400, shaping) == pytest.approx(0.8 * 0.5)  # (100/400)^0.5


def test_the_over_length_penalty_is_linear_and_clipped_at_zero():
    shaping = Shaping(max_words=100, over_length_penalty=0.5)
    assert shaped(0.8, 100, shaping) == 0.8
    assert shaped(0.8, 150, shaping) == pytest.approx(0.8 - 0.5 * 0.5)
    assert shaped(0.8, 1000, shaping) == 0.0


def test_shaping_refuses_values_out_of_range():
    with pytest.raises(ValueError, match="over_length_penalty"):
        Shaping(over_length_penalty=2)
    with pytest.raises(ValueError):
        Shaping(max_words=-1)


def test_words_are_whitespace_runs():
    assert words("  Revenue was\n$4.1  billion. ") == 4


def test_the_reward_is_the_mean_over_checklists_of_their_share():
    votes = [criterion(1, 10, "pass"), criterion(2, 10, "fail"), criterion(3, 20, "pass")]
    result = reward.item_reward(votes, method="majority", threshold=0.5, strategy=SHARE)
    assert result.score == pytest.approx((0.5 + 1.0) / 2)
    assert (result.failed, result.undecided) == (False, 0)
    assert [c.rationale for c in result.criteria] == ["said pass", "said fail", "said pass"]


def test_undecided_criteria_leave_the_denominator_and_are_counted():
    votes = [criterion(1, 10, "pass", "fail"), criterion(2, 10, "pass", "pass")]
    result = reward.item_reward(votes, method="majority", threshold=0.5, strategy=SHARE)
    assert (result.score, result.undecided) == (1.0, 1)


def test_one_failed_vote_fails_the_item_with_no_score():
    votes = [criterion(1, 10, "pass", "pass", "error"), criterion(2, 10, "fail")]
    result = reward.item_reward(votes, method="majority", threshold=0.5, strategy=SHARE)
    assert (result.score, result.failed) == (None, True)
    assert result.criteria[0].outcome == "pass"  # its verdict is still reported
    assert result.criteria[0].invalid == 1


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown scoring strategy"):
        reward.strategy_named("median")


def test_openrlhf_completion_is_what_follows_the_prompt_less_the_tail_tokens():
    items = request_shapes.openrlhf_items(
        {"query": ["<s>Q? A. </s></s>"], "prompts": ["Q?"], "labels": [" q-1 "]},
        max_batch=8, strip=["</s>"],
    )  # fmt: skip
    assert items == [request_shapes.Item("q-1", "A.")]


def test_openrlhf_lists_must_match():
    with pytest.raises(request_shapes.RefusedInput) as refused:
        request_shapes.openrlhf_items({"query": ["a"], "prompts": [], "labels": ["q"]}, max_batch=8)
    assert refused.value.problems[0].field == "labels"


def test_every_bad_item_is_listed_with_its_index():
    data = {"items": [{"query": "q", "completion": "ok"}, {"query": "", "completion": ""}]}
    with pytest.raises(request_shapes.RefusedInput) as refused:
        request_shapes.native_items(data, max_batch=8)
    assert [(p.item, p.field) for p in refused.value.problems] == [(1, "query"), (1, "completion")]
    assert refused.value.body()["detail"].startswith("Item 1, field “query”")


def test_verify_reads_the_assistant_messages_text_only():
    output = [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
        {"type": "function_call", "name": "search", "arguments": "{}"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Part one."},
            {"type": "refusal", "refusal": "no"},
            {"type": "output_text", "text": "Part two."},
        ]},
    ]  # fmt: skip
    assert request_shapes.output_text(output) == "Part one.\n\nPart two."


def test_shaping_from_url_parameters_falls_back_to_the_defaults():
    defaults = Shaping(max_words=300)
    assert request_shapes.shaping_from({"length_reference": "200"}, defaults) == Shaping(
        length_reference=200, max_words=300
    )
    with pytest.raises(request_shapes.RefusedInput) as refused:
        request_shapes.shaping_from({"max_words": "many"}, defaults)
    assert refused.value.problems[0].field == "max_words"
