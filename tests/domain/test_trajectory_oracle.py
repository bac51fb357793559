"""The sequence checks held against an independent oracle on generated trajectories.

The oracle is written from AgentFlow's definitions of its match types (docs/qa/evaluation/
criteria.md: EXACT "same tools, same order, same count"; IN_ORDER "expected tools must
appear in order; extra tools at any position are allowed"; ANY_ORDER "all expected tools
must appear; order and extras do not matter"), by brute force over every choice of the
agent's calls, sharing no code with evaluation.checks.trajectory: no dynamic programming,
no augmenting paths. Partial credit is held against the largest number of expected calls
that can be matched in the mode's sense, found the same way.
"""

from __future__ import annotations

from itertools import combinations, permutations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evaluation.checks.trajectory import ToolCall, Trajectory, run_check

NAMES = ("search", "calc", "fetch")


def oracle_same(expected: dict, actual: ToolCall, *, compare: bool, ignore_extra: bool) -> bool:
    if expected["name"] != actual.name:
        return False
    wanted = expected.get("arguments") or {}
    if not compare or not wanted:  # no arguments expected: any will do
        return True
    if not ignore_extra and sorted(actual.arguments) != sorted(wanted):
        return False
    return all(key in actual.arguments and actual.arguments[key] == v for key, v in wanted.items())


def oracle_matched(mode: str, expected: list, actual: list, same) -> int:
    """The most expected calls matched in the mode's sense (exact: all or none)."""
    n = len(expected)
    if mode == "exact":
        return n if n == len(actual) and all(map(same, expected, actual)) else 0
    for k in range(n, 0, -1):
        for chosen in combinations(range(n), k):
            wanted = [expected[i] for i in chosen]
            # in order: positions kept in order; any order: distinct calls, any order
            picks = combinations(actual, k) if mode == "in_order" else permutations(actual, k)
            if any(all(map(same, wanted, pick)) for pick in picks):
                return k
    return 0


arguments = st.dictionaries(st.sampled_from(["ticker", "form"]), st.sampled_from(["A", "B"]))
actual_calls = st.lists(
    st.builds(ToolCall, st.sampled_from(NAMES), arguments), min_size=0, max_size=5
)
expected_calls = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(NAMES)}, optional={"arguments": arguments}),
    min_size=1,
    max_size=4,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expected=expected_calls,
    actual=actual_calls,
    mode=st.sampled_from(["exact", "in_order", "any_order"]),
    scoring=st.sampled_from([None, "pass_fail", "partial"]),
    compare=st.booleans(),
    ignore_extra=st.booleans(),
)
# Where first fit fails: search(A) takes the call with both arguments, and search(A, B) is
# left without one, though a one-to-one matching of both exists.
@example(
    expected=[{"name": "search", "arguments": {"ticker": "A"}},
              {"name": "search", "arguments": {"ticker": "A", "form": "B"}}],
    actual=[ToolCall("search", {"ticker": "A", "form": "B"}), ToolCall("search", {"ticker": "A"})],
    mode="any_order", scoring=None, compare=True, ignore_extra=True,
)  # fmt: skip
def test_tool_sequence_equals_the_oracle(expected, actual, mode, scoring, compare, ignore_extra):
    params = {"calls": expected, "mode": mode, "compare_arguments": compare,
              "ignore_extra_arguments": ignore_extra}  # fmt: skip
    if scoring:
        params["scoring"] = scoring

    def same(e, a):
        return oracle_same(e, a, compare=compare, ignore_extra=ignore_extra)

    matched = oracle_matched(mode, expected, actual, same)
    result = run_check("tool_sequence", params, None, Trajectory(text="", calls=tuple(actual)))
    everything = matched == len(expected)
    if scoring == "partial":
        assert result.score == matched / len(expected)
    else:  # pass/fail, AgentFlow's reading, and the default at the default threshold
        assert result.score == (1.0 if everything else 0.0)
    assert result.passed == everything  # at the default threshold 1, whatever the scoring


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expected=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
    steps=st.lists(st.sampled_from(NAMES), max_size=5),
    mode=st.sampled_from(["exact", "in_order", "any_order"]),
    threshold=st.sampled_from([None, 0.5, 1.0]),
)
def test_step_order_equals_the_oracle(expected, steps, mode, threshold):
    """Node order as AgentFlow's node-order criterion; a check saved without `scoring` and a
    threshold below 1 keeps its partial credit."""
    matched = oracle_matched(mode, expected, steps, str.__eq__)
    result = run_check(
        "step_order", {"steps": expected, "mode": mode}, threshold,
        Trajectory(text="", steps=tuple(steps)),
    )  # fmt: skip
    if threshold is not None and threshold < 1:
        assert result.score == matched / len(expected)
        assert result.passed == (matched / len(expected) >= threshold)
    else:
        assert result.score == (1.0 if matched == len(expected) else 0.0)
