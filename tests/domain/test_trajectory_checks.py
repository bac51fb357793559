"""The trajectory checks against hand-computed cases: each score, its pass at the threshold,
and a rationale naming what matched and what did not. No database, no LLM."""

from __future__ import annotations

import time

import pytest

from evaluation.checks.trajectory import (
    ToolCall,
    Trajectory,
    arguments_match,
    as_applied,
    check_params,
    run_check,
    tokens,
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


def test_tool_sequence_modes_pass_or_fail_by_default():
    """AgentFlow's match types: the expected calls are there, in the mode's sense, or not."""
    names = {"calls": [{"name": "search"}, {"name": "calculator"}, {"name": "search"}]}
    assert score("tool_sequence", {**names, "mode": "exact"}).score == 1.0
    reordered = {"calls": [{"name": "calculator"}, {"name": "search"}, {"name": "search"}]}
    assert score("tool_sequence", {**reordered, "mode": "exact"}).score == 0.0
    # In order: (calculator, search, search) is not a subsequence of (search, calculator,
    # search); the rationale still says how much of it is.
    in_order = score("tool_sequence", {**reordered, "mode": "in_order"})
    assert (in_order.score, in_order.outcome) == (0.0, "fail")
    assert "2 of 3 expected calls matched in order" in in_order.rationale
    subsequence = {"calls": [{"name": "search"}, {"name": "search"}], "mode": "in_order"}
    assert score("tool_sequence", subsequence).score == 1.0  # calculator between: allowed
    assert score("tool_sequence", {**reordered, "mode": "any_order"}).score == 1.0
    # Any order, one-to-one: a third search was expected but only two were made.
    three = {"calls": [{"name": "search"}] * 3, "mode": "any_order"}
    result = score("tool_sequence", three)
    assert (result.score, result.outcome) == (0.0, "fail")
    assert "2 of 3 expected calls matched in any order" in result.rationale
    assert "not matched: search" in result.rationale


def test_partial_credit_is_an_option():
    reordered = {"calls": [{"name": "calculator"}, {"name": "search"}, {"name": "search"}]}
    # The longest common subsequence of (calculator, search, search) and (search,
    # calculator, search) is (calculator, search): 2 of 3.
    in_order = {**reordered, "mode": "in_order", "scoring": "partial"}
    result = score("tool_sequence", in_order, 0.6)
    assert result.score == pytest.approx(2 / 3) and result.outcome == "pass"
    three = {"calls": [{"name": "search"}] * 3, "mode": "any_order", "scoring": "partial"}
    assert score("tool_sequence", three, 0.5).score == pytest.approx(2 / 3)
    # Exact stays all or nothing.
    exact = {**reordered, "mode": "exact", "scoring": "partial"}
    assert score("tool_sequence", exact, 0.5).score == 0.0
    # Pass/fail asked for explicitly: a lower threshold changes nothing but 0 passing.
    strict = {**in_order, "scoring": "pass_fail"}
    assert score("tool_sequence", strict, 0.6).outcome == "fail"


def test_checks_saved_before_scoring_existed_keep_their_verdicts():
    """No `scoring`: a threshold below 1 meant partial credit, and keeps it; at the default
    threshold both readings give the same verdict, and pass/fail is read."""
    reordered = {"calls": [{"name": "calculator"}, {"name": "search"}, {"name": "search"}],
                 "mode": "in_order"}  # fmt: skip
    graded = score("tool_sequence", reordered, 0.6)
    assert graded.score == pytest.approx(2 / 3) and graded.outcome == "pass"
    for threshold in (None, 1.0):
        result = score("tool_sequence", reordered, threshold)
        assert (result.score, result.outcome) == (0.0, "fail")
    steps = {"steps": ["plan", "verify", "write"], "mode": "in_order"}
    assert score("step_order", steps, 0.6).score == pytest.approx(2 / 3)
    assert score("step_order", steps).score == 0.0


def test_tool_sequence_with_arguments():
    calls = [
        {"name": "search", "arguments": {"form": "10-Q", "ticker": "SLVX"}},  # key order differs
        {"name": "search", "arguments": {"ticker": "SLVX", "form": "8-K"}},
    ]
    compare = {"calls": calls, "mode": "in_order", "compare_arguments": True}
    # The first call adds an optional `limit`: ignored by default.
    assert score("tool_sequence", compare).score == 1.0
    strict = {**compare, "ignore_extra_arguments": False}
    assert score("tool_sequence", strict).score == 0.0
    result = score("tool_sequence", {**strict, "scoring": "partial"}, 0.5)
    assert result.score == 0.5 and result.outcome == "pass"
    assert "1 of 2 expected calls with their arguments matched in order" in result.rationale
    wrong = {"calls": [{"name": "search", "arguments": {"form": "10-K"}}], "mode": "any_order",
             "compare_arguments": True}  # fmt: skip
    assert score("tool_sequence", wrong).score == 0.0
    # Without comparing arguments the same expectation matches by name.
    assert score("tool_sequence", {**wrong, "compare_arguments": False}).score == 1.0
    # An expected call without arguments accepts any, extra keys counted or not.
    bare = {"calls": [{"name": "calculator"}], "mode": "any_order", "compare_arguments": True,
            "ignore_extra_arguments": False}  # fmt: skip
    assert score("tool_sequence", bare).score == 1.0


def test_any_order_finds_the_one_to_one_matching_first_fit_misses():
    # Expected search(SLVX) and search(SLVX, 10-Q); made search(SLVX, 10-Q), search(SLVX).
    # First fit gives the 10-Q call to search(SLVX) and leaves search(SLVX, 10-Q) unmatched.
    made = (ToolCall("search", {"ticker": "SLVX", "form": "10-Q"}),
            ToolCall("search", {"ticker": "SLVX"}))  # fmt: skip
    t = Trajectory(text="", calls=made)
    expected = {"calls": [{"name": "search", "arguments": {"ticker": "SLVX"}},
                          {"name": "search", "arguments": {"ticker": "SLVX", "form": "10-Q"}}],
                "mode": "any_order", "compare_arguments": True}  # fmt: skip
    assert score("tool_sequence", expected, t=t).score == 1.0


def test_arguments_match_ignores_key_order_and_optionally_extra_keys():
    assert arguments_match({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1, "c": 0})
    assert not arguments_match({"a": 1}, {"a": 1, "c": 0}, ignore_extra=False)
    assert not arguments_match({"a": 1}, {"a": "1"})
    assert arguments_match({}, {"a": 1}, ignore_extra=False)  # no arguments: any


def test_step_order_modes_over_reported_steps():
    steps = {"steps": ["plan", "search", "calculate", "write"]}
    assert score("step_order", {**steps, "mode": "exact"}).score == 1.0
    assert score("step_order", {"steps": ["plan", "write"], "mode": "in_order"}).score == 1.0
    skipped = {"steps": ["plan", "verify", "write"], "mode": "in_order", "scoring": "partial"}
    result = score("step_order", skipped, 0.6)
    assert result.score == pytest.approx(2 / 3) and result.outcome == "pass"
    assert "not matched: verify" in result.rationale
    backwards = {"steps": ["write", "plan"]}
    assert score("step_order", {**backwards, "mode": "in_order"}).score == 0.0
    partial = {**backwards, "mode": "in_order", "scoring": "partial"}
    assert score("step_order", partial, 0.5).score == 0.5
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


def test_rouge1_tokenises_as_rouge_score_by_default_and_unicode_on_request():
    t = Trajectory(text="Café résumé straße", reference="Cafe resume strasse")
    # rouge-score keeps a-z and 0-9 only: "caf r sum stra e" against "cafe resume strasse".
    assert tokens(t.text) == ["caf", "r", "sum", "stra", "e"]
    assert score("rouge1", {}, None, t).score == 0.0
    assert score("rouge1", {"tokenizer": "rouge_score"}, None, t).score == 0.0
    # Unicode words, case-folded: café, résumé, strasse against cafe, resume, strasse.
    assert tokens(t.text, "unicode") == ["café", "résumé", "strasse"]
    assert score("rouge1", {"tokenizer": "unicode"}, None, t).score == pytest.approx(1 / 3)
    # Figures split at the point either way; another script has no rouge-score token.
    assert tokens("$4.12 billion") == ["4", "12", "billion"]
    assert tokens("Выручка 4,12 млрд") == ["4", "12"]
    assert tokens("Выручка", "unicode") == ["выручка"]


def test_parameters_are_checked_by_name():
    assert check_params("tool_set", {"tools": []}) == [
        "params: 'tools' must list 1 to 100 entries, each a tool name"
    ]
    assert check_params("tool_sequence", {"calls": [{"name": "x"}], "mode": "sideways"}) == [
        "params: 'mode' must be one of exact, in_order, any_order"
    ]
    assert check_params("rouge1", {}, 1.5) == ["threshold must be a number from 0 to 1"]
    assert check_params("step_order", {"steps": ["a"], "scoring": "graded"}) == [
        "params: 'scoring' must be one of pass_fail, partial"
    ]
    assert check_params("rouge1", {"tokenizer": "nltk"}) == [
        "params: 'tokenizer' must be one of rouge_score, unicode"
    ]
    assert check_params("rouge1", {"stemmer": True}) == ["params: unknown parameter 'stemmer'"]
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
        ("tool_sequence", {"calls": expected, "mode": "any_order", "compare_arguments": True}),
        ("step_order", {"steps": [f"tool{i % 3}" for i in range(100)], "mode": "in_order"}),
        ("keyword_share", {"keywords": ["word", "other", "missing"]}),
        ("rouge1", {}),
        ("rouge1", {"tokenizer": "unicode"}),
    ]
    for kind, params in cases:
        started = time.perf_counter()
        run_check(kind, params, None, big)
        assert time.perf_counter() - started < 0.05, kind


def test_a_recorded_check_as_applied_and_records_no_run_writes():
    """What the verdicts API shows of a verdict's check: the threshold applied (the kind's
    default when none was stored) and the scoring read; a record a run never writes (an
    imported verdict may carry anything) shows as no check rather than failing."""
    stored = {"kind": "step_order", "params": {"steps": ["a"], "mode": "in_order"},
              "threshold": 0.5}  # fmt: skip
    assert as_applied(stored, 0.5) == {**stored, "score": 0.5, "scoring": "partial"}
    assert as_applied({**stored, "threshold": None}, 1)["threshold"] == 1.0
    assert as_applied({"kind": "rouge1", "params": {}}, 0.4)["scoring"] is None
    for bad in ({**stored, "threshold": "x"}, {**stored, "params": [1]}, {"kind": "nope"}, "x"):
        assert as_applied(bad, 0.5) is None
    assert as_applied(stored, "high")["score"] is None
