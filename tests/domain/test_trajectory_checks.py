"""The trajectory checks against hand-computed cases: each score, its pass at the threshold,
and a rationale naming what matched and what did not. No database, no LLM."""

from __future__ import annotations

import time

import pytest

from evaluation.checks.trajectory import (
    ToolCall,
    Trajectory,
    arguments_match,
    check_params,
    run_check,
    trajectory_of,
)

# The agent: search(SLVX 10-Q), calculator(4.12/4.0), search(SLVX 8-K), answer.
CALLS = (
    ToolCall("search", {"ticker": "SLVX", "form": "10-Q", "limit": 5}),
    ToolCall("calculator", {"expression": "4.12 / 4.0"}),
    ToolCall("search", {"ticker": "SLVX", "form": "8-K"}),
)
AGENT = Trajectory(
    text="Revenue was $4.12 billion, 3% above the $4.0 billion guidance.",
    calls=CALLS,
    steps=("plan", "search", "calculate", "write"),
    reference="Revenue was $4.12 billion, above guidance of $4.0 billion.",
)


def score(kind: str, params: dict, threshold: float | None = None, t: Trajectory = AGENT):
    assert check_params(kind, params, threshold) == []
    return run_check(kind, params, threshold, t)


def test_tool_set_is_the_jaccard_overlap_of_tool_names():
    exact = score("tool_set", {"tools": ["search", "calculator"]})
    assert (exact.score, exact.outcome) == (1.0, "pass")
    # expected {search, filings}; called {search, calculator}: 1 shared of 3 names.
    partial = score("tool_set", {"tools": ["search", "filings"]}, 0.3)
    assert partial.score == pytest.approx(1 / 3) and partial.outcome == "pass"
    assert "called search as expected; missing: filings; unexpected: calculator" in (
        partial.rationale
    )
    assert score("tool_set", {"tools": ["search", "filings"]}).outcome == "fail"  # default 1.0
    assert partial.rationale.startswith("No-LLM check (tool_set): score 0.33, 0.30 needed;")


def test_tool_sequence_exact_in_order_and_any_order_by_name():
    names = {"calls": [{"name": "search"}, {"name": "calculator"}, {"name": "search"}]}
    assert score("tool_sequence", {**names, "mode": "exact"}).score == 1.0
    reordered = {"calls": [{"name": "calculator"}, {"name": "search"}, {"name": "search"}]}
    assert score("tool_sequence", {**reordered, "mode": "exact"}).score == 0.0
    # In order: the longest common subsequence of (calculator, search, search) and
    # (search, calculator, search) is (calculator, search): 2 of 3.
    in_order = score("tool_sequence", {**reordered, "mode": "in_order"}, 0.6)
    assert in_order.score == pytest.approx(2 / 3) and in_order.outcome == "pass"
    assert "2 of 3 expected calls matched in order" in in_order.rationale
    assert score("tool_sequence", {**reordered, "mode": "any_order"}).score == 1.0
    # Any order, one-to-one: a third search was expected but only two were made.
    three = {"calls": [{"name": "search"}] * 3, "mode": "any_order"}
    result = score("tool_sequence", three, 0.5)
    assert result.score == pytest.approx(2 / 3)
    assert "not matched: search" in result.rationale


def test_tool_sequence_with_arguments():
    calls = [
        {"name": "search", "arguments": {"form": "10-Q", "ticker": "SLVX"}},  # key order differs
        {"name": "search", "arguments": {"ticker": "SLVX", "form": "8-K"}},
    ]
    compare = {"calls": calls, "mode": "in_order", "compare_arguments": True}
    # The first call adds an optional `limit`: ignored by default.
    assert score("tool_sequence", compare).score == 1.0
    strict = {**compare, "ignore_extra_arguments": False}
    result = score("tool_sequence", strict, 0.5)
    assert result.score == 0.5 and result.outcome == "pass"
    assert "1 of 2 expected calls with their arguments matched in order" in result.rationale
    wrong = {"calls": [{"name": "search", "arguments": {"form": "10-K"}}], "mode": "any_order",
             "compare_arguments": True}  # fmt: skip
    assert score("tool_sequence", wrong).score == 0.0
    # Without comparing arguments the same expectation matches by name.
    assert score("tool_sequence", {**wrong, "compare_arguments": False}).score == 1.0


def test_arguments_match_ignores_key_order_and_optionally_extra_keys():
    assert arguments_match({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1, "c": 0})
    assert not arguments_match({"a": 1}, {"a": 1, "c": 0}, ignore_extra=False)
    assert not arguments_match({"a": 1}, {"a": "1"})


def test_step_order_modes_over_reported_steps():
    steps = {"steps": ["plan", "search", "calculate", "write"]}
    assert score("step_order", {**steps, "mode": "exact"}).score == 1.0
    skipped = {"steps": ["plan", "verify", "write"], "mode": "in_order"}
    result = score("step_order", skipped, 0.6)
    assert result.score == pytest.approx(2 / 3) and result.outcome == "pass"
    assert "not matched: verify" in result.rationale
    backwards = {"steps": ["write", "plan"]}
    assert score("step_order", {**backwards, "mode": "in_order"}).score == 0.5
    assert score("step_order", {**backwards, "mode": "any_order"}).score == 1.0


def test_steps_default_to_the_tool_calls_names():
    turns = [
        {"role": "assistant", "content": "", "tool_calls": [{"name": "search", "arguments": {}}]},
        {"role": "tool", "content": "…"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "calc", "arguments": {}}]},
    ]
    t = trajectory_of("answer", turns, {})
    assert t.steps == ("search", "calc") and [c.name for c in t.calls] == ["search", "calc"]
    assert trajectory_of("answer", turns, {"steps": ["a"]}).steps == ("a",)


def test_keyword_share():
    # "guidance" and "revenue" found (case and plural folded); "margin" missing: 2 of 3.
    result = score("keyword_share", {"keywords": ["Revenues", "guidance", "margin"]})
    assert result.score == pytest.approx(2 / 3) and result.outcome == "pass"  # default 0.6
    assert "2 of 3 keywords found (Revenues, guidance); missing: margin" in result.rationale
    assert score("keyword_share", {"keywords": ["margin", "EBITDA"]}).outcome == "fail"


def test_rouge1_f1_by_hand():
    t = Trajectory(text="the cat sat on the mat", reference="the cat lay on the mat")
    # Tokens: answer 6, reference 6; shared: the×2, cat, on, mat = 5. P = R = 5/6, F1 = 5/6.
    result = score("rouge1", {}, 0.8, t)
    assert result.score == pytest.approx(5 / 6) and result.outcome == "pass"
    assert "5 shared words; precision 0.83, recall 0.83" in result.rationale
    assert "lay" in result.rationale
    # Different lengths: answer "the cat" (2), reference 6 tokens; shared 2.
    # P = 1, R = 1/3, F1 = 2 * 1/3 / (4/3) = 0.5.
    short = score("rouge1", {}, None, Trajectory(text="The cat.", reference=t.reference))
    assert short.score == pytest.approx(0.5) and short.outcome == "pass"  # default 0.4
    none = score("rouge1", {}, None, Trajectory(text="x", reference=""))
    assert none.score == 0.0 and "no reference answer" in none.rationale


def test_parameters_are_checked_by_name():
    assert check_params("tool_set", {"tools": []}) == [
        "params: 'tools' must list 1 to 100 entries, each a tool name"
    ]
    assert check_params("tool_sequence", {"calls": [{"name": "x"}], "mode": "sideways"}) == [
        "params: 'mode' must be one of exact, in_order, any_order"
    ]
    assert check_params("rouge1", {}, 1.5) == ["threshold must be a number from 0 to 1"]
    assert check_params("nope", {}) == [
        "kind must be one of tool_set, tool_sequence, step_order, keyword_share, rouge1, not 'nope'"
    ]


def test_each_check_runs_in_milliseconds():
    calls = tuple(ToolCall(f"tool{i % 7}", {"q": i}) for i in range(100))
    big = Trajectory(text="word " * 5000, calls=calls, steps=tuple(c.name for c in calls),
                     reference="word other " * 2500)  # fmt: skip
    expected = [{"name": f"tool{i % 5}", "arguments": {"q": i}} for i in range(100)]
    cases = [
        ("tool_set", {"tools": [f"tool{i}" for i in range(9)]}),
        ("tool_sequence", {"calls": expected, "mode": "in_order", "compare_arguments": True}),
        ("tool_sequence", {"calls": expected, "mode": "any_order"}),
        ("step_order", {"steps": [f"tool{i % 3}" for i in range(100)], "mode": "in_order"}),
        ("keyword_share", {"keywords": ["word", "other", "missing"]}),
        ("rouge1", {}),
    ]
    for kind, params in cases:
        started = time.perf_counter()
        run_check(kind, params, None, big)
        assert time.perf_counter() - started < 0.05, kind
