"""Vote aggregation: majority, unanimity, mean threshold; invalid votes are never fails."""

from __future__ import annotations

import pytest

from evaluation.metrics import CriterionVerdict, Method, Vote, aggregate


def panel(*outcomes: str) -> list[Vote]:
    """Several models voting once each (multi-LLM voting)."""
    return [Vote(judge=f"judge-{i}", sample=0, outcome=o) for i, o in enumerate(outcomes)]


def samples(*outcomes: str) -> list[Vote]:
    """One model sampled several times (single-LLM voting)."""
    return [Vote(judge="gpt-4.1", sample=i, outcome=o) for i, o in enumerate(outcomes)]


# --- majority -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        (("pass", "pass", "fail"), "pass"),
        (("pass", "fail", "fail"), "fail"),
        (("pass", "pass", "pass"), "pass"),
        (("pass", "fail"), "undecided"),  # a tie
        (("pass", "fail", "error", "unparseable"), "undecided"),  # still a tie: 1–1
        (("pass", "unparseable", "unparseable"), "pass"),
        (("fail", "error"), "fail"),
        (("error", "error"), "undecided"),
        (("unparseable",), "undecided"),
        ((), "undecided"),
    ],
)
def test_majority(outcomes: tuple[str, ...], expected: str) -> None:
    assert aggregate(panel(*outcomes), Method.MAJORITY).outcome == expected


def test_majority_counts_votes_and_reports_invalid_apart() -> None:
    verdict = aggregate(panel("pass", "pass", "fail", "error", "unparseable"), Method.MAJORITY)
    assert verdict == CriterionVerdict(outcome="pass", passes=2, fails=1, invalid=2)
    assert verdict.valid == 3
    assert verdict.pass_share == pytest.approx(2 / 3)


# --- unparseable and error are never a fail, under any method -----------------------------


@pytest.mark.parametrize("method", list(Method))
@pytest.mark.parametrize("invalid", ["unparseable", "error"])
def test_invalid_votes_never_count_as_fail(method: Method, invalid: str) -> None:
    verdict = aggregate(panel("pass", invalid, invalid), method)
    assert verdict.outcome == "pass"
    assert verdict.fails == 0
    assert verdict.invalid == 2


@pytest.mark.parametrize("method", list(Method))
def test_only_invalid_votes_is_undecided(method: Method) -> None:
    verdict = aggregate(panel("error", "unparseable", "error"), method)
    assert verdict.outcome == "undecided"
    assert (verdict.passes, verdict.fails, verdict.invalid) == (0, 0, 3)
    assert verdict.pass_share is None


# --- unanimity -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        (("pass", "pass", "pass"), "pass"),
        (("pass", "pass", "fail"), "fail"),
        (("fail", "fail"), "fail"),
        (("pass", "error"), "pass"),  # every *valid* vote passes
        (("fail", "unparseable"), "fail"),
        (("error",), "undecided"),
        ((), "undecided"),
    ],
)
def test_unanimity(outcomes: tuple[str, ...], expected: str) -> None:
    assert aggregate(panel(*outcomes), Method.UNANIMITY).outcome == expected


# --- mean threshold ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "threshold", "expected"),
    [
        (("pass", "fail"), 0.5, "pass"),  # 1/2 >= 0.5
        (("pass", "fail", "fail"), 0.5, "fail"),  # 1/3 < 0.5
        (("pass", "pass", "fail"), 0.67, "fail"),  # 0.666… < 0.67
        (("pass", "pass", "fail"), 0.66, "pass"),
        (("pass",) * 7 + ("fail",) * 3, 0.7, "pass"),  # exactly 7/10 meets 0.7
        (("pass",) * 6 + ("fail",) * 4, 0.7, "fail"),
        (("fail", "fail"), 0.0, "pass"),  # a zero threshold passes any decided criterion
        (("pass", "pass", "fail"), 1.0, "fail"),
        (("pass", "error", "error", "error"), 0.75, "pass"),  # invalid votes excluded: 1/1
        (("error", "unparseable"), 0.5, "undecided"),
    ],
)
def test_mean_threshold(outcomes: tuple[str, ...], threshold: float, expected: str) -> None:
    verdict = aggregate(panel(*outcomes), Method.MEAN_THRESHOLD, threshold=threshold)
    assert verdict.outcome == expected


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan")])
def test_mean_threshold_rejects_a_threshold_outside_0_1(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        aggregate(panel("pass"), Method.MEAN_THRESHOLD, threshold=threshold)


# --- single-model sampling works the same as a multi-model panel ---------------------------


@pytest.mark.parametrize("method", list(Method))
def test_single_model_samples_aggregate_like_a_panel(method: Method) -> None:
    outcomes = ("pass", "fail", "pass", "unparseable", "pass")
    assert aggregate(samples(*outcomes), method) == aggregate(panel(*outcomes), method)


def test_single_model_five_samples_majority() -> None:
    verdict = aggregate(samples("fail", "pass", "fail", "error", "fail"), Method.MAJORITY)
    assert verdict.outcome == "fail"
    assert verdict.vote_split == "1–3"
    assert verdict.invalid == 1


# --- split detection and display ------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "split", "vote_split"),
    [
        (("pass", "pass", "fail"), True, "2–1"),
        (("pass", "pass", "pass"), False, "3–0"),
        (("fail", "fail", "error"), False, "0–2"),  # an invalid vote is not a disagreement
        (("pass", "unparseable"), False, "1–0"),
        (("error", "error"), False, "0–0"),
        (("pass", "fail"), True, "1–1"),
    ],
)
def test_split(outcomes: tuple[str, ...], split: bool, vote_split: str) -> None:
    verdict = aggregate(panel(*outcomes), Method.MAJORITY)
    assert verdict.split is split
    assert verdict.vote_split == vote_split


# --- inputs ---------------------------------------------------------------------------------


def test_method_may_be_given_as_its_stored_string() -> None:
    assert aggregate(panel("pass", "fail", "fail"), "majority").outcome == "fail"
    assert aggregate(panel("pass", "fail"), "mean_threshold", threshold=0.5).outcome == "pass"


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(ValueError):
        aggregate(panel("pass"), "plurality")


def test_unknown_outcome_is_rejected_not_silently_excluded() -> None:
    with pytest.raises(ValueError, match="outcome"):
        Vote(judge="a", sample=0, outcome="Pass")  # type: ignore[arg-type]


def test_a_vote_counted_twice_is_rejected() -> None:
    votes = [Vote("judge-a", 0, "pass"), Vote("judge-b", 0, "fail"), Vote("judge-a", 0, "pass")]
    with pytest.raises(ValueError, match="duplicate"):
        aggregate(votes, Method.MAJORITY)


def test_verdicts_are_frozen() -> None:
    verdict = aggregate(panel("pass"), Method.MAJORITY)
    with pytest.raises(AttributeError):
        verdict.outcome = "fail"  # type: ignore[misc]
