"""The labelling queue as a sampling design (evaluation/review/sampling.py), checked by
simulation: a population of answers whose judges are wrong more often where they split, and
whose mistakes lean one way (they pass too much). Reviewers label the first k answers of
the queue; over many independent draws (one per dataset id):

- the "least certain" queue with design weights (PPI++, `ppi_mean_weighted`) is unbiased;
- the same labels without the weights are not (what the analytics did before);
- it is more precise than labelling k answers of the random queue (a mean squared error
  about 13% lower here), which is what targeting the uncertain answers is for.
"""

from __future__ import annotations

import random
import statistics

import pytest

from evaluation.metrics import analytics as am
from evaluation.review import queues, sampling
from tests.support import queues as python_order

ANSWERS, CRITERIA, LABELLED, DRAWS = 300, 8, 40, 300


def population(seed: int = 11):
    """Per answer: its criteria as (vote share of pass, judges' majority Ŷ, human Y)."""
    rng = random.Random(seed)
    answers = {}
    for a in range(1, ANSWERS + 1):
        # How often this answer's criteria split the judges: most answers are easy, some hard.
        hard = 0.8 if rng.random() < 0.25 else 0.05
        items = []
        for _ in range(CRITERIA):
            if rng.random() < hard:
                share = rng.choice((1 / 3, 2 / 3))
                majority = float(share > 0.5)
                # Split: the human differs from the majority often, and mostly on passes.
                wrong = 0.45 if majority else 0.15
            else:
                share = rng.choice((0.0, 1.0, 1.0))
                majority, wrong = share, 0.03
            human = 1.0 - majority if rng.random() < wrong else majority
            items.append((share, majority, human))
        answers[a] = items
    return answers


def facts(answers) -> list[queues.AnswerFacts]:
    out = []
    for a, items in answers.items():
        u = [1 - abs(2 * share - 1) for share, _, _ in items]
        out.append(queues.AnswerFacts(a, CRITERIA, 0, sum(u) / len(u), len(u)))
    return out


def estimate(answers, labelled: list[int], weights: dict[int, float] | None) -> float:
    every = [(0, m, 1) for items in answers.values() for _, m, _ in items]
    if weights is None:  # plain PPI++, as if the labelled answers were a random draw
        items = [
            am.PPIItem(0, m, h if a in labelled else None)
            for a, its in answers.items()
            for _, m, h in its
        ]
        return am.ppi_mean(items).mean
    rows = [(0, h, m, weights[a], 1) for a in labelled for _, m, h in answers[a]]
    return am.ppi_mean_weighted(rows, every).mean


@pytest.fixture(scope="module")
def draws():
    answers = population()
    truth = statistics.fmean(h for items in answers.values() for _, _, h in items)
    all_facts = facts(answers)
    weighted, unweighted, uniform = [], [], []
    for dataset_id in range(1, DRAWS + 1):
        queue = python_order.labelling_queue(
            all_facts, policy="uncertain", share=1.0, dataset_id=dataset_id
        )
        labelled = [f.answer_id for f in queue[:LABELLED]]
        design = sampling.priority_design(
            dataset_id,
            ((f.answer_id, sampling.size(f.uncertainty, f.judged), f.answer_id in labelled)
             for f in all_facts),
        )  # fmt: skip
        assert set(design.weights) == set(labelled) and not design.outside
        weighted.append(estimate(answers, labelled, design.weights))
        unweighted.append(estimate(answers, labelled, None))
        random_queue = python_order.labelling_queue(
            all_facts, policy="all", share=1.0, dataset_id=dataset_id
        )
        uniform.append(estimate(answers, [f.answer_id for f in random_queue[:LABELLED]], None))
    return truth, weighted, unweighted, uniform


def test_design_weights_make_the_targeted_labels_unbiased(draws):
    truth, weighted, unweighted, _ = draws
    error = statistics.stdev(weighted) / DRAWS**0.5  # of the mean of the draws
    assert abs(statistics.fmean(weighted) - truth) < 3 * error
    # Without the weights the same labels over-correct: the judges' mistakes are drawn too
    # often. This is what makes the test able to fail.
    bias = statistics.fmean(unweighted) - truth
    assert abs(bias) > 6 * statistics.stdev(unweighted) / DRAWS**0.5


def test_targeting_uncertain_answers_beats_a_random_draw_of_as_many(draws):
    truth, weighted, _, uniform = draws

    def mse(xs):
        return statistics.fmean((x - truth) ** 2 for x in xs)

    # 0.87 on this population: the chances follow the judges' splits, but the human
    # labels also correct the judges' lean towards pass on easy answers, which no split
    # shows. Drawn the other way round (chances falling with uncertainty) it is above 1.
    assert mse(weighted) < 0.95 * mse(uniform)


def test_the_drawn_prefix_stops_at_the_first_unlabelled_answer():
    # Sizes 1, 2, 3, 4 and 5: the priorities follow the hash; label the first two and the
    # fourth in priority order: the fourth is after an unlabelled answer, so it is outside.
    sizes = {a: float(a) for a in range(1, 6)}
    order = sorted(sizes, key=lambda a: -sampling.priority(dataset_id=9, answer_id=a, size=a))
    labelled = {order[0], order[1], order[3]}
    design = sampling.priority_design(9, ((a, s, a in labelled) for a, s in sizes.items()))
    tau = sampling.priority(dataset_id=9, answer_id=order[2], size=sizes[order[2]])
    assert design.threshold == pytest.approx(tau)
    assert design.weights == {a: pytest.approx(max(1.0, tau / sizes[a])) for a in order[:2]}
    assert design.outside == {order[3]}
    # Everything labelled: a census, every weight 1.
    census = sampling.priority_design(9, ((a, s, True) for a, s in sizes.items()))
    assert census.weights == dict.fromkeys(sizes, 1.0) and census.threshold == 0.0


def test_a_skipped_answer_does_not_cut_the_sample_short():
    sizes = {a: 1.0 + a % 3 for a in range(1, 21)}
    order = sorted(
        sizes, key=lambda a: -sampling.priority(dataset_id=4, answer_id=a, size=sizes[a])
    )
    labelled = set(order[:19]) - {order[4]}  # the fifth skipped, the last not reached
    design = sampling.priority_design(4, ((a, s, a in labelled) for a, s in sizes.items()))
    # 18 of the first 19 labelled (95% ≥ 90%): they are the sample, the skip is missing.
    assert set(design.weights) == labelled and design.skipped == 1 and not design.outside
    tau = sampling.priority(dataset_id=4, answer_id=order[19], size=sizes[order[19]])
    assert design.threshold == pytest.approx(tau)
    # Three of the first ten skipped: the head ends where 90% of it is labelled.
    labelled = set(order[:12]) - {order[1], order[2], order[3]}
    design = sampling.priority_design(4, ((a, s, a in labelled) for a, s in sizes.items()))
    assert set(design.weights) == {order[0]}
    assert design.outside == labelled - {order[0]}
