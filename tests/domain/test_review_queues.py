"""Review queue ordering in plain Python (tests/support/queues.py): the label policies and the
disagreement priority, as the definitions say them. The database's order is compared with
these in tests/evaluation/review/test_queue_order.py."""

from __future__ import annotations

import hashlib
import math

import pytest

from evaluation.metrics import aggregate
from evaluation.metrics.aggregation import Vote
from evaluation.review import queues, sampling
from tests.support import queues as python_order


def verdict(*outcomes: str, method: str = "majority"):
    return aggregate([Vote(f"j{i}", 0, o) for i, o in enumerate(outcomes)], method)


def test_uncertainty_is_one_for_an_even_split_and_zero_for_agreement():
    assert python_order.uncertainty([verdict("pass", "fail")]) == 1.0
    assert python_order.uncertainty([verdict("pass", "pass", "pass")]) == 0.0
    assert python_order.uncertainty([verdict("pass", "pass", "fail")]) == pytest.approx(2 / 3)
    # Mean over criteria; invalid votes do not count, criteria without a valid vote are skipped.
    mixed = [verdict("pass", "fail", "unparseable"), verdict("fail", "fail"), verdict("error")]
    assert python_order.uncertainty(mixed) == pytest.approx(0.5)
    assert python_order.uncertainty([verdict("unparseable", "error")]) is None
    assert python_order.uncertainty([]) is None


def test_random_share_is_stable_and_about_the_share():
    def share_of(dataset_id: int, share: float, answers: int = 2000) -> list[int]:
        return [
            a
            for a in range(answers)
            if sampling.in_random_share(dataset_id=dataset_id, answer_id=a, share=share)
        ]

    chosen = share_of(7, 0.2)
    assert chosen == share_of(7, 0.2)
    assert 340 < len(chosen) < 460  # 400 expected; the hash is uniform
    assert share_of(8, 0.2) != chosen  # each dataset draws its own share
    # Growing the share only adds answers: nothing labelled so far leaves the queue.
    assert set(chosen) <= set(share_of(7, 0.3))
    assert not share_of(7, 0, answers=50)


def facts(
    answer_id: int, labels: int = 0, uncertainty: float | None = 0.0, criteria: int = 5,
    judged: int = 5,
):  # fmt: skip
    return queues.AnswerFacts(answer_id, criteria, labels, uncertainty, judged)


def draw(dataset_id: int, answer_id: int) -> float:
    """The queue's uniform draw, computed here from its definition (sampling.py)."""
    digest = hashlib.sha256(f"{dataset_id}:{answer_id}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2**64


def test_labelling_queue_all_puts_answers_needing_labels_first_then_a_random_order():
    answers = [facts(1, labels=3)] + [facts(i, uncertainty=i / 40) for i in range(2, 40)]
    answers.append(facts(40, labels=1, uncertainty=None))
    ordered = python_order.labelling_queue(answers, policy="all", share=0.2, dataset_id=1)
    unlabelled = sorted(range(2, 40), key=lambda a: draw(1, a))
    assert [a.answer_id for a in ordered] == [*unlabelled, 40, 1]
    # Not by uncertainty: any first k answers are a simple random sample, which PPI++ needs.
    assert unlabelled != sorted(unlabelled, key=lambda a: -a)


def test_labelling_queue_uncertain_draws_by_priority():
    uncertainty = [0.0, 0.9, 0.2, 1.0, 0.5, None, 0.7, 0.1]
    answers = [facts(i, uncertainty=u) for i, u in enumerate(uncertainty)]

    def priority(a):  # sqrt(judged criteria × (uncertainty / 2 + 0.05)) / the draw
        return math.sqrt(5 * (uncertainty[a] / 2 + 0.05)) / draw(1, a)

    judged = [a for a, u in enumerate(uncertainty) if u is not None]
    by_priority = sorted(judged, key=lambda a: -priority(a))
    ordered = python_order.labelling_queue(answers, policy="uncertain", share=0.4, dataset_id=1)
    # 7 judged answers, 40% → 3 (rounded up): the three highest priorities, in that order.
    assert [a.answer_id for a in ordered] == by_priority[:3]
    one = python_order.labelling_queue(answers, policy="uncertain", share=0.01, dataset_id=1)
    assert [a.answer_id for a in one] == by_priority[:1]  # a share above zero offers one
    every = python_order.labelling_queue(answers, policy="uncertain", share=1.0, dataset_id=1)
    assert {a.answer_id for a in every} == set(judged)  # never an answer without a vote


def test_labelling_queue_uncertain_draws_uncertain_answers_more_often_but_never_never():
    """Over many datasets (independent draws), an answer's chance of being among the first
    tenth grows with the judges' uncertainty; a unanimous answer keeps a chance."""
    answers = [facts(i, uncertainty=(1.0 if i % 2 else 0.0)) for i in range(100)]
    drawn = {0.0: 0, 1.0: 0}
    for dataset_id in range(400):
        for a in python_order.labelling_queue(
            answers, policy="uncertain", share=0.1, dataset_id=dataset_id
        ):
            drawn[a.uncertainty] += 1
    # Sizes sqrt(0.55) and sqrt(0.05): chances about 3.3 : 1 before capping.
    assert drawn[0.0] > 0
    assert 2.0 < drawn[1.0] / drawn[0.0] < 5.0


def test_labelling_queue_random_follows_the_hash_in_the_draw_order():
    answers = [facts(i) for i in range(200)]
    ordered = python_order.labelling_queue(answers, policy="random", share=0.25, dataset_id=3)
    expected = [
        i for i in range(200) if sampling.in_random_share(dataset_id=3, answer_id=i, share=0.25)
    ]
    assert [a.answer_id for a in ordered] == sorted(expected, key=lambda a: draw(3, a))


def test_labelling_queue_refuses_an_unknown_policy_or_share():
    with pytest.raises(ValueError, match="policy"):
        python_order.labelling_queue([], policy="most", share=0.2, dataset_id=1)
    with pytest.raises(ValueError, match="share"):
        python_order.labelling_queue([], policy="random", share=1.5, dataset_id=1)


def item(answer, criterion, votes, humans=(), adjudicated=False):
    return queues.ItemFacts(
        answer, criterion, criterion, verdict(*votes), tuple(humans), adjudicated
    )


def test_disagreement_queue_lists_exactly_the_disagreeing_items_split_first():
    items = [
        item(1, 1, ("pass", "pass", "pass")),  # agreement, no human: out
        item(1, 2, ("pass", "pass", "fail")),  # split 2–1
        item(1, 3, ("pass", "fail", "unparseable")),  # split 1–1: the most even
        item(1, 4, ("fail", "fail", "fail"), ["pass"]),  # a human contradicts the judges
        item(1, 5, ("pass", "pass", "pass"), ["pass"]),  # human agrees: out
        item(1, 6, ("pass", "unparseable", "error")),  # invalid votes are not fails: out
        item(1, 7, ("fail", "fail", "pass"), adjudicated=True),  # decided: out
        item(2, 1, ("pass", "fail", "fail"), ["pass"]),  # split 1–2 and a human disagrees
        item(2, 2, ("pass", "pass", "pass"), ["fail", "fail"]),  # two humans contradict
        item(
            2, 3, ("unparseable", "unparseable"), ["fail"]
        ),  # no valid vote: nothing to contradict
    ]
    ordered = python_order.disagreement_queue(items)
    assert [(i.answer_id, i.criterion_id) for i in ordered] == [
        (1, 3), (2, 1), (1, 2), (2, 2), (1, 4),
    ]  # fmt: skip
    assert ordered[0].reason == "judges split 1–1"
    assert ordered[1].reason == "judges split 1–2; 1 human label differs"
    assert ordered[3].reason == "2 human labels differ"


def test_next_after_wraps_and_restarts_when_the_current_item_left():
    keys = [(1,), (2,), (3,)]
    assert python_order.next_after(keys, (1,)) == (2,)
    assert python_order.next_after(keys, (3,)) == (1,)
    assert python_order.next_after(keys, (9,)) == (1,)
    assert python_order.next_after([(1,)], (1,)) is None
    assert python_order.next_after([], (1,)) is None


def test_disagreement_ties_go_by_checklist_before_the_criterion_position():
    """As the database's sort key (order.disagreement_key_sql): answer, checklist, position,
    criterion id. A second expert's first criterion comes after the first expert's last."""
    split = ("pass", "fail", "fail")
    first_expert = [
        queues.ItemFacts(1, 11, 1, verdict(*split), (), checklist_id=5),
        queues.ItemFacts(1, 12, 2, verdict(*split), (), checklist_id=5),
    ]
    second_expert = [queues.ItemFacts(1, 10, 1, verdict(*split), (), checklist_id=6)]
    ordered = python_order.disagreement_queue([*second_expert, *first_expert])
    assert [i.criterion_id for i in ordered] == [11, 12, 10]
