"""The figures of a dataset's pairwise votes, read from the database and computed by
evaluation.metrics.preference (the plain-Python core): win / tie / loss per pair of sides
with Wilson intervals, Bradley–Terry strengths for three or more sides, agreement between
reviewers, and whether the checklist score of a run predicts the reviewers' preference.

A side is a system and a run label ("Alpha", "Alpha (v2)"). Each vote counts once in the
win rates; a pair's preference, where one is needed (agreement with the checklist), is its
reviewers' majority.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from annotation.models import Dataset
from evaluation.charts.bars import BarChart, BarInput, bar_chart
from evaluation.metrics import preference
from evaluation.pairwise import judging
from evaluation.pairwise.models import PairwiseJudgeVote, PairwiseSession, PairwiseVote
from evaluation.runs.models import Run
from evaluation.runs.scores import run_scores


def side_name(system: object, run_label: str) -> str:
    return f"{system} ({run_label})" if run_label else str(system)


@dataclass(frozen=True)
class SidesRow:
    """The votes of the sessions that compare side `a` with side `b`."""

    a: str
    b: str
    figures: preference.WinTieLoss


@dataclass(frozen=True)
class DatasetFigures:
    rows: tuple[SidesRow, ...]
    strengths: tuple[preference.Strength, ...]  # three or more sides only
    agreement: preference.RaterAgreement | None
    prediction: preference.Prediction | None  # with a run only
    votes: int
    # The same figure for the pairwise judges' verdicts in place of the reviewers' votes
    # (with a run, on the pairs the judges decided): does the checklist predict what the
    # pairwise judge prefers? None without a run or without judge replies.
    judge_prediction: preference.Prediction | None = None
    judge_pairs: int = 0  # pairs with a judge verdict


def _votes(dataset: Dataset):
    """Every cast vote of the dataset's sessions, with what the figures need of its pair, in
    one query."""
    return (
        PairwiseVote.objects.filter(pair__session__dataset=dataset)
        .exclude(preference="")
        .values_list(
            "pair_id", "rater", "preference", "pair__query_id", "pair__query__category__name",
            "pair__answer_a_id", "pair__answer_b_id", "pair__session_id",
        )
        .order_by("pair_id", "rater")
    )  # fmt: skip


def judge_preferences(dataset: Dataset) -> tuple[dict[int, dict[str, str]], dict[int, tuple]]:
    """The pairwise judges' verdicts on the dataset's pairs, in the shape the reviewers' votes
    take in the figures: pair id → judge name → side (each judge's verdict as the session
    page reads it, evaluation.pairwise.judging.judge_verdicts), and pair id → (answer A,
    answer B, category). One query."""
    rows = (
        PairwiseJudgeVote.objects.filter(
            pair__session__dataset=dataset, outcome=PairwiseJudgeVote.Outcome.VOTED
        )
        .values_list(
            "judge__name", "pair_id", "sample", "order", "preference", "pair__answer_a_id",
            "pair__answer_b_id", "pair__query__category__name",
        )
        .order_by()
    )  # fmt: skip
    replies: dict = defaultdict(lambda: defaultdict(dict))
    pairs: dict[int, tuple] = {}
    for judge, pair_id, sample, order, side, answer_a, answer_b, category in rows:
        replies[judge][(pair_id, sample)][order] = side
        pairs[pair_id] = (answer_a, answer_b, category or "")
    by_pair: dict[int, dict[str, str]] = defaultdict(dict)
    for judge, by_item in replies.items():
        for pair_id, verdict in judging.judge_verdicts(by_item)[1].items():
            by_pair[pair_id][judge] = verdict
    return by_pair, pairs


def _sides(dataset: Dataset) -> dict[int, tuple[str, str]]:
    sessions = PairwiseSession.objects.filter(dataset=dataset).select_related(
        "system_a", "system_b"
    )
    return {
        s.pk: (side_name(s.system_a, s.run_label_a), side_name(s.system_b, s.run_label_b))
        for s in sessions
    }


def session_figures(
    session: PairwiseSession,
) -> tuple[preference.WinTieLoss, preference.RaterAgreement]:
    votes = PairwiseVote.objects.filter(pair__session=session).exclude(preference="")
    by_pair: dict[int, dict[str, str]] = defaultdict(dict)
    for pair_id, rater, value in votes.values_list("pair_id", "rater", "preference"):
        by_pair[pair_id][rater] = value
    every = [v for by_rater in by_pair.values() for v in by_rater.values()]
    return preference.win_tie_loss(every), preference.rater_agreement(by_pair)


def dataset_figures(
    dataset: Dataset, run: Run | None = None, *, resamples: int = 500
) -> DatasetFigures:
    """Six queries (sessions, votes, and with a run the judges' replies and its kept scores
    of the paired answers, once for the reviewers and once for the judges), whatever the
    number of votes."""
    sides = _sides(dataset)
    rows = list(_votes(dataset)) if sides else []  # most datasets have no session: one query
    by_sides: dict[tuple[str, str], list[str]] = defaultdict(list)
    comparisons = []
    by_pair: dict[int, dict[str, str]] = defaultdict(dict)
    pairs: dict[int, tuple] = {}
    for pair_id, rater, value, query_id, category, answer_a, answer_b, session_id in rows:
        a, b = sides[session_id]
        by_sides[(a, b)].append(value)
        comparisons.append((query_id, (a, b, value)))
        by_pair[pair_id][rater] = value
        pairs[pair_id] = (answer_a, answer_b, category or "")
    distinct = {s for a, b in by_sides for s in (a, b)}
    judged, judged_pairs = judge_preferences(dataset) if sides and run is not None else ({}, {})
    strengths = (
        tuple(preference.bradley_terry_intervals(comparisons, resamples=resamples))
        if len(distinct) >= 3
        else ()
    )
    return DatasetFigures(
        rows=tuple(
            SidesRow(a, b, preference.win_tie_loss(v)) for (a, b), v in sorted(by_sides.items())
        ),
        strengths=strengths,
        agreement=preference.rater_agreement(by_pair) if by_pair else None,
        prediction=_prediction(run, by_pair, pairs) if run is not None and by_pair else None,
        votes=len(rows),
        judge_prediction=_prediction(run, judged, judged_pairs) if judged else None,
        judge_pairs=len(judged),
    )


def _prediction(run: Run, by_pair: dict, pairs: dict) -> preference.Prediction:
    """The raters' majority per pair (reviewers, or the pairwise judges: several judges of a
    pair count as its raters) against the run's checklist scores of its two answers (each
    answer's value under the dataset's scoring strategy, as the run page shows it:
    evaluation.runs.scores, never a second count of satisfied criteria)."""
    answer_ids = sorted({a for a, b, _ in pairs.values()} | {b for a, b, _ in pairs.values()})
    scored = run_scores(run).of_answers(answer_ids)
    items = []
    for pair_id, by_rater in by_pair.items():
        majority = preference.majority(by_rater.values())
        answer_a, answer_b, category = pairs[pair_id]
        if majority is None:
            continue
        a, b = scored.get(answer_a), scored.get(answer_b)
        items.append(
            preference.PredictedPair(
                majority, a.value if a else None, b.value if b else None, category
            )
        )
    return preference.checklist_prediction(items)


def win_rate_chart(figures: DatasetFigures) -> BarChart:
    """A's share of the votes per pair of sides, and the checklist's agreement with the
    reviewers' preference and with the pairwise judges', each with its Wilson interval, on
    one 0–100% scale."""
    rows = [
        BarInput(
            f"{row.a} over {row.b}", row.figures.a.rate, low=row.figures.a.low,
            high=row.figures.a.high, note=f"n = {row.figures.n}",
        )
        for row in figures.rows
    ]  # fmt: skip
    for label, found in (
        ("Checklist agrees with reviewers", figures.prediction),
        ("Checklist agrees with the pairwise judge", figures.judge_prediction),
    ):
        if found is not None:
            o = found.overall
            rows.append(BarInput(label, o.rate, low=o.low, high=o.high, note=f"n = {o.n}"))
    return bar_chart(
        rows, title="Pairwise win rates and checklist–preference agreement", percent=True
    )
