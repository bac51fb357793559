"""The batched verdict prompt, its strict parser and the sharing of a call's cost; the cost of
cached prompt tokens. No database."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from evaluation.judging import batched, prompts
from evaluation.metrics.cost import JudgeUsage

CRITERIA = ["States Q3 revenue of $4.12 billion.", "Reports a gross margin of 61.5%."]


def single(criterion: str, **extra) -> list[dict[str, str]]:
    return prompts.messages(
        query="What did SLVX report?", query_date=dt.date(2026, 3, 1),
        answer="Revenue was $4.12 billion.", criterion=criterion, **extra,
    )  # fmt: skip


def item(number, verdict="pass", failure_kind=None, rationale="Quoted."):
    return {
        "criterion": number, "verdict": verdict, "failure_kind": failure_kind,
        "rationale": rationale,
    }  # fmt: skip


def test_the_batched_prompt_keeps_the_single_prompt_and_lists_the_criteria():
    one = single(CRITERIA[0])
    sent = batched.messages(one, CRITERIA)
    assert sent[0]["content"] == f"{one[0]['content']} {batched.BATCH_INSTRUCTIONS}"
    head = one[1]["content"].removesuffix(f"\n\nCriterion: {CRITERIA[0]}")
    assert sent[1]["content"] == (
        f"{head}\n\nCriteria:\n1. States Q3 revenue of $4.12 billion.\n"
        "2. Reports a gross margin of 61.5%."
    )


def test_prompts_that_differ_only_in_the_criterion_share_a_head():
    first, second = (batched.head_of(single(c), c) for c in CRITERIA)
    assert first is not None and first == second
    evidence = prompts.reference_evidence("Revenue: $4.12B.", budget_tokens=100)
    assert batched.head_of(single(CRITERIA[0], evidence=evidence), CRITERIA[0]) != first
    # A prompt that does not end with its criterion is never batched.
    assert batched.head_of(single(CRITERIA[0]), "Another criterion.") is None


def test_the_parser_takes_each_well_formed_item_and_names_the_others():
    reply = batched.parse(
        {"verdicts": [item(1), item(2, "fail", "incorrect"), item(3, "maybe"), item(9)]},
        size=4,
    )
    assert reply.verdicts == {
        1: prompts.ParsedVerdict("pass", "", "Quoted."),
        2: prompts.ParsedVerdict("fail", "incorrect", "Quoted."),
    }
    assert reply.malformed == {3}  # 4 is missing; 9 is not a criterion of the batch


def test_a_criterion_answered_twice_or_by_a_non_number_gives_no_verdict():
    reply = batched.parse(
        {"verdicts": [item(1), item(1, "fail", "missing"), item(True), item("2"), "x"]}, size=2
    )
    assert reply.verdicts == {} and reply.malformed == {1}


def test_a_reply_without_a_list_of_verdicts_is_unparseable():
    assert batched.parse(None, size=2) is None
    assert batched.parse({"verdict": "pass"}, size=2) is None
    assert batched.parse({"verdicts": "pass"}, size=2) is None


def test_shares_add_up_to_the_call():
    assert batched.split(10, 3) == [4, 3, 3]
    assert batched.split(1, 4) == [1, 0, 0, 0]
    assert sum(batched.split(1234, 20)) == 1234


def test_cached_prompt_tokens_are_billed_at_their_price():
    usage = JudgeUsage(
        "gpt", True, prompt_tokens=1_000_000, completion_tokens=1_000_000,
        prompt_price=Decimal("2"), completion_price=Decimal("8"), cached_tokens=400_000,
        cached_prompt_price=Decimal("0.5"),
    )  # fmt: skip
    assert usage.cost() == Decimal("0.6") * 2 + Decimal("0.4") * Decimal("0.5") + 8
    # Without a cached price, cached tokens cost the prompt price.
    plain = JudgeUsage("gpt", True, 1_000_000, 0, Decimal("2"), Decimal("8"), cached_tokens=400_000)
    assert plain.cost() == Decimal(2)
